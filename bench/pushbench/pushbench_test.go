package pushbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node"
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
	nc := node.NewClient("s", func(d cairn.DiskID) (string, error) { return addrs[d], nil }, nil)
	cfg := Config{
		Points:   []Point{{K: 6, R: 3, F: 1, Unit: 16 << 10}, {K: 6, R: 3, F: 2, Unit: 20000}},
		NodeData: 256 << 10, ShardSize: 64 << 10, LinkRate: 1e6, Seed: 3,
	}
	rows, err := Run(context.Background(), cfg, nodes, nc, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(plan.Schemes) {
		t.Fatalf("%d rows", len(rows))
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
