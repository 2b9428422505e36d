package engine

import (
	"cairn/internal/golden"
	"errors"
	"slices"
	"testing"
	"time"
)

// RS 4+2 with two spare disks; disk 3 is 100× slower than the others. The
// write replaces its shard with a spare parity block on a spare disk and
// completes without it; the slow request is cancelled.
func TestWriteRSReplacesSlowDisk(t *testing.T) {
	w, err := NewWrite(WriteConfig{Disks: 8, Primaries: 6, Target: 6, MaxBlock: 256 - 4, MaxPerDisk: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := disks(10*ms, 10*ms, 10*ms, 1000*ms, 10*ms, 10*ms, 10*ms, 10*ms)
	res := sim(t, w, d, w.Acked, 5*ms)
	golden.Check(t, "write_rs_slow_disk.txt", res.trace.String())
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	if res.done >= 100*ms {
		t.Fatalf("write took %v: it waited for the slow disk", res.done)
	}
	for _, p := range w.Durable() {
		if p.Disk == 3 {
			t.Fatal("the slow disk's block counted as durable")
		}
	}
	if len(w.Durable()) != 6 {
		t.Fatalf("%d blocks durable, want 6", len(w.Durable()))
	}
	if !res.cancelled[3] {
		t.Fatal("the slow disk's request was not cancelled")
	}
}

// Fountain-code write in RobuSTore mode: 8 disks from 1× to 100× slower,
// 24 blocks needed. Fast disks take more blocks; the slowest contributes
// nothing and is cancelled; the write is done when 24 are durable.
func TestWriteFountainFastDisksTakeMore(t *testing.T) {
	w, err := NewWrite(WriteConfig{Disks: 8, Primaries: 8, Target: 24, MaxBlock: 1 << 24, Depth: 2, Eager: true})
	if err != nil {
		t.Fatal(err)
	}
	d := disks(5*ms, 5*ms, 7*ms, 10*ms, 10*ms, 20*ms, 50*ms, 500*ms)
	res := sim(t, w, d, w.Acked, 5*ms)
	golden.Check(t, "write_fountain.txt", res.trace.String())
	per := make([]int, 8)
	for _, p := range w.Durable() {
		per[p.Disk]++
	}
	if per[0] <= per[5] || per[7] != 0 {
		t.Fatalf("blocks per disk %v: want fast disks to take more and the slowest none", per)
	}
	if res.done > 60*ms {
		t.Fatalf("write took %v", res.done)
	}
	seen := map[int]bool{}
	for _, p := range w.Durable() {
		if seen[p.Block] {
			t.Fatalf("block %d durable twice", p.Block)
		}
		seen[p.Block] = true
	}
}

// With groups (nodes), no group takes more than MaxPerGroup blocks even
// when its disks are the fastest: 8 disks on 4 nodes, the two fast disks
// on node 0, 24 blocks at most 7 a node.
func TestWriteFountainGroupBound(t *testing.T) {
	group := []int{0, 0, 1, 1, 2, 2, 3, 3}
	w, err := NewWrite(WriteConfig{Disks: 8, Primaries: 8, Target: 24, MaxBlock: 1 << 24, Depth: 2, Eager: true,
		MaxPerDisk: 7, Group: group, MaxPerGroup: 7})
	if err != nil {
		t.Fatal(err)
	}
	d := disks(1*ms, 1*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms)
	res := sim(t, w, d, w.Acked, 5*ms)
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	per := make([]int, 4)
	for _, p := range w.Durable() {
		per[group[p.Disk]]++
	}
	for g, c := range per {
		if c > 7 {
			t.Fatalf("blocks per node %v: node %d over the bound 7", per, g)
		}
	}
	if len(w.Durable()) != 24 {
		t.Fatalf("%d durable blocks, want 24", len(w.Durable()))
	}
}

// A disk that fails its write is replaced by a spare; with no spare the
// write fails with ErrUnavailable instead of acknowledging less redundancy.
func TestWriteFailures(t *testing.T) {
	w, _ := NewWrite(WriteConfig{Disks: 7, Primaries: 6, Target: 6, MaxBlock: 252, MaxPerDisk: 1})
	d := disks(10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms)
	d[2].fail = true
	res := sim(t, w, d, w.Acked, 5*ms)
	if res.failed != nil || len(w.Durable()) != 6 {
		t.Fatalf("one failure with one spare: %v, %d durable", res.failed, len(w.Durable()))
	}
	w, _ = NewWrite(WriteConfig{Disks: 6, Primaries: 6, Target: 6, MaxBlock: 252, MaxPerDisk: 1})
	d = disks(10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms)
	d[2].fail = true
	res = sim(t, w, d, w.Acked, 5*ms)
	if !errors.Is(res.failed, ErrUnavailable) {
		t.Fatalf("one failure, no spare: %v, want ErrUnavailable", res.failed)
	}
}

// RS(4,2) read of K+δ = 5 blocks with block 1's disk 100× slower: done from
// the first decodable set (any 4), never waiting for the slow block, which
// is cancelled.
func TestReadDoesNotWaitForUnneededBlocks(t *testing.T) {
	var blocks []Loc
	for i := range 6 {
		blocks = append(blocks, Loc{Block: i, Disk: i})
	}
	any4 := func(have []int) bool { return len(have) >= 4 }
	r, err := NewRead(ReadConfig{Blocks: blocks, Decodable: any4, Initial: 5})
	if err != nil {
		t.Fatal(err)
	}
	d := disks(10*ms, 1000*ms, 10*ms, 12*ms, 11*ms, 10*ms)
	res := sim(t, r, d, r.Arrived, 5*ms)
	golden.Check(t, "read_rs_slow_disk.txt", res.trace.String())
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	if res.done >= res.finishAt[1] {
		t.Fatal("the read waited for the slow block")
	}
	if !res.cancelled[1] {
		t.Fatal("the slow request was not cancelled")
	}
	if slices.Contains(r.Have(), 1) {
		t.Fatal("the slow block was used")
	}
}

// Two of K+δ blocks are slow: the straggler hedge asks for the sixth block
// instead of waiting.
func TestReadHedgesStragglers(t *testing.T) {
	var blocks []Loc
	for i := range 6 {
		blocks = append(blocks, Loc{Block: i, Disk: i})
	}
	r, _ := NewRead(ReadConfig{Blocks: blocks, Decodable: func(h []int) bool { return len(h) >= 4 }, Initial: 5})
	d := disks(10*ms, 1000*ms, 1000*ms, 10*ms, 10*ms, 10*ms)
	res := sim(t, r, d, r.Arrived, 5*ms)
	if res.failed != nil || res.done > 100*ms {
		t.Fatalf("read with two stragglers: done at %v, %v", res.done, res.failed)
	}
}

// RobuSTore mode (Initial 0 = every block) with failures: decodes from what
// arrives; with too few good blocks it fails with ErrUnavailable.
func TestReadAllAndFailures(t *testing.T) {
	var blocks []Loc
	for i := range 6 {
		blocks = append(blocks, Loc{Block: i, Disk: i})
	}
	need4 := func(h []int) bool { return len(h) >= 4 }
	r, _ := NewRead(ReadConfig{Blocks: blocks, Decodable: need4})
	d := disks(10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms)
	d[0].fail, d[4].fail = true, true
	res := sim(t, r, d, r.Arrived, 5*ms)
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	r, _ = NewRead(ReadConfig{Blocks: blocks, Decodable: need4, Initial: 4})
	d = disks(10*ms, 10*ms, 10*ms, 10*ms, 10*ms, 10*ms)
	d[0].fail, d[1].fail, d[2].fail = true, true, true
	res = sim(t, r, d, r.Arrived, 5*ms)
	if !errors.Is(res.failed, ErrUnavailable) {
		t.Fatalf("three failures of rs-4-2: %v, want ErrUnavailable", res.failed)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []WriteConfig{
		{Disks: 0, Target: 1, MaxBlock: 1},
		{Disks: 4, Primaries: 5, Target: 1, MaxBlock: 5},
		{Disks: 4, Primaries: 4, Target: 6, MaxBlock: 10, MaxPerDisk: 1},
		{Disks: 4, Primaries: 4, Target: 0, MaxBlock: 10},
		{Disks: 4, Primaries: 4, Target: 6, MaxBlock: 10, Group: []int{0, 1}, MaxPerGroup: 3},
		{Disks: 4, Primaries: 4, Target: 7, MaxBlock: 10, Group: []int{0, 0, 1, 1}, MaxPerGroup: 3},
	} {
		if _, err := NewWrite(c); err == nil {
			t.Errorf("NewWrite(%+v) accepted", c)
		}
	}
	if _, err := NewRead(ReadConfig{}); err == nil {
		t.Error("NewRead without blocks accepted")
	}
}

// Late answers to cancelled requests and unknown IDs are ignored.
func TestLateAndUnknownAnswers(t *testing.T) {
	w, _ := NewWrite(WriteConfig{Disks: 3, Primaries: 3, Target: 2, MaxBlock: 10, MaxPerDisk: 1})
	w.Start(0)
	w.Acked(0, true, time.Millisecond)
	acts := w.Acked(1, true, 2*time.Millisecond)
	if len(acts) == 0 || acts[len(acts)-1].Kind != Done {
		t.Fatalf("target reached: %v", acts)
	}
	if got := w.Acked(2, true, 3*time.Millisecond); got != nil {
		t.Fatalf("answer after done: %v", got)
	}
	if got := w.Acked(99, true, 3*time.Millisecond); got != nil {
		t.Fatalf("unknown request: %v", got)
	}
}
