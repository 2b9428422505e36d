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
	nodes := make(map[cairn.NodeID]cairn.Node, len(in.Nodes))
	for _, nd := range in.Nodes {
		nodes[nd.ID] = nd
	}
	var cands []*cand
	perNode := map[cairn.NodeID]*int{}
	var maxCap int64 = 1
	for _, d := range in.Disks {
		if d.State.Writable() {
			maxCap = max(maxCap, d.Capacity)
		}
	}
	for _, d := range in.Disks {
		if !d.State.Writable() {
			continue
		}
		label := func(k string) string {
			if v := nodes[d.Node].Labels[k]; v != "" {
				return v
			}
			return ""
		}
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
	if len(cands) < n {
		return cairn.PGTable{}, &TooFewDisksError{Need: n, Have: len(cands)}
	}
	slices.SortFunc(cands, func(a, b *cand) int { return cmp.Compare(a.disk.ID, b.disk.ID) })
	per := in.PGsPerDisk
	if per <= 0 {
		per = DefaultPGsPerDisk
	}
	count := max(1, (len(cands)*per+n-1)/n)
	t := cairn.PGTable{Width: n, DistinctNodes: len(perNode) >= n}
	for id := range count {
		pg := cairn.PG{ID: id}
		used := map[*cand]bool{}
		var nodesUsed, racksUsed, zonesUsed = map[cairn.NodeID]int{}, map[string]int{}, map[string]int{}
		for range n {
			var best *cand
			var bestKey [6]float64
			for _, c := range cands {
				if used[c] {
					continue
				}
				// Lexicographic preference: fewest shards of this PG already
				// in the candidate's zone, rack, node; then least loaded
				// disk, then least loaded node; then a hash to spread ties.
				key := [6]float64{
					float64(zonesUsed[c.zone]), float64(racksUsed[c.rack]), float64(nodesUsed[c.node]),
					float64(c.assigned+1) / c.weight, float64(*c.nodeAssigned), tie(id, c.disk.ID),
				}
				if best == nil || less(key, bestKey) {
					best, bestKey = c, key
				}
			}
			used[best] = true
			best.assigned++
			*best.nodeAssigned++
			if best.zone != "" {
				zonesUsed[best.zone]++
			}
			if best.rack != "" {
				racksUsed[best.rack]++
			}
			nodesUsed[best.node]++
			pg.Disks = append(pg.Disks, best.disk.ID)
		}
		t.PGs = append(t.PGs, pg)
	}
	return t, nil
}

func less(a, b [6]float64) bool {
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
