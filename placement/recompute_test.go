package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"cairn"
	"cairn/internal/golden"
)

// slots counts the slots of t on each disk.
func slots(t cairn.PGTable) map[cairn.DiskID]int {
	out := map[cairn.DiskID]int{}
	for _, pg := range t.PGs {
		for _, d := range pg.Disks {
			out[d]++
		}
	}
	return out
}

// spread is the fewest and most slots of t on the disks of ds.
func spread(t cairn.PGTable, ds []cairn.Disk) (lo, hi int) {
	s := slots(t)
	lo = 1 << 30
	for _, d := range ds {
		if Member(d.State) {
			lo, hi = min(lo, s[d.ID]), max(hi, s[d.ID])
		}
	}
	return lo, hi
}

func mustRecompute(t *testing.T, old cairn.PGTable, ns []cairn.Node, ds []cairn.Disk) (cairn.PGTable, int) {
	t.Helper()
	got, changed, err := Recompute(old, Input{Nodes: ns, Disks: ds, PGsPerDisk: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(got, ds); err != nil {
		t.Fatal(err)
	}
	for _, pg := range got.PGs {
		for _, d := range pg.Disks {
			for _, dd := range ds {
				if dd.ID == d && !Member(dd.State) {
					t.Fatalf("pg %d uses %s, which is %s", pg.ID, d, dd.State)
				}
			}
		}
	}
	again, n, err := Recompute(got, Input{Nodes: ns, Disks: ds, PGsPerDisk: 4})
	if err != nil || n != 0 || !reflect.DeepEqual(again, got) {
		t.Fatalf("recomputing a recomputed table changed %d slots (%v)", n, err)
	}
	return got, changed
}

// The bug of issue #14: the first PUT of a width came before the other
// nodes registered, so the table put every PG on one node. Once they
// have, the recomputed table spreads every PG over distinct nodes and
// balances the disks.
func TestRecomputeGolden(t *testing.T) {
	ns1, ds1 := cluster(1, 6, flat, nil)
	first, err := Compute(Input{Nodes: ns1, Disks: ds1, Width: 6, PGsPerDisk: 4})
	if err != nil {
		t.Fatal(err)
	}
	ns, ds := cluster(6, 6, flat, nil)
	got, changed := mustRecompute(t, first, ns, ds)
	if !got.DistinctNodes || got.Epoch != 1 {
		t.Fatalf("after 5 nodes joined: distinct nodes %v, epoch %d", got.DistinctNodes, got.Epoch)
	}
	if lo, hi := spread(got, ds); hi-lo > 1 {
		t.Fatalf("disks carry %d to %d slots", lo, hi)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "before:\n%s\nafter 5 nodes joined (%d slots changed):\n%s", render(first, ds1), changed, render(got, ds))
	// node2 drains: its slots go to the others, nothing else moves.
	for i := range ds {
		if ds[i].Node == "node2" {
			ds[i].State = cairn.DiskDraining
		}
	}
	later, changed := mustRecompute(t, got, ns, ds)
	if later.DistinctNodes || later.Epoch != 2 {
		t.Fatalf("5 nodes for width 6: distinct nodes %v, epoch %d", later.DistinctNodes, later.Epoch)
	}
	fmt.Fprintf(&b, "\nafter node2 drained (%d slots changed):\n%s", changed, render(later, ds))
	golden.Check(t, "recompute-1to6nodes-w6.txt", b.String())
}

// Properties over random clusters: a fresh table (Compute) is a fixed
// point; a recomputed table is valid, uses only members, is a fixed point
// too (recomputing again changes nothing), is
// deterministic, balances equal disks within 2 slots, spreads over
// distinct nodes when there are enough, and moves few slots: adding k of
// D disks changes about k/D of the slots, not more than that plus the
// new PGs' and a little rounding.
func TestRecomputeProperties(t *testing.T) {
	seed := uint64(1)
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	for round := range 40 {
		width := 2 + rng.IntN(8)
		nodes := 1 + rng.IntN(10)
		per := 1 + rng.IntN(4)
		if nodes*per < width {
			continue
		}
		ns, ds := cluster(nodes, per, flat, nil)
		old, err := Compute(Input{Nodes: ns, Disks: ds, Width: width, PGsPerDisk: 4})
		if err != nil {
			t.Fatal(err)
		}
		// A fresh table is a fixed point: nothing joined or left.
		if same, n, err := Recompute(old, Input{Nodes: ns, Disks: ds, PGsPerDisk: 4}); err != nil || n != 0 || !reflect.DeepEqual(same, old) {
			t.Fatalf("round %d (%d nodes, %d disks each, width %d): recomputing a fresh table changed %d slots (%v)", round, nodes, per, width, n, err)
		}
		add := 1 + rng.IntN(4)
		ns2, ds2 := cluster(nodes+add, per, flat, nil)
		got, changed := mustRecompute(t, old, ns2, ds2)
		again, _, _ := Recompute(old, Input{Nodes: ns2, Disks: ds2, PGsPerDisk: 4})
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("round %d: not deterministic", round)
		}
		if lo, hi := spread(got, ds2); hi-lo > 2 {
			t.Fatalf("round %d (%d nodes + %d, %d disks each, width %d): disks carry %d to %d slots", round, nodes, add, per, width, lo, hi)
		}
		if want := nodes+add >= width; got.DistinctNodes != want {
			t.Fatalf("round %d: distinct nodes %v with %d nodes, width %d", round, got.DistinctNodes, nodes+add, width)
		}
		oldSlots := len(old.PGs) * width
		newSlots := (len(got.PGs) - len(old.PGs)) * width
		ideal := float64(oldSlots) * float64(add*per) / float64((nodes+add)*per)
		// Old PGs on shared nodes that can now spread move their doubles too.
		if !old.DistinctNodes && got.DistinctNodes {
			continue
		}
		if limit := int(ideal) + newSlots + len(ds2) + width; changed > limit {
			t.Fatalf("round %d (%d nodes + %d, %d disks each, width %d): changed %d slots, want at most %d (ideal %.0f, %d new)",
				round, nodes, add, per, width, changed, limit, ideal, newSlots)
		}
	}
}

func TestRecomputeErrors(t *testing.T) {
	ns, ds := cluster(1, 4, flat, nil)
	old, err := Compute(Input{Nodes: ns, Disks: ds, Width: 3})
	if err != nil {
		t.Fatal(err)
	}
	ds[0].State, ds[1].State = cairn.DiskOut, cairn.DiskDraining
	if _, _, err := Recompute(old, Input{Nodes: ns, Disks: ds}); err == nil || err.Error() != "unavailable: placement needs 3 writable disks, the cluster has 2" {
		t.Fatalf("2 members, width 3: %v", err)
	}
	if _, _, err := Recompute(cairn.PGTable{}, Input{Nodes: ns, Disks: ds}); err == nil || !strings.Contains(err.Error(), "placement width 0") {
		t.Fatalf("width 0: %v", err)
	}
}
