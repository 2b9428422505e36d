package grid

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/meta/mem"
	"cairn/node"
)

// TestRun runs every part on nine in-process nodes over shaped loopback
// links, with small files: every download is checked byte for byte (Run
// fails otherwise), the bytes moved are the codes' n/k, the coding time
// is measured, every object's files are removed, and the report files
// are written.
func TestRun(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	links := NewLinks(nil)
	addrs := map[cairn.DiskID]string{}
	for i := range 9 {
		id := cairn.NodeID(fmt.Sprintf("n%d", i+1))
		disk := cairn.DiskID(string(id) + "/disk1")
		srv, err := node.NewServer(node.Config{Node: id, Secret: "s", Disks: []node.DiskConfig{{ID: disk, Path: "/d", FS: vfs.NewMem()}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		addrs[disk] = srv.Addr()
		links.Set(srv.Addr(), Link{Site: "far", Rate: 64 << 20, RTT: time.Duration(i) * time.Millisecond})
		if err := store.PutNode(ctx, cairn.Node{ID: id, Addr: srv.Addr()}); err != nil {
			t.Fatal(err)
		}
		if err := store.PutDisk(ctx, cairn.Disk{ID: disk, Node: id, Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: "grid", Policy: Striped}); err != nil {
		t.Fatal(err)
	}
	resolve := func(_ context.Context, d cairn.DiskID) (string, error) {
		if a, ok := addrs[d]; ok {
			return a, nil
		}
		return "", cairn.ErrNotFound
	}
	env := NewEnv(store, resolve, "s", links)
	cfg := Config{Bucket: "grid", Sizes: []int64{100 << 10, 300 << 10}, PacketSize: 200 << 10, Packets: []int{20000, 0},
		CompareSize: 250 << 10, Near: Link{Site: "near", Rate: 256 << 20}, Reps: 2, Down: []float64{0.1, 0.3}, Trials: 5000, Seed: 4, Log: t.Logf}
	var steps [][2]int
	cfg.Progress = func(done, total int) { steps = append(steps, [2]int{done, total}) }
	rows, err := Run(ctx, cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	// 2 sizes, 2 packets, 4 comparisons, 2 availability estimates.
	for i, s := range steps {
		if s != [2]int{i, 10} || len(steps) != 11 {
			t.Fatalf("progress: %v, want 0/10 … 10/10", steps)
		}
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Part]++
		switch r.Part {
		case PartAvailability:
			if r.Readable <= 0 || r.Readable > 1 || !near(r.Readable, r.Exact, 0.02) {
				t.Errorf("availability row %+v", r)
			}
			continue
		case PartCodec:
			if r.Seconds <= 0 {
				t.Errorf("codec row %+v", r)
			}
			continue
		}
		if r.Seconds <= 0 || r.Reps != 2 || r.Model <= 0 {
			t.Errorf("row %+v", r)
		}
		// Uploads move n/k of the file (plus HTTP headers, among them each
		// shard's identity and the request's signature: about 470 bytes a
		// request, 4 % of a 100 KiB file's 8 shard PUTs); downloads at
		// least the file (K+1 shards are asked for, the last cancelled).
		ratio := map[string]float64{Striped: 8.0 / 5, Striped4: 9.0 / 5, Replicated: 5}[r.Policy]
		if r.Op == "upload" && (r.Moved < ratio || r.Moved > ratio+0.09) {
			t.Errorf("%s %s upload moved %.3f× the file, want %.2f", r.Part, r.Policy, r.Moved, ratio)
		}
		if r.Op == OpDegraded && (r.Coding <= 0 || r.Moved < 1 || r.Moved > ratio+0.05) {
			t.Errorf("%s %s degraded download: coding %v s, moved %.3f× the file", r.Part, r.Policy, r.Coding, r.Moved)
		}
		if r.Op == "download" && (r.Moved < 1 || r.Moved > ratio+0.05) {
			t.Errorf("%s %s download moved %.3f× the file", r.Part, r.Policy, r.Moved)
		}
		if r.Op == "upload" && (r.Coding <= 0 || r.Coding >= r.Seconds) {
			t.Errorf("%s %s upload: coding %v s of %v s", r.Part, r.Policy, r.Coding, r.Seconds)
		}
	}
	want := map[string]int{PartTransfer: 6, PartPacket: 4, PartCodec: 4, PartReplication: 8, PartAvailability: 4}
	for p, n := range want {
		if count[p] != n {
			t.Errorf("%s: %d rows, want %d", p, count[p], n)
		}
	}
	nc := node.NewClient("s", resolve, nil)
	for d := range addrs {
		left, _, err := nc.ListShards(ctx, d, "", 100)
		if err != nil || len(left) != 0 {
			t.Errorf("%s: shard files left: %v, %v", d, left, err)
		}
	}
	s := Summarize(rows)
	if s.SizeBytes != 300<<10 || s.CodingShareUpload <= 0 || s.CodingShareDegraded <= 0 || !near(s.MovedRatio, 5/1.8, 0.1) || s.UploadSpeedup <= 0 ||
		s.DownloadSpeedupNear <= 0 || s.EncodeMBps <= 0 || s.ReadableRS30 <= 0 || s.ReadableRep10 <= 0 {
		t.Errorf("summary %+v", s)
	}
	var csv bytes.Buffer
	if err := WriteCSV(&csv, rows); err != nil || strings.Count(csv.String(), "\n") != len(rows)+1 {
		t.Fatalf("csv: %v\n%s", err, csv.String())
	}
	dir := t.TempDir()
	files, err := Plot(rows, dir)
	if err != nil || len(files) != 4 {
		t.Fatalf("plots %v: %v", files, err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 || filepath.Ext(f) != ".png" {
			t.Fatalf("plot %s: %v", f, err)
		}
	}
}
