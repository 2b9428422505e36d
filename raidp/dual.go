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
	// Lost is the superchunk A and B shared, if Shared; Sides rebuild it,
	// side i into Targets[i].
	//
	// With two sides the targets are two disks (a split rebuild): each
	// receives half the superchunk, so the critical state — bytes with no
	// copy but what the Lstors imply — ends after half a superchunk has
	// crossed each target's link instead of a whole one across one; Swap
	// then copies each half to the other target, and Targets[0] and
	// Targets[1] are the superchunk's new pair. With one side (one Lstor
	// left), or when no two disks can take the halves, both sides write
	// to one target, where the superchunk lives alone (protected by its
	// Lstor parity) until Remirror copies it to a second disk.
	Shared  bool
	Lost    int
	Sides   []Side
	Targets []Place
	Swap    []Transfer
	// Remirror re-mirrors every other superchunk A and B held (and Lost,
	// from its one target, if the rebuild was not split) in two steps run
	// one after the other: A's superchunks, then B's, each step a
	// single-failure re-mirroring with one superchunk per receiver. The
	// targets receive nothing else.
	Remirror [2]Remirroring
	// After is the layout once the plan is done.
	After Layout
}

// Split reports whether the rebuild writes its halves to two targets.
func (p DualPlan) Split() bool { return len(p.Targets) == 2 && p.Targets[0] != p.Targets[1] }

// maxSplitCandidates bounds the target pairs Dual tries for a split
// rebuild: pairs of its cheapest candidates only, so that a group with no
// pair that leaves the re-mirroring a solution costs a few dozen plans,
// not one per pair of N disks.
const maxSplitCandidates = 8

// Dual plans the recovery from the failure of disks a and b with
// superchunks of size bytes. lstorOK says whether the Lstors of a and b
// survive; with both, the two sides rebuild half the superchunk each, in
// parallel, each into its own target when two live disks can take the
// halves (DualPlan.Targets, Swap); with one, that side rebuilds it all;
// with none the superchunk is lost (ErrLost). Targets are the cheapest live
// disks (by cost, as in Remirror, disks that read for a side last) with a
// free slot for which the re-mirroring still has a solution; two targets
// must not already share a superchunk (they become Lost's pair). Writes to
// the lost superchunk must be diverted until the rebuild is done: the
// Lstor parity must match the mirrors it is XORed with.
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
	// reads reports whether d reads for side i (holds a mirror it XORs).
	reads := func(d, i int) bool {
		return i < len(sides) && slices.ContainsFunc(sides[i].Reads, func(p Place) bool { return p.Disk == d })
	}
	// Candidate targets, cheapest first; disks that read for a side come
	// last (legal, but their links and disks already carry the rebuild's
	// reads), those reading for both after those reading for one.
	var cand []int
	for d := range l.Disks {
		if d != a && d != b && !slices.Contains(busy, d) && l.freeSlot(d) >= 0 {
			cand = append(cand, d)
		}
	}
	readsFor := func(d int) int { return btoi(reads(d, 0)) + btoi(reads(d, 1)) }
	slices.SortStableFunc(cand, func(p, q int) int {
		return cmp.Or(cmp.Compare(readsFor(p), readsFor(q)), cmp.Compare(rank[p], rank[q]))
	})
	// try plans the rebuild into targets (one per side, or one for all):
	// Lost's replicas become the targets, the re-mirroring must still have
	// a solution.
	try := func(targets []Place) error {
		moved := Layout{Disks: l.Disks, Slots: l.Slots, Superchunks: slices.Clone(l.Superchunks)}
		i, _ := slices.BinarySearchFunc(moved.Superchunks, x.ID, func(s Superchunk, id int) int { return s.ID - id })
		busy := slices.Clone(busy)
		for _, t := range targets {
			busy = append(busy, t.Disk)
		}
		if len(targets) == 2 {
			moved.Superchunks[i].Replicas = [2]Place{targets[0], targets[1]}
		} else {
			onB, _ := x.On(b) // stays, so Remirror copies the superchunk on from the target
			moved.Superchunks[i].Replicas = [2]Place{targets[0], onB}
		}
		return plan.remirrorBoth(moved, cost, busy)
	}
	var lastErr error = fmt.Errorf("%w: no live disk has a free slot for superchunk %d", ErrNoAssignment, x.ID)
	if len(sides) == 2 {
		short := cand[:min(len(cand), maxSplitCandidates)]
		for i, t0 := range short {
			for _, t1 := range short[i+1:] {
				if _, ok := l.Shared(t0, t1); ok {
					continue
				}
				// Each target takes the side it does not read for, if one
				// order has fewer such clashes.
				d0, d1 := t0, t1
				if btoi(reads(t0, 0))+btoi(reads(t1, 1)) > btoi(reads(t0, 1))+btoi(reads(t1, 0)) {
					d0, d1 = t1, t0
				}
				targets := []Place{{Disk: d0, Slot: l.freeSlot(d0)}, {Disk: d1, Slot: l.freeSlot(d1)}}
				if err := try(targets); err != nil {
					lastErr = err
					continue
				}
				plan.Targets = targets
				plan.Swap = []Transfer{
					{Superchunk: x.ID, From: targets[0], To: targets[1], Off: sides[0].Off, Len: sides[0].Len},
					{Superchunk: x.ID, From: targets[1], To: targets[0], Off: sides[1].Off, Len: sides[1].Len},
				}
				return plan, nil
			}
		}
	}
	for _, t := range cand {
		target := Place{Disk: t, Slot: l.freeSlot(t)}
		if err := try([]Place{target}); err != nil {
			lastErr = err
			continue
		}
		for range sides {
			plan.Targets = append(plan.Targets, target)
		}
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
