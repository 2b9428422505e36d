package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn"
)

// blocksOn counts the durable blocks of m on each disk.
func blocksOn(m *cairn.Manifest) map[cairn.DiskID]int {
	n := map[cairn.DiskID]int{}
	for _, st := range m.Coded {
		for _, b := range st.Blocks {
			n[b.Disk]++
		}
	}
	return n
}

// A fountain-coded PUT keeps every disk busy and stops at X·K durable
// blocks: two disks that take a second per block end up holding none of
// them (their requests are cancelled and their files deleted), the others
// hold all X·K, and a GET with those two disks as slow decodes without
// them. Multi-stripe objects and ranges read back byte-exact.
func TestCodedWriteAndReadAroundSlowDisks(t *testing.T) {
	e := newEnv(t, 8, 1, "lt-32-4", Config{BlockSize: 4096, HedgeAfter: 50 * time.Millisecond})
	ctx := context.Background()
	disks, _ := e.meta.Disks(ctx)
	slow := []cairn.DiskID{disks[1].ID, disks[6].ID}
	e.shards.Set(func() {
		for _, d := range slow {
			e.shards.SlowPut[d] = time.Second
			e.shards.Slow[d] = time.Second
		}
	})
	data := randBytes(7, 3*32*4096+1000) // three full stripes and a short one
	m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Coded) != 4 || m.Shards != nil || m.BlockSize != 4096 {
		t.Fatalf("layout: %d stripes, shards %v, block size %d", len(m.Coded), m.Shards, m.BlockSize)
	}
	perDisk, _, _ := codedBounds(32, 128, make([]cairn.DiskID, 8), nil)
	for i, st := range m.Coded {
		if len(st.Blocks) != 128 {
			t.Fatalf("stripe %d has %d durable blocks, want X·K = 128", i, len(st.Blocks))
		}
		on := map[cairn.DiskID]int{}
		for _, b := range st.Blocks {
			if on[b.Disk]++; on[b.Disk] > perDisk {
				t.Fatalf("stripe %d has %d blocks on %s, more than losing two disks allows", i, on[b.Disk], b.Disk)
			}
		}
	}
	per := blocksOn(m)
	for _, d := range slow {
		if per[d] != 0 {
			t.Fatalf("slow disk %s holds %d blocks: %v", d, per[d], per)
		}
	}
	e.shards.Set(func() {
		for name := range e.shards.Files {
			for _, d := range slow {
				if strings.HasPrefix(name, string(d)+"/") {
					t.Errorf("slow disk kept %s", name)
				}
			}
		}
	})
	start := time.Now()
	if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Fatalf("the GET took %v: it waited for a slow disk", took)
	}
	for _, r := range [][2]int64{{5, 100}, {32*4096 - 10, 20}, {int64(len(data)) - 999, -1}} {
		end := int64(len(data))
		if r[1] >= 0 {
			end = r[0] + r[1]
		}
		if got := e.get(t, "k", r[0], r[1]); !bytes.Equal(got, data[r[0]:end]) {
			t.Fatalf("range %v differs", r)
		}
	}
	if err := e.c.Delete(ctx, "bkt", "k"); err != nil || e.files(t) != 0 {
		t.Fatalf("delete: %v, %d files left", err, e.files(t))
	}
}

// Disks that refuse writes get no more blocks; the write completes on the
// others. When too few disks remain the PUT fails with ErrUnavailable and
// leaves nothing. Blocks that are missing or corrupt on read are erasures.
func TestCodedFailures(t *testing.T) {
	e := newEnv(t, 6, 1, "lt-16-3", Config{BlockSize: 1024})
	ctx := context.Background()
	disks, _ := e.meta.Disks(ctx)
	e.shards.Set(func() {
		e.shards.FailPut[disks[0].ID] = fmt.Errorf("write: %w", cairn.ErrNoSpace)
		e.shards.FailPut[disks[3].ID] = fmt.Errorf("write: %w", cairn.ErrNoSpace)
	})
	data := randBytes(8, 40_000)
	m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if per := blocksOn(m); per[disks[0].ID]+per[disks[3].ID] != 0 {
		t.Fatalf("blocks on failing disks: %v", per)
	}
	// Of the disks that hold blocks, the two holding fewest now fail
	// reads, one with corrupt data, as long as 24 blocks (K = 16 and a
	// margin) are left elsewhere; how the 48 blocks spread depends on the
	// disks' speed during the write.
	per := blocksOn(m)
	holders := slices.SortedFunc(maps.Keys(per), func(a, b cairn.DiskID) int { return per[a] - per[b] })
	leftIn := func(lost []cairn.DiskID) int { // the fewest blocks a stripe keeps
		least := 1 << 30
		for _, st := range m.Coded {
			n := 0
			for _, b := range st.Blocks {
				if !slices.Contains(lost, b.Disk) {
					n++
				}
			}
			least = min(least, n)
		}
		return least
	}
	var lose []cairn.DiskID
	for _, d := range holders {
		if len(lose) == 2 || leftIn(append(slices.Clone(lose), d)) < 24 {
			break
		}
		lose = append(lose, d)
	}
	if len(lose) == 0 {
		t.Fatalf("no disk can be lost: blocks per disk %v", per)
	}
	e.shards.Set(func() {
		e.shards.FailGet[lose[0]] = cairn.ErrNotFound
		for name := range e.shards.Files {
			if len(lose) == 2 && strings.HasPrefix(name, string(lose[1])+"/") {
				e.shards.Files[name][0] ^= 1
			}
		}
	})
	if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
		t.Fatal("read back around lost and corrupt blocks differs")
	}
	e.shards.Set(func() {
		for _, d := range disks {
			e.shards.FailPut[d.ID] = fmt.Errorf("write: %w", cairn.ErrNoSpace)
		}
	})
	before := e.files(t)
	if _, err := e.c.Put(ctx, "bkt", "k2", bytes.NewReader(data), PutOptions{Size: -1}); !errors.Is(err, cairn.ErrUnavailable) || !errors.Is(err, cairn.ErrNoSpace) {
		t.Fatalf("put with every disk full: %v, want ErrUnavailable and ErrNoSpace", err)
	}
	if n := e.files(t); n != before {
		t.Fatalf("the failed put left %d files", n-before)
	}
	if _, err := e.c.Stat(ctx, "bkt", "k2"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("failed put visible: %v", err)
	}
	// A policy whose stripes would need more block IDs than shard names
	// allow is refused with the reason.
	if _, err := e.c.Put(ctx, "bkt", "k3", bytes.NewReader(data), PutOptions{Size: -1, Policy: "lt-1024-10"}); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("lt-1024-10: %v, want ErrInvalid", err)
	}
}

// The per-disk bound lets a stripe lose any two disks and keep K+2
// blocks, unless it spans too few disks for that; with the disks' nodes
// known, so does the per-node bound (placement.CodedBounds).
func TestCodedBounds(t *testing.T) {
	// A stripe written before CodedStripe.Next takes repair IDs above
	// N + cairn.CodedSlack: what a write can hand out beyond N.
	if codedDepth*codedMaxWidth != cairn.CodedSlack {
		t.Fatalf("a write hands out up to %d IDs beyond N; cairn.CodedSlack says %d", codedDepth*codedMaxWidth, cairn.CodedSlack)
	}
	for _, c := range []struct {
		k, n, disks, nodes      int // nodes 0: unknown
		perDisk, group, perNode int
	}{
		{16, 32, 32, 0, 7, 32, 7}, // 2×7 = 14 lost, 18 = K+2 left
		{16, 48, 6, 0, 15, 6, 15}, // 2×15 = 30 lost, 18 left
		{96, 384, 64, 0, 143, 64, 143},
		{16, 32, 3, 0, 11, 3, 11},  // 3 disks cannot hold 32 at 7 each: as even as possible
		{16, 32, 1, 0, 32, 1, 32},  // one disk holds everything
		{16, 48, 12, 6, 15, 6, 15}, // six nodes of two disks: 15 a node too
		{16, 48, 12, 3, 15, 3, 16}, // three nodes: as even as they allow
	} {
		disks := make([]cairn.DiskID, c.disks)
		var nodes []cairn.NodeID
		for i := range disks {
			disks[i] = cairn.DiskID(fmt.Sprintf("d%d", i))
			if c.nodes > 0 {
				nodes = append(nodes, cairn.NodeID(fmt.Sprintf("n%d", i%c.nodes)))
			}
		}
		perDisk, group, perNode := codedBounds(c.k, c.n, disks, nodes)
		groups := map[int]bool{}
		for _, g := range group {
			groups[g] = true
		}
		if perDisk != c.perDisk || len(groups) != c.group || perNode != c.perNode {
			t.Errorf("codedBounds(%d, %d, %d disks, %d nodes) = %d a disk, %d groups, %d a group; want %d, %d, %d",
				c.k, c.n, c.disks, c.nodes, perDisk, len(groups), perNode, c.perDisk, c.group, c.perNode)
		}
	}
}

// A PUT keeps the per-node bound: six nodes of two disks each, where the
// per-disk bound alone would let one node take 30 of the 48 blocks.
func TestCodedWriteBoundsNodes(t *testing.T) {
	e := newEnv(t, 6, 2, "lt-16-3", Config{BlockSize: 4096})
	ctx := context.Background()
	for i := range 10 {
		data := randBytes(uint64(i), 16*4096*2)
		m, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		for s, st := range m.Coded {
			on := map[string]int{}
			for _, b := range st.Blocks {
				node, _, _ := strings.Cut(string(b.Disk), "/")
				if on[node]++; on[node] > 15 {
					t.Fatalf("object %d stripe %d: %d blocks on %s, more than losing two nodes allows", i, s, on[node], node)
				}
			}
			if st.Next <= slices.MaxFunc(st.Blocks, func(a, b cairn.BlockLoc) int { return a.ID - b.ID }).ID {
				t.Fatalf("stripe %d: Next %d not above its blocks", s, st.Next)
			}
		}
		if got := e.get(t, fmt.Sprintf("k%d", i), 0, -1); !bytes.Equal(got, data) {
			t.Fatal("read back differs")
		}
	}
}

// A GET that meets a corrupt block reports it (Config.OnDamage, which the
// gateway turns into a damage record, so the block's repair is queued),
// and reads around it.
func TestCodedReadReportsDamage(t *testing.T) {
	e := newEnv(t, 6, 2, "lt-16-3", Config{BlockSize: 4096})
	ctx := context.Background()
	data := randBytes(11, 16*4096)
	m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	st := m.Coded[0]
	corrupt := map[string]bool{} // every source block: the ones a read asks for first
	e.shards.Set(func() {
		for _, b := range st.Blocks {
			if b.ID < 16 {
				name := cairn.ShardName(st.Version, b.ID)
				e.shards.Files[string(b.Disk)+"/"+name][0] ^= 1
				corrupt[name] = true
			}
		}
	})
	if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
		t.Fatal("read back around corrupt blocks differs")
	}
	if len(e.damage) == 0 {
		t.Fatal("no damage reported")
	}
	for _, d := range e.damage {
		if !corrupt[d.Name] || !errors.Is(d.Err, cairn.ErrCorrupt) || d.Bucket != "bkt" || d.Key != "k" || d.Version != m.Version {
			t.Fatalf("damage %+v: want a corrupt source block of %s", d, m.Version)
		}
	}
}
