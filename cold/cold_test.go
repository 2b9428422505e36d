package cold_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"cairn"
	"cairn/codec/all"
	"cairn/cold"
	"cairn/layout/gp"
	"cairn/node/nodetest"
)

// newGroup starts a node per disk of a group whose chunks use code (the
// cold tier's clay-4-2-5, or a baseline) with s0 = 32 KiB, q = 2.
func newGroup(t *testing.T, code string) (*cold.Group, *nodetest.Nodes) {
	t.Helper()
	c := nodetest.New()
	chunk, err := all.New(code)
	if err != nil {
		t.Fatal(err)
	}
	p := chunk.Params()
	rs, err := all.New(fmt.Sprintf("rs-%d-%d", p.K, p.M))
	if err != nil {
		t.Fatal(err)
	}
	var disks []cairn.DiskID
	for i := range p.N() {
		disks = append(disks, c.Start(t, fmt.Sprintf("n%d", i+1)))
	}
	geo, err := gp.NewGeometry(32<<10, 2, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cold.NewGroup("g1", geo, disks, c.Client, chunk, rs)
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

func check(t *testing.T, g *cold.Group, rng *rand.Rand, what string, objs map[int][]byte, recs map[int]gp.Record, avail []bool) {
	t.Helper()
	ctx := context.Background()
	for id, data := range objs {
		var buf bytes.Buffer
		if err := g.Read(ctx, recs[id], 0, int64(len(data)), avail, &buf); err != nil {
			t.Fatalf("%s: object %d (%d bytes): %v", what, id, len(data), err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("%s: object %d (%d bytes) differs", what, id, len(data))
		}
		if len(data) == 0 {
			continue
		}
		off := rng.Int64N(int64(len(data)))
		n := 1 + rng.Int64N(int64(len(data))-off)
		buf.Reset()
		if err := g.Read(ctx, recs[id], off, n, avail, &buf); err != nil || !bytes.Equal(buf.Bytes(), data[off:off+n]) {
			t.Fatalf("%s: object %d range [%d, +%d): %v", what, id, off, n, err)
		}
	}
}

// TestExportReadRebuild runs the cold tier's layout on real node servers:
// batches of objects from 0 bytes to 2 MiB are exported (with deletes
// between them, so slots are reused and rows updated by delta), read back
// byte-exact whole and in ranges with every disk, with the objects' disks
// and a second disk gone (Clay sub-chunk and degraded repairs, RS for the
// fronts), and after one lost disk is rebuilt onto a new node.
func TestExportReadRebuild(t *testing.T) {
	for _, code := range []string{"clay-4-2-5", "rs-4-2", "lrc-4-2-2"} {
		t.Run(code, func(t *testing.T) { testExportReadRebuild(t, code) })
	}
}

// avail returns the availability of n disks with the lost ones false.
func avail(n int, lost ...int) []bool {
	a := make([]bool, n)
	for i := range a {
		a[i] = !slices.Contains(lost, i)
	}
	return a
}

func testExportReadRebuild(t *testing.T, code string) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 1))
	g, c := newGroup(t, code)
	n := len(g.Disks)
	objs := map[int][]byte{}
	recs := map[int]gp.Record{}
	next := 0
	for batch := range 3 {
		var datas [][]byte
		for i := range 8 {
			n := rng.Int64N(2 << 20)
			if batch == 0 && i < 2 {
				n = int64(i) // 0 and 1 byte
			}
			d := make([]byte, n)
			for j := range d {
				d[j] = byte(rng.Uint32())
			}
			datas = append(datas, d)
		}
		rs, err := g.Export(ctx, datas)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range datas {
			objs[next], recs[next] = d, rs[i]
			next++
		}
		for _, id := range slices.Sorted(maps.Keys(objs)) {
			if rng.IntN(4) == 0 {
				if err := g.PG.Release(recs[id]); err != nil {
					t.Fatal(err)
				}
				delete(objs, id)
				delete(recs, id)
			}
		}
	}
	all := avail(n)
	check(t, g, rng, "all disks", objs, recs, all)
	for _, r := range recs {
		bad := r
		bad.Sums = nil
		if err := g.Read(ctx, bad, 0, r.Size, all, &bytes.Buffer{}); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("a record without checksums: %v", err)
		}
		if err := g.Read(ctx, r, 0, r.Size+1, all, &bytes.Buffer{}); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("a range past the end: %v", err)
		}
		if err := g.Read(ctx, r, 0, r.Size, all[1:], &bytes.Buffer{}); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("short availability: %v", err)
		}
		break
	}

	// Lose data disk 1 (its node stops) and then parity disk 5.
	lost := g.Disks[1]
	c.Stop(lost)
	one := avail(n, 1)
	for id := range objs {
		if recs[id].Disk == 1 {
			continue
		}
		// Objects elsewhere read normally.
		var buf bytes.Buffer
		if err := g.Read(ctx, recs[id], 0, recs[id].Size, one, &buf); err != nil || !bytes.Equal(buf.Bytes(), objs[id]) {
			t.Fatalf("object %d on a live disk: %v", id, err)
		}
	}
	if len(onDisk(objs, recs, 1)) < 1 || len(onDisk(objs, recs, 0)) < 1 {
		t.Fatalf("too few objects on disks 0 and 1 to test: %v", recs)
	}
	for id := range onDisk(objs, recs, 1) {
		if recs[id].Size == 0 {
			continue
		}
		if err := g.Read(ctx, recs[id], 0, recs[id].Size, all, &bytes.Buffer{}); err == nil {
			t.Fatalf("object %d read from its stopped node", id)
		}
		break
	}
	check(t, g, rng, "disk 1 lost", onDisk(objs, recs, 1), recs, one)
	c.Stop(g.Disks[5])
	two := avail(n, 1, 5)
	check(t, g, rng, "disks 1 and 5 lost", onDisk(objs, recs, 1), recs, two)

	// Rebuild disk 1 onto a new node while 5 is still gone; then every
	// object reads normally from the group's disks.
	repl := c.Start(t, "spare")
	if err := g.Rebuild(ctx, 1, repl, two, cold.NewBudget(4)); err != nil {
		t.Fatal(err)
	}
	if g.Disks[1] != repl {
		t.Fatalf("disk 1 is %s after the rebuild, want %s", g.Disks[1], repl)
	}
	check(t, g, rng, "after rebuild", objs, recs, avail(n, 5))
	// The rebuilt disk serves repairs too: lose disk 0 and read its objects.
	check(t, g, rng, "disk 0 lost after rebuild", onDisk(objs, recs, 0), recs, avail(n, 0, 5))
}

func onDisk(objs map[int][]byte, recs map[int]gp.Record, disk int) map[int][]byte {
	out := map[int][]byte{}
	for id, d := range objs {
		if recs[id].Disk == disk {
			out[id] = d
		}
	}
	return out
}

// TestWitness: a group that wrote nothing has no witness; after an export
// every disk's witness is a shard the disk holds, and a disk whose data is
// gone (a new, empty node in its place) answers "not found" for it.
func TestWitness(t *testing.T) {
	ctx := context.Background()
	g, nodes := newGroup(t, "clay-4-2-5")
	for d := range g.Disks {
		if _, ok := g.Witness(d); ok {
			t.Fatalf("disk %d of an empty group has a witness", d)
		}
	}
	if _, ok := g.Witness(len(g.Disks)); ok {
		t.Fatal("a witness for a disk past the group")
	}
	// One object with a front and chunks on one data disk; the other data
	// disks hold nothing they must hold.
	recs, err := g.Export(ctx, [][]byte{bytes.Repeat([]byte{7}, 100<<10+5)})
	if err != nil {
		t.Fatal(err)
	}
	for d, id := range g.Disks {
		name, ok := g.Witness(d)
		if want := d == recs[0].Disk || d >= g.PG.K; ok != want {
			t.Fatalf("disk %d: witness %v, want %v", d, ok, want)
		}
		if !ok {
			continue
		}
		rc, err := nodes.Client.GetShard(ctx, id, name, 0, 1)
		if err != nil {
			t.Fatalf("disk %d does not hold its witness %s: %v", d, name, err)
		}
		rc.Close()
	}
	name, _ := g.Witness(g.PG.K)
	lost := g.Disks[g.PG.K]
	nodes.Stop(lost)
	g.Disks[g.PG.K] = nodes.Start(t, "fresh")
	if _, err := nodes.Client.GetShard(ctx, g.Disks[g.PG.K], name, 0, 1); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("an empty disk's answer for the witness: %v", err)
	}
}
