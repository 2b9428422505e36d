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
// exports, reads (checked byte for byte inside the run) and rebuilds, Clay
// is read in the Stripe-Max and Contiguous layouts too, and the rows add
// up.
func TestNodeRun(t *testing.T) {
	nodes := nodetest.New()
	var disks []cairn.DiskID
	for i := range 9 {
		disks = append(disks, nodes.Start(t, fmt.Sprintf("n%d", i+1)))
	}
	geo, err := gp.NewGeometry(32<<10, 2, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	w := gpbench.Workload{Count: 24, Min: 1, Max: 2 << 20, Seed: 1}
	nr := gpbench.NodeRun{
		Disks: disks, Geo: geo, Sizes: w.Sizes(), Budget: 8, Batch: 6, Contiguous: 64 << 10,
		Nodes: nodes.Client,
		Log:   t.Logf,
	}
	var steps [][2]int
	nr.Progress = func(done, total int) { steps = append(steps, [2]int{done, total}) }
	nr.LostAt = []int{0, 2, 4, 6} // 6 is past clay-4-2-5's and rs-4-2's stripes
	rows, err := nr.Run(context.Background(), []gpbench.NodeCode{
		{Code: "clay-4-2-5", Reads: 5, Layouts: true}, {Code: "rs-4-2", Reads: 2}, {Code: "lrc-4-2-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{0, 3}, {1, 3}, {2, 3}, {3, 3}}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("progress: %v, want %v", steps, want)
	}
	for i, r := range rows {
		if r.Groups != []int{3, 3, 4}[i] || r.RebuiltBytes == 0 || r.RecoveryBps <= 0 {
			t.Errorf("%+v", r)
		}
		if want := []int{5, 2, 0}[i]; r.Reads != want || (want > 0) != (r.NormalRead > 0 && r.DegradedRead > 0 && r.DegradedRange > 0 && r.ReadBytes > 0) {
			t.Errorf("%s: %d reads (want %d): %+v", r.Code, r.Reads, want, r)
		}
		if layouts := i == 0; layouts != (r.StripeMaxDegraded > 0 && r.ContiguousDegraded > 0 && r.StripeMaxRange > 0 && r.ContiguousRange > 0 &&
			r.StripeMaxWholeStripeDegraded > 0 && r.StripeMaxWholeStripeRange > 0) {
			t.Errorf("%s: layouts read %v: %+v", r.Code, layouts, r)
		}
	}
	s, measured := gpbench.SummarizeNodes(gpbench.Summary{Modelled: true}, rows)
	if want := "[recovery_vs_rs recovery_vs_lrc degraded_over_normal_read degraded_vs_stripe_max]"; fmt.Sprint(measured) != want || s.Modelled {
		t.Errorf("measured %v (modelled %v), want %s", measured, s.Modelled, want)
	}
	if s.DegradedVsStripeMaxWholeStripe <= 0 || s.DegradedVsStripeMaxWholeStripeWhole <= 0 {
		t.Errorf("no ratio against the whole-stripe reader: %+v", s)
	}
}

// TestNodeRunPad: in sparse groups an RS rebuild asks mostly for slots
// never written (zeros, no disk read); with Pad every used row's data
// slots are written, so none of the bytes asked are missing, and the
// rebuilt disk still reads back (the run checks its reads byte for byte).
func TestNodeRunPad(t *testing.T) {
	geo, err := gp.NewGeometry(32<<10, 2, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	w := gpbench.Workload{Count: 8, Min: 1, Max: 2 << 20, Seed: 2}
	for _, pad := range []bool{false, true} {
		nodes := nodetest.New() // new disks: nothing left of the other run
		var disks []cairn.DiskID
		for i := range 7 {
			disks = append(disks, nodes.Start(t, fmt.Sprintf("n%d", i+1)))
		}
		nr := gpbench.NodeRun{Disks: disks, Geo: geo, Sizes: w.Sizes(), Budget: 8, Batch: 4, Pad: pad,
			Nodes: nodes.Client, Log: t.Logf, LostAt: []int{4}}
		rows, err := nr.Run(context.Background(), []gpbench.NodeCode{{Code: "rs-4-2", Reads: 2}})
		if err != nil {
			t.Fatal(err)
		}
		r := rows[0]
		if r.RebuiltBytes == 0 || r.HelperBytes == 0 || pad != (r.HelperMissingBytes == 0) {
			t.Errorf("pad %v: %d bytes rebuilt, %d asked, %d of them never written", pad, r.RebuiltBytes, r.HelperBytes, r.HelperMissingBytes)
		}
	}
}
