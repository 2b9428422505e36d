package raidp

import (
	"cmp"
	"fmt"
	"slices"
)

// Side is one way of rebuilding (part of) a lost superchunk after a dual
// failure (paper §3.3): the parity on the Lstor of failed disk Lstor, XORed
// with each of that disk's other superchunks, read from their surviving
// mirrors Reads, over the byte range [Off, Off+Len) of the superchunk (the
// same range of the Lstor's parity and of every read).
type Side struct {
	Lstor int     `json:"lstor"`
	Reads []Place `json:"reads"`
	Off   int64   `json:"off"`
	Len   int64   `json:"len"`
}

// DualPlan is the recovery plan after disks A and B failed together.
type DualPlan struct {
	A, B int
	// Lost is the superchunk A and B shared, if Shared; it is rebuilt by
	// Sides into Target, where it lives alone (protected by Target's Lstor
	// parity) until Remirror copies it to a second disk.
	Shared bool
	Lost   int
	Target Place
	Sides  []Side
	// Remirror re-mirrors every superchunk A and B held, Lost included
	// (from Target), in two steps run one after the other: A's superchunks,
	// then B's (Lost among them), each step a single-failure re-mirroring
	// with one superchunk per receiver. Target receives nothing else.
	Remirror [2]Remirroring
	// After is the layout once the plan is done.
	After Layout
}

// Dual plans the recovery from the failure of disks a and b with
// superchunks of size bytes. lstorOK says whether the Lstors of a and b
// survive; with both, the two sides rebuild half the superchunk each, in
// parallel; with one, that side rebuilds it all; with none the superchunk is
// lost (ErrLost). The rebuild target is the cheapest live disk (by cost, as
// in Remirror) with a free slot for which the re-mirroring still has a
// solution. Writes to the lost superchunk must be diverted until the
// rebuild is done: the Lstor parity must match the mirrors it is XORed with.
//
// busy disks neither receive nor host the rebuild (e.g. disks already out
// of the group after an earlier failure).
func Dual(l Layout, a, b int, size int64, lstorOK [2]bool, cost []int64, busy ...int) (DualPlan, error) {
	if err := l.Check(); err != nil {
		return DualPlan{}, err
	}
	if a == b || a < 0 || b < 0 || a >= l.Disks || b >= l.Disks || size < 1 {
		return DualPlan{}, fmt.Errorf("%w: disks %d and %d of %d, superchunk size %d", ErrBadInput, a, b, l.Disks, size)
	}
	plan := DualPlan{A: a, B: b}
	x, shared := l.Shared(a, b)
	if !shared {
		return plan, plan.remirrorBoth(l, cost, busy)
	}
	plan.Shared, plan.Lost = true, x.ID
	var sides []Side
	for i, d := range []int{a, b} {
		if !lstorOK[i] {
			continue
		}
		s := Side{Lstor: d}
		for _, o := range l.OnDisk(d) {
			if o.ID == x.ID {
				continue
			}
			p, _ := o.Other(d) // not on the other failed disk: 1-sharing
			s.Reads = append(s.Reads, p)
		}
		sides = append(sides, s)
	}
	if len(sides) == 0 {
		return DualPlan{}, fmt.Errorf("%w: superchunk %d of disks %d and %d, and both their Lstors", ErrLost, x.ID, a, b)
	}
	half := (size + int64(len(sides)) - 1) / int64(len(sides))
	for i := range sides {
		sides[i].Off = int64(i) * half
		sides[i].Len = min(half, size-sides[i].Off)
	}
	plan.Sides = sides
	rank := cost // orders the candidate targets; nil: each step's own load
	if rank == nil {
		for _, c := range l.Load() {
			rank = append(rank, int64(c))
		}
	}
	if len(rank) != l.Disks {
		return DualPlan{}, fmt.Errorf("%w: %d costs for %d disks", ErrBadInput, len(rank), l.Disks)
	}
	// Candidate targets, cheapest first.
	var cand []int
	for d := range l.Disks {
		if d != a && d != b && !slices.Contains(busy, d) && l.freeSlot(d) >= 0 {
			cand = append(cand, d)
		}
	}
	// Disks sharing a superchunk with b come last: one would hold the
	// rebuilt superchunk beside b's mirror on it (legal, b is going, but
	// the disk is also a reader of b's side of the rebuild).
	sharesB := func(d int) bool { _, ok := l.Shared(d, b); return ok }
	slices.SortStableFunc(cand, func(p, q int) int {
		return cmp.Or(cmp.Compare(btoi(sharesB(p)), btoi(sharesB(q))), cmp.Compare(rank[p], rank[q]))
	})
	var lastErr error = fmt.Errorf("%w: no live disk has a free slot for superchunk %d", ErrNoAssignment, x.ID)
	for _, t := range cand {
		target := Place{Disk: t, Slot: l.freeSlot(t)}
		moved := Layout{Disks: l.Disks, Slots: l.Slots, Superchunks: slices.Clone(l.Superchunks)}
		i, _ := slices.BinarySearchFunc(moved.Superchunks, x.ID, func(s Superchunk, id int) int { return s.ID - id })
		onB, _ := x.On(b) // stays, so Remirror copies the superchunk on from target
		moved.Superchunks[i].Replicas = [2]Place{target, onB}
		if err := plan.remirrorBoth(moved, cost, append([]int{t}, busy...)); err != nil {
			lastErr = err
			continue
		}
		plan.Target = target
		return plan, nil
	}
	return DualPlan{}, lastErr
}

// remirrorBoth plans the two re-mirroring steps of p from l: A's
// superchunks, then B's, each the cheapest matching given the step before.
// When that greedy order leaves B's step without an assignment (a group
// whose live disks have exactly the free slots the lost replicas need),
// both disks' superchunks are matched at once, every receiver taking at
// most one, and the result split into the two steps.
func (p *DualPlan) remirrorBoth(l Layout, cost []int64, busy []int) error {
	failed := []int{p.A, p.B}
	first, err := remirror(l, failed, []int{p.A}, cost, busy)
	if err != nil {
		return fmt.Errorf("re-mirroring disk %d: %w", p.A, err)
	}
	second, err := remirror(first.After, failed, []int{p.B}, cost, busy)
	if err == nil {
		p.Remirror, p.After = [2]Remirroring{first, second}, second.After
		return nil
	}
	both, berr := remirror(l, failed, failed, cost, busy)
	if berr != nil {
		return fmt.Errorf("re-mirroring disk %d after disk %d: %w; both at once: %w", p.B, p.A, err, berr)
	}
	// Split by the failed disk each superchunk leaves: the transfers of A's
	// step, then B's (the lost superchunk, on neither any more, is B's).
	var steps [2]Remirroring
	mid := Layout{Disks: l.Disks, Slots: l.Slots, Superchunks: slices.Clone(l.Superchunks)}
	for _, t := range both.Transfers {
		i, _ := slices.BinarySearchFunc(mid.Superchunks, t.Superchunk, func(s Superchunk, id int) int { return s.ID - id })
		if _, onA := l.Superchunks[i].On(p.A); !onA {
			steps[1].Transfers = append(steps[1].Transfers, t)
			steps[1].Cost += cost1(l, cost, t.To.Disk)
			continue
		}
		steps[0].Transfers = append(steps[0].Transfers, t)
		steps[0].Cost += cost1(l, cost, t.To.Disk)
		s := &mid.Superchunks[i]
		for x := range s.Replicas {
			if s.Replicas[x].Disk == p.A {
				s.Replicas[x] = t.To
			}
		}
	}
	steps[0].After, steps[1].After = mid, both.After
	p.Remirror, p.After = steps, both.After
	return nil
}

// cost1 is the cost of receiving one superchunk on disk d, as remirror
// counts it (cost, or nil: the disk's load).
func cost1(l Layout, cost []int64, d int) int64 {
	if cost != nil {
		return cost[d]
	}
	return int64(l.Load()[d])
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
