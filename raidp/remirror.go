package raidp

import (
	"errors"
	"fmt"
	"slices"
)

// Errors of planning a recovery.
var (
	// ErrNoAssignment: no receiver assignment keeps 1-sharing with one
	// superchunk per receiver (too few free slots or too many sharing
	// pairs: the paper's (N−f)(N−f−1) bound, §3.1).
	ErrNoAssignment = errors.New("raidp: no re-mirroring assignment keeps 1-sharing")
	// ErrLost: a superchunk lost both replicas and Remirror cannot copy it;
	// plan it with Dual first.
	ErrLost = errors.New("raidp: superchunk lost both replicas")
	// ErrBadInput: disks or costs out of range.
	ErrBadInput = errors.New("raidp: bad recovery input")
)

// maxBranches bounds the branch-and-bound search over mutual transfers.
const maxBranches = 1 << 12

// Transfer is one re-mirroring copy: superchunk Superchunk is read from its
// surviving replica From and written to To, a free slot of the receiver.
// Len 0 copies the whole superchunk; otherwise the byte range [Off,
// Off+Len) only (a split rebuild's exchange of halves, DualPlan.Swap).
type Transfer struct {
	Superchunk int
	From, To   Place
	Off, Len   int64
}

// Remirroring is the plan after a failure: the transfers, their total
// cost, and the layout once they are done.
type Remirroring struct {
	Transfers []Transfer
	Cost      int64
	After     Layout
}

// Remirror plans the re-mirroring of every superchunk that lost one
// replica on the failed disks (paper §3.3, "Improving recovery time"): each
// is copied from its surviving replica (the sender) to a receiver chosen by
// a min-cost bipartite matching of superchunks to disks, where
//   - a receiver is a live disk with a free slot that is not the sender and
//     shares no superchunk with the sender among the live disks
//     (1-sharing);
//   - no receiver gets two superchunks (the copies run in parallel);
//   - no two transfers are mutual (s→r and r→s would make s and r share
//     two superchunks), the constraint a plain matching cannot express: the
//     search branches on each mutual pair the Hungarian algorithm returns,
//     forbidding one edge or the other, which stays exact;
//   - the cost of giving a receiver a superchunk is cost[receiver] (e.g. its
//     load); nil means its number of superchunks (Layout.Load). The
//     transfers' total cost is minimal.
//
// busy disks receive nothing (e.g. the target of a dual-failure rebuild).
// It returns ErrLost if a superchunk has no surviving replica,
// ErrNoAssignment if no assignment exists, ErrBadInput for disks or costs
// out of range (costs must be in 0..MaxCost).
func Remirror(l Layout, failed []int, cost []int64, busy ...int) (Remirroring, error) {
	return remirror(l, failed, failed, cost, busy)
}

// remirror is Remirror for the superchunks with a replica on the movers, a
// subset of the failed disks (a dual failure is recovered as two single
// failures, each with one superchunk per receiver).
func remirror(l Layout, failed, movers []int, cost []int64, busy []int) (Remirroring, error) {
	if l.Disks < 2 {
		return Remirroring{}, l.Check()
	}
	dead := make([]bool, l.Disks)
	for _, d := range slices.Concat(failed, busy) {
		if d < 0 || d >= l.Disks {
			return Remirroring{}, fmt.Errorf("%w: disk %d not in a group of %d", ErrBadInput, d, l.Disks)
		}
	}
	for _, d := range failed {
		dead[d] = true
	}
	// A failed disk may share two superchunks with a live one in a dual
	// plan's intermediate layout (the lost superchunk moved to its rebuild
	// target): it goes away with the failed disk.
	if err := l.check(dead); err != nil {
		return Remirroring{}, err
	}
	if cost == nil {
		for _, c := range l.Load() {
			cost = append(cost, int64(c))
		}
	}
	if len(cost) != l.Disks {
		return Remirroring{}, fmt.Errorf("%w: %d costs for %d disks", ErrBadInput, len(cost), l.Disks)
	}
	for d, c := range cost {
		if c < 0 || c > MaxCost {
			return Remirroring{}, fmt.Errorf("%w: cost %d of disk %d outside 0..%d", ErrBadInput, c, d, MaxCost)
		}
	}
	// The items: superchunks with one replica on a failed disk.
	type item struct {
		sc   int // index into l.Superchunks
		from Place
	}
	var items []item
	for i, s := range l.Superchunks {
		a, b := dead[s.Replicas[0].Disk], dead[s.Replicas[1].Disk]
		switch {
		case a && b:
			return Remirroring{}, fmt.Errorf("%w: superchunk %d (disks %d and %d)", ErrLost, s.ID, s.Replicas[0].Disk, s.Replicas[1].Disk)
		case a && slices.Contains(movers, s.Replicas[0].Disk):
			items = append(items, item{i, s.Replicas[1]})
		case b && slices.Contains(movers, s.Replicas[1].Disk):
			items = append(items, item{i, s.Replicas[0]})
		}
	}
	// The receivers: live, not busy, with a free slot.
	var recv []int
	free := make(map[int]int)
	for d := range l.Disks {
		if dead[d] || slices.Contains(busy, d) {
			continue
		}
		if s := l.freeSlot(d); s >= 0 {
			recv = append(recv, d)
			free[d] = s
		}
	}
	plan := Remirroring{After: l}
	if len(items) == 0 {
		return plan, nil
	}
	if len(items) > len(recv) {
		return Remirroring{}, fmt.Errorf("%w: %d superchunks to re-mirror, %d disks with a free slot", ErrNoAssignment, len(items), len(recv))
	}
	// Sharing among live disks only: what the failed disks shared goes
	// away with them.
	share := make([]map[int]bool, l.Disks)
	for d := range share {
		share[d] = make(map[int]bool)
	}
	for _, s := range l.Superchunks {
		a, b := s.Replicas[0].Disk, s.Replicas[1].Disk
		if !dead[a] && !dead[b] {
			share[a][b], share[b][a] = true, true
		}
	}
	base := make([][]int64, len(items))
	for i, it := range items {
		base[i] = make([]int64, len(recv))
		for j, r := range recv {
			if r == it.from.Disk || share[it.from.Disk][r] {
				base[i][j] = forbidden
			} else {
				base[i][j] = cost[r]
			}
		}
	}
	// Branch and bound over mutual pairs.
	best, bestCost := []int(nil), forbidden
	branches := 0
	var search func(c [][]int64) error
	search = func(c [][]int64) error {
		if branches++; branches > maxBranches {
			return fmt.Errorf("%w: search exceeded %d branches", ErrNoAssignment, maxBranches)
		}
		asg := hungarian(c, len(recv))
		var total int64
		for i, j := range asg {
			total += c[i][j]
		}
		if total >= forbidden || total >= bestCost {
			return nil // infeasible, or no better than the best found
		}
		// A mutual pair: item i from s to r, item k from r to s.
		for i, j := range asg {
			for k, jk := range asg {
				if items[i].from.Disk == recv[jk] && items[k].from.Disk == recv[j] {
					for _, e := range [][2]int{{i, j}, {k, jk}} {
						cc := make([][]int64, len(c))
						for x := range c {
							cc[x] = slices.Clone(c[x])
						}
						cc[e[0]][e[1]] = forbidden
						if err := search(cc); err != nil {
							return err
						}
					}
					return nil
				}
			}
		}
		best, bestCost = asg, total
		return nil
	}
	if err := search(base); err != nil {
		return Remirroring{}, err
	}
	if best == nil {
		return Remirroring{}, fmt.Errorf("%w: %d superchunks, %d candidate receivers", ErrNoAssignment, len(items), len(recv))
	}
	after := Layout{Disks: l.Disks, Slots: l.Slots, Superchunks: slices.Clone(l.Superchunks)}
	for i, j := range best {
		it, r := items[i], recv[j]
		to := Place{Disk: r, Slot: free[r]}
		plan.Transfers = append(plan.Transfers, Transfer{Superchunk: l.Superchunks[it.sc].ID, From: it.from, To: to})
		s := &after.Superchunks[it.sc]
		for x := range s.Replicas {
			if s.Replicas[x] != to && dead[s.Replicas[x].Disk] {
				s.Replicas[x] = to
			}
		}
	}
	plan.Cost, plan.After = bestCost, after
	return plan, nil
}
