package robustore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn"
	"cairn/client/clienttest"
)

// Every scheme writes and reads back a byte-exact object (read checks the
// bytes) over 16 disks, one of them slow, and leaves no file behind; the
// rows and the summary are filled in.
func TestRunAllSchemes(t *testing.T) {
	mem := clienttest.NewMemShards()
	var disks []cairn.DiskID
	for i := range 16 {
		d := cairn.DiskID(fmt.Sprintf("n%d/disk%d", i/4+1, i%4+1))
		disks = append(disks, d)
	}
	mem.Slow[disks[5]] = 20 * time.Millisecond
	mem.SlowPut[disks[5]] = 20 * time.Millisecond
	cfg := Config{Disks: disks, ObjectSize: 256 * 1024, SourceBlocks: 64, Redundancies: []int{100, 300}, Reps: 2, Depth: 2, Seed: 3}
	var steps [][2]int
	cfg.Progress = func(done, total int) { steps = append(steps, [2]int{done, total}) }
	rows, err := Run(context.Background(), cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	// RAID-0, then RRAID-S and cairn at each of the 2 redundancies.
	if want := [][2]int{{0, 5}, {1, 5}, {2, 5}, {3, 5}, {4, 5}, {5, 5}}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("progress: %v, want %v", steps, want)
	}
	want := map[string]int{RAID0: 2, RRAIDS: 4, RRAIDA: 4, Cairn: 4}
	for _, r := range rows {
		want[r.Scheme]--
		if r.Reps != 2 || r.Mean <= 0 || r.Bandwidth <= 0 || len(r.Seconds) != 2 {
			t.Fatalf("row %+v", r)
		}
		if r.Op == "write" && r.IOOverhead < float64(r.Redundancy)/100-0.01 {
			t.Fatalf("%s at %d%% wrote %.2f extra, less than its redundancy", r.Scheme, r.Redundancy, r.IOOverhead)
		}
		if r.Scheme == Cairn && r.Op == "read" && (r.IOOverhead < 0 || r.IOOverhead > float64(r.Redundancy)/100) {
			t.Fatalf("cairn read overhead %.2f", r.IOOverhead)
		}
	}
	for s, n := range want {
		if n != 0 {
			t.Fatalf("scheme %s: %d rows missing", s, n)
		}
	}
	if n := mem.Count(); n != 0 {
		t.Fatalf("%d block files left behind", n)
	}
	s := Summarize(rows)
	if s.Redundancy != 300 || s.ReadSpeedup <= 0 || s.WriteSpeedup <= 0 {
		t.Fatalf("summary %+v", s)
	}
	dir := t.TempDir()
	files, err := Plot(rows, dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("plots %v, %v", files, err)
	}
}
