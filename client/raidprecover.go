package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
// changed meanwhile (another recovery), raidp.ErrLost when the data
// cannot be recovered.
func (c *Client) RecoverRAIDP(ctx context.Context, failed []cairn.DiskID) (raidp.Group, error) {
	rm, rd, err := c.raidp()
	if err != nil {
		return raidp.Group{}, err
	}
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		return raidp.Group{}, err
	}
	var idx []int
	for _, f := range failed {
		i := slices.IndexFunc(g.Disks, func(d raidp.GroupDisk) bool { return d.ID == string(f) })
		if i < 0 {
			return raidp.Group{}, fmt.Errorf("%w: disk %s is not in RAIDP group %s", cairn.ErrInvalid, f, g.Name)
		}
		if !slices.Contains(g.Out, i) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return g, nil // already recovered
	}
	var divert []int
	for _, d := range idx {
		for _, s := range g.Layout.OnDisk(d) {
			divert = append(divert, s.ID)
		}
	}
	if err := c.setDivert(ctx, rm, g.Name, divert, true); err != nil {
		return raidp.Group{}, err
	}
	disks := map[int]raidprun.Disk{}
	lstorOK := map[int]bool{}
	for i, d := range g.Disks {
		if slices.Contains(g.Out, i) {
			continue
		}
		disks[i] = raidprun.Remote(ctx, rd, cairn.DiskID(d.ID))
		if slices.Contains(idx, i) {
			lstorOK[i] = rd.ReadLstor(ctx, cairn.DiskID(d.ID), make([]byte, 1), 0) == nil
		}
	}
	plan, err := c.storeRecovery(ctx, rm, g, idx, lstorOK)
	if err != nil {
		return raidp.Group{}, fmt.Errorf("recovering RAIDP group %s from %v: %w", g.Name, failed, err)
	}
	done := func(i int) error { return c.recoveryStepDone(ctx, rm, plan, i) }
	if err := raidprun.Resume(ctx, plan, disks, raidprun.Config{Size: g.Size, Chunk: c.cfg.RAIDPRecoveryChunk, Parallel: 4}, done); err != nil {
		return raidp.Group{}, fmt.Errorf("recovering RAIDP group %s from %v: %w", g.Name, failed, err)
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
	if err := c.setDivert(ctx, rm, g.Name, divert, false); err != nil {
		c.cfg.Logger.Warn("RAIDP superchunks stay diverted after a recovery", "group", g.Name, "superchunks", divert, "err", err)
	}
	return next, nil
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
// (cairn.ErrConflict if another plan replaced it).
func (c *Client) recoveryStepDone(ctx context.Context, rm RAIDPMeta, plan raidp.Recovery, i int) error {
	return rm.UpdateRAIDP(ctx, recoveryRecord(plan.Group), func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, fmt.Errorf("%w: the recovery plan of RAIDP group %s is gone", cairn.ErrConflict, plan.Group)
		}
		cur, err := decodeRecovery(old)
		if err != nil {
			return nil, err
		}
		if cur.Generation != plan.Generation || cur.Attempt != plan.Attempt || i >= len(cur.Steps) {
			return nil, fmt.Errorf("%w: the recovery plan of RAIDP group %s was replaced (generation %d attempt %d, running %d attempt %d)",
				cairn.ErrConflict, plan.Group, cur.Generation, cur.Attempt, plan.Generation, plan.Attempt)
		}
		cur.Steps[i].Done = true
		return json.Marshal(cur)
	})
}

// setDivert adds (on) or removes superchunks from the allocation
// record's diverted ones.
func (c *Client) setDivert(ctx context.Context, rm RAIDPMeta, group string, ids []int, on bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return rm.UpdateRAIDP(ctx, "alloc/"+group, func(old []byte) ([]byte, error) {
		var a RAIDPAlloc
		if old != nil {
			if err := json.Unmarshal(old, &a); err != nil {
				return nil, fmt.Errorf("%w: RAIDP allocation record of %s: %v", cairn.ErrCorrupt, group, err)
			}
		}
		if a.End == nil {
			a.End = map[int]int64{}
		}
		a.Divert = slices.DeleteFunc(a.Divert, func(s int) bool { return slices.Contains(ids, s) })
		if on {
			a.Divert = append(a.Divert, ids...)
			slices.Sort(a.Divert)
		}
		return json.Marshal(a)
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
