package raidprun

import (
	"context"
	"errors"
	"fmt"

	"cairn/raidp"

	"golang.org/x/sync/errgroup"
)

// Zeroer is the capability a Disk needs for a StepZero of a stored plan:
// zero n bytes at off of slot, data and parity, durably when it returns
// nil. *lstor.Store and Remote have it.
type Zeroer interface {
	Zero(ctx context.Context, slot int, off, n int64) error
}

// ErrNoZero: a plan zeroes a slot on a disk without the Zeroer
// capability.
var ErrNoZero = errors.New("raidprun: disk cannot zero a slot")

// Resume runs the steps of a stored plan r that are not done yet, phase
// after phase, the steps of a phase in parallel (at most cfg.Parallel at
// once). After each step succeeds it calls done with the step's index;
// the caller records the progress (the stored plan's Done by
// compare-and-swap) and an error from done stops the run. A step
// interrupted half-way is redone whole next time: copies and rebuilds
// write the same bytes to the same slot again, zeroes zero again.
// disks holds the plan's live disks and the failed ones whose Lstor a
// rebuild step reads.
func Resume(ctx context.Context, r raidp.Recovery, disks map[int]Disk, cfg Config, done func(i int) error) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	for _, phase := range r.Phases() {
		g, gctx := errgroup.WithContext(ctx)
		if cfg.Parallel > 0 {
			g.SetLimit(cfg.Parallel)
		}
		for _, i := range phase {
			if r.Steps[i].Done {
				continue
			}
			g.Go(func() error {
				if err := RunStep(gctx, r.Steps[i], disks, cfg); err != nil {
					return err
				}
				return done(i)
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// RunStep runs one step of a stored plan (raidp.Step): a copy, one side
// of a rebuild, or the zeroing of a slot.
func RunStep(ctx context.Context, s raidp.Step, disks map[int]Disk, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	to, err := disk(disks, s.To.Disk)
	if err != nil {
		return err
	}
	switch s.Kind {
	case raidp.StepCopy, raidp.StepExchange:
		if s.From == nil {
			return fmt.Errorf("%w: a copy of superchunk %d without a sender", ErrConfig, s.Superchunk)
		}
		from, err := disk(disks, s.From.Disk)
		if err != nil {
			return err
		}
		return copySuperchunk(ctx, raidp.Transfer{Superchunk: s.Superchunk, From: *s.From, To: s.To, Off: s.Off, Len: s.Len}, from, to, cfg)
	case raidp.StepRebuild:
		if s.Rebuild == nil {
			return fmt.Errorf("%w: a rebuild of superchunk %d without a side", ErrConfig, s.Superchunk)
		}
		side := *s.Rebuild
		lst, mirrors, err := sideDisks(disks, side)
		if err != nil {
			return err
		}
		return rebuildSide(ctx, s.Superchunk, side, lst, mirrors, s.To, to, cfg)
	case raidp.StepZero:
		z, ok := to.(Zeroer)
		if !ok {
			return fmt.Errorf("%w: disk %d", ErrNoZero, s.To.Disk)
		}
		// From the end: each call that reaches the slot's high-water mark
		// lowers it to its own start (docs/design/raidp.md), so the slot
		// ends wholly below it and later writes skip the old-data read.
		// Front to back, only the last call would reach it.
		for end := cfg.Size; end > 0; {
			off := max(0, end-int64(cfg.Chunk))
			if err := z.Zero(ctx, s.To.Slot, off, end-off); err != nil {
				return fmt.Errorf("zero slot %d of disk %d: %w", s.To.Slot, s.To.Disk, err)
			}
			end = off
		}
		return nil
	}
	return fmt.Errorf("%w: step kind %q", ErrConfig, s.Kind)
}
