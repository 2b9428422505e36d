package placement

import (
	"fmt"
	"math"
	"slices"

	"cairn"
)

// Member reports whether a disk in state s belongs in the placement
// groups that Recompute makes: up, suspect or down (a down disk may
// return, and a PUT already avoids disks it cannot write), not draining
// or out (the operator is emptying it or took it out).
func Member(s cairn.DiskState) bool {
	return s == cairn.DiskUp || s == cairn.DiskSuspect || s == cairn.DiskDown
}

// Recompute returns the PG table of old.Width for the cluster in, changing
// as few of old's slots (a PG's disk for one shard index) as it can, and
// how many it changed (0: the table is old, unchanged). It is
// deterministic. The disks it uses are the members (Member); Input.Width
// is ignored. A slot changes only if
//
//   - its disk is no member any more (gone, draining, out);
//   - its PG has more slots on its node than it needs to: more than
//     ⌈Width/nodes⌉ (1 when the cluster has at least Width nodes; the
//     later slots change);
//   - its disk holds more slots than its quota allows: its share of the
//     table's slots in proportion to capacity, rounded up (the PGs with
//     the highest IDs give theirs up first), or a disk with fewer than
//     its share rounded down needs one that a disk at its share rounded
//     up can give.
//
// The freed slots, and those of new PGs, are filled as Compute fills
// them, preferring disks under their quota. A table Compute made for the
// same disks is a fixed point: it changes nothing. The table keeps its PGs and
// grows to ⌈members·PGsPerDisk/Width⌉ PGs when that is more (it never
// shrinks, so an object's PG keeps its ID). A changed table has Epoch
// old.Epoch+1. It fails with a *TooFewDisksError if fewer than Width
// disks are members.
func Recompute(old cairn.PGTable, in Input) (cairn.PGTable, int, error) {
	n := old.Width
	if n < 1 {
		return old, 0, fmt.Errorf("%w: placement width %d", cairn.ErrInvalid, n)
	}
	in.Width = n
	cands, nodes := candidates(in, func(d cairn.Disk) bool { return Member(d.State) })
	if len(cands) < n {
		return old, 0, &TooFewDisksError{Need: n, Have: len(cands)}
	}
	byID := make(map[cairn.DiskID]*cand, len(cands))
	for _, c := range cands {
		byID[c.disk.ID] = c
	}
	distinct := nodes >= n
	perNode := (n + nodes - 1) / nodes // the fewest a PG can keep on its fullest node
	count := max(len(old.PGs), pgCount(len(cands), in))
	t := cairn.PGTable{Width: n, Epoch: old.Epoch, PGs: make([]cairn.PG, count)}
	changed := 0
	for id := range count {
		pg := cairn.PG{ID: id, Disks: make([]cairn.DiskID, n)}
		if id < len(old.PGs) && len(old.PGs[id].Disks) == n {
			seen := map[cairn.NodeID]int{}
			for i, d := range old.PGs[id].Disks {
				c := byID[d]
				if c == nil || slices.Contains(pg.Disks[:i], d) || seen[c.node] >= perNode {
					continue // gone, or one slot too many on its node: refilled
				}
				seen[c.node]++
				pg.Disks[i] = d
				c.assigned++
				*c.nodeAssigned++
			}
		}
		t.PGs[id] = pg
	}
	// Quotas: every slot of the table shared by capacity weight, rounded
	// by largest remainder (ties by disk ID, the order of cands).
	lo, hi := quotas(cands, count*n)
	// Over-quota disks give up slots, from the highest PG ID down.
	for id := count - 1; id >= 0; id-- {
		pg := &t.PGs[id]
		for i := n - 1; i >= 0; i-- {
			c := byID[pg.Disks[i]]
			if c != nil && c.assigned > hi[c] {
				pg.Disks[i] = ""
				c.assigned--
				*c.nodeAssigned--
			}
		}
	}
	over := func(c *cand) bool { return c.assigned >= hi[c] }
	for id := range t.PGs {
		fill(&t.PGs[id], cands, perNode, over)
	}
	balance(t.PGs, cands, byID, lo, hi, perNode)
	for id := range t.PGs {
		if id < len(old.PGs) {
			for i, d := range t.PGs[id].Disks {
				if i >= len(old.PGs[id].Disks) || old.PGs[id].Disks[i] != d {
					changed++
				}
			}
		} else {
			changed += n
		}
	}
	t.DistinctNodes = distinct
	for _, pg := range t.PGs {
		seen := map[cairn.NodeID]bool{}
		for _, d := range pg.Disks {
			if seen[byID[d].node] {
				t.DistinctNodes = false
			}
			seen[byID[d].node] = true
		}
	}
	if changed == 0 && t.DistinctNodes == old.DistinctNodes {
		return old, 0, nil
	}
	t.Epoch = old.Epoch + 1
	return t, changed, nil
}

// balance moves slots from disks over their quota to disks under it
// where the failure domains allow — the under-quota disk's node holds
// fewer than perNode slots of the PG (not counting the one it replaces)
// and its zone and rack no more than the replaced disk's — which fill
// alone cannot do when a new node may take only perNode slots of each
// new PG. A move goes from a disk above its share rounded down (lo) to
// one below its share rounded up (hi), and one of them must be outside
// [lo, hi]. One slot at a time: the most loaded such disk gives one to
// the least loaded, from the PG with the highest ID that allows it,
// until no such pair is left.
func balance(pgs []cairn.PG, cands []*cand, byID map[cairn.DiskID]*cand, lo, hi map[*cand]int, perNode int) {
	for range len(pgs) * len(cands) { // each move narrows the spread; bounded
		var overs, unders []*cand
		for _, c := range cands {
			if c.assigned > lo[c] {
				overs = append(overs, c)
			}
			if c.assigned < hi[c] {
				unders = append(unders, c)
			}
		}
		slices.SortStableFunc(overs, func(a, b *cand) int { return (b.assigned - hi[b]) - (a.assigned - hi[a]) })
		slices.SortStableFunc(unders, func(a, b *cand) int { return (a.assigned - lo[a]) - (b.assigned - lo[b]) })
		legal := func(o, u *cand) bool { return o != u && (o.assigned > hi[o] || u.assigned < lo[u]) }
		if !balanceOne(pgs, overs, unders, legal, byID, perNode) {
			return
		}
	}
}

// balanceOne makes the first legal move of a slot from a disk of overs to
// one of unders (in their order) and reports whether there was one.
func balanceOne(pgs []cairn.PG, overs, unders []*cand, legal func(o, u *cand) bool, byID map[cairn.DiskID]*cand, perNode int) bool {
	for _, o := range overs {
		for _, u := range unders {
			if !legal(o, u) {
				continue
			}
			for id := len(pgs) - 1; id >= 0; id-- {
				pg := &pgs[id]
				at := slices.Index(pg.Disks, o.disk.ID)
				if at < 0 || slices.Contains(pg.Disks, u.disk.ID) {
					continue
				}
				nodes, racks, zones := 0, 0, 0
				for _, d := range pg.Disks {
					c := byID[d]
					if c == o {
						continue
					}
					if c.node == u.node {
						nodes++
					}
					if u.rack != "" && c.rack == u.rack {
						racks++
					}
					if u.zone != "" && c.zone == u.zone {
						zones++
					}
				}
				oRacks, oZones := 0, 0
				for _, d := range pg.Disks {
					c := byID[d]
					if c != o && o.rack != "" && c.rack == o.rack {
						oRacks++
					}
					if c != o && o.zone != "" && c.zone == o.zone {
						oZones++
					}
				}
				if nodes >= perNode || racks > oRacks || zones > oZones {
					continue
				}
				pg.Disks[at] = u.disk.ID
				o.assigned--
				*o.nodeAssigned--
				u.assigned++
				*u.nodeAssigned++
				return true
			}
		}
	}
	return false
}

// quotas shares slots over cands in proportion to their weights and
// returns each one's share rounded down and up.
func quotas(cands []*cand, slots int) (lo, hi map[*cand]int) {
	var sum float64
	for _, c := range cands {
		sum += c.weight
	}
	lo, hi = make(map[*cand]int, len(cands)), make(map[*cand]int, len(cands))
	for _, c := range cands {
		exact := float64(slots) * c.weight / sum
		lo[c], hi[c] = int(math.Floor(exact+1e-9)), int(math.Ceil(exact-1e-9))
	}
	return lo, hi
}
