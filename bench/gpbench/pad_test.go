package gpbench

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"cairn"
	"cairn/codec/all"
	"cairn/cold"
	"cairn/layout/gp"
	"cairn/node/nodetest"
)

// TestSpread: the largest object first, each to the group with the fewest
// bytes so far, the lowest on a tie.
func TestSpread(t *testing.T) {
	got := spread([]int64{5, 50, 20, 30, 1, 25}, 3)
	// 50→0, 30→1, 25→2, 20→2 (25 < 30), 5→1 (30 < 45), 1→1 (35 < 45, 50).
	if want := []int{1, 0, 2, 1, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("spread = %v, want %v", got, want)
	}
}

// TestPadFillsRows: after pad, every data disk's recovery covers as many
// slot bytes as a parity disk's (free slots included), as in a full
// group, and the padded slots exist on their disks and read as zeros.
func TestPadFillsRows(t *testing.T) {
	ctx := context.Background()
	nodes := nodetest.New()
	var disks []cairn.DiskID
	for i := range 6 {
		disks = append(disks, nodes.Start(t, fmt.Sprintf("n%d", i+1)))
	}
	geo, err := gp.NewGeometry(32<<10, 2, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	chunk, err := all.New("rs-4-2")
	if err != nil {
		t.Fatal(err)
	}
	g, err := cold.NewGroup("pad", geo, disks, nodes.Client, chunk, chunk)
	if err != nil {
		t.Fatal(err)
	}
	var objs [][]byte
	for _, n := range []int{600 << 10, 70 << 10, 40 << 10} { // sparse rows: one big object, two small
		objs = append(objs, bytes.Repeat([]byte{byte(n)}, n))
	}
	if _, err := g.Export(ctx, objs); err != nil {
		t.Fatal(err)
	}
	slotBytes := func(disk int) (n int64) {
		for _, tk := range g.PG.RecoveryTasks(disk) {
			if tk.Level >= 0 {
				n += tk.Where.Length
			}
		}
		return n
	}
	parity := slotBytes(4)
	if slotBytes(0) == parity && slotBytes(1) == parity {
		t.Fatal("the rows are full before padding: nothing to test")
	}
	written, err := pad(ctx, geo, []*member{{g: g, lost: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if written == 0 {
		t.Fatal("pad wrote nothing")
	}
	for d := range g.PG.K {
		if got := slotBytes(d); got != parity {
			t.Errorf("disk %d: recovery covers %d slot bytes after padding, the parity disk %d", d, got, parity)
		}
	}
	c := &counting{Disks: g.Nodes} // counts the reads of shards that do not exist
	g.Nodes = c
	all := []bool{true, true, true, true, true, true}
	for level := range geo.Levels() {
		for d := range g.PG.K {
			for _, slot := range g.PG.Disks[d].Buckets[level].Free {
				l := g.PG.Stripe(level, slot)[d]
				got, err := g.ReadRange(ctx, l, all)
				if err != nil || !bytes.Equal(got, make([]byte, l.Length)) {
					t.Fatalf("padded slot %d of level %d on disk %d: not %d zeros (%v)", slot, level, d, l.Length, err)
				}
			}
		}
	}
	if c.requests.Load() == 0 || c.missing.Load() != 0 {
		t.Errorf("read the padded slots in %d requests, %d bytes of shards that do not exist; want some, and none", c.requests.Load(), c.missing.Load())
	}
}
