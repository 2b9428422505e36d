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
	return g.repair(ctx, l, pr)
}

// recoverUnit is rebuild for a recovery: the plan that costs the disks least
// (gp.RepairRangeCheapest with the group's gap as a seek's worth), not the
// one that waits least.
func (g *Group) recoverUnit(ctx context.Context, l gp.Location, available []bool) ([]byte, error) {
	pr, err := g.PG.RepairRangeCheapest(g.Clay, g.RS, l, available, g.gap())
	if err != nil {
		return nil, err
	}
	return g.repair(ctx, l, pr)
}

// repair reads the helpers of plan pr and rebuilds l.
func (g *Group) repair(ctx context.Context, l gp.Location, pr *gp.PieceRepair) ([]byte, error) {
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

// HelperDepth is how many requests a repair keeps in flight to one
// helper: a helper whose runs are far apart is asked for them apart, and
// one request after another would leave its disk idle between them.
const HelperDepth = 4

// readRuns returns the concatenated bytes of ranges (ascending runs of
// helper slots, as gp.RepairRange lists them), asking for runs of one
// shard at most g.Gap (CoalesceGap) apart in one request and dropping the
// gaps, HelperDepth requests at a time.
func (g *Group) readRuns(ctx context.Context, ranges []gp.Location) ([]byte, error) {
	gap := g.gap()
	type span struct {
		loc  gp.Location
		runs []gp.Location // the ranges it covers
		at   int64         // where its first range goes in the output
	}
	var spans []span
	var total int64
	gp.Coalesce(ranges, gap, g.sameUnit, func(req gp.Location, runs []gp.Location) {
		spans = append(spans, span{loc: req, runs: runs, at: total})
		for _, r := range runs {
			total += r.Length
		}
	})
	out := make([]byte, total)
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(HelperDepth)
	for _, sp := range spans {
		eg.Go(func() error {
			b, err := g.read(ctx, sp.loc, true)
			if err != nil {
				return err
			}
			at := sp.at
			for _, r := range sp.runs {
				at += int64(copy(out[at:], b[r.Offset-sp.loc.Offset:r.Offset-sp.loc.Offset+r.Length]))
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// gap is the group's Gap, or CoalesceGap.
func (g *Group) gap() int64 {
	if g.Gap <= 0 {
		return CoalesceGap
	}
	return g.Gap
}

// sameUnit reports whether two ranges of one file lie in the same slot or
// page (so one request can span them).
func (g *Group) sameUnit(a, b gp.Location) bool {
	sa, sb := g.shards(a), g.shards(b)
	return len(sa) == 1 && len(sb) == 1 && sa[0].name == sb[0].name
}

// ReadRange returns the bytes of l — a slot of a bucket or parity file, a
// range inside one, or a range of a small-size bucket — from its disk, or,
// when available[l.Disk] is false, rebuilt as Read rebuilds pieces: a
// slot's range by the repair of its whole slot (the code repairs whole
// shards), a small-bucket range by RS from the same range of K others. It
// lets layouts other than Geometric Partitioning keep their chunks in a
// group's slots and share its reads and repairs: the experiment's
// Stripe-Max and Contiguous layouts (bench/gpbench).
func (g *Group) ReadRange(ctx context.Context, l gp.Location, available []bool) ([]byte, error) {
	if len(available) != len(g.Disks) || l.Disk < 0 || l.Disk >= len(g.Disks) || l.Offset < 0 || l.Length <= 0 {
		return nil, fmt.Errorf("%w: read of %+v with %d disks' availability of a %d-disk group", cairn.ErrInvalid, l, len(available), len(g.Disks))
	}
	size := g.slotSize(l.File)
	slot := l
	if size > 0 {
		slot = gp.Location{Disk: l.Disk, File: l.File, Offset: l.Offset / size * size, Length: size}
		if l.Offset+l.Length > slot.Offset+size {
			return nil, fmt.Errorf("%w: %s [%d, +%d) crosses a slot of %d bytes", cairn.ErrInvalid, l.File, l.Offset, l.Length, size)
		}
	}
	if available[l.Disk] {
		return g.read(ctx, l, false)
	}
	b, err := g.rebuild(ctx, slot, available)
	if err != nil {
		return nil, err
	}
	return b[l.Offset-slot.Offset : l.Offset-slot.Offset+l.Length], nil
}

// PutSlot writes slot l (a location gp.PG.Stripe lists) whole.
func (g *Group) PutSlot(ctx context.Context, l gp.Location, b []byte) error {
	if size := g.slotSize(l.File); size == 0 || l.Length != size || l.Offset%size != 0 || int64(len(b)) != size {
		return fmt.Errorf("%w: %d bytes into %s [%d, +%d), which is not a slot", cairn.ErrInvalid, len(b), l.File, l.Offset, l.Length)
	}
	return g.putLoc(ctx, l, b)
}
