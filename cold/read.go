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
			for _, r := range ranges {
				b, err := g.read(ctx, r, true)
				if err != nil {
					return err
				}
				reads[h] = append(reads[h], b...)
			}
			return nil
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
