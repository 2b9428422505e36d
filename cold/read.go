package cold

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/layout/gp"
)

// Read writes bytes [off, off+n) of the object of record r to w. When the
// object's disk is unavailable (available[r.Disk] false) its pieces are
// rebuilt one at a time, smallest first, and each is written while the
// next is rebuilt (gp.Pipeline's schedule); a range starts at the first
// piece it touches. Every piece is checked against its checksum
// (cairn.ErrCorrupt).
func (g *Group) Read(ctx context.Context, r gp.Record, off, n int64, available []bool, w io.Writer) error {
	if off < 0 || n < 0 || off+n > r.Size {
		return fmt.Errorf("%w: range [%d, +%d) of a %d-byte object", cairn.ErrInvalid, off, n, r.Size)
	}
	locs, err := g.PG.Pieces(r)
	if err != nil {
		return err
	}
	if len(available) != len(g.Disks) || len(r.Sums) != len(locs) {
		return fmt.Errorf("%w: read with %d disks' availability of a %d-disk group, a record of %d pieces with %d checksums",
			cairn.ErrInvalid, len(available), len(g.Disks), len(locs), len(r.Sums))
	}
	sizes := make([]int64, len(locs))
	for i, l := range locs {
		sizes[i] = l.Length
	}
	first, last := gp.RangePieces(sizes, off, n)
	start := int64(0)
	for i := range first {
		start += sizes[i]
	}
	eg, ctx := errgroup.WithContext(ctx)
	ready := make(chan []byte, 1) // one rebuilt piece waits while another is sent
	eg.Go(func() error {
		defer close(ready)
		for i := first; i < last; i++ {
			var b []byte
			var err error
			if available[r.Disk] {
				b, err = g.read(ctx, locs[i], false)
			} else {
				b, err = g.rebuild(ctx, locs[i], available)
			}
			if err != nil {
				return err
			}
			if crc32.Checksum(b, castagnoli) != r.Sums[i] {
				return fmt.Errorf("%w: piece %d (%s@%d) of disk %s fails its checksum", cairn.ErrCorrupt, i, locs[i].File, locs[i].Offset, g.Disks[r.Disk])
			}
			select {
			case ready <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	eg.Go(func() error {
		pos := start
		for b := range ready {
			lo, hi := max(off, pos), min(off+n, pos+int64(len(b)))
			if _, err := w.Write(b[lo-pos : hi-pos]); err != nil {
				return err
			}
			pos += int64(len(b))
		}
		return nil
	})
	return eg.Wait()
}

// rebuild returns the bytes of location l (a slot, or a range of a small
// bucket) of a disk that is gone, from the helpers gp.RepairRange names,
// read in parallel. Helper slots or pages that were never written read as
// zeros.
func (g *Group) rebuild(ctx context.Context, l gp.Location, available []bool) ([]byte, error) {
	pr, err := g.PG.RepairRange(g.Clay, g.RS, l, available)
	if err != nil {
		return nil, err
	}
	reads := make([][]byte, len(pr.Reads))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(len(pr.Reads)) // every helper at once: at most K+M−1
	for h, ranges := range pr.Reads {
		eg.Go(func() error {
			b, err := g.readRuns(ctx, ranges)
			reads[h] = b
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	out := make([]byte, l.Length)
	if err := pr.Rebuild(reads, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CoalesceGap is the largest gap between two runs of one helper that a
// read goes through instead of asking for the runs apart: about what a
// spinning disk streams in the time of a seek (250 MB/s × 4.2 ms), so
// reading through is never slower than seeking.
const CoalesceGap = 1 << 20

// readRuns returns the concatenated bytes of ranges (ascending runs of
// helper slots, as gp.RepairRange lists them), asking for runs of one
// shard less than CoalesceGap apart in one request and dropping the gaps.
func (g *Group) readRuns(ctx context.Context, ranges []gp.Location) ([]byte, error) {
	var out []byte
	for i := 0; i < len(ranges); {
		j, end := i+1, ranges[i].Offset+ranges[i].Length
		for j < len(ranges) && ranges[j].Disk == ranges[i].Disk && ranges[j].File == ranges[i].File &&
			g.sameUnit(ranges[i], ranges[j]) && ranges[j].Offset >= end && ranges[j].Offset-end <= CoalesceGap {
			end = ranges[j].Offset + ranges[j].Length
			j++
		}
		span := gp.Location{Disk: ranges[i].Disk, File: ranges[i].File, Offset: ranges[i].Offset, Length: end - ranges[i].Offset}
		b, err := g.read(ctx, span, true)
		if err != nil {
			return nil, err
		}
		for _, r := range ranges[i:j] {
			out = append(out, b[r.Offset-span.Offset:r.Offset-span.Offset+r.Length]...)
		}
		i = j
	}
	return out, nil
}

// sameUnit reports whether two ranges of one file lie in the same slot or
// page (so one request can span them).
func (g *Group) sameUnit(a, b gp.Location) bool {
	sa, sb := g.shards(a), g.shards(b)
	return len(sa) == 1 && len(sb) == 1 && sa[0].name == sb[0].name
}
