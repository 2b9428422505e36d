package placement

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"

	"cairn"
)

// DefaultPGsPerDisk is how many PGs each disk joins on average.
const DefaultPGsPerDisk = 32

// Input is what a table is computed from.
type Input struct {
	Nodes []cairn.Node
	Disks []cairn.Disk // only writable (up) disks are used
	Width int          // n: disks per PG
	// PGsPerDisk is the average number of PGs per disk (default
	// DefaultPGsPerDisk); the table has ⌈disks·PGsPerDisk/n⌉ PGs.
	PGsPerDisk int
}

type cand struct {
	disk         cairn.Disk
	node         cairn.NodeID
	rack, zone   string
	weight       float64 // capacity share; ≥ 1e-9
	assigned     int
	nodeAssigned *int // PGs on the disk's node (spreads load over nodes)
}

// TooFewDisksError is the error of a placement that needs more writable
// disks than the cluster has. It wraps cairn.ErrUnavailable. Its text is
// the two counts and nothing else, so a gateway may show it to a client.
type TooFewDisksError struct {
	Need int // disks the stripe is wide
	Have int // writable disks in the cluster
}

func (e *TooFewDisksError) Error() string {
	return fmt.Sprintf("%v: placement needs %d writable disks, the cluster has %d", cairn.ErrUnavailable, e.Need, e.Have)
}

// Unwrap returns cairn.ErrUnavailable.
func (e *TooFewDisksError) Unwrap() error { return cairn.ErrUnavailable }

// Compute builds the PG table for in.Width. It fails with a
// *TooFewDisksError (cairn.ErrUnavailable) if fewer than Width disks are
// writable.
func Compute(in Input) (cairn.PGTable, error) {
	n := in.Width
	if n < 1 {
		return cairn.PGTable{}, fmt.Errorf("%w: placement width %d", cairn.ErrInvalid, n)
	}
	cands, nodes := candidates(in, func(d cairn.Disk) bool { return d.State.Writable() })
	if len(cands) < n {
		return cairn.PGTable{}, &TooFewDisksError{Need: n, Have: len(cands)}
	}
	count := pgCount(len(cands), in)
	t := cairn.PGTable{Width: n, DistinctNodes: nodes >= n}
	for id := range count {
		pg := cairn.PG{ID: id, Disks: make([]cairn.DiskID, n)}
		fill(&pg, cands, (n+nodes-1)/nodes, nil)
		t.PGs = append(t.PGs, pg)
	}
	return t, nil
}

// pgCount is the number of PGs of a table over disks disks:
// ⌈disks·PGsPerDisk/Width⌉, at least 1.
func pgCount(disks int, in Input) int {
	per := in.PGsPerDisk
	if per <= 0 {
		per = DefaultPGsPerDisk
	}
	return max(1, (disks*per+in.Width-1)/in.Width)
}

// candidates returns the disks of in that keep accepts, sorted by ID,
// with their failure domains and capacity weights, and how many nodes
// they are on.
func candidates(in Input, keep func(cairn.Disk) bool) ([]*cand, int) {
	nodes := make(map[cairn.NodeID]cairn.Node, len(in.Nodes))
	for _, nd := range in.Nodes {
		nodes[nd.ID] = nd
	}
	var cands []*cand
	perNode := map[cairn.NodeID]*int{}
	var maxCap int64 = 1
	for _, d := range in.Disks {
		if keep(d) {
			maxCap = max(maxCap, d.Capacity)
		}
	}
	for _, d := range in.Disks {
		if !keep(d) {
			continue
		}
		label := func(k string) string { return nodes[d.Node].Labels[k] }
		if perNode[d.Node] == nil {
			perNode[d.Node] = new(int)
		}
		w := float64(d.Capacity) / float64(maxCap)
		if d.Capacity <= 0 {
			w = 1 // unknown capacity: treat as the largest
		}
		cands = append(cands, &cand{disk: d, node: d.Node, rack: label(cairn.LabelRack), zone: label(cairn.LabelZone),
			weight: max(w, 1e-9), nodeAssigned: perNode[d.Node]})
	}
	slices.SortFunc(cands, func(a, b *cand) int { return cmp.Compare(a.disk.ID, b.disk.ID) })
	return cands, len(perNode)
}

// fill chooses a disk for every empty slot ("") of pg, in slot order,
// among cands not in pg yet, and counts each choice in its disk's and
// node's load. The preference is lexicographic: a node with fewer than
// perNode disks of the PG (⌈Width/nodes⌉: the fewest its fullest node
// can hold); fewest disks of the PG already in the candidate's zone,
// rack; then (if over is set) not over its quota; fewest in its node;
// then the least loaded disk, then the least loaded node; then a hash to
// spread ties.
func fill(pg *cairn.PG, cands []*cand, perNode int, over func(*cand) bool) {
	byID := make(map[cairn.DiskID]*cand, len(cands))
	for _, c := range cands {
		byID[c.disk.ID] = c
	}
	used := map[*cand]bool{}
	nodesUsed, racksUsed, zonesUsed := map[cairn.NodeID]int{}, map[string]int{}, map[string]int{}
	count := func(c *cand) {
		used[c] = true
		if c.zone != "" {
			zonesUsed[c.zone]++
		}
		if c.rack != "" {
			racksUsed[c.rack]++
		}
		nodesUsed[c.node]++
	}
	for _, d := range pg.Disks {
		if c := byID[d]; c != nil {
			count(c)
		}
	}
	for i, d := range pg.Disks {
		if d != "" {
			continue
		}
		var best *cand
		var bestKey [8]float64
		for _, c := range cands {
			if used[c] {
				continue
			}
			full, quota := 0.0, 0.0
			if nodesUsed[c.node] >= perNode {
				full = 1
			}
			if over != nil && over(c) {
				quota = 1
			}
			key := [8]float64{
				full, float64(zonesUsed[c.zone]), float64(racksUsed[c.rack]), quota, float64(nodesUsed[c.node]),
				float64(c.assigned+1) / c.weight, float64(*c.nodeAssigned), tie(pg.ID, c.disk.ID),
			}
			if best == nil || less(key, bestKey) {
				best, bestKey = c, key
			}
		}
		count(best)
		best.assigned++
		*best.nodeAssigned++
		pg.Disks[i] = best.disk.ID
	}
}

func less(a, b [8]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func tie(pg int, d cairn.DiskID) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", pg, d)
	return float64(h.Sum64() >> 11)
}

// PGFor returns the index of the PG an object version maps to in a table of
// count PGs: FNV-1a of bucket, key and version, modulo count.
func PGFor(bucket, key, version string, count int) int {
	h := fnv.New64a()
	h.Write([]byte(bucket))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(version))
	return int(h.Sum64() % uint64(count))
}

// Check verifies a table's invariants against the input it was computed
// from: width, distinct disks per PG, and distinct nodes per PG when the
// table claims it. It is used by tests and by invariant checks.
func Check(t cairn.PGTable, disks []cairn.Disk) error {
	node := map[cairn.DiskID]cairn.NodeID{}
	for _, d := range disks {
		node[d.ID] = d.Node
	}
	for _, pg := range t.PGs {
		if len(pg.Disks) != t.Width {
			return fmt.Errorf("pg %d has %d disks, width %d", pg.ID, len(pg.Disks), t.Width)
		}
		seenD, seenN := map[cairn.DiskID]bool{}, map[cairn.NodeID]bool{}
		for _, d := range pg.Disks {
			nd, ok := node[d]
			if !ok {
				return fmt.Errorf("pg %d uses unknown disk %s", pg.ID, d)
			}
			if seenD[d] {
				return fmt.Errorf("pg %d uses disk %s twice", pg.ID, d)
			}
			if t.DistinctNodes && seenN[nd] {
				return fmt.Errorf("pg %d puts two shards on node %s", pg.ID, nd)
			}
			seenD[d], seenN[nd] = true, true
		}
	}
	return nil
}
