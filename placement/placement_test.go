package placement

import (
	"cairn/internal/golden"
	"errors"
	"fmt"
	"strings"
	"testing"

	"cairn"
)

func cluster(nodes, disksPer int, capacity func(n, d int) int64, labels func(n int) cairn.Labels) ([]cairn.Node, []cairn.Disk) {
	var ns []cairn.Node
	var ds []cairn.Disk
	for n := 1; n <= nodes; n++ {
		id := cairn.NodeID(fmt.Sprintf("node%d", n))
		var l cairn.Labels
		if labels != nil {
			l = labels(n)
		}
		ns = append(ns, cairn.Node{ID: id, Addr: fmt.Sprintf("127.0.0.1:%d", 7000+n), Labels: l})
		for d := 1; d <= disksPer; d++ {
			ds = append(ds, cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/disk%d", id, d)), Node: id,
				Capacity: capacity(n, d), State: cairn.DiskUp})
		}
	}
	return ns, ds
}

func flat(int, int) int64 { return 1 << 40 }

func render(t cairn.PGTable, disks []cairn.Disk) string {
	var b strings.Builder
	fmt.Fprintf(&b, "width %d, %d pgs, distinct nodes %v\n", t.Width, len(t.PGs), t.DistinctNodes)
	count := map[cairn.DiskID]int{}
	for _, pg := range t.PGs {
		fmt.Fprintf(&b, "pg %d:", pg.ID)
		for _, d := range pg.Disks {
			fmt.Fprintf(&b, " %s", d)
			count[d]++
		}
		b.WriteByte('\n')
	}
	b.WriteString("load:\n")
	for _, d := range disks {
		fmt.Fprintf(&b, "  %s %d\n", d.ID, count[d.ID])
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name           string
		nodes, perNode int
		width          int
		labels         func(int) cairn.Labels
	}{
		{"server-6disks-w6.txt", 1, 6, 6, nil},
		{"server-6disks-w3.txt", 1, 6, 3, nil},
		{"8nodes-8disks-w6.txt", 8, 8, 6, nil},
		{"6nodes-3racks-w3.txt", 6, 2, 3, func(n int) cairn.Labels { return cairn.Labels{cairn.LabelRack: fmt.Sprintf("r%d", (n-1)/2)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, ds := cluster(tc.nodes, tc.perNode, flat, tc.labels)
			tab, err := Compute(Input{Nodes: ns, Disks: ds, Width: tc.width, PGsPerDisk: 4})
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(tab, ds); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.name, render(tab, ds))
		})
	}
}

func TestDistinctFailureDomainsAndBalance(t *testing.T) {
	ns, ds := cluster(8, 8, flat, nil)
	tab, err := Compute(Input{Nodes: ns, Disks: ds, Width: 6})
	if err != nil {
		t.Fatal(err)
	}
	if !tab.DistinctNodes {
		t.Fatal("8 nodes, width 6: PGs should span distinct nodes")
	}
	if err := Check(tab, ds); err != nil {
		t.Fatal(err)
	}
	count := map[cairn.DiskID]int{}
	for _, pg := range tab.PGs {
		for _, d := range pg.Disks {
			count[d]++
		}
	}
	lo, hi := 1<<30, 0
	for _, d := range ds {
		lo, hi = min(lo, count[d.ID]), max(hi, count[d.ID])
	}
	if hi-lo > 1 {
		t.Fatalf("equal disks carry between %d and %d PGs; want within 1", lo, hi)
	}
}

func TestRacksSpread(t *testing.T) {
	ns, ds := cluster(6, 2, flat, func(n int) cairn.Labels { return cairn.Labels{cairn.LabelRack: fmt.Sprintf("r%d", (n-1)/2)} })
	tab, err := Compute(Input{Nodes: ns, Disks: ds, Width: 3})
	if err != nil {
		t.Fatal(err)
	}
	rack := map[cairn.DiskID]string{}
	for _, d := range ds {
		for _, n := range ns {
			if n.ID == d.Node {
				rack[d.ID] = n.Labels[cairn.LabelRack]
			}
		}
	}
	for _, pg := range tab.PGs {
		seen := map[string]bool{}
		for _, d := range pg.Disks {
			if seen[rack[d]] {
				t.Fatalf("pg %d puts two shards in rack %s", pg.ID, rack[d])
			}
			seen[rack[d]] = true
		}
	}
}

func TestCapacityWeighted(t *testing.T) {
	// node1's disks are twice as big as the others.
	ns, ds := cluster(6, 2, func(n, _ int) int64 {
		if n == 1 {
			return 2 << 40
		}
		return 1 << 40
	}, nil)
	tab, err := Compute(Input{Nodes: ns, Disks: ds, Width: 3, PGsPerDisk: 60})
	if err != nil {
		t.Fatal(err)
	}
	count := map[cairn.DiskID]int{}
	for _, pg := range tab.PGs {
		for _, d := range pg.Disks {
			count[d]++
		}
	}
	big, small := count["node1/disk1"], count["node2/disk1"]
	if r := float64(big) / float64(small); r < 1.6 || r > 2.4 {
		t.Fatalf("a 2× disk carries %d PGs, a 1× disk %d (ratio %.2f); want ≈ 2", big, small, r)
	}
}

func TestSingleNodeUsesDistinctDisks(t *testing.T) {
	ns, ds := cluster(1, 6, flat, nil)
	tab, err := Compute(Input{Nodes: ns, Disks: ds, Width: 6})
	if err != nil {
		t.Fatal(err)
	}
	if tab.DistinctNodes {
		t.Fatal("one node cannot give distinct nodes")
	}
	if err := Check(tab, ds); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	ns, ds := cluster(1, 4, flat, nil)
	if _, err := Compute(Input{Nodes: ns, Disks: ds, Width: 6}); !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("4 disks, width 6: %v, want ErrUnavailable", err)
	}
	ds[0].State = cairn.DiskDown
	ds[1].State = cairn.DiskDraining
	_, err := Compute(Input{Nodes: ns, Disks: ds, Width: 3})
	if !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("2 writable disks, width 3: %v, want ErrUnavailable", err)
	}
	var few *TooFewDisksError
	if !errors.As(err, &few) || *few != (TooFewDisksError{Need: 3, Have: 2}) ||
		err.Error() != "unavailable: placement needs 3 writable disks, the cluster has 2" {
		t.Fatalf("2 writable disks, width 3: %#v", err)
	}
	if _, err := Compute(Input{Nodes: ns, Disks: ds, Width: 0}); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("width 0: %v, want ErrInvalid", err)
	}
}

func TestPGForSpreads(t *testing.T) {
	hits := make([]int, 16)
	for i := range 16000 {
		hits[PGFor("b", fmt.Sprintf("key-%d", i), "v", 16)]++
	}
	for i, h := range hits {
		if h < 800 || h > 1200 {
			t.Fatalf("pg %d got %d of 16000 keys; want about 1000", i, h)
		}
	}
	if a, b := PGFor("b", "k", "v", 16), PGFor("b", "k", "v", 16); a != b {
		t.Fatal("PGFor is not deterministic")
	}
}
