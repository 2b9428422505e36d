package cold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"cairn"
	"cairn/layout/gp"
	"cairn/placement"
)

// RebuildBudget is the weight budget (units of 4 MiB, gp.Weight) of the
// export job's rebuild of a lost disk of a group.
const RebuildBudget = 64

// repairGroups rebuilds, for every group that has one, a disk the
// cluster map holds lost (down or out) onto a spare disk (writable, not
// in the group, on a node with the fewest of the group's disks), and
// saves the group with the spare in the lost disk's place. It runs in the
// export job, so no export of the group overlaps it (an export leaves a
// group with a disk that is not writable alone). A crash in the middle
// leaves the group's state as it was: the next pass rebuilds again.
func (e *Exporter) repairGroups(ctx context.Context, st *ExportProgress) error {
	disks, err := e.cfg.Meta.Disks(ctx)
	if err != nil {
		return err
	}
	byID := map[cairn.DiskID]cairn.Disk{}
	for _, d := range disks {
		byID[d.ID] = d
	}
	var failed error
	for n := range e.cfg.Groups {
		s, err := LoadState(ctx, e.cfg.Meta, GroupID(e.cfg.Policy, n), e.cfg.Nodes)
		if errors.Is(err, cairn.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for pos, id := range s.Disks {
			d, known := byID[id]
			if known && !d.State.Lost() {
				continue
			}
			if err := e.rebuildDisk(ctx, s, pos, disks, byID); err != nil {
				e.cfg.Log.Warn("cold: rebuilding a lost disk of a group failed", "group", s.ID, "disk", id, "err", err)
				failed = errors.Join(failed, err)
				break
			}
			st.Rebuilt++
		}
	}
	return failed
}

// rebuildDisk rebuilds the disk at position pos of group s onto a spare
// and saves the group.
func (e *Exporter) rebuildDisk(ctx context.Context, s *State, pos int, disks []cairn.Disk, byID map[cairn.DiskID]cairn.Disk) error {
	lost := s.Disks[pos]
	nodes := map[cairn.NodeID]int{}
	in := map[cairn.DiskID]bool{}
	for i, id := range s.Disks {
		in[id] = true
		if i != pos {
			nodes[byID[id].Node]++
		}
	}
	spare, ok := placement.Spare(disks, s.ID+"/"+string(lost),
		func(d cairn.Disk) bool { return d.Writable() && !in[d.ID] },
		func(d cairn.Disk) int { return nodes[d.Node] })
	if !ok {
		return fmt.Errorf("%w: no writable disk outside group %s to rebuild %s onto", cairn.ErrUnavailable, s.ID, lost)
	}
	avail := make([]bool, len(s.Disks))
	for i, id := range s.Disks {
		avail[i] = i != pos && byID[id].State.Readable()
	}
	d, err := e.doubtOf(ctx, s, pos)
	if err != nil {
		return err
	}
	e.cfg.Log.Info("cold: rebuilding a lost disk of a group", "group", s.ID, "lost", lost, "onto", spare, "export_in_doubt", d != nil)
	if err := s.rebuildDoubt(ctx, pos, spare, avail, NewBudget(RebuildBudget), d); err != nil {
		s.Disks[pos] = lost
		return err
	}
	return s.Save(ctx, e.cfg.Meta)
}

// doubtOf returns what the rebuild of the disk at position pos of group s
// must not trust (doubt): nil unless an export into the group was
// interrupted before any object of its batch committed. Then the rows and
// pages of its intent are in doubt, and with them the committed pieces the
// lost disk holds there, found by paging through the group's membership
// records (only in this rare case).
func (e *Exporter) doubtOf(ctx context.Context, s *State, pos int) (*doubt, error) {
	raw, err := e.cfg.Meta.ColdGet(ctx, intentKey(s.ID))
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var in intent
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("%w: intent of cold group %s: %v", cairn.ErrCorrupt, s.ID, err)
	}
	batch := map[string]bool{}
	for _, o := range in.Objects {
		if _, ok, err := e.committed(ctx, s, o); err != nil || ok {
			return nil, err // a commit: every row was written
		}
		batch[o.Version] = true
	}
	d := &doubt{rows: map[[2]uint32]bool{}, pages: map[int64]bool{}}
	for _, r := range in.Rows {
		d.rows[r] = true
	}
	for _, p := range in.Pages {
		d.pages[p] = true
	}
	if pos >= s.PG.K {
		return d, nil // parity holds no piece
	}
	inDoubt := func(l gp.Location) bool { return d.holds(s.PG.Geo, l) }
	for after := ""; ; {
		page, more, err := e.cfg.Meta.ColdPage(ctx, memberPrefix(s.ID), after, sweepPage)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			after = r.Key
			var o intentObject
			if err := json.Unmarshal(r.Value, &o); err != nil {
				return nil, fmt.Errorf("%w: membership record %s: %v", cairn.ErrCorrupt, r.Key, err)
			}
			if o.Disk != pos || batch[o.Version] {
				continue
			}
			locs, err := s.PG.Pieces(o.record())
			if err != nil {
				return nil, fmt.Errorf("%w: membership record %s: %v", cairn.ErrCorrupt, r.Key, err)
			}
			if !slices.ContainsFunc(locs, inDoubt) {
				continue
			}
			rec, ok, err := e.committed(ctx, s, o)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // not (or no longer) stored: its slots hold nothing to keep
			}
			for i, l := range locs {
				if inDoubt(l) {
					d.pieces = append(d.pieces, checkedPiece{loc: l, sum: rec.Sums[i]})
				}
			}
		}
		if !more || len(page) == 0 {
			return d, nil
		}
	}
}
