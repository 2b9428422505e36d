package pushbench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node"
	"cairn/node/volume"
	"cairn/repair/plan"
)

// TestRunRebuildsEveryScheme runs the experiment on in-process nodes with
// small data and unshaped links: every scheme must rebuild shards whose
// CRCs match the lost ones (Run fails otherwise), PUSH plans keep to f
// partials per slice, and the report files are written.
func TestRunRebuildsEveryScheme(t *testing.T) {
	const n = 11 // k+r+f for k=6, r=3, f=2
	var nodes []Node
	addrs := map[cairn.DiskID]string{}
	for i := range n {
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
		nodes = append(nodes, Node{ID: id, Addr: srv.Addr(), Disk: disk})
		addrs[disk] = srv.Addr()
	}
	nc := node.NewClient("s", func(_ context.Context, d cairn.DiskID) (string, error) { return addrs[d], nil }, nil)
	cfg := Config{
		Points:   []Point{{K: 6, R: 3, F: 1, Unit: 16 << 10}, {K: 6, R: 3, F: 2, Unit: 20000}},
		NodeData: 256 << 10, ShardSize: 64 << 10, LinkRate: 1e6, Seed: 3,
	}
	var steps []int
	cfg.Progress = func(done, total int) {
		if total != 2*len(plan.Schemes) {
			t.Errorf("progress: total %d, want %d", total, 2*len(plan.Schemes))
		}
		steps = append(steps, done)
	}
	rows, err := Run(context.Background(), cfg, nodes, nc, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(plan.Schemes) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, d := range steps {
		if d != i || len(steps) != len(rows)+1 {
			t.Fatalf("progress: %v, want 0 … %d", steps, len(rows))
		}
	}
	for _, r := range rows {
		if r.Seconds <= 0 || r.Model <= 0 || r.Stripes%(r.K+r.R-r.F) != 0 {
			t.Fatalf("row %+v", r)
		}
		if strings.HasPrefix(r.Scheme, "push") && r.MaxPartials > r.F {
			t.Fatalf("%s f=%d: a node receives %d partials per slice", r.Scheme, r.F, r.MaxPartials)
		}
	}
	var csv bytes.Buffer
	if err := WriteCSV(&csv, rows); err != nil || strings.Count(csv.String(), "\n") != len(rows)+1 {
		t.Fatalf("csv: %v\n%s", err, csv.String())
	}
	dir := t.TempDir()
	files, err := Plot(rows, dir)
	if err != nil || len(files) < 2 {
		t.Fatalf("plots %v: %v", files, err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 || filepath.Ext(f) != ".png" {
			t.Fatalf("plot %s: %v", f, err)
		}
	}
	s := Summarize(rows)
	if s.PushRepSpeedup <= 0 || s.PushSurSpeedup <= 0 || s.Reference != "k=6 r=3 f=1 unit=16KiB" {
		t.Fatalf("summary %+v", s)
	}
}

// TestDiskRates: a disk's rate for a request size is the size over one
// seek plus its transfer, with the nodes' request sizes.
func TestDiskRates(t *testing.T) {
	const bw, seek = 10e6, 50 * time.Millisecond
	rate := func(req float64) float64 { return req / (seek.Seconds() + req/bw) }
	r := DiskRates(bw, seek, 8<<20, 128<<10)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"read (4 MiB runs)", r.Read, rate(node.RepairReadRun)},
		{"serve (one unit per GET)", r.ServeRead, rate(128 << 10)},
		{"write (4 MiB runs)", r.Write, rate(volume.WriteRun)},
	} {
		if math.Abs(c.got-c.want) > 1e-6*c.want {
			t.Errorf("%s: %.0f B/s, want %.0f", c.name, c.got, c.want)
		}
	}
	if !r.SharedDisk || r.ServeRead >= r.Read/4 {
		t.Errorf("rates %+v: one shared disk, and unit requests far slower than runs", r)
	}
	// A shard smaller than a run is read and written in one request.
	if s := DiskRates(bw, seek, 1<<20, 4<<20); math.Abs(s.Read-rate(1<<20)) > 1 || math.Abs(s.ServeRead-s.Read) > 1 {
		t.Errorf("1 MiB shard: %+v", s)
	}
}

// TestTail checks the fill and drain terms by hand for one -Rep and one
// -Sur case.
func TestTail(t *testing.T) {
	cfg := Config{ShardSize: 4 << 20, LinkRate: 8 << 20, DiskRate: 16 << 20, Seek: 50 * time.Millisecond}
	req := func(b float64) float64 { return 0.05 + b/(16<<20) }
	pt := Point{K: 6, R: 3, F: 1, Unit: 128 << 10}
	// PUSH-Rep, 8 stripes, 4 at a time on 8 survivors: q = ⌈4·6/8⌉ = 3
	// first reads per disk; E[max of 6 draws from 1..3] = Σ_j 1−((j−1)/3)^6.
	e := 1 + (1 - math.Pow(1.0/3, 6)) + (1 - math.Pow(2.0/3, 6))
	pipe := 6 * float64(128<<10) / float64(8<<20)
	// The final wave's 4 last runs on the replacement end one read (of the
	// same 4 MiB) apart, so only the last one is waited for.
	want := max(pipe, e*req(4<<20)) + pipe /* the second wave */ + req(4<<20)
	if got := cfg.tail(plan.PushRep, pt, 8, 4, 8); math.Abs(got-want) > 1e-9 {
		t.Errorf("push-rep tail %.4f s, want %.4f", got, want)
	}
	// 9 stripes: waves of 4, 4 and 1; only the last one's run drains.
	want = max(pipe, e*req(4<<20)) + 2*pipe + req(4<<20)
	if got := cfg.tail(plan.PushRep, pt, 9, 4, 9); math.Abs(got-want) > 1e-9 {
		t.Errorf("push-rep tail of 9 stripes %.4f s, want %.4f", got, want)
	}
	// PULL-Sur, one wave of 8 on 8 survivors: q = 6 unit requests per
	// disk; each survivor stores one stripe.
	e = 0
	for j := 1; j <= 6; j++ {
		e += 1 - math.Pow(float64(j-1)/6, 6)
	}
	want = max(float64(128<<10)/float64(8<<20), e*req(128<<10)) + req(4<<20)
	if got := cfg.tail(plan.PullSur, pt, 8, 8, 8); math.Abs(got-want) > 1e-9 {
		t.Errorf("pull-sur tail %.4f s, want %.4f", got, want)
	}
	// PULL-Rep, f=2, the same waves: each replacement gets the last runs of
	// 4 stripes, which end one unit read (the pull's disk request) apart.
	pt2 := Point{K: 6, R: 3, F: 2, Unit: 128 << 10}
	e = 0 // q = ⌈4·6/7⌉ = 4 unit requests per disk
	for j := 1; j <= 4; j++ {
		e += 1 - math.Pow(float64(j-1)/4, 6)
	}
	pullPipe := float64(128<<10) / float64(8<<20)
	want = max(pullPipe, e*req(128<<10)) + pullPipe + req(4<<20) + 3*(req(4<<20)-req(128<<10))
	if got := cfg.tail(plan.PullRep, pt2, 8, 4, 7); math.Abs(got-want) > 1e-9 {
		t.Errorf("pull-rep f=2 tail %.4f s, want %.4f", got, want)
	}
	// PUSH-Sur, f=2, one wave of 7 on 7 survivors: q = 6 first reads per
	// disk; a survivor's two shards of one chain end together and queue.
	e = 0
	for j := 1; j <= 6; j++ {
		e += 1 - math.Pow(float64(j-1)/6, 6)
	}
	want = max(2*pipe, e*req(4<<20)) + 2*req(4<<20)
	if got := cfg.tail(plan.PushSur, pt2, 7, 7, 7); math.Abs(got-want) > 1e-9 {
		t.Errorf("push-sur f=2 tail %.4f s, want %.4f", got, want)
	}
	// Unthrottled disks: only the pipeline fill.
	cfg.DiskRate = 0
	if got := cfg.tail(plan.PushSur, pt, 8, 8, 8); math.Abs(got-pipe) > 1e-9 {
		t.Errorf("unthrottled push-sur tail %.4f s, want the pipeline fill %.4f", got, pipe)
	}
}
