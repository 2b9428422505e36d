package repair_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/etcd/etcdtest"
	"cairn/node/nodetest"
	"cairn/repair"
)

// TestLTRepairOnNodes runs an lt repair on real etcd and real storage
// nodes (in-process, loopback sockets): lt objects of two stripes, a disk
// lost (its node stopped, its disk marked down), repaired onto the other
// nodes with fresh blocks, read back byte-exact; then a second disk lost,
// and every object still reads back before and after its repair.
func TestLTRepairOnNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ctx := t.Context()
	store := etcdtest.Store(t, etcdmeta.Options{CallTimeout: time.Minute})
	nodes := nodetest.New()
	var disks []cairn.DiskID
	for i := 1; i <= 8; i++ {
		id := fmt.Sprintf("n%d", i)
		disk := nodes.Start(t, id)
		disks = append(disks, disk)
		if err := store.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: "nodetest"}); err != nil {
			t.Fatal(err)
		}
		if err := store.PutDisk(ctx, cairn.Disk{ID: disk, Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "lt-16-3"}); err != nil {
		t.Fatal(err)
	}
	c := client.New(store, nodes.Client, client.Config{BlockSize: 4096})
	rng := rand.New(rand.NewPCG(3, 4))
	data := map[string][]byte{}
	for i := range 4 {
		b := make([]byte, 16*4096+1+rng.IntN(40000)) // two stripes
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("obj-%d", i)
		m, err := c.Put(ctx, "bkt", key, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Coded) != 2 {
			t.Fatalf("%s: %d coded stripes, want 2", key, len(m.Coded))
		}
		data[key] = b
	}
	readBack := func(when string) {
		t.Helper()
		for key, want := range data {
			_, rc, err := c.Get(ctx, "bkt", key, 0, -1)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, key, err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %s read back %d bytes (%v), differing", when, key, len(got), err)
			}
		}
	}
	r := repair.New(store, nodes.Client, repair.Config{})
	now := time.Unix(1000, 0)
	for round, lost := range []cairn.DiskID{disks[0], disks[3]} {
		nodes.Stop(lost)
		if err := store.SetDiskState(ctx, lost, cairn.DiskDown, now); err != nil {
			t.Fatal(err)
		}
		readBack(fmt.Sprintf("round %d, %s lost", round, lost))
		added, err := r.Scan(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if added == 0 {
			t.Fatalf("round %d: no task for %s", round, lost)
		}
		for range 5 {
			if _, err := r.Work(ctx, now); err != nil {
				t.Fatal(err)
			}
			if ts, _ := meta.AllRepairTasks(ctx, store); len(ts) == 0 {
				break
			}
			now = now.Add(time.Hour)
		}
		if ts, _ := meta.AllRepairTasks(ctx, store); len(ts) != 0 {
			t.Fatalf("round %d: tasks left: %+v", round, ts)
		}
		for key := range data {
			m, err := store.Manifest(ctx, "bkt", key)
			if err != nil {
				t.Fatal(err)
			}
			for s, cs := range m.Coded {
				if len(cs.Blocks) != 48 {
					t.Fatalf("round %d: %s stripe %d has %d blocks, want 48", round, key, s, len(cs.Blocks))
				}
				for _, b := range cs.Blocks {
					if b.Disk == disks[0] || b.Disk == lost {
						t.Fatalf("round %d: %s stripe %d: block %d still on lost disk %s", round, key, s, b.ID, b.Disk)
					}
				}
			}
		}
		readBack(fmt.Sprintf("round %d, repaired", round))
	}
	st := r.Stats()
	if st.Schemes["lt"] == 0 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("lt repair: %d new blocks, %d bytes, busy %v", st.Shards, st.Bytes, st.Busy)
}
