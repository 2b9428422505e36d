package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/client/clienttest"
	"cairn/client/slowdisk"
	"cairn/node/wire"
)

// A disk that is slow for every PUT, not only within one, is recognised
// from the PUTs' shard streams and avoided by the stripes of later PUTs
// while other disks are free: after MinSamples PUTs that used it, no PUT
// puts a shard on it until its hold ends; then it is tried again (one PUT)
// and avoided for twice as long. Every object reads back (reads, which
// are judged too, come after each phase's PUTs). With
// KeepSlowDisks the same workload keeps using it: the control that shows
// the test can fail.
//
// It runs in a synctest bubble: the slow disk's delay is virtual time, and
// everything else takes none, so the verdicts are exact.
func TestPutAvoidsSlowDisk(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, err := slowdisk.New(slowdisk.Config{})
				if err != nil {
					t.Fatal(err)
				}
				e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 64 << 10, SlowDisks: tr, KeepSlowDisks: keep})
				if keep {
					e.c.cfg.SlowDisks = nil
				}
				ctx := context.Background()
				disks, _ := e.meta.Disks(ctx)
				slow := disks[3].ID
				e.shards.Set(func() { e.shards.SlowPut[slow] = 20 * time.Millisecond }) // 256 KiB shards: 80 ms
				data := randBytes(77, 1<<20)
				put := func(i int) bool {
					m, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: int64(len(data))})
					if err != nil {
						t.Fatalf("put %d: %v", i, err)
					}
					return slotOf(m, slow) >= 0
				}
				// Reads are samples too: check the objects after each phase,
				// so that the PUTs alone make the verdicts counted here.
				readBack := func(from, to int) {
					for i := from; i < to; i++ {
						if got := e.get(t, fmt.Sprintf("k%d", i), 0, -1); !bytes.Equal(got, data) {
							t.Fatalf("object %d: read back differs", i)
						}
					}
				}
				used := 0
				for i := range 40 {
					if put(i) {
						used++
					}
				}
				readBack(0, 40)
				if keep {
					if used < 20 {
						t.Fatalf("without avoidance the slow disk took shards of %d of 40 PUTs, want about 30", used)
					}
					return
				}
				if used != 3 {
					t.Fatalf("the slow disk took shards of %d PUTs, want 3 (MinSamples)", used)
				}
				if !tr.Avoid(time.Now(), slow) {
					t.Fatal("the slow disk is not avoided")
				}
				// The hold (5 s) ends: the next PUTs try it once more, it is
				// still slow, and it is avoided again, for 10 s.
				time.Sleep(5 * time.Second)
				used = 0
				for i := 40; i < 80; i++ {
					if put(i) {
						used++
					}
				}
				readBack(40, 80)
				if used != 1 {
					t.Fatalf("after the hold the slow disk took shards of %d PUTs, want 1", used)
				}
				if cs := e.c.Stats(); cs.SlowDisks != 1 || cs.SlowMarks != 2 {
					t.Fatalf("Stats: %d slow disks, %d marks; want 1 and 2", cs.SlowDisks, cs.SlowMarks)
				}
				st := tr.Snapshot(time.Now())
				for _, s := range st {
					if s.Disk == slow && (s.State != slowdisk.Slow || s.Until.Sub(s.Since) != 10*time.Second) {
						t.Fatalf("slow disk after probation: %+v, want slow for 10 s", s)
					}
					if s.Disk != slow && s.State != slowdisk.OK {
						t.Fatalf("a healthy disk was judged: %+v", s)
					}
				}
				// It heals: after its hold, PUTs use it and it is ok again.
				e.shards.Set(func() { delete(e.shards.SlowPut, slow) })
				time.Sleep(10 * time.Second)
				used = 0
				for i := 80; i < 120; i++ {
					if put(i) {
						used++
					}
				}
				readBack(80, 120)
				if used < 20 || tr.Avoid(time.Now(), slow) {
					t.Fatalf("the healed disk took shards of %d of 40 PUTs (avoided: %v), want about 30", used, tr.Avoid(time.Now(), slow))
				}
			})
		})
	}
}

// A GET asks for shards on disks held slow only when it must: the first
// K+δ come from the others, so a healthy object reads without waiting for
// a hedge. When the other disks fail, it still reads from the slow one.
func TestGetAsksSlowDiskLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, err := slowdisk.New(slowdisk.Config{})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 64 << 10, SlowDisks: tr})
		ctx := context.Background()
		data := randBytes(78, 1<<20)
		m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		slow := m.Shards[0].Disk // a data shard: asked first unless slow
		gets := func() int {
			e.shards.Mu.Lock()
			defer e.shards.Mu.Unlock()
			return e.shards.Gets[slow]
		}
		before := gets()
		if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) || gets() == before {
			t.Fatal("a GET with every disk healthy did not read shard 0's disk (the test would prove nothing)")
		}
		for range 3 {
			tr.ObserveBatch(time.Now(), []slowdisk.Sample{{Disk: slow, Took: time.Second}, {Disk: m.Shards[1].Disk, Took: time.Millisecond}, {Disk: m.Shards[2].Disk, Took: time.Millisecond}})
		}
		if !tr.Avoid(time.Now(), slow) {
			t.Fatal("not held slow")
		}
		before = gets()
		if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
			t.Fatal("read back differs")
		}
		if gets() != before {
			t.Fatalf("the GET asked the slow disk %d times", gets()-before)
		}
		// Two other shards lost: the slow disk's shard is needed, and read.
		e.shards.Set(func() {
			e.shards.FailGet[m.Shards[1].Disk] = cairn.ErrUnavailable
			e.shards.FailGet[m.Shards[2].Disk] = cairn.ErrUnavailable
		})
		if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) || gets() == before {
			t.Fatal("with two shards lost the GET did not read the slow disk's shard")
		}
	})
}

// refusingNode is a shard store whose one node refuses every write at
// once, before it reads a byte (a killed node: connection refused).
type refusingNode struct {
	*clienttest.MemShards
	node string
}

func (r refusingNode) PutShardIdentified(ctx context.Context, disk cairn.DiskID, name string, ident []byte, rd io.Reader) (wire.ShardInfo, error) {
	if strings.HasPrefix(string(disk), r.node+"/") {
		return wire.ShardInfo{}, fmt.Errorf("dial %s: connection refused: %w", r.node, cairn.ErrUnavailable)
	}
	return r.MemShards.PutShardIdentified(ctx, disk, name, ident, rd)
}

// TestPutSparesFallBackToSlowDisks: with the disks outside the stripes
// held slow, a PUT still gets its M spare disks — the fast ones first,
// then slow ones — so a dead node holding two shards of a stripe does
// not fail it. Found by the torture test (internal/testcluster/torture):
// on a loaded machine the tracker holds several disks slow, spares left
// them out, a PUT had 0 or 1 spare, and every PUT whose stripe touched a
// killed node failed with 503 until the node's lease ran out.
func TestPutSparesFallBackToSlowDisks(t *testing.T) {
	tr, err := slowdisk.New(slowdisk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, 5, 2, "rs-4-2", Config{SlowDisks: tr})
	e.c = New(e.meta, refusingNode{e.shards, "node4"}, e.c.cfg)
	// Hold the second disk of nodes 1-3 slow: far slower than their peers, often.
	now := time.Now()
	slow := []cairn.DiskID{"node1/disk2", "node2/disk2", "node3/disk2"}
	for range 5 {
		batch := []slowdisk.Sample{{Disk: "node1/disk1", Took: time.Millisecond}, {Disk: "node2/disk1", Took: time.Millisecond},
			{Disk: "node3/disk1", Took: time.Millisecond}, {Disk: "node5/disk1", Took: time.Millisecond}}
		for _, d := range slow {
			batch = append(batch, slowdisk.Sample{Disk: d, Took: time.Second})
		}
		tr.ObserveBatch(now, batch)
	}
	for _, d := range slow {
		if !tr.Avoid(time.Now(), d) {
			t.Fatalf("%s is not held slow", d)
		}
	}
	ctx := context.Background()
	for i := range 40 {
		data := randBytes(uint64(90+i), 30_000+i*5000)
		m, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatalf("put %d with node4 refusing: %v", i, err)
		}
		if slices.ContainsFunc(m.Shards, func(s cairn.ShardLoc) bool { return strings.HasPrefix(string(s.Disk), "node4/") }) {
			t.Fatalf("put %d: a shard on the refusing node: %+v", i, m.Shards)
		}
	}
}

// A fountain-coded (lt) PUT keeps every disk busy with new blocks, so a
// slow disk is offered blocks by every PUT and holds each back a little
// (its blocks are cancelled when the stripe has enough). Its block times,
// one sample per disk per stripe, mark it slow like a PUT's shard streams
// do, and later PUTs stop offering it blocks while the other disks hold
// the stripe within the same bounds. With KeepSlowDisks the same workload
// keeps offering it blocks: the control that shows the test can fail.
func TestLTPutAvoidsSlowDisk(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, err := slowdisk.New(slowdisk.Config{})
				if err != nil {
					t.Fatal(err)
				}
				cfg := Config{BlockSize: 64 << 10, SlowDisks: tr}
				if keep {
					cfg = Config{BlockSize: 64 << 10, KeepSlowDisks: true}
				}
				e := newEnv(t, 8, 1, "lt-32-2", cfg)
				ctx := context.Background()
				disks, _ := e.meta.Disks(ctx)
				slow := disks[3].ID
				// Every block takes 10 ms, the slow disk's 200 ms: a stripe's
				// 64 blocks take about 50 ms on the 7 others, two at a time.
				e.shards.Set(func() {
					for _, d := range disks {
						e.shards.SlowPut[d.ID] = 10 * time.Millisecond
					}
					e.shards.SlowPut[slow] = 200 * time.Millisecond
				})
				data := randBytes(79, 2<<20) // one stripe of 32 blocks of 64 KiB
				offered := func() int {
					e.shards.Mu.Lock()
					defer e.shards.Mu.Unlock()
					return e.shards.Puts[slow]
				}
				var byPut []int // blocks offered to the slow disk by each PUT
				for i := range 20 {
					before := offered()
					if _, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: int64(len(data))}); err != nil {
						t.Fatalf("put %d: %v", i, err)
					}
					byPut = append(byPut, offered()-before)
				}
				for i := range 20 {
					if got := e.get(t, fmt.Sprintf("k%d", i), 0, -1); !bytes.Equal(got, data) {
						t.Fatalf("object %d: read back differs", i)
					}
				}
				later := 0
				for _, n := range byPut[3:] {
					later += n
				}
				if byPut[0] == 0 {
					t.Fatal("the first PUT offered the slow disk no block (the test would prove nothing)")
				}
				if keep {
					if later < 17 {
						t.Fatalf("without avoidance PUTs 3..19 offered the slow disk %d blocks, want one or more each", later)
					}
					return
				}
				if later != 0 || !tr.Avoid(time.Now(), slow) {
					t.Fatalf("after 3 PUTs (MinSamples) the slow disk was offered %d blocks (per PUT %v), avoided %v; want 0 and true",
						later, byPut, tr.Avoid(time.Now(), slow))
				}
			})
		})
	}
}

// An lt stripe avoids a slow disk only when the other disks hold it
// within the same per-disk and per-node bounds: on three nodes, dropping
// one would let each of the two left take half the blocks, and a lost
// node would cost more than the code tolerates, so the slow disk stays.
func TestLTAvoidsSlowDiskOnlyWithinBounds(t *testing.T) {
	tr, err := slowdisk.New(slowdisk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := New(nil, nil, Config{SlowDisks: tr})
	disks := func(n int) ([]cairn.DiskID, []cairn.NodeID) {
		var ds []cairn.DiskID
		var ns []cairn.NodeID
		for i := range n {
			ns = append(ns, cairn.NodeID(fmt.Sprintf("node%d", i)))
			ds = append(ds, cairn.DiskID(fmt.Sprintf("node%d/disk1", i)))
		}
		return ds, ns
	}
	slow := cairn.DiskID("node1/disk1")
	for range 3 {
		tr.ObserveBatch(time.Now(), []slowdisk.Sample{{Disk: slow, Took: time.Second}, {Disk: "node0/disk1", Took: time.Millisecond}, {Disk: "node2/disk1", Took: time.Millisecond}})
	}
	if !tr.Avoid(time.Now(), slow) {
		t.Fatal("not held slow")
	}
	for _, tc := range []struct {
		nodes int
		keep  bool
	}{{8, false}, {3, true}} {
		ds, ns := disks(tc.nodes)
		got, gotNodes := c.codedAvoidSlow(16, 32, ds, ns)
		if kept := slices.Contains(got, slow); kept != tc.keep || len(got) != len(gotNodes) {
			t.Errorf("%d nodes: the slow disk kept: %v (%d disks, %d nodes), want %v", tc.nodes, kept, len(got), len(gotNodes), tc.keep)
		}
	}
}
