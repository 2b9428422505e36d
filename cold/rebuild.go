package cold

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"cairn"
	"cairn/layout/gp"
)

// Budget is a repairer's global weight budget (the paper's 512 per HTTP
// server): the repair tasks of every group it rebuilds share it, admitted
// in FIFO order; a task heavier than the budget runs alone. Safe for
// concurrent use.
type Budget struct {
	sem *semaphore.Weighted
	max int
}

// NewBudget returns a budget of n (≥ 1) weight units.
func NewBudget(n int) *Budget {
	n = max(n, 1)
	return &Budget{sem: semaphore.NewWeighted(int64(n)), max: n}
}

// Rebuild rebuilds the group's disk at position lost onto replacement
// (which then takes its place in g.Disks): every task of
// gp.RecoveryTasks, in order, as many at once as the budget allows.
// available says which other disks can be read; lost's entry is ignored.
func (g *Group) Rebuild(ctx context.Context, lost int, replacement cairn.DiskID, available []bool, b *Budget) error {
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
			defer b.sem.Release(w)
			return g.rebuildTask(ctx, t, avail)
		})
	}
	return eg.Wait()
}

// rebuildTask rebuilds one task's slot, or the whole small pages its range
// covers (pages are zero-padded, so their tails rebuild as zeros).
func (g *Group) rebuildTask(ctx context.Context, t gp.Task, avail []bool) error {
	l := t.Where
	if t.Level >= 0 {
		b, err := g.rebuild(ctx, l, avail)
		if err != nil {
			return err
		}
		return g.putLoc(ctx, l, b)
	}
	for p := l.Offset / SmallPage; p*SmallPage < l.Offset+l.Length; p++ {
		page := gp.Location{Disk: l.Disk, File: l.File, Offset: p * SmallPage, Length: SmallPage}
		b, err := g.rebuild(ctx, page, avail)
		if err != nil {
			return err
		}
		if err := g.putUnit(ctx, l.Disk, l.File, p, b); err != nil {
			return err
		}
	}
	return nil
}
