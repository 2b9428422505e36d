package gpbench_test

import (
	"context"
	"fmt"
	"testing"

	"cairn"
	"cairn/bench/gpbench"
	"cairn/layout/gp"
	"cairn/node/nodetest"
)

// TestNodeRun runs the measured experiment on in-process node servers
// (real sockets, unthrottled memory disks) with small objects: every code
// exports, reads and rebuilds, and the rows add up.
func TestNodeRun(t *testing.T) {
	nodes := nodetest.New()
	var disks []cairn.DiskID
	for i := range 10 {
		disks = append(disks, nodes.Start(t, fmt.Sprintf("n%d", i+1)))
	}
	geo, err := gp.NewGeometry(32<<10, 2, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	w := gpbench.Workload{Count: 24, Min: 1, Max: 2 << 20, Seed: 1}
	nr := gpbench.NodeRun{
		Disks: disks[:9], Spare: disks[9], Geo: geo, Sizes: w.Sizes(), Budget: 8, Batch: 6,
		Nodes: nodes.Client,
		Log:   t.Logf,
	}
	var steps [][2]int
	nr.Progress = func(done, total int) { steps = append(steps, [2]int{done, total}) }
	rows, err := nr.Run(context.Background(), []string{"clay-4-2-5", "rs-4-2", "lrc-4-2-2"})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{0, 3}, {1, 3}, {2, 3}, {3, 3}}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("progress: %v, want %v", steps, want)
	}
	for _, r := range rows {
		if r.Reads == 0 || r.RebuiltBytes == 0 || r.RecoveryBps <= 0 || r.NormalRead <= 0 || r.DegradedRead <= 0 {
			t.Errorf("%+v", r)
		}
	}
}
