package repair

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
	"cairn/repair/decide"
)

// addNode registers node id with disks up, empty disks.
func (e *env) addNode(t *testing.T, id string, disks int) {
	t.Helper()
	ctx := context.Background()
	if err := e.meta.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: "addr-" + id}); err != nil {
		t.Fatal(err)
	}
	for d := 1; d <= disks; d++ {
		if err := e.meta.PutDisk(ctx, cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/d%d", id, d)), Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
			t.Fatal(err)
		}
	}
}

// use returns the bytes the manifests place on each up disk, and whether
// every stripe is on distinct nodes.
func (e *env) use(t *testing.T) (map[cairn.DiskID]int64, bool) {
	t.Helper()
	ctx := context.Background()
	out := map[cairn.DiskID]int64{}
	for _, d := range mustDisks(t, e) {
		if d.State == cairn.DiskUp {
			out[d.ID] = 0
		}
	}
	distinct := true
	for key := range e.data {
		m, err := e.meta.Manifest(ctx, "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range decide.Stripes(m) {
			nodes := map[string]bool{}
			for _, s := range st.Shards {
				out[s.Disk] += s.Size
				n, _, _ := strings.Cut(string(s.Disk), "/")
				distinct = distinct && !nodes[n]
				nodes[n] = true
			}
		}
	}
	return out, distinct
}

func spreadOf(use map[cairn.DiskID]int64) (lo, hi int64) {
	lo = -1
	for _, u := range use {
		if lo < 0 || u < lo {
			lo = u
		}
		hi = max(hi, u)
	}
	return lo, hi
}

// rebalance runs rounds of Rebalance and Work until a round queues
// nothing, and returns the number of rounds.
func rebalance(t *testing.T, e *env, r *Repairer) int {
	t.Helper()
	ctx := context.Background()
	now := time.Unix(10000, 0)
	for round := 1; round <= 100; round++ {
		n, err := r.Rebalance(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) == 0 {
				return round
			}
		}
		for range 5 {
			if _, err := r.Work(ctx, now); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Hour) // past every backoff
		}
	}
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	t.Fatalf("not balanced after 100 rounds; %d tasks queued", len(ts))
	return 0
}

// Two empty nodes join six full ones: the rebalancer moves shards onto
// them until every disk is within 10% of the others' use, every stripe
// stays on distinct nodes, each move is a rebuild checked against the
// manifest then a manifest swap (the old file queued for cleanup), and
// every object reads back byte-exact.
func TestRebalanceOntoNewNodes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, "rs-3-2", 300)
	e.addNode(t, "n7", 2)
	e.addNode(t, "n8", 2)
	before, _ := e.use(t)
	if lo, _ := spreadOf(before); lo != 0 {
		t.Fatalf("the new disks hold %d bytes before the rebalance", lo)
	}
	r := New(e.meta, e.exec, Config{Unit: 4096, MinSpread: -1})
	rounds := rebalance(t, e, r)
	after, distinct := e.use(t)
	lo, hi := spreadOf(after)
	t.Logf("%d rounds, %d moves; use per disk from %d to %d bytes", rounds, r.Balance().Total, lo, hi)
	if float64(lo) < 0.9*float64(hi) {
		t.Fatalf("after the rebalance disks hold %d to %d bytes: not within 10%%: %v", lo, hi, after)
	}
	if !distinct {
		t.Fatal("a stripe has two shards on one node")
	}
	if b := r.Balance(); !b.Balanced || b.Queued != 0 {
		t.Fatalf("last round: %+v", b)
	}
	// Redundancy never dropped: every moved shard's old file is still
	// there (the cleanup deletes it after its grace), next to the new one.
	moved := 0
	for key, orig := range e.orig {
		m, _ := e.meta.Manifest(ctx, "bkt", key)
		for i, s := range m.Shards {
			if s.Disk == orig.Shards[i].Disk {
				continue
			}
			moved++
			name := cairn.ShardName(orig.Version, cairn.RowOf(orig.Shards, i))
			e.files.Mu.Lock()
			_, old := e.files.Files[string(orig.Shards[i].Disk)+"/"+name]
			_, now := e.files.Files[string(s.Disk)+"/"+name]
			e.files.Mu.Unlock()
			if !old || !now {
				t.Fatalf("%s shard %d moved from %s (file there: %v) to %s (file there: %v)", key, i, orig.Shards[i].Disk, old, s.Disk, now)
			}
		}
	}
	if moved == 0 {
		t.Fatal("no shard moved")
	}
	cs, err := e.meta.Cleanups(ctx, time.Now().Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 {
		t.Fatal("no old shard queued for cleanup after the moves")
	}
	e.check(t)
}

// The issue #14 case: objects written while one node had registered have
// every shard on it; once more nodes have, the rebalancer spreads every
// stripe over distinct nodes.
func TestRebalanceSpreadsObjectsOfOneNode(t *testing.T) {
	e := newEnvDisks(t, 1, 6, "rs-4-2", 40)
	if _, distinct := e.use(t); distinct {
		t.Fatal("objects on one node are on distinct nodes?")
	}
	for n := 2; n <= 7; n++ {
		e.addNode(t, fmt.Sprintf("n%d", n), 2)
	}
	r := New(e.meta, e.exec, Config{Unit: 4096, MinSpread: -1})
	rebalance(t, e, r)
	if _, distinct := e.use(t); !distinct {
		t.Fatal("after the rebalance a stripe still has two shards on one node")
	}
	e.check(t)
}

// A balanced cluster is checked again only after recheckEvery, or at once
// when a disk joins.
func TestRebalanceRechecks(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, "rs-3-2", 100)
	// Objects land on PGs by their random versions: 100 small ones leave
	// the disks within about 50% of each other, not always (Lo ÷ Hi was
	// 0.40–0.49 in 1 run of 10). A tolerance of 90% makes the first round
	// balanced every time; the empty disks of a new node still are not.
	r := New(e.meta, e.exec, Config{Unit: 4096, Tolerance: 0.9, MinSpread: -1})
	t0 := time.Unix(10000, 0)
	if n, err := r.Rebalance(ctx, t0); err != nil || n != 0 || !r.Balance().Balanced {
		t.Fatalf("first round: %d moves, %v, %+v", n, err, r.Balance())
	}
	if _, err := r.Rebalance(ctx, t0.Add(time.Minute)); err != nil || !r.Balance().At.Equal(t0) {
		t.Fatalf("a minute later: %v, last round %+v (want the first, skipped)", err, r.Balance())
	}
	if _, err := r.Rebalance(ctx, t0.Add(recheckEvery)); err != nil || !r.Balance().At.Equal(t0.Add(recheckEvery)) {
		t.Fatalf("after %v: %v, last round %+v", recheckEvery, err, r.Balance())
	}
	e.addNode(t, "n7", 2)
	at := t0.Add(recheckEvery + time.Second)
	if n, err := r.Rebalance(ctx, at); err != nil || n == 0 || !r.Balance().At.Equal(at) {
		t.Fatalf("a node joined: %d moves, %v, %+v", n, err, r.Balance())
	}
}

// While a disk is down (or suspect, or draining) the rebalancer waits:
// the cluster is settling.
func TestRebalanceWaitsForASettledCluster(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, "rs-3-2", 60)
	e.addNode(t, "n7", 2)
	r := New(e.meta, e.exec, Config{Unit: 4096, MinSpread: -1})
	for _, s := range []cairn.DiskState{cairn.DiskDown, cairn.DiskSuspect, cairn.DiskDraining} {
		e.setState(t, "n1/d1", s)
		if n, err := r.Rebalance(ctx, time.Unix(10000, 0)); err != nil || n != 0 || !r.Balance().At.IsZero() {
			t.Fatalf("a %s disk: %d moves, %v, %+v", s, n, err, r.Balance())
		}
	}
	e.setState(t, "n1/d1", cairn.DiskOut) // taken out: settled
	if n, err := r.Rebalance(ctx, time.Unix(10000, 0)); err != nil || n == 0 {
		t.Fatalf("with the disk out: %d moves, %v", n, err)
	}
}
