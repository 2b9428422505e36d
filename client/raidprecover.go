package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"cairn"
	"cairn/raidp"
	"cairn/repair/raidprun"
)

// RecoverRAIDP recovers the raidp group from the loss of one or two of
// its disks (docs/design/raidp.md, "In the cluster" and "Stored plan"):
// it diverts PUTs from every superchunk of the failed disks, stores the
// recovery plan (raidp.PlanRecovery: re-mirroring, and for two disks the
// rebuild of the superchunk they shared from their Lstors, if the nodes
// still serve them) in the record recovery/GROUP before any byte moves,
// runs its steps over the nodes recording each one done, stores the new
// group by compare-and-swap on its generation, and resumes PUTs. A
// recovery interrupted at any point is resumed from the stored plan by
// the next call (the same receivers, unfinished steps redone); a stored
// plan for other failed disks of the same generation is given up and the
// slots it may have written are zeroed first. It returns the group as
// stored. Errors: cairn.ErrConflict if the group or the stored plan
// changed meanwhile (another recovery; raidp.ErrStale when recording a
// step of a replaced plan), raidp.ErrLost when the data cannot be
// recovered. The director runs the same plan through the repair queue
// instead (QueueFailedRAIDP).
func (c *Client) RecoverRAIDP(ctx context.Context, failed []cairn.DiskID) (raidp.Group, error) {
	g, plan, err := c.PlanRAIDP(ctx, failed)
	if err != nil || plan == nil {
		return g, err
	}
	rm, rd, err := c.raidp()
	if err != nil {
		return raidp.Group{}, err
	}
	var mu sync.Mutex // guards plan.Steps[i].Done: done runs from the steps' goroutines
	done := func(i int) error {
		if err := c.recoveryStepDone(ctx, rm, *plan, i); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		plan.Steps[i].Done = true
		return nil
	}
	if err := raidprun.Resume(ctx, *plan, c.raidpDisks(ctx, rd, g), raidprun.Config{Size: g.Size, Chunk: c.cfg.RAIDPRecoveryChunk, Parallel: raidprun.RecoveryParallel}, done); err != nil {
		return raidp.Group{}, fmt.Errorf("recovering RAIDP group %s from %v: %w", g.Name, failed, err)
	}
	return c.CommitRAIDP(ctx, g, *plan)
}

// raidpDisks returns every disk of g not out of it, over the node
// protocol (the failed ones too: a rebuild reads their Lstors).
func (c *Client) raidpDisks(ctx context.Context, rd RAIDPDisks, g raidp.Group) map[int]raidprun.Disk {
	disks := map[int]raidprun.Disk{}
	for i, d := range g.Disks {
		if !slices.Contains(g.Out, i) {
			disks[i] = raidprun.Remote(ctx, rd, cairn.DiskID(d.ID))
		}
	}
	return disks
}

// PlanRAIDP is the first half of RecoverRAIDP: it diverts PUTs from the
// superchunks of the failed disks and returns the group and the plan to
// run, stored (the stored one resumed, or a new one stored by CAS). The
// plan is nil if the failed disks are out of the group already (nothing
// to do). Errors as RecoverRAIDP's.
func (c *Client) PlanRAIDP(ctx context.Context, failed []cairn.DiskID) (raidp.Group, *raidp.Recovery, error) {
	rm, rd, err := c.raidp()
	if err != nil {
		return raidp.Group{}, nil, err
	}
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		return raidp.Group{}, nil, err
	}
	var idx []int
	for _, f := range failed {
		i := slices.IndexFunc(g.Disks, func(d raidp.GroupDisk) bool { return d.ID == string(f) })
		if i < 0 {
			return raidp.Group{}, nil, fmt.Errorf("%w: disk %s is not in RAIDP group %s", cairn.ErrInvalid, f, g.Name)
		}
		if !slices.Contains(g.Out, i) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		// Already recovered. If that recovery died between storing the
		// group and clearing its diverts, they are stale (PUTs ignore
		// them): drop them from the record.
		if err := c.setDivert(ctx, rm, g.Name, g.Generation, nil, false); err != nil {
			return raidp.Group{}, nil, err
		}
		return g, nil, nil
	}
	divert := raidpDiverted(g, idx)
	if err := c.setDivert(ctx, rm, g.Name, g.Generation, divert, true); err != nil {
		return raidp.Group{}, nil, err
	}
	// A zeroer that claimed one of them before the divert finishes first
	// (docs/design/raidp.md, "Deletes and recovery").
	if err := c.awaitZeroing(ctx, rm, g.Name, divert); err != nil {
		return raidp.Group{}, nil, err
	}
	lstorOK := map[int]bool{}
	for _, i := range idx {
		lstorOK[i] = rd.ReadLstor(ctx, cairn.DiskID(g.Disks[i].ID), make([]byte, 1), 0) == nil
	}
	plan, err := c.storeRecovery(ctx, rm, g, idx, lstorOK)
	if err != nil {
		return raidp.Group{}, nil, fmt.Errorf("recovering RAIDP group %s from %v: %w", g.Name, failed, err)
	}
	return g, &plan, nil
}

// raidpDiverted lists the superchunks of g's disks idx.
func raidpDiverted(g raidp.Group, idx []int) []int {
	var divert []int
	for _, d := range idx {
		for _, s := range g.Layout.OnDisk(d) {
			divert = append(divert, s.ID)
		}
	}
	return divert
}

// CommitRAIDP is the last step of a recovery, once every step of plan
// is done: the group g (the generation plan was made from) is replaced by
// g.Recovered by CAS (cairn.ErrConflict if it changed meanwhile), and PUTs
// may use the recovered superchunks again. It returns the group stored.
func (c *Client) CommitRAIDP(ctx context.Context, g raidp.Group, plan raidp.Recovery) (raidp.Group, error) {
	rm, _, err := c.raidp()
	if err != nil {
		return raidp.Group{}, err
	}
	if !plan.Complete() || plan.Generation != g.Generation {
		return raidp.Group{}, fmt.Errorf("%w: the recovery plan of RAIDP group %s (generation %d) is not complete for generation %d",
			cairn.ErrInvalid, g.Name, plan.Generation, g.Generation)
	}
	next, err := g.Recovered(plan.After, plan.Failed...)
	if err != nil {
		return raidp.Group{}, err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return raidp.Group{}, err
	}
	err = rm.UpdateRAIDP(ctx, "groups/"+g.Name, func(old []byte) ([]byte, error) {
		cur, err := decodeGroup(old)
		if err != nil {
			return nil, err
		}
		if cur.Generation != g.Generation {
			return nil, fmt.Errorf("%w: RAIDP group %s is at generation %d, the recovery planned from %d", cairn.ErrConflict, g.Name, cur.Generation, g.Generation)
		}
		return b, nil
	})
	if err != nil {
		return raidp.Group{}, err
	}
	// The superchunks have two replicas again: writable.
	divert := raidpDiverted(g, plan.Failed)
	if err := c.setDivert(ctx, rm, g.Name, g.Generation, divert, false); err != nil {
		c.cfg.Logger.Warn("RAIDP superchunks stay diverted after a recovery", "group", g.Name, "superchunks", divert, "err", err)
	}
	return next, nil
}

// RAIDPQueue is where the director's RAIDP duty queues recovery steps:
// the repair queue (meta.Store has it).
type RAIDPQueue interface {
	PutRepairTask(ctx context.Context, t cairn.RepairTask) error
}

// QueueFailedRAIDP is the director's RAIDP duty through the repair queue
// (docs/design/raidp.md, "Through the repair queue"): for the disks of the
// group the cluster map holds failed it plans (or resumes) the stored
// recovery (PlanRAIDP), queues a repair task for every step of the first
// phase with steps left that is not queued yet (recorded in the plan:
// Step.Queued) — the repair workers run them (repair.Repairer) and record
// them done — and once every step is done commits the group
// (CommitRAIDP). It returns the failed disks (none: nothing to do) and
// whether the recovery was committed by this call.
func (c *Client) QueueFailedRAIDP(ctx context.Context, q RAIDPQueue, now time.Time) ([]cairn.DiskID, bool, error) {
	rm, _, err := c.raidp()
	if err != nil {
		return nil, false, nil // a client without RAIDP support has no group to look after
	}
	g, err := c.storedGroup(ctx, rm)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	disks, err := c.meta.Disks(ctx)
	if err != nil {
		return nil, false, err
	}
	failed := FailedRAIDPDisks(g, disks)
	if len(failed) == 0 {
		return nil, false, nil
	}
	g, plan, err := c.PlanRAIDP(ctx, failed)
	if err != nil || plan == nil {
		return failed, false, err
	}
	if plan.Complete() {
		_, err := c.CommitRAIDP(ctx, g, *plan)
		return failed, err == nil, err
	}
	for _, i := range plan.Next() {
		s := plan.Steps[i]
		if s.Queued {
			continue
		}
		ref := cairn.RAIDPTaskStep{Group: g.Name, Generation: plan.Generation, Attempt: plan.Attempt, Step: i, Kind: string(s.Kind)}
		risk := 1
		if s.Kind == raidp.StepRebuild {
			risk = 0 // the superchunk has no copy left but what the rebuild makes
		}
		t := cairn.RepairTask{ID: cairn.RAIDPRepairTaskID(ref), RAIDP: &ref, Policy: cairn.RAIDPPolicy, Risk: risk,
			Bytes: g.Size, Created: now}
		if s.Kind == raidp.StepRebuild {
			t.Bytes = s.Rebuild.Len
		} else if s.Len > 0 {
			t.Bytes = s.Len // a split rebuild's half
		}
		if err := q.PutRepairTask(ctx, t); err != nil {
			return failed, false, err
		}
		err := rm.UpdateRAIDP(ctx, recoveryRecord(g.Name), func(old []byte) ([]byte, error) {
			return raidp.UpdateStep(old, plan.Generation, plan.Attempt, i, func(s *raidp.Step) { s.Queued = true })
		})
		if err != nil {
			return failed, false, err
		}
	}
	return failed, false, nil
}

// recoveryRecord names the stored plan of group's recovery.
func recoveryRecord(group string) string { return "recovery/" + group }

// RAIDPRecovery returns the stored recovery plan of the group raidp
// objects go to (cairn.ErrNotFound: no recovery was ever planned). A plan
// whose generation is older than the group's is finished.
func (c *Client) RAIDPRecovery(ctx context.Context) (raidp.Recovery, error) {
	rm, _, err := c.raidp()
	if err != nil {
		return raidp.Recovery{}, err
	}
	b, err := rm.RAIDP(ctx, recoveryRecord(cmp.Or(c.cfg.RAIDPGroup, DefaultRAIDPGroup)))
	if err != nil {
		return raidp.Recovery{}, err
	}
	return decodeRecovery(b)
}

func decodeRecovery(b []byte) (raidp.Recovery, error) {
	r, err := raidp.DecodeRecovery(b)
	if err != nil {
		return raidp.Recovery{}, fmt.Errorf("%w: stored RAIDP recovery plan: %w", cairn.ErrCorrupt, err)
	}
	return r, nil
}

// storeRecovery returns the plan to run for g's failed disks: the stored
// one if it is for the same generation and disks (resumed), else a new
// one (raidp.PlanRecovery) stored first by compare-and-swap against the
// plan it replaces (cairn.ErrConflict if another recovery replaced it
// meanwhile).
func (c *Client) storeRecovery(ctx context.Context, rm RAIDPMeta, g raidp.Group, failed []int, lstorOK map[int]bool) (raidp.Recovery, error) {
	name := recoveryRecord(g.Name)
	var prev *raidp.Recovery
	b, err := rm.RAIDP(ctx, name)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
	case err != nil:
		return raidp.Recovery{}, err
	default:
		r, err := decodeRecovery(b)
		if err != nil {
			return raidp.Recovery{}, err
		}
		prev = &r
	}
	plan, err := raidp.PlanRecovery(g, failed, lstorOK, prev)
	if err != nil {
		return raidp.Recovery{}, err
	}
	if prev != nil && prev.Generation == plan.Generation && prev.Attempt == plan.Attempt {
		return plan, nil // resumed
	}
	nb, err := json.Marshal(plan)
	if err != nil {
		return raidp.Recovery{}, err
	}
	err = rm.UpdateRAIDP(ctx, name, func(old []byte) ([]byte, error) {
		if (old == nil) != (prev == nil) {
			return nil, fmt.Errorf("%w: the recovery plan of RAIDP group %s changed meanwhile", cairn.ErrConflict, g.Name)
		}
		if old != nil {
			cur, err := decodeRecovery(old)
			if err != nil {
				return nil, err
			}
			if cur.Generation != prev.Generation || cur.Attempt != prev.Attempt {
				return nil, fmt.Errorf("%w: the recovery plan of RAIDP group %s changed meanwhile", cairn.ErrConflict, g.Name)
			}
		}
		return nb, nil
	})
	if err != nil {
		return raidp.Recovery{}, err
	}
	c.cfg.Logger.Info("RAIDP recovery planned", "group", g.Name, "generation", plan.Generation, "attempt", plan.Attempt,
		"failed", plan.Failed, "steps", len(plan.Steps))
	return plan, nil
}

// recoveryStepDone records step i of plan done in the stored plan
// (raidp.ErrStale if another plan replaced it).
func (c *Client) recoveryStepDone(ctx context.Context, rm RAIDPMeta, plan raidp.Recovery, i int) error {
	return rm.UpdateRAIDP(ctx, recoveryRecord(plan.Group), func(old []byte) ([]byte, error) {
		return raidp.UpdateStep(old, plan.Generation, plan.Attempt, i, func(s *raidp.Step) { s.Done = true })
	})
}

// setDivert adds (on) or removes superchunks from the allocation
// record's diverted ones, for a recovery planned from group generation
// gen: diverts left by a recovery of an older generation (it died after
// storing the group, before clearing them) are dropped.
func (c *Client) setDivert(ctx context.Context, rm RAIDPMeta, group string, gen uint64, ids []int, on bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return updateAlloc(ctx, rm, group, func(a *RAIDPAlloc) error {
		if a.DivertGeneration != 0 && a.DivertGeneration < gen {
			a.Divert = nil
		}
		a.Divert = slices.DeleteFunc(a.Divert, func(s int) bool { return slices.Contains(ids, s) })
		if len(a.Divert) == 0 {
			a.DivertGeneration = 0
		}
		if on {
			a.DivertGeneration = gen
			a.Divert = append(a.Divert, ids...)
			slices.Sort(a.Divert)
		}
		return nil
	})
}

// FailedRAIDPDisks returns the disks of g, not out of it yet, that the
// cluster map holds down or out (or no longer lists): the ones a
// recovery must replace.
func FailedRAIDPDisks(g raidp.Group, disks []cairn.Disk) []cairn.DiskID {
	state := map[cairn.DiskID]cairn.DiskState{}
	for _, d := range disks {
		state[d.ID] = d.State
	}
	var out []cairn.DiskID
	for i, d := range g.Disks {
		if slices.Contains(g.Out, i) {
			continue
		}
		if st, ok := state[cairn.DiskID(d.ID)]; !ok || st == cairn.DiskDown || st == cairn.DiskOut {
			out = append(out, cairn.DiskID(d.ID))
		}
	}
	return out
}

// RecoverFailedRAIDP recovers the raidp group, if there is one, from its
// disks the cluster map holds failed (FailedRAIDPDisks): the director's
// duty. It returns the disks it recovered from (none: nothing to do).
func (c *Client) RecoverFailedRAIDP(ctx context.Context) ([]cairn.DiskID, error) {
	rm, _, err := c.raidp()
	if err != nil {
		return nil, nil // a client without RAIDP support has no group to look after
	}
	g, err := c.storedGroup(ctx, rm)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	disks, err := c.meta.Disks(ctx)
	if err != nil {
		return nil, err
	}
	failed := FailedRAIDPDisks(g, disks)
	if len(failed) == 0 {
		return nil, nil
	}
	if _, err := c.RecoverRAIDP(ctx, failed); err != nil {
		return nil, err
	}
	return failed, nil
}
