package cold

import (
	"context"
	"errors"
	"fmt"

	"cairn"
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
	e.cfg.Log.Info("cold: rebuilding a lost disk of a group", "group", s.ID, "lost", lost, "onto", spare)
	if err := s.Rebuild(ctx, pos, spare, avail, NewBudget(RebuildBudget)); err != nil {
		s.Disks[pos] = lost
		return err
	}
	return s.Save(ctx, e.cfg.Meta)
}
