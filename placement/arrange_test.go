package placement

import (
	"math/rand/v2"
	"slices"
	"testing"

	"cairn"
	"cairn/codec/all"
)

// lrc-6-2-2 (10 shards) on 6 nodes × 2 disks: some node holds two shards
// of every stripe. Arranged, every stripe survives any two node losses;
// in PG order many do not.
func TestArrangeLRCSurvivesTwoNodes(t *testing.T) {
	ns, ds := cluster(6, 2, flat, nil)
	tab, err := Compute(Input{Nodes: ns, Disks: ds, Width: 10})
	if err != nil {
		t.Fatal(err)
	}
	code, err := all.New("lrc-6-2-2")
	if err != nil {
		t.Fatal(err)
	}
	nodeOf := map[cairn.DiskID]string{}
	for _, d := range ds {
		nodeOf[d.ID] = string(d.Node)
	}
	survives := func(domains []string, perm []int) bool {
		names := slices.Compact(slices.Sorted(slices.Values(domains)))
		for i, a := range names {
			for _, b := range names[i:] {
				present := make([]bool, len(perm))
				for s, p := range perm {
					present[s] = domains[p] != a && domains[p] != b
				}
				if !code.CanReconstruct(present) {
					return false
				}
			}
		}
		return true
	}
	identFails := 0
	for _, pg := range tab.PGs {
		domains := make([]string, len(pg.Disks))
		for i, d := range pg.Disks {
			domains[i] = nodeOf[d]
		}
		ident := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		if !survives(domains, ident) {
			identFails++
		}
		perm := Arrange(domains, code.CanReconstruct, 500, rand.New(rand.NewPCG(uint64(pg.ID), 1)))
		if !survives(domains, perm) {
			t.Fatalf("pg %d: arranged order %v does not survive every two-node loss", pg.ID, perm)
		}
		if again := Arrange(domains, code.CanReconstruct, 500, rand.New(rand.NewPCG(uint64(pg.ID), 1))); !slices.Equal(again, perm) {
			t.Fatalf("pg %d: Arrange is not deterministic", pg.ID)
		}
	}
	t.Logf("%d of %d PGs would lose data to some two-node loss in PG order", identFails, len(tab.PGs))
	if identFails == 0 {
		t.Fatal("PG order already survives everything: the test does not exercise Arrange")
	}
}

func TestArrangeTrivialCases(t *testing.T) {
	always := func([]bool) bool { return true }
	for _, domains := range [][]string{{"a", "a", "a"}, {"a", "b", "c"}} {
		if got := Arrange(domains, always, 10, rand.New(rand.NewPCG(1, 1))); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("%v: %v, want the identity", domains, got)
		}
	}
}
