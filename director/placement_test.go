package director

import (
	"context"
	"fmt"
	"testing"

	"cairn"
	"cairn/meta/mem"
	"cairn/placement"
)

// The issue #14 case: a table made while one node had registered puts
// every PG on it; once the others register, the duty replaces it with
// one over distinct nodes, and leaves it alone while nothing changes.
func TestRecomputeTables(t *testing.T) {
	ctx := context.Background()
	st := mem.New()
	defer st.Close()
	addNode := func(n int) {
		id := cairn.NodeID(fmt.Sprintf("n%d", n))
		if err := st.PutNode(ctx, cairn.Node{ID: id}); err != nil {
			t.Fatal(err)
		}
		for d := 1; d <= 3; d++ {
			if err := st.PutDisk(ctx, cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/d%d", id, d)), Node: id, State: cairn.DiskUp, Capacity: 1 << 30}); err != nil {
				t.Fatal(err)
			}
		}
	}
	addNode(1)
	if n, err := RecomputeTables(ctx, st, nil); err != nil || n != 0 {
		t.Fatalf("no table yet: %d recomputed, %v", n, err)
	}
	nodes, _ := st.Nodes(ctx)
	disks, _ := st.Disks(ctx)
	first, err := placement.Compute(placement.Input{Nodes: nodes, Disks: disks, Width: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreatePGTable(ctx, first); err != nil {
		t.Fatal(err)
	}
	for n := 2; n <= 4; n++ {
		addNode(n)
	}
	if n, err := RecomputeTables(ctx, st, nil); err != nil || n != 1 {
		t.Fatalf("after 3 nodes joined: %d recomputed, %v", n, err)
	}
	got, err := st.PGTable(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	disks, _ = st.Disks(ctx)
	if err := placement.Check(got, disks); err != nil || !got.DistinctNodes || got.Epoch != 1 {
		t.Fatalf("recomputed table: %v, distinct nodes %v, epoch %d", err, got.DistinctNodes, got.Epoch)
	}
	if n, err := RecomputeTables(ctx, st, nil); err != nil || n != 0 {
		t.Fatalf("nothing changed: %d recomputed, %v", n, err)
	}
}
