package raidp

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// RemirrorNaive is the baseline the matching is measured against (the
// paper's "naive allocation", §3.3): each superchunk of the failed disks,
// in ID order, goes to a receiver drawn uniformly at random among the live
// disks with a free slot that keep 1-sharing — without balancing, so a
// receiver may get several superchunks and the copies to it run one after
// another. Cost is the number of transfers to the busiest receiver. It
// returns ErrLost or ErrNoAssignment (a draw left a superchunk no
// receiver) like Remirror.
func RemirrorNaive(l Layout, failed []int, rng *rand.Rand) (Remirroring, error) {
	if err := l.Check(); err != nil {
		return Remirroring{}, err
	}
	dead := make([]bool, l.Disks)
	for _, d := range failed {
		if d < 0 || d >= l.Disks {
			return Remirroring{}, fmt.Errorf("%w: disk %d not in a group of %d", ErrBadInput, d, l.Disks)
		}
		dead[d] = true
	}
	after := Layout{Disks: l.Disks, Slots: l.Slots, Superchunks: slices.Clone(l.Superchunks)}
	used := make(map[Place]bool)
	share := make(map[[2]int]bool)
	for _, s := range l.Superchunks {
		a, b := s.Replicas[0].Disk, s.Replicas[1].Disk
		for _, p := range s.Replicas {
			used[p] = true
		}
		if !dead[a] && !dead[b] {
			share[[2]int{min(a, b), max(a, b)}] = true
		}
	}
	free := func(d int) int {
		for s := range l.Slots {
			if !used[Place{d, s}] {
				return s
			}
		}
		return -1
	}
	var plan Remirroring
	got := make(map[int]int64)
	for i, s := range after.Superchunks {
		a, b := dead[s.Replicas[0].Disk], dead[s.Replicas[1].Disk]
		if a && b {
			return Remirroring{}, fmt.Errorf("%w: superchunk %d", ErrLost, s.ID)
		}
		if !a && !b {
			continue
		}
		x := 0 // the dead replica
		if b {
			x = 1
		}
		from := s.Replicas[1-x]
		var cand []int
		for d := range l.Disks {
			if !dead[d] && d != from.Disk && !share[[2]int{min(d, from.Disk), max(d, from.Disk)}] && free(d) >= 0 {
				cand = append(cand, d)
			}
		}
		if len(cand) == 0 {
			return Remirroring{}, fmt.Errorf("%w: no receiver left for superchunk %d", ErrNoAssignment, s.ID)
		}
		r := cand[rng.IntN(len(cand))]
		to := Place{r, free(r)}
		used[to] = true
		share[[2]int{min(r, from.Disk), max(r, from.Disk)}] = true
		after.Superchunks[i].Replicas[x] = to
		plan.Transfers = append(plan.Transfers, Transfer{Superchunk: s.ID, From: from, To: to})
		got[r]++
		plan.Cost = max(plan.Cost, got[r])
	}
	plan.After = after
	return plan, nil
}
