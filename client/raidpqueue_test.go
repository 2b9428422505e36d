package client_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta"
	"cairn/raidp"
	"cairn/repair"
)

// TestRAIDPQueuedRecovery runs a dual-failure recovery the director's
// way: the duty (QueueFailedRAIDP) plans it and queues the steps of one
// phase at a time as repair tasks — the rebuild sides first, at risk 0 —
// without queueing a step twice, the repair workers (repair.Repairer.Work)
// run them and record them done, and the duty commits the group once
// every step is done. Every object reads back byte-exact, and every Lstor
// is the XOR of its layout's superchunks.
func TestRAIDPQueuedRecovery(t *testing.T) {
	ctx := context.Background()
	const size = 1 << 20
	store, nodes, _ := raidpCluster(t, 6, size)
	c := client.New(store, nodes.Client, client.Config{})
	objects := putWarm(t, c, 6, func(i int) int { return 3*size/4 + i*1000 })
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x := g.Layout.Superchunks[0]
	var lost []cairn.DiskID
	for _, p := range x.Replicas {
		id := cairn.DiskID(g.Disks[p.Disk].ID)
		lost = append(lost, id)
		nodes.Replace(t, id) // its Lstor stays, served by its node
		if err := store.SetDiskState(ctx, id, cairn.DiskDown, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	rep := repair.New(store, nodes.Client, repair.Config{Parallel: 2})
	var kinds []string
	for round := 0; ; round++ {
		if round == 20 {
			t.Fatal("not recovered after 20 rounds")
		}
		now := time.Now()
		failed, committed, err := c.QueueFailedRAIDP(ctx, store, now)
		if err != nil {
			t.Fatal(err)
		}
		if committed {
			break
		}
		if len(failed) != 2 {
			t.Fatalf("round %d: failed disks %v, want %v", round, failed, lost)
		}
		ts, err := meta.AllRepairTasks(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) == 0 {
			t.Fatalf("round %d: the duty queued nothing", round)
		}
		// The duty again before the workers: nothing queued twice.
		if _, _, err := c.QueueFailedRAIDP(ctx, store, now); err != nil {
			t.Fatal(err)
		}
		if again, _ := meta.AllRepairTasks(ctx, store); len(again) != len(ts) {
			t.Fatalf("round %d: %d tasks, %d after the duty ran again", round, len(ts), len(again))
		}
		phase := ""
		for _, tk := range ts {
			if tk.RAIDP == nil || tk.RAIDP.Group != g.Name || tk.RAIDP.Generation != g.Generation {
				t.Fatalf("round %d: task %+v", round, tk)
			}
			if phase != "" && tk.RAIDP.Kind != phase {
				t.Fatalf("round %d: one phase's tasks of kinds %s and %s", round, phase, tk.RAIDP.Kind)
			}
			phase = tk.RAIDP.Kind
			if want := map[string]int{"rebuild": 0, "exchange": 1, "copy": 1}[phase]; tk.Risk != want {
				t.Errorf("round %d: a %s task at risk %d, want %d", round, phase, tk.Risk, want)
			}
		}
		kinds = append(kinds, phase)
		n, err := rep.Work(ctx, now)
		if err != nil || n != len(ts) {
			t.Fatalf("round %d: the workers completed %d of %d tasks: %v", round, n, len(ts), err)
		}
		if left, _ := meta.AllRepairTasks(ctx, store); len(left) != 0 {
			t.Fatalf("round %d: %d tasks left after the workers", round, len(left))
		}
	}
	if fmt.Sprint(kinds) != "[rebuild exchange copy copy]" {
		t.Errorf("phases queued %v, want the rebuild (split over two targets), the exchange of its halves, then the two re-mirroring steps", kinds)
	}
	after, err := c.RAIDPGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != g.Generation+1 || len(after.Out) != 2 {
		t.Fatalf("group after the recovery: generation %d, out %v", after.Generation, after.Out)
	}
	getAll(t, c, objects, "recovered through the repair queue")
	checkLstors(t, nodes, after, "recovered through the repair queue")
	// A stale task (its plan committed) is dropped as done.
	stale := cairn.RAIDPTaskStep{Group: g.Name, Generation: g.Generation, Step: 0, Kind: string(raidp.StepRebuild)}
	if err := store.PutRepairTask(ctx, cairn.RepairTask{ID: cairn.RAIDPRepairTaskID(stale), RAIDP: &stale, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if n, err := rep.Work(ctx, time.Now()); err != nil || n != 1 || rep.Stats().Dropped != 1 {
		t.Fatalf("a stale task: %d done, %d dropped, %v", n, rep.Stats().Dropped, err)
	}
}

// putWarm PUTs n random objects o0, o1, … of the sizes size(i) into
// bucket warm and returns them by key.
func putWarm(t *testing.T, c *client.Client, n int, size func(i int) int) map[string][]byte {
	t.Helper()
	objects := map[string][]byte{}
	for i := range n {
		p := randomBytes(size(i), uint64(i))
		key := fmt.Sprintf("o%d", i)
		if _, err := c.Put(context.Background(), "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(len(p))}); err != nil {
			t.Fatal(err)
		}
		objects[key] = p
	}
	return objects
}
