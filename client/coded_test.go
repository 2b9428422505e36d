package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	for i, st := range m.Coded {
		if len(st.Blocks) != 128 {
			t.Fatalf("stripe %d has %d durable blocks, want X·K = 128", i, len(st.Blocks))
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
	if err := e.c.Delete(ctx, "bkt", "k"); err != nil || e.shards.Count() != 0 {
		t.Fatalf("delete: %v, %d files left", err, e.shards.Count())
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
	// Two more disks now fail reads, one with corrupt data: 2 of the 4
	// disks holding blocks still have enough for K = 16.
	e.shards.Set(func() {
		e.shards.FailGet[disks[1].ID] = cairn.ErrNotFound
		for name := range e.shards.Files {
			if strings.HasPrefix(name, string(disks[2].ID)+"/") {
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
	before := e.shards.Count()
	if _, err := e.c.Put(ctx, "bkt", "k2", bytes.NewReader(data), PutOptions{Size: -1}); !errors.Is(err, cairn.ErrUnavailable) || !errors.Is(err, cairn.ErrNoSpace) {
		t.Fatalf("put with every disk full: %v, want ErrUnavailable and ErrNoSpace", err)
	}
	if n := e.shards.Count(); n != before {
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
