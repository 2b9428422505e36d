package gpbench_test

import (
	"context"
	"fmt"
	"testing"

	"cairn"
	"cairn/bench/gpbench"
	"cairn/internal/vfs"
	"cairn/layout/gp"
	"cairn/node"
)

// TestNodeRun runs the measured experiment on in-process node servers
// (real sockets, unthrottled memory disks) with small objects: every code
// exports, reads and rebuilds, and the rows add up.
func TestNodeRun(t *testing.T) {
	addrs := map[cairn.DiskID]string{}
	var disks []cairn.DiskID
	for i := range 10 {
		id := fmt.Sprintf("n%d", i+1)
		disk := cairn.DiskID(id + "/disk1")
		srv, err := node.NewServer(node.Config{Node: cairn.NodeID(id), Secret: "s",
			Disks: []node.DiskConfig{{ID: disk, Path: "/" + id, FS: vfs.NewMem()}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		addrs[disk] = srv.Addr()
		disks = append(disks, disk)
	}
	geo, err := gp.NewGeometry(32<<10, 2, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	w := gpbench.Workload{Count: 24, Min: 1, Max: 2 << 20, Seed: 1}
	nr := gpbench.NodeRun{
		Disks: disks[:9], Spare: disks[9], Geo: geo, Sizes: w.Sizes(), Budget: 8, Batch: 6,
		Nodes: node.NewClient("s", func(_ context.Context, d cairn.DiskID) (string, error) { return addrs[d], nil }, nil),
		Log:   t.Logf,
	}
	rows, err := nr.Run(context.Background(), []string{"clay-4-2-5", "rs-4-2", "lrc-4-2-2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Reads == 0 || r.RebuiltBytes == 0 || r.RecoveryBps <= 0 || r.NormalRead <= 0 || r.DegradedRead <= 0 {
			t.Errorf("%+v", r)
		}
	}
}
