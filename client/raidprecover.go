package client

import (
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
// its disks (docs/design/raidp.md, "In the cluster"): it diverts PUTs
// from every superchunk of the failed disks, runs the recovery plan over
// the nodes (raidprun.Recover: re-mirroring, and for two disks the
// rebuild of the superchunk they shared from their Lstors, if the nodes
// still serve them), stores the new group by compare-and-swap on its
// generation, and resumes PUTs. It returns the group as stored. Errors:
// cairn.ErrConflict if the group changed meanwhile (another recovery),
// raidp.ErrLost when the data cannot be recovered.
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
		// Already recovered. If that recovery died between storing the
		// group and clearing its diverts, they are stale (PUTs ignore
		// them): drop them from the record.
		if err := c.setDivert(ctx, rm, g.Name, g.Generation, nil, false); err != nil {
			return raidp.Group{}, err
		}
		return g, nil
	}
	var divert []int
	for _, d := range idx {
		for _, s := range g.Layout.OnDisk(d) {
			divert = append(divert, s.ID)
		}
	}
	if err := c.setDivert(ctx, rm, g.Name, g.Generation, divert, true); err != nil {
		return raidp.Group{}, err
	}
	if err := c.awaitZeroing(ctx, rm, g.Name, divert); err != nil {
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
	next, err := raidprun.Recover(ctx, g, idx, lstorOK, disks, raidprun.Config{Size: g.Size, Parallel: 4})
	if err != nil {
		return raidp.Group{}, fmt.Errorf("recovering RAIDP group %s from %v: %w", g.Name, failed, err)
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
	if err := c.setDivert(ctx, rm, g.Name, g.Generation, divert, false); err != nil {
		c.cfg.Logger.Warn("RAIDP superchunks stay diverted after a recovery", "group", g.Name, "superchunks", divert, "err", err)
	}
	return next, nil
}

// setDivert adds (on) or removes superchunks from the allocation
// record's diverted ones, for a recovery planned from group generation
// gen: diverts left by a recovery of an older generation (it died after
// storing the group, before clearing them) are dropped.
func (c *Client) setDivert(ctx context.Context, rm RAIDPMeta, group string, gen uint64, ids []int, on bool) error {
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
