package cold

import (
	"context"
	"errors"
	"hash/crc32"
	"maps"
	"slices"
	"sync"

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
// read returns a piece at a time, as the export writes them: an object is
// never held whole, only the pieces in flight (at most MaxPieceMemory
// bytes, or one piece bigger than that). What the batch's delta rows held
// before (gp.Delta: their parity and reused slots) is read first and held
// until the rows' parity is written. An error from read ends the export
// like a failed write, once every write under way has ended.
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

// MaxPieceMemory bounds the bytes of the pieces an export writes at once.
const MaxPieceMemory = 256 << 20

func (g *Group) export(ctx context.Context, sizes []int64, read PieceReader, before func([]gp.Record, []gp.RowUpdate) error) ([]gp.Record, error) {
	pg := g.PG
	parts := make([]gp.Partition, len(sizes))
	for i, n := range sizes {
		parts[i] = pg.Geo.Partition(n)
	}
	smallBefore := make([]int64, pg.K)
	for d, disk := range pg.Disks {
		smallBefore[d] = disk.SmallEnd
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
	// Delta rows: what the reused slots and the parity held, before the
	// writes below overwrite it.
	var mu sync.Mutex
	old := map[gp.Location][]byte{} // guarded by mu while the reads run
	eg, ectx := g.group(ctx)
	for _, u := range updates {
		if u.Mode != gp.Delta {
			continue
		}
		stripe := pg.Stripe(u.Level, u.Slot)
		for _, d := range append(slices.Clone(u.OldBytes), parityDisks(pg)...) {
			eg.Go(func() error {
				b, err := g.read(ectx, stripe[d], true)
				mu.Lock()
				old[stripe[d]] = b
				mu.Unlock()
				return err
			})
		}
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	// The chunks, and the fronts into their disks' small pages.
	pages := map[[2]int64][]byte{}
	mem := semaphore.NewWeighted(MaxPieceMemory)
	// A piece's write runs under ctx, not the group's context: a failed
	// read does not cut a write short, so Wait returns only after every
	// write has ended and nothing lands after an undo (Exporter).
	eg, ectx = g.group(ctx)
	for i := range sizes {
		locs, err := pg.Pieces(recs[i])
		if err != nil {
			return nil, errors.Join(err, eg.Wait())
		}
		recs[i].Sums = make([]uint32, len(locs))
		pos := int64(0)
		for j, l := range locs {
			off := pos
			pos += l.Length
			if l.File != gp.SmallFile {
				w := min(MaxPieceMemory, l.Length)
				if err := mem.Acquire(ectx, w); err != nil {
					return nil, waitOr(eg, err)
				}
				eg.Go(func() error {
					defer mem.Release(w)
					piece, err := read(ectx, i, off, l.Length)
					if err != nil {
						return err
					}
					recs[i].Sums[j] = crc32.Checksum(piece, castagnoli)
					return g.putLoc(ctx, l, piece)
				})
				continue
			}
			piece, err := read(ctx, i, off, l.Length)
			if err != nil {
				return nil, errors.Join(err, eg.Wait())
			}
			recs[i].Sums[j] = crc32.Checksum(piece, castagnoli)
			for off := l.Offset; off < l.Offset+l.Length; {
				p := off / SmallPage
				key := [2]int64{int64(l.Disk), p}
				if pages[key] == nil {
					b, err := g.read(ctx, gp.Location{Disk: l.Disk, File: gp.SmallFile, Offset: p * SmallPage, Length: SmallPage}, true)
					if err != nil {
						return nil, errors.Join(err, eg.Wait())
					}
					pages[key] = b
				}
				n := copy(pages[key][off-p*SmallPage:], piece[off-l.Offset:])
				off += int64(n)
			}
		}
	}
	touched := map[int64]bool{}
	for key, b := range pages {
		eg.Go(func() error { return g.putUnit(ectx, int(key[0]), gp.SmallFile, key[1], b) })
		touched[key[1]] = true
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	// Row updates hold a whole row each (K+M slots): bound the bytes in
	// flight, a row bigger than the bound running alone.
	mem = semaphore.NewWeighted(MaxRowMemory)
	eg, ectx = g.group(ctx)
	for _, u := range updates {
		w := min(MaxRowMemory, int64(len(g.Disks))*pg.Geo.Size(u.Level))
		if err := mem.Acquire(ectx, w); err != nil {
			return nil, waitOr(eg, err)
		}
		eg.Go(func() error {
			defer mem.Release(w)
			return g.updateRow(ectx, u, old)
		})
	}
	for _, p := range slices.Sorted(maps.Keys(touched)) {
		eg.Go(func() error { return g.encodeSmallPage(ectx, p) })
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return recs, nil
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

// MaxRowMemory bounds the bytes of the rows an export updates at once.
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
// mode needs (never-written ones are zeros) and writes the parity slots,
// each step with every disk of the row at once.
func (g *Group) updateRow(ctx context.Context, u gp.RowUpdate, old map[gp.Location][]byte) error {
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
