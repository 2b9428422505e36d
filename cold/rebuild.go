package cold

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"cairn"
	"cairn/codec"
	"cairn/layout/gp"
)

// Budget is a repairer's global weight budget (the paper's 512 per HTTP
// server): the repair tasks of every group it rebuilds share it, admitted
// in FIFO order; a task heavier than the budget runs alone. A task holds
// its weight while it reads its helpers and decodes; its rebuilt chunk
// then moves to the write pool (as much weight again), which frees the
// budget for the next task's reads while the chunk is written out (the
// paper: repaired chunks held in a bounded memory pool, then written).
// Memory: at most the budget's weight of chunks being rebuilt (each with
// its helpers' reads) plus the pool's weight of chunks being written.
// Safe for concurrent use.
type Budget struct {
	sem   *semaphore.Weighted
	write *semaphore.Weighted
	max   int
}

// NewBudget returns a budget of n (≥ 1) weight units, and a write pool
// of as many.
func NewBudget(n int) *Budget {
	n = max(n, 1)
	return &Budget{sem: semaphore.NewWeighted(int64(n)), write: semaphore.NewWeighted(int64(n)), max: n}
}

// Rebuild rebuilds the group's disk at position lost onto replacement
// (which then takes its place in g.Disks): every task of
// gp.RecoveryTasks, in order, as many at once as the budget allows.
// available says which other disks can be read; lost's entry is ignored.
func (g *Group) Rebuild(ctx context.Context, lost int, replacement cairn.DiskID, available []bool, b *Budget) error {
	return g.rebuildDoubt(ctx, lost, replacement, available, b, nil)
}

// rebuildDoubt is Rebuild with the rows and small pages an interrupted
// export may have left half-written (d, nil: none) rebuilt with care.
func (g *Group) rebuildDoubt(ctx context.Context, lost int, replacement cairn.DiskID, available []bool, b *Budget, d *doubt) error {
	if lost < 0 || lost >= len(g.Disks) || len(available) != len(g.Disks) || b == nil {
		return fmt.Errorf("%w: rebuild of disk %d of a %d-disk group", cairn.ErrInvalid, lost, len(g.Disks))
	}
	avail := append([]bool(nil), available...)
	avail[lost] = false
	g.Disks[lost] = replacement
	eg, ctx := errgroup.WithContext(ctx)
	for _, t := range g.PG.RecoveryTasks(lost) {
		w := int64(min(t.Weight, b.max))
		if err := b.sem.Acquire(ctx, w); err != nil {
			break // the group failed or ctx ended: Wait says why
		}
		eg.Go(func() error {
			units, err := g.rebuildTask(ctx, t, avail, d)
			if err != nil || len(units) == 0 {
				b.sem.Release(w)
				return err
			}
			// Into the write pool before leaving the budget, so the chunk
			// is always within one of the two bounds.
			err = b.write.Acquire(ctx, w)
			b.sem.Release(w)
			if err != nil {
				return err
			}
			defer b.write.Release(w)
			for _, u := range units {
				if err := g.putUnit(ctx, t.Where.Disk, t.Where.File, u.unit, u.b); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return eg.Wait()
}

// rebuiltUnit is a slot or small page a task rebuilt, by its index in
// its file, to be written onto the replacement.
type rebuiltUnit struct {
	unit int64
	b    []byte
}

// rebuildTask rebuilds one task's slot, or the whole small pages its range
// covers (pages are zero-padded, so their tails rebuild as zeros). A slot
// or page in doubt (d) is left to the interrupted export's recovery or
// rebuilt checked (doubt.rebuild).
func (g *Group) rebuildTask(ctx context.Context, t gp.Task, avail []bool, d *doubt) ([]rebuiltUnit, error) {
	l := t.Where
	if t.Level >= 0 {
		b, skip, err := d.rebuild(ctx, g, l, avail)
		if err != nil || skip {
			return nil, err
		}
		return []rebuiltUnit{{l.Offset / l.Length, b}}, nil
	}
	var out []rebuiltUnit
	for p := l.Offset / SmallPage; p*SmallPage < l.Offset+l.Length; p++ {
		page := gp.Location{Disk: l.Disk, File: l.File, Offset: p * SmallPage, Length: SmallPage}
		b, skip, err := d.rebuild(ctx, g, page, avail)
		if err != nil {
			return nil, err
		}
		if !skip {
			out = append(out, rebuiltUnit{p, b})
		}
	}
	return out, nil
}

// doubt is what the rebuild of a lost disk must not trust in a group whose
// export was interrupted before any object of its batch committed (an
// export writes every row before its first commit): the rows and small
// pages it was writing may hold some shards old and some new, and a
// rebuild through them would write wrong bytes onto the replacement
// (docs/design/cold.md, "An export interrupted, and a disk lost"). A nil
// *doubt trusts everything.
type doubt struct {
	rows  map[[2]uint32]bool // level, slot
	pages map[int64]bool
	// pieces are the committed pieces on the lost disk in the rows and
	// pages in doubt, with their checksums.
	pieces []checkedPiece
}

type checkedPiece struct {
	loc gp.Location
	sum uint32
}

// holds reports whether location l (a whole slot of a bucket or parity
// file, or a range of a small-size bucket or its parity) lies in a row or
// page in doubt.
func (d *doubt) holds(geo gp.Geometry, l gp.Location) bool {
	if d == nil {
		return false
	}
	if l.File == gp.SmallFile || l.File == gp.SmallParityFile {
		for p := l.Offset / SmallPage; p*SmallPage < l.Offset+l.Length; p++ {
			if d.pages[p] {
				return true
			}
		}
		return false
	}
	return d.rows[[2]uint32{uint32(geo.Level(l.Length)), uint32(l.Offset / l.Length)}] // l is a whole slot
}

// rebuild returns the rebuilt bytes of unit u (a slot or a small page) of
// the lost disk, or skip. A unit not in doubt is rebuilt as always. One in
// doubt is skipped when it holds no committed piece — a parity unit, a
// free slot, the batch's own: the interrupted export's recovery re-encodes
// its row from the data slots before anything else writes the group, and
// a unit the replacement does not hold reads as zeros. One that holds
// committed pieces is rebuilt from every available helper, then from each
// set that leaves one helper out, until the pieces match their checksums;
// if none does, the rebuild fails with cairn.ErrCorrupt and writes nothing.
func (d *doubt) rebuild(ctx context.Context, g *Group, u gp.Location, avail []bool) (b []byte, skip bool, err error) {
	if !d.holds(g.PG.Geo, u) {
		b, err = g.recoverUnit(ctx, u, avail)
		return b, false, err
	}
	var pieces []checkedPiece
	for _, p := range d.pieces {
		if p.loc.File == u.File && p.loc.Offset < u.Offset+u.Length && u.Offset < p.loc.Offset+p.loc.Length {
			pieces = append(pieces, p)
		}
	}
	if u.Disk >= g.PG.K || len(pieces) == 0 {
		return nil, true, nil
	}
	sets := [][]bool{avail}
	for h := range avail {
		if avail[h] && h != u.Disk {
			set := append([]bool(nil), avail...)
			set[h] = false
			sets = append(sets, set)
		}
	}
	for _, set := range sets {
		b, err := g.recoverUnit(ctx, u, set)
		if errors.Is(err, codec.ErrUndecodable) {
			continue // too few helpers left in this set
		}
		if err != nil {
			return nil, false, err
		}
		ok, err := g.checkPieces(ctx, u, b, pieces, set)
		if err != nil {
			return nil, false, err
		}
		if ok {
			return b, false, nil
		}
	}
	return nil, false, fmt.Errorf("%w: %s [%d, +%d) of disk %d: no set of helpers rebuilds its %d committed pieces to their checksums (an interrupted export left its row disagreeing)",
		cairn.ErrCorrupt, u.File, u.Offset, u.Length, u.Disk, len(pieces))
}

// checkPieces reports whether the pieces read back right from b, the
// rebuilt bytes of u; a piece that reaches past u (a front across two
// small pages) is rebuilt whole with the same helpers.
func (g *Group) checkPieces(ctx context.Context, u gp.Location, b []byte, pieces []checkedPiece, set []bool) (bool, error) {
	for _, p := range pieces {
		var pb []byte
		if p.loc.Offset >= u.Offset && p.loc.Offset+p.loc.Length <= u.Offset+u.Length {
			pb = b[p.loc.Offset-u.Offset : p.loc.Offset-u.Offset+p.loc.Length]
		} else {
			var err error
			if pb, err = g.recoverUnit(ctx, p.loc, set); err != nil {
				return false, err
			}
		}
		if crc32.Checksum(pb, castagnoli) != p.sum {
			return false, nil
		}
	}
	return true, nil
}
