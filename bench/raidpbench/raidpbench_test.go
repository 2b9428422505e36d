package raidpbench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/bench/raidpbench"
	"cairn/client"
	"cairn/internal/vfs"
	"cairn/meta/mem"
	"cairn/node"
	"cairn/repair/raidprun"
)

// TestRun runs every part of the experiment on in-process node servers
// (real sockets, unthrottled memory disks, Lstors in memory) with a tiny
// workload: raidp, rep-3 and rs-4-2 write and read back byte-exact, the
// raidp critical exit rebuilds the shared superchunk, the repair queue
// rebuilds the rs stripes, both re-mirrorings run, and the summary has
// every ratio.
func TestRun(t *testing.T) {
	ctx := context.Background()
	const size = 256 << 10
	meta := mem.New()
	var disks []cairn.DiskID
	addrs := map[cairn.DiskID]string{}
	for i := 1; i <= 8; i++ {
		id := fmt.Sprintf("n%d", i)
		disk := cairn.DiskID(id + "/disk1")
		fsys := vfs.NewMem()
		srv, err := node.NewServer(node.Config{Node: cairn.NodeID(id), Secret: "bench", RAIDPSize: size, RAIDPSlots: 4, NoScrub: true,
			Disks: []node.DiskConfig{{ID: disk, Path: "/" + id, FS: fsys, Lstor: "/lstor-" + id, LstorFS: fsys}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		disks = append(disks, disk)
		addrs[disk] = srv.Addr()
		if err := meta.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: srv.Addr()}); err != nil {
			t.Fatal(err)
		}
		if err := meta.PutDisk(ctx, cairn.Disk{ID: disk, Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp,
			RAIDPSize: size, RAIDPSlots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	var net raidpbench.Counter
	nc := node.NewClient("bench", func(_ context.Context, d cairn.DiskID) (string, error) { return addrs[d], nil }, net.HTTPClient())
	cl := raidpbench.Cluster{Meta: meta, Nodes: nc, Net: &net, Disks: disks}
	c := client.New(meta, nc, client.Config{})
	w := raidpbench.Workload{Count: 8, Size: 200 << 10, Concurrency: 3, Seed: 1}
	var rows []raidpbench.Row
	for _, p := range []string{cairn.RAIDPPolicy, "rep-3", "rs-4-2"} {
		r, err := raidpbench.WriteRead(ctx, cl, c, p, w)
		if err != nil {
			t.Fatal(err)
		}
		if r.UserBytes != 8*200<<10 || r.Bps <= 0 || r.ReadBps <= 0 || r.NetPerByte < 1.5 {
			t.Errorf("%+v", r)
		}
		rows = append(rows, r)
	}
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, b, err := raidpbench.SharedPair(g)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Layout.Shared(a, b); !ok {
		t.Fatalf("SharedPair: %d and %d share nothing", a, b)
	}
	share, err := raidpbench.NaiveCrowding(g, a, 200)
	if err != nil || share < 0 || share > 1 {
		t.Errorf("naive crowding %v, %v", share, err)
	}
	// Each re-mirroring is undone after its timing: no slot outside the
	// layout holds a byte, so the rebuild's targets below are free slots
	// like any other.
	gdisks := map[int]raidprun.Disk{}
	for i, d := range g.Disks {
		gdisks[i] = raidprun.Remote(ctx, nc, cairn.DiskID(d.ID))
	}
	for _, naive := range []bool{false, true} {
		r, err := raidpbench.Remirror(ctx, cl, c, a, naive, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Seconds <= 0 || r.Bytes == 0 || r.MaxPerReceiver < 1 || (!naive && r.MaxPerReceiver != 1) {
			t.Errorf("remirror %+v", r)
		}
		rows = append(rows, r)
		if stray, err := raidprun.Stray(ctx, g.Layout, gdisks, raidprun.Config{Size: g.Size}); err != nil || len(stray) > 0 {
			t.Fatalf("after re-mirroring (naive %v): slots outside the layout hold bytes: %v, %v", naive, stray, err)
		}
	}
	ex, err := raidpbench.ExitRAIDP(ctx, cl, c, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Seconds <= 0 || ex.AllSeconds <= ex.Seconds || ex.Bytes <= size || ex.Critical != 1 {
		t.Errorf("raidp exit %+v", ex)
	}
	rows = append(rows, ex)
	// The raidp bytes stay where they are (the repair queue knows nothing
	// of them); rs-4-2 and rep-3 stripes on both disks are critical.
	rx, err := raidpbench.ExitRepair(ctx, cl, "rs-4-2", 2, []cairn.DiskID{disks[a], disks[b]}, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rx.Seconds <= 0 || rx.AllSeconds < rx.Seconds || rx.Critical == 0 || rx.Bytes == 0 {
		t.Errorf("rs exit %+v", rx)
	}
	rows = append(rows, rx)
	// Every object still reads back whole after the repairs.
	for _, p := range []string{"rep-3", "rs-4-2", cairn.RAIDPPolicy} {
		for i := range w.Count {
			_, rc, err := c.Get(ctx, raidpbench.Bucket(p), fmt.Sprint(i), 0, -1)
			if err != nil {
				t.Fatalf("%s/%d after the repairs: %v", p, i, err)
			}
			rc.Close()
		}
	}
	s := raidpbench.Summarize(rows)
	if s.WriteVsRep3 <= 0 || s.CriticalExitSpeedupVsRS <= 0 || s.MatchingOverNaive <= 0 || len(s.Measured) != len(rows) {
		t.Errorf("summary %+v", s)
	}
	var csv strings.Builder
	if err := raidpbench.WriteCSV(&csv, rows); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(csv.String(), "\n"); n != len(rows)+1 {
		t.Errorf("CSV has %d lines for %d rows", n, len(rows))
	}
	files, err := raidpbench.Plot(rows, t.TempDir())
	if err != nil || len(files) != 4 {
		t.Errorf("plots %v, %v", files, err)
	}
}

// TestScrapeDiskIO reads the disk byte counters of two metrics endpoints,
// the Lstor's apart, and refuses a malformed line.
func TestScrapeDiskIO(t *testing.T) {
	page := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	a := page(`# HELP cairn_disk_read_bytes_total Bytes read.
cairn_disk_read_bytes_total{disk="n1/disk1"} 100
cairn_disk_written_bytes_total{disk="n1/disk1"} 2.5e+06
cairn_disk_written_bytes_total{disk="n1/disk1/lstor"} 7
cairn_disk_operations_total{disk="n1/disk1",op="read"} 3
`)
	b := page("cairn_disk_written_bytes_total{disk=\"n2/disk1\"} 5\n")
	got, err := raidpbench.ScrapeDiskIO(context.Background(), http.DefaultClient, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]raidpbench.DiskIO{"n1/disk1": {Read: 100, Written: 2500000}, "n1/disk1/lstor": {Written: 7}, "n2/disk1": {Written: 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	bad := page("cairn_disk_read_bytes_total{disk=\"n1/disk1\"} many\n")
	if _, err := raidpbench.ScrapeDiskIO(context.Background(), http.DefaultClient, []string{bad}); err == nil {
		t.Error("a malformed value was accepted")
	}
}
