package cold

import (
	"context"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"cairn/layout/gp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Export stores a batch of objects in the group and brings the parity of
// every row it touched up to date (fresh, delta or full, as PlaceBatch
// chose), and the RS parity of the small pages it touched. It returns the
// objects' records, with checksums. On error the group's allocation is
// rolled back; shards already written are left for a later batch to
// overwrite.
func (g *Group) Export(ctx context.Context, objs [][]byte) ([]gp.Record, error) {
	return g.ExportWith(ctx, objs, nil)
}

// ExportWith is Export calling before, if set, once the batch is placed
// and before anything is written, with the records (no checksums yet) and
// the row updates: the export job stores the new allocation and its
// intent there (docs/design/cold.md, "Persistence"). An error from before
// ends the export with nothing written.
func (g *Group) ExportWith(ctx context.Context, objs [][]byte, before func([]gp.Record, []gp.RowUpdate) error) ([]gp.Record, error) {
	sizes := make([]int64, len(objs))
	for i, o := range objs {
		sizes[i] = int64(len(o))
	}
	return g.ExportFrom(ctx, sizes, func(_ context.Context, i int, off, n int64) ([]byte, error) {
		return objs[i][off : off+n], nil
	}, before)
}

// PieceReader returns bytes [off, off+n) of object i of an export: one
// piece (a chunk, or a front) at a time.
type PieceReader func(ctx context.Context, i int, off, n int64) ([]byte, error)

// ExportFrom is ExportWith for objects of the sizes given whose bytes
// read returns a piece at a time, as the export writes them. An object is
// never held whole: the export goes a row at a time (what a delta row
// held before, its new chunks, its parity), at most MaxRowMemory of rows
// at once, or one row bigger than that. A front is read as its small page
// is filled. An error from read ends the export like a failed write, once
// every write under way has ended.
func (g *Group) ExportFrom(ctx context.Context, sizes []int64, read PieceReader, before func([]gp.Record, []gp.RowUpdate) error) ([]gp.Record, error) {
	pg := g.PG
	snapshot := pg.Clone()
	recs, err := g.export(ctx, sizes, read, before)
	if err != nil {
		*pg = *snapshot
		return nil, err
	}
	return recs, nil
}

func (g *Group) export(ctx context.Context, sizes []int64, read PieceReader, before func([]gp.Record, []gp.RowUpdate) error) ([]gp.Record, error) {
	pg := g.PG
	parts := make([]gp.Partition, len(sizes))
	for i, n := range sizes {
		parts[i] = pg.Geo.Partition(n)
	}
	recs, updates, err := pg.PlaceBatch(parts)
	if err != nil {
		return nil, err
	}
	if before != nil {
		if err := before(recs, updates); err != nil {
			return nil, err
		}
	}
	// The fronts go into their disks' small pages (written after the
	// rows); the chunks are written with their rows.
	type chunk struct {
		obj, idx int   // recs[obj].Sums[idx] is its checksum
		off      int64 // where it starts in the object
		loc      gp.Location
	}
	rows := map[[2]int64][]chunk{} // (level, slot) → the batch's chunks in the row
	pages := map[[2]int64][]byte{}
	for i := range sizes {
		locs, err := pg.Pieces(recs[i])
		if err != nil {
			return nil, err
		}
		recs[i].Sums = make([]uint32, len(locs))
		pos := int64(0)
		for j, l := range locs {
			off := pos
			pos += l.Length
			if l.File != gp.SmallFile {
				key := [2]int64{int64(g.levelOf(l.File)), l.Offset / l.Length}
				rows[key] = append(rows[key], chunk{obj: i, idx: j, off: off, loc: l})
				continue
			}
			piece, err := read(ctx, i, off, l.Length)
			if err != nil {
				return nil, err
			}
			recs[i].Sums[j] = crc32.Checksum(piece, castagnoli)
			for off := l.Offset; off < l.Offset+l.Length; {
				p := off / SmallPage
				key := [2]int64{int64(l.Disk), p}
				if pages[key] == nil {
					b, err := g.read(ctx, gp.Location{Disk: l.Disk, File: gp.SmallFile, Offset: p * SmallPage, Length: SmallPage}, true)
					if err != nil {
						return nil, err
					}
					pages[key] = b
				}
				n := copy(pages[key][off-p*SmallPage:], piece[off-l.Offset:])
				off += int64(n)
			}
		}
	}
	if n := len(rows); n > len(updates) {
		return nil, fmt.Errorf("%w: the batch's chunks lie in %d rows, and %d rows are updated", gp.ErrPlacement, n, len(updates))
	}
	// Writes run under ctx, not a group's context: a failure elsewhere
	// (a piece that cannot be read) does not cut a write short, so Wait
	// returns only after every write has ended, and nothing lands after
	// the Exporter's undo. The group's context stops the reads of pieces
	// and the rows not yet begun.
	// A row at a time per its weight (the bound: MaxRowMemory; a row
	// bigger than the bound runs alone): what a delta row held before,
	// then its new chunks, then its parity. A row's bytes are held only
	// while it is written, however big the objects.
	mem := semaphore.NewWeighted(MaxRowMemory)
	eg, ectx := g.group(ctx)
	for _, u := range updates {
		w := g.rowWeight(u)
		if err := mem.Acquire(ectx, w); err != nil {
			return nil, waitOr(eg, err)
		}
		eg.Go(func() error {
			defer mem.Release(w)
			chunks := rows[[2]int64{int64(u.Level), int64(u.Slot)}]
			if len(chunks) != len(u.Changed) {
				return fmt.Errorf("%w: row %d/%d: %d chunks for %d changed slots", gp.ErrPlacement, u.Level, u.Slot, len(chunks), len(u.Changed))
			}
			return g.exportRow(ctx, ectx, u, len(chunks), func(rctx context.Context, k int) (gp.Location, []byte, error) {
				c := chunks[k]
				piece, err := read(rctx, c.obj, c.off, c.loc.Length)
				if err == nil {
					recs[c.obj].Sums[c.idx] = crc32.Checksum(piece, castagnoli)
				}
				return c.loc, piece, err
			})
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	// Then the small pages and their parity, after every row: an export
	// stopped among its rows leaves the small pages as they were, and a
	// rebuild that comes before the recovery rebuilds the committed fronts
	// from the first helpers it tries (TestRebuildThroughInterruptedExport
	// stops exports after their first writes).
	eg, _ = g.group(ctx)
	touched := map[int64]bool{}
	for key, b := range pages {
		eg.Go(func() error { return g.putUnit(ctx, int(key[0]), gp.SmallFile, key[1], b) })
		touched[key[1]] = true
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	eg, _ = g.group(ctx)
	for _, p := range slices.Sorted(maps.Keys(touched)) {
		eg.Go(func() error { return g.encodeSmallPage(ctx, p) })
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return recs, nil
}

// exportRow writes the n new chunks of row u (chunk k from piece) and
// brings its parity up to date: a delta row's old bytes — its reused
// slots and its parity — are read first, before the chunks overwrite
// them. Writes, and the reads of the row's slots, run under ctx; the
// pieces are read under stop, which ends when the export fails.
func (g *Group) exportRow(ctx, stop context.Context, u gp.RowUpdate, n int, piece func(context.Context, int) (gp.Location, []byte, error)) error {
	pg := g.PG
	var old map[gp.Location][]byte
	if u.Mode == gp.Delta {
		stripe := pg.Stripe(u.Level, u.Slot)
		idx := append(slices.Clone(u.OldBytes), parityDisks(pg)...)
		bufs := make([][]byte, len(idx))
		eg, ectx := errgroup.WithContext(ctx) // one request per disk of the row, all at once
		for k, d := range idx {
			eg.Go(func() (err error) {
				bufs[k], err = g.read(ectx, stripe[d], true)
				return err
			})
		}
		if err := eg.Wait(); err != nil {
			return err
		}
		old = make(map[gp.Location][]byte, len(idx))
		for k, d := range idx {
			old[stripe[d]] = bufs[k]
		}
	}
	written := make([][]byte, pg.K) // by data disk: the chunk just written there
	eg, sctx := errgroup.WithContext(stop)
	for k := range n {
		eg.Go(func() error {
			l, b, err := piece(sctx, k)
			if err != nil {
				return err
			}
			if l.Disk < 0 || l.Disk >= pg.K || written[l.Disk] != nil {
				return fmt.Errorf("%w: row %d/%d: a second chunk, or one off the data disks, at position %d", gp.ErrPlacement, u.Level, u.Slot, l.Disk)
			}
			written[l.Disk] = b
			return g.putLoc(ctx, l, b)
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	return g.updateRow(ctx, u, old, written)
}

// waitOr waits for eg after a step could not go on with err (an Acquire
// on eg's context: the group failed, or ctx ended) and returns the
// group's error, or err.
func waitOr(eg *errgroup.Group, err error) error {
	if werr := eg.Wait(); werr != nil {
		return werr
	}
	return err
}

// rowWeight is what updating row u holds, weighed against MaxRowMemory
// (at most all of it: a bigger row runs alone): its old and current data
// slots, zeros for the never-written, its parity, and its new chunks.
func (g *Group) rowWeight(u gp.RowUpdate) int64 {
	return min(MaxRowMemory, int64(2*len(g.Disks)+len(u.Changed))*g.PG.Geo.Size(u.Level))
}

// MaxRowMemory bounds the bytes of the rows an export (or a recovery)
// updates at once.
const MaxRowMemory = 512 << 20

// group returns an errgroup for a step's fan-out: twice the group's disks
// at once, so every disk has a request queued while another is sent.
func (g *Group) group(ctx context.Context) (*errgroup.Group, context.Context) {
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(2 * len(g.Disks))
	return eg, ctx
}

func parityDisks(pg *gp.PG) []int {
	out := make([]int, pg.M)
	for i := range out {
		out[i] = pg.K + i
	}
	return out
}

// updateRow brings one row's parity up to date after its changed slots
// were written (gp.RowUpdate.Parity): it reads the data slots the update's
// mode needs (never-written ones are zeros) but those whose bytes written
// holds (by data disk; nil: none, or not known), and writes the parity
// slots, each step with every disk of the row at once.
func (g *Group) updateRow(ctx context.Context, u gp.RowUpdate, old map[gp.Location][]byte, written [][]byte) error {
	pg := g.PG
	stripe := pg.Stripe(u.Level, u.Slot)
	cur := make([][]byte, len(stripe))
	olds := make([][]byte, len(stripe))
	eg, ectx := errgroup.WithContext(ctx) // one request per disk of the row, all at once
	for i, l := range stripe {
		olds[i] = old[l]
		if i >= pg.K || (u.Mode == gp.Delta && !slices.Contains(u.Changed, i)) {
			continue
		}
		if i < len(written) && written[i] != nil {
			cur[i] = written[i]
			continue
		}
		eg.Go(func() error {
			b, err := g.read(ectx, l, u.Mode != gp.Delta)
			cur[i] = b
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	parity, err := u.Parity(g.Clay, stripe[0].Length, cur, olds)
	if err != nil {
		return err
	}
	eg, ectx = errgroup.WithContext(ctx)
	for j, b := range parity {
		eg.Go(func() error { return g.putLoc(ectx, stripe[pg.K+j], b) })
	}
	return eg.Wait()
}

// encodeSmallPage re-encodes the RS parity of small page p from the K data
// disks' pages (missing pages are zeros).
func (g *Group) encodeSmallPage(ctx context.Context, p int64) error {
	pg := g.PG
	stripe := pg.SmallStripe(p*SmallPage, SmallPage)
	shards := make([][]byte, len(stripe))
	for i, l := range stripe {
		if i >= pg.K {
			shards[i] = make([]byte, SmallPage)
			continue
		}
		b, err := g.read(ctx, l, true)
		if err != nil {
			return err
		}
		shards[i] = b
	}
	if err := g.RS.Encode(shards); err != nil {
		return err
	}
	for i := pg.K; i < len(stripe); i++ {
		if err := g.putUnit(ctx, i, gp.SmallParityFile, p, shards[i]); err != nil {
			return err
		}
	}
	return nil
}
