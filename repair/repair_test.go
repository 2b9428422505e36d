package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	"cairn/codec"
	"cairn/meta"
	"cairn/meta/mem"
	"cairn/node/wire"
	"cairn/repair/decide"
	"cairn/repair/plan"
)

// fakeExec runs repair specs on in-memory shards, computing what the node
// chain would: rebuilt[j] = Σ Coeffs[j]·helper. It is the node side below
// the line this package tests; node's own tests run the real thing.
type fakeExec struct {
	s       *clienttest.MemShards
	corrupt map[string]bool // disk/name of helpers that fail their CRC (guarded by mu; a rebuilt file is whole)
	pushes  atomic.Int64
	pulls   atomic.Int64
	mu      sync.Mutex
	fail    error                 // the next call fails with it (guarded by mu)
	vanish  bool                  // the next target written to vanishes (guarded by mu)
	gone    map[cairn.DiskID]bool // disks whose directory vanished: writes answer not_found (guarded by mu)
	wrong   atomic.Bool           // rebuild wrong bytes (a node that computes badly)
	onRun   func()                // called once by the next repair call, before it reads a helper (guarded by mu)
}

func (f *fakeExec) run(spec wire.RepairSpec) ([]wire.ShardInfo, error) {
	f.mu.Lock()
	err := f.fail
	f.fail = nil
	hook := f.onRun
	f.onRun = nil
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if hook != nil {
		hook()
	}
	out := make([][]byte, len(spec.Store))
	for j := range out {
		out[j] = make([]byte, spec.Size)
	}
	for _, h := range spec.Hops {
		f.s.Mu.Lock()
		data, ok := f.s.Files[string(h.Disk)+"/"+h.Shard]
		f.s.Mu.Unlock()
		f.mu.Lock()
		bad := f.corrupt[string(h.Disk)+"/"+h.Shard]
		f.mu.Unlock()
		switch {
		case bad:
			return nil, &wire.Error{Op: "push", Disk: h.Disk, Shard: h.Shard, Err: fmt.Errorf("block 0: %w", cairn.ErrCorrupt)}
		case !ok || int64(len(data)) < spec.Size:
			return nil, &wire.Error{Op: "push", Disk: h.Disk, Shard: h.Shard, Err: cairn.ErrNotFound}
		}
		for j := range out {
			codec.MulAdd(out[j], data[:spec.Size], h.Coeffs[j])
		}
	}
	if f.wrong.Load() {
		out[0][0] ^= 1
	}
	infos := make([]wire.ShardInfo, len(out))
	for _, t := range spec.Store {
		if err := f.vanished(t.Disk, t.Shard); err != nil {
			return nil, err
		}
	}
	for j, t := range spec.Store {
		if _, err := f.s.PutShardIdentified(context.Background(), t.Disk, t.Shard, t.Identity, bytes.NewReader(out[j])); err != nil {
			return nil, err
		}
		f.mu.Lock()
		delete(f.corrupt, string(t.Disk)+"/"+t.Shard) // replaced by the rebuilt file
		f.mu.Unlock()
		infos[j] = wire.ShardInfo{Size: spec.Size, CRC: crc32.Checksum(out[j], crc32.MakeTable(crc32.Castagnoli)), Ident: len(t.Identity)}
	}
	return infos, nil
}

// vanished returns the error a node answers for a write of shard onto
// disk if the disk's directory is gone (or goes now: vanish).
func (f *fakeExec) vanished(disk cairn.DiskID, shard string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.vanish {
		f.vanish = false
		if f.gone == nil {
			f.gone = map[cairn.DiskID]bool{}
		}
		f.gone[disk] = true
	}
	if !f.gone[disk] {
		return nil
	}
	return &wire.Error{Op: "push", Disk: disk, Shard: shard, Status: 404, Code: "no_disk",
		Err: fmt.Errorf("%w: node serves no disk %q", cairn.ErrNotFound, disk)}
}

func (f *fakeExec) Push(_ context.Context, spec wire.RepairSpec) ([]wire.ShardInfo, error) {
	f.pushes.Add(1)
	return f.run(spec)
}

func (f *fakeExec) Pull(_ context.Context, _ string, spec wire.RepairSpec) ([]wire.ShardInfo, error) {
	f.pulls.Add(1)
	return f.run(spec)
}

func (f *fakeExec) DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error {
	return f.s.DeleteShard(ctx, disk, name)
}

type env struct {
	meta  meta.Store
	files *clienttest.MemShards
	c     *client.Client
	exec  *fakeExec
	data  map[string][]byte
	orig  map[string]*cairn.Manifest // as written
}

func newEnv(t *testing.T, nodes int, policy string, objects int) *env {
	t.Helper()
	return newEnvDisks(t, nodes, 2, policy, objects)
}

// newEnvDisks is newEnv with disks disks on each node.
func newEnvDisks(t testing.TB, nodes, disks int, policy string, objects int) *env {
	t.Helper()
	return newEnvStore(t, mem.New(), nodes, disks, policy, objects)
}

// newEnvStore is newEnvDisks on store (meta/mem or meta/etcd).
func newEnvStore(t testing.TB, store meta.Store, nodes, disks int, policy string, objects int) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{meta: store, files: clienttest.NewMemShards(), data: map[string][]byte{}}
	for n := 1; n <= nodes; n++ {
		id := cairn.NodeID(fmt.Sprintf("n%d", n))
		if err := e.meta.PutNode(ctx, cairn.Node{ID: id, Addr: "addr-" + string(id)}); err != nil {
			t.Fatal(err)
		}
		for d := 1; d <= disks; d++ {
			if err := e.meta.PutDisk(ctx, cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/d%d", id, d)), Node: id, Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.meta.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: policy}); err != nil {
		t.Fatal(err)
	}
	// KeepSlowDisks: on a loaded machine a scheduling delay of an in-memory
	// shard write can mark a disk slow, and PUTs that avoid it leave one
	// disk with a tenth of the others' bytes (seen in TestRebalanceRechecks
	// under -count=60), which no test here is about.
	e.c = client.New(e.meta, e.files, client.Config{BlockSize: 4096, KeepSlowDisks: true})
	e.exec = &fakeExec{s: e.files, corrupt: map[string]bool{}}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range objects {
		b := make([]byte, 1+rng.IntN(40000))
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("obj-%03d", i)
		if _, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		e.data[key] = b
	}
	e.orig = map[string]*cairn.Manifest{}
	for key := range e.data {
		e.orig[key], _ = e.meta.Manifest(ctx, "bkt", key)
	}
	return e
}

// loseNode marks every disk of node down and deletes its files.
func (e *env) loseNode(t testing.TB, id string) {
	t.Helper()
	disks, _ := e.meta.Disks(context.Background())
	for _, d := range disks {
		if string(d.Node) != id {
			continue
		}
		if err := e.meta.SetDiskState(context.Background(), d.ID, cairn.DiskDown, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		e.files.Mu.Lock()
		for k := range e.files.Files {
			if bytes.HasPrefix([]byte(k), []byte(string(d.ID)+"/")) {
				delete(e.files.Files, k)
			}
		}
		e.files.Mu.Unlock()
	}
}

// check: no manifest names a down disk, and every object reads back
// byte-exact — for rs policies also with as many shards as the code
// tolerates unreadable, all of them ones that were not rebuilt, so the
// rebuilt shards must be right.
// checkIdentity checks that the file of shard s, holding row of part of
// m, records the identity m derives for it, of the length s.Ident says:
// the PUT's, and a repair's the same.
func (e *env) checkIdentity(t *testing.T, m *cairn.Manifest, part, row int, s cairn.ShardLoc) {
	t.Helper()
	name := cairn.ShardName(m.Version, row)
	if part > 0 {
		for _, p := range m.Parts {
			if p.Number == part {
				name = cairn.ShardName(p.Version, row)
			}
		}
	}
	e.files.Mu.Lock()
	got := e.files.Idents[string(s.Disk)+"/"+name]
	e.files.Mu.Unlock()
	id, err := m.IdentityOf(part, row)
	if err != nil {
		t.Fatal(err)
	}
	want, err := id.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || s.Ident != len(want) {
		t.Fatalf("%s/%s: file %s on %s records identity %q (manifest: %d bytes), want %q", m.Bucket, m.Key, name, s.Disk, got, s.Ident, want)
	}
}

func (e *env) check(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	disks, _ := e.meta.Disks(ctx)
	down := map[cairn.DiskID]bool{}
	for _, d := range disks {
		down[d.ID] = d.State != cairn.DiskUp
	}
	defer e.files.Set(func() { e.files.FailGet = map[cairn.DiskID]error{} })
	for key, want := range e.data {
		m, err := e.meta.Manifest(ctx, "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		fail := map[cairn.DiskID]error{}
		tolerance := 0
		if strings.HasPrefix(m.Policy, "rs-") {
			tolerance = 2
		}
		seen := map[cairn.DiskID]bool{}
		for i, s := range m.Shards {
			if down[s.Disk] {
				t.Fatalf("%s: shard %d still on down disk %s", key, i, s.Disk)
			}
			if seen[s.Disk] {
				t.Fatalf("%s: two shards on disk %s: %+v (written as %+v)", key, s.Disk, m.Shards, e.orig[key].Shards)
			}
			seen[s.Disk] = true
			e.checkIdentity(t, m, 0, cairn.RowOf(m.Shards, i), s)
			if s.Disk == e.orig[key].Shards[i].Disk && len(fail) < tolerance {
				fail[s.Disk] = cairn.ErrNotFound
			}
		}
		e.files.Set(func() { e.files.FailGet = fail })
		e.readBack(t, key, want)
	}
}

func drain(t *testing.T, r *Repairer, store meta.Store) {
	t.Helper()
	ctx := context.Background()
	now := time.Unix(1000, 0)
	for round := range 10 {
		if _, err := r.Scan(ctx, now); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Work(ctx, now); err != nil {
			t.Fatal(err)
		}
		ts, _ := meta.AllRepairTasks(ctx, store)
		if len(ts) == 0 {
			return
		}
		now = now.Add(time.Hour) // past every backoff
		_ = round
	}
	ts, _ := meta.AllRepairTasks(ctx, store)
	t.Fatalf("queue not empty after 10 rounds: %+v", ts[0])
}

// TestRepairEverySchemeAfterNodeLoss: on 6 nodes every target is on a
// survivor of the stripe (the -Sur schemes' case); on 8 a node holding
// nothing of it can take the shard.
func TestRepairEverySchemeAfterNodeLoss(t *testing.T) {
	for _, s := range plan.Schemes {
		for _, c := range []struct {
			policy string
			nodes  int
		}{{"rs-4-2", 6}, {"rs-4-2", 8}, {"lrc-4-2-1", 8}} {
			t.Run(fmt.Sprintf("%s/%s/%d-nodes", s, c.policy, c.nodes), func(t *testing.T) {
				e := newEnv(t, c.nodes, c.policy, 40)
				e.loseNode(t, "n3")
				r := New(e.meta, e.exec, Config{Scheme: s, Unit: 4096})
				added, err := r.Scan(context.Background(), time.Unix(1000, 0))
				if err != nil || added == 0 {
					t.Fatalf("scan: %d tasks, %v", added, err)
				}
				drain(t, r, e.meta)
				st := r.Stats()
				if st.Repaired != added || st.Failed != 0 {
					t.Fatalf("stats %+v, %d tasks queued", st, added)
				}
				if s.Push() && e.exec.pulls.Load() != 0 || !s.Push() && e.exec.pushes.Load() != 0 {
					t.Fatalf("%s ran %d pushes and %d pulls", s, e.exec.pushes.Load(), e.exec.pulls.Load())
				}
				e.check(t)
			})
		}
	}
}

func TestRepairTwoNodesLost(t *testing.T) {
	e := newEnv(t, 8, "rs-4-2", 30)
	e.loseNode(t, "n2")
	e.loseNode(t, "n5")
	r := New(e.meta, e.exec, Config{Unit: 4096})
	drain(t, r, e.meta)
	if r.Stats().Shards <= r.Stats().Repaired {
		t.Fatalf("two lost nodes but no stripe lost two shards: %+v", r.Stats())
	}
	e.check(t)
	// The repaired objects now survive losing two more nodes.
	e.loseNode(t, "n1")
	e.loseNode(t, "n7")
	drain(t, r, e.meta)
	e.check(t)
}

func TestCorruptHelperIsReplanned(t *testing.T) {
	for _, nodes := range []int{6, 7} {
		t.Run(fmt.Sprint(nodes), func(t *testing.T) { testCorruptHelper(t, nodes) })
	}
}

func testCorruptHelper(t *testing.T, nodes int) {
	e := newEnv(t, nodes, "rs-4-2", 30)
	e.loseNode(t, "n3")
	// Corrupt every shard on n4's disks: repairs must route around them
	// and rebuild them too.
	e.files.Mu.Lock()
	for k := range e.files.Files {
		if bytes.HasPrefix([]byte(k), []byte("n4/")) {
			e.exec.corrupt[k] = true
		}
	}
	e.files.Mu.Unlock()
	wasCorrupt := maps.Clone(e.exec.corrupt)
	r := New(e.meta, e.exec, Config{Scheme: plan.PushRep, Unit: 4096})
	drain(t, r, e.meta)
	if r.Stats().HelpersMarked == 0 {
		t.Fatalf("no corrupt helper was found: %+v", r.Stats())
	}
	// Every helper found corrupt was rebuilt: elsewhere, or in place when
	// the only other disks were on nodes holding another shard of the
	// stripe (helpers a repair did not read stay, for the scrubber to
	// find).
	ctx := context.Background()
	moved, inPlace := 0, 0
	for key := range e.data {
		m, _ := e.meta.Manifest(ctx, "bkt", key)
		for i, s := range m.Shards {
			o := e.orig[key].Shards[i]
			f := string(o.Disk) + "/" + cairn.ShardName(m.Version, i)
			switch {
			case !wasCorrupt[f]:
			case s.Disk != o.Disk:
				moved++
			case !e.exec.corrupt[f]:
				inPlace++
			}
		}
	}
	if moved+inPlace != r.Stats().HelpersMarked {
		t.Fatalf("%d corrupt helpers found, %d rebuilt elsewhere and %d in place", r.Stats().HelpersMarked, moved, inPlace)
	}
	t.Logf("%d corrupt helpers found, %d rebuilt elsewhere and %d in place", r.Stats().HelpersMarked, moved, inPlace)
	e.check(t)
}

func TestFailedAttemptIsRetriedAndResumed(t *testing.T) {
	e := newEnv(t, 7, "rs-4-2", 5)
	e.loseNode(t, "n6")
	ctx := context.Background()
	now := time.Unix(1000, 0)
	r := New(e.meta, e.exec, Config{Unit: 4096, Parallel: 1})
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	e.exec.mu.Lock()
	e.exec.fail = fmt.Errorf("%w: link down", cairn.ErrUnavailable)
	e.exec.mu.Unlock()
	if _, err := r.Work(ctx, now); err != nil {
		t.Fatal(err)
	}
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	failed := 0
	for _, task := range ts {
		if task.Attempts > 0 {
			failed++
			if task.LastError == "" || !task.NotBefore.After(now) || len(task.Targets) != len(task.Lost) {
				t.Fatalf("failed task recorded as %+v", task)
			}
		}
	}
	if failed != 1 {
		t.Fatalf("%d tasks recorded a failure, want 1", failed)
	}
	// A new repairer (a new director) resumes from the queue; the failed
	// task keeps its targets.
	var kept cairn.RepairTask
	for _, task := range ts {
		if task.Attempts > 0 {
			kept = task
		}
	}
	r2 := New(e.meta, e.exec, Config{Unit: 4096})
	drain(t, r2, e.meta)
	m, _ := e.meta.Manifest(ctx, kept.Bucket, kept.Key)
	for j, i := range kept.Lost {
		if m.Shards[i].Disk != kept.Targets[j] {
			t.Fatalf("resumed task moved shard %d to %s, its recorded target was %s", i, m.Shards[i].Disk, kept.Targets[j])
		}
	}
	e.check(t)
}

// TestFailedAttemptBackoffByClass: a transient failure waits the doubling
// backoff; a permanent one (cairn.IsPermanent) waits MaxBackoff at once
// and is recorded as permanent. Either way the task stays queued.
func TestFailedAttemptBackoffByClass(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		permanent bool
		wait      time.Duration
	}{
		{"unavailable", fmt.Errorf("%w: link down", cairn.ErrUnavailable), false, time.Second},
		{"unnamed", fmt.Errorf("connection reset by peer"), false, time.Second},
		{"target full", &wire.Error{Op: "push", Disk: "elsewhere", Err: fmt.Errorf("%w: %w", cairn.ErrUnavailable, cairn.ErrNoSpace)}, true, time.Hour},
		{"invalid", fmt.Errorf("%w: bad spec", cairn.ErrInvalid), true, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 7, "rs-4-2", 5)
			e.loseNode(t, "n6")
			ctx := context.Background()
			now := time.Unix(1000, 0)
			r := New(e.meta, e.exec, Config{Unit: 4096, Parallel: 1, MaxBackoff: time.Hour})
			if _, err := r.Scan(ctx, now); err != nil {
				t.Fatal(err)
			}
			e.exec.mu.Lock()
			e.exec.fail = tt.err
			e.exec.mu.Unlock()
			if _, err := r.Work(ctx, now); err != nil {
				t.Fatal(err)
			}
			ts, _ := meta.AllRepairTasks(ctx, e.meta)
			if len(ts) != 1 {
				t.Fatalf("%d tasks left, want the failed one", len(ts))
			}
			task := ts[0]
			if task.Attempts != 1 || task.NotBefore != now.Add(tt.wait) || strings.HasPrefix(task.LastError, "permanent: ") != tt.permanent {
				t.Fatalf("failed task recorded as attempts %d, not before +%v, error %q; want 1, +%v, permanent %v",
					task.Attempts, task.NotBefore.Sub(now), task.LastError, tt.wait, tt.permanent)
			}
			wantPermanent := 0
			if tt.permanent {
				wantPermanent = 1
			}
			if st := r.Stats(); st.Failed != 1 || st.Permanent != wantPermanent {
				t.Fatalf("stats %+v, want 1 failure, %d permanent", st, wantPermanent)
			}
			if tt.permanent {
				return
			}
			// Failing again doubles the wait.
			e.exec.mu.Lock()
			e.exec.fail = tt.err
			e.exec.mu.Unlock()
			now = task.NotBefore
			if _, err := r.Work(ctx, now); err != nil {
				t.Fatal(err)
			}
			ts, _ = meta.AllRepairTasks(ctx, e.meta)
			if len(ts) != 1 || ts[0].Attempts != 2 || ts[0].NotBefore != now.Add(2*tt.wait) {
				t.Fatalf("after a second failure: %+v", ts)
			}
		})
	}
}

// TestVanishedTargetIsReplacedAtOnce: a target whose directory vanished
// (the disk was replaced or removed while the cluster map still says up)
// answers not_found, a permanent error; it is the target's fault, not the
// stripe's, so the task is not parked for MaxBackoff: the same attempt
// re-plans onto another disk, and the failed disk is not chosen again
// while it is avoided. The director's loop runs in virtual time.
func TestVanishedTargetIsReplacedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 7, "rs-4-2", 10)
		e.loseNode(t, "n6")
		ctx := t.Context()
		r := New(e.meta, e.exec, Config{Unit: 4096, Parallel: 1, MaxBackoff: 5 * time.Minute})
		added, err := r.Scan(ctx, time.Now())
		if err != nil || added == 0 {
			t.Fatalf("scan: %d tasks, %v", added, err)
		}
		e.exec.mu.Lock()
		e.exec.vanish = true
		e.exec.mu.Unlock()
		start := time.Now()
		for {
			if _, err := r.Work(ctx, time.Now()); err != nil {
				t.Fatal(err)
			}
			ts, err := meta.AllRepairTasks(ctx, e.meta)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) == 0 {
				break
			}
			if time.Since(start) > time.Hour {
				t.Fatalf("queue not empty after an hour: %+v", ts[0])
			}
			time.Sleep(time.Second) // the director's repair duty period
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the stripes waited %v to be repaired; want no wait", waited)
		}
		st := r.Stats()
		if st.TargetsFailed != 1 || st.Failed != 0 || st.Permanent != 0 || st.Repaired != added {
			t.Fatalf("stats %+v, want 1 target failed, no failed attempt, %d repaired", st, added)
		}
		e.exec.mu.Lock()
		gone := maps.Clone(e.exec.gone)
		e.exec.mu.Unlock()
		if len(gone) != 1 {
			t.Fatalf("%d disks vanished, want 1", len(gone))
		}
		for key := range e.data {
			m, _ := e.meta.Manifest(ctx, "bkt", key)
			for i, s := range m.Shards {
				if gone[s.Disk] && s.Disk != e.orig[key].Shards[i].Disk {
					t.Fatalf("%s: shard %d rebuilt onto the vanished disk %s", key, i, s.Disk)
				}
			}
		}
		e.check(t)
		// Once the avoidance expires the disk may be chosen again; still
		// gone, it fails and is avoided anew.
		if av := r.avoided(time.Now().Add(5 * time.Minute)); len(av) != 0 {
			t.Fatalf("still avoided after AvoidTarget: %v", av)
		}
	})
}

func TestOverwrittenObjectDropsTask(t *testing.T) {
	e := newEnv(t, 7, "rs-4-2", 3)
	e.loseNode(t, "n1")
	ctx := context.Background()
	r := New(e.meta, e.exec, Config{Unit: 4096})
	if _, err := r.Scan(ctx, time.Unix(1000, 0)); err != nil {
		t.Fatal(err)
	}
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	if len(ts) == 0 {
		t.Fatal("no tasks")
	}
	for _, task := range ts {
		if err := e.c.Delete(ctx, "bkt", task.Key); err != nil {
			t.Fatal(err)
		}
		delete(e.data, task.Key)
	}
	drain(t, r, e.meta)
	if st := r.Stats(); st.Dropped != len(ts) || st.Repaired != 0 {
		t.Fatalf("stats %+v after deleting every damaged object", st)
	}
}

func (f *fakeExec) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error) {
	if err := f.vanished(disk, name); err != nil {
		return wire.ShardInfo{}, err
	}
	return f.s.PutShard(ctx, disk, name, r)
}

// PutShardIdentified implements identifiedPutter (an empty rebuilt shard).
func (f *fakeExec) PutShardIdentified(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (wire.ShardInfo, error) {
	if err := f.vanished(disk, name); err != nil {
		return wire.ShardInfo{}, err
	}
	return f.s.PutShardIdentified(ctx, disk, name, ident, r)
}

// TestPartialRepairWhenDisksRunOut: a stripe that lost more shards than
// there are free disks gets what fits now, and the rest once a disk
// appears.
func TestPartialRepairWhenDisksRunOut(t *testing.T) {
	e := newEnv(t, 6, "rs-4-2", 1) // 12 disks; the stripe uses 6
	ctx := context.Background()
	// Lose n1 and n2 (the stripe loses 2 shards) and leave one writable
	// disk outside the stripe: the others drain (still read, not written).
	e.loseNode(t, "n1")
	e.loseNode(t, "n2")
	m := e.orig["obj-000"]
	inStripe := map[cairn.DiskID]bool{}
	for _, s := range m.Shards {
		inStripe[s.Disk] = true
	}
	var drained []cairn.DiskID
	spare := false
	disks, _ := e.meta.Disks(ctx)
	for _, d := range disks {
		if inStripe[d.ID] || d.State != cairn.DiskUp {
			continue
		}
		if !spare {
			spare = true
			continue
		}
		drained = append(drained, d.ID)
		if err := e.meta.SetDiskState(ctx, d.ID, cairn.DiskDraining, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	r := New(e.meta, e.exec, Config{Unit: 4096})
	now := time.Unix(1000, 0)
	r.Scan(ctx, now)
	r.Work(ctx, now)
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	if len(ts) == 0 || r.Stats().Shards == 0 {
		t.Fatalf("expected partial progress and tasks left: %d tasks, %+v", len(ts), r.Stats())
	}
	if len(ts) != 1 || r.Stats().Shards != 1 || !strings.Contains(ts[0].LastError, "rebuilt 1 of the 2") {
		t.Fatalf("after one round: %+v, %+v", ts, r.Stats())
	}
	// Disks come back: the rest is repaired.
	for _, d := range drained {
		if err := e.meta.SetDiskState(ctx, d, cairn.DiskUp, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, r, e.meta)
	e.check(t)
}

// TestRepairMultipartParts: each part of a multipart object is its own
// stripe; every part with a shard on the lost node is repaired and the
// object reads back whole.
func TestRepairMultipartParts(t *testing.T) {
	e := newEnv(t, 7, "rs-4-2", 0)
	ctx := context.Background()
	e.c = client.New(e.meta, e.files, client.Config{BlockSize: 4096, MinPartSize: 1})
	up, err := e.c.CreateUpload(ctx, "bkt", "big", client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	var list []client.CompletePart
	for n := 1; n <= 5; n++ {
		b := randBytes(uint64(100+n), 20000+n)
		p, err := e.c.UploadPart(ctx, "bkt", "big", up.ID, n, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
		list = append(list, client.CompletePart{Number: n, ETag: p.ETag})
	}
	if _, err := e.c.CompleteUpload(ctx, "bkt", "big", up.ID, list); err != nil {
		t.Fatal(err)
	}
	e.data["big"] = all
	e.orig["big"], _ = e.meta.Manifest(ctx, "bkt", "big")
	e.loseNode(t, "n4")
	r := New(e.meta, e.exec, Config{Unit: 4096})
	added, err := r.Scan(ctx, time.Unix(1000, 0))
	if err != nil || added == 0 {
		t.Fatalf("scan: %d, %v", added, err)
	}
	drain(t, r, e.meta)
	m, _ := e.meta.Manifest(ctx, "bkt", "big")
	for _, p := range m.Parts {
		for i, s := range p.Shards {
			if strings.HasPrefix(string(s.Disk), "n4/") {
				t.Fatalf("part %d shard %d still on %s", p.Number, i, s.Disk)
			}
		}
	}
	if st := r.Stats(); st.Repaired != added {
		t.Fatalf("%d parts queued, stats %+v", added, st)
	}
	_, rc, err := e.c.Get(ctx, "bkt", "big", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(rc)
	rc.Close()
	if !bytes.Equal(buf.Bytes(), all) {
		t.Fatalf("multipart object read back %d bytes, differing", buf.Len())
	}
}

func randBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestWrongRebuildIsRejected: a rebuilt shard whose CRC differs from the
// one the manifest recorded never enters the manifest.
func TestWrongRebuildIsRejected(t *testing.T) {
	e := newEnv(t, 7, "rs-4-2", 5)
	e.loseNode(t, "n2")
	ctx := context.Background()
	r := New(e.meta, e.exec, Config{Unit: 4096})
	now := time.Unix(1000, 0)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	e.exec.wrong.Store(true)
	if n, err := r.Work(ctx, now); err != nil || n != 0 {
		t.Fatalf("work with a bad rebuild: %d done, %v", n, err)
	}
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	for _, task := range ts {
		if task.Attempts != 1 || !strings.Contains(task.LastError, "the manifest says") {
			t.Fatalf("task after a wrong rebuild: %+v", task)
		}
	}
	for key := range e.data {
		m, _ := e.meta.Manifest(ctx, "bkt", key)
		for i, s := range m.Shards {
			if s != e.orig[key].Shards[i] {
				t.Fatalf("%s: manifest changed by a rejected rebuild: %+v", key, m.Shards)
			}
		}
	}
	e.exec.wrong.Store(false)
	drain(t, r, e.meta)
	e.check(t)
}

// TestScanRequeuesWhatItSkipped: a stripe that lands on a lost disk after
// a scan (a repair in flight when the disk went down) is queued by the
// periodic rescan although the set of lost disks did not change.
func TestScanRequeuesWhatItSkipped(t *testing.T) {
	e := newEnv(t, 7, "rs-4-2", 3)
	e.loseNode(t, "n1")
	ctx := context.Background()
	r := New(e.meta, e.exec, Config{Unit: 4096})
	t0 := time.Unix(1000, 0)
	drain(t, r, e.meta) // scans at t0 and later rounds
	// Move one shard of a healthy-looking object onto the lost disk, as a
	// repair landing late would.
	var key string
	for k := range e.data {
		key = k
		break
	}
	m, _ := e.meta.Manifest(ctx, "bkt", key)
	next := *m
	next.Shards = slices.Clone(m.Shards)
	next.Shards[0].Disk = "n1/d1"
	if err := e.meta.UpdateManifest(ctx, &next, m); err != nil {
		t.Fatal(err)
	}
	// drain emptied the queue in its first round, which scanned at t0.
	if n, err := r.Scan(ctx, t0.Add(rescanEvery/2)); err != nil || n != 0 {
		t.Fatalf("a scan within %v of the last walked again: %d tasks, %v", rescanEvery, n, err)
	}
	if n, err := r.Scan(ctx, t0.Add(rescanEvery)); err != nil || n != 1 {
		t.Fatalf("rescan after %v queued %d tasks (%v), want the stripe on the lost disk", rescanEvery, n, err)
	}
}

// TestRepairWithRates: choosing per task does not change what gets
// repaired.
func TestRepairWithRates(t *testing.T) {
	hdd := plan.Rates{Read: 120e6, Write: 110e6, MixedWrite: 5e6, Send: 100e6, Recv: 100e6}
	e := newEnv(t, 6, "rs-4-2", 30)
	e.loseNode(t, "n2")
	e.loseNode(t, "n5")
	r := New(e.meta, e.exec, Config{Unit: 4096, Rates: &hdd, Scheme: plan.PullSur})
	drain(t, r, e.meta)
	if e.exec.pulls.Load() != 0 || e.exec.pushes.Load() == 0 {
		t.Fatalf("%d pushes, %d pulls: on these disks PUSH wins", e.exec.pushes.Load(), e.exec.pulls.Load())
	}
	e.check(t)
}

// TestRepairSpareRows: objects written while a node refused writes hold
// spare parity rows (ShardLoc.Row) in its place. Losing the node that
// holds most of those spare rows, every scheme rebuilds them — rows named
// by their row, planned with the extended code — and every object reads
// back byte-exact, also with two of its other shards unreadable.
func TestRepairSpareRows(t *testing.T) {
	for _, s := range plan.Schemes {
		t.Run(s.String(), func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 8, "rs-4-2", 0)
			e.files.Set(func() {
				e.files.FailPut["n2/d1"] = cairn.ErrNoSpace
				e.files.FailPut["n2/d2"] = cairn.ErrNoSpace
			})
			rng := rand.New(rand.NewPCG(3, 4))
			spareOn := map[string]int{}
			for i := range 30 {
				b := make([]byte, 1+rng.IntN(40000))
				for k := range b {
					b[k] = byte(rng.Uint32())
				}
				key := fmt.Sprintf("obj-%03d", i)
				m, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))})
				if err != nil {
					t.Fatal(err)
				}
				e.data[key], e.orig[key] = b, m
				for _, sh := range m.Shards {
					if sh.Row != 0 {
						spareOn[strings.Split(string(sh.Disk), "/")[0]]++
					}
				}
			}
			e.files.Set(func() { e.files.FailPut = map[cairn.DiskID]error{} })
			victim, most := "", 0
			for n, c := range spareOn {
				if c > most || c == most && n < victim {
					victim, most = n, c
				}
			}
			if most == 0 {
				t.Fatal("no object got a spare row")
			}
			e.loseNode(t, victim)
			r := New(e.meta, e.exec, Config{Scheme: s, Unit: 4096})
			drain(t, r, e.meta)
			rebuiltSpares := 0
			for key := range e.data {
				m, _ := e.meta.Manifest(ctx, "bkt", key)
				for i, sh := range m.Shards {
					if sh.Row != 0 && sh.Disk != e.orig[key].Shards[i].Disk {
						rebuiltSpares++
						if sh.Row != e.orig[key].Shards[i].Row {
							t.Fatalf("%s: slot %d row %d became %d", key, i, e.orig[key].Shards[i].Row, sh.Row)
						}
					}
				}
			}
			if rebuiltSpares < most {
				t.Fatalf("%d spare rows rebuilt, %d were on %s", rebuiltSpares, most, victim)
			}
			e.check(t)
		})
	}
}

// TestTargetFault: which errors of a round blame a target's disk (re-plan
// elsewhere at once) and which do not (a helper's, the stripe's, or an
// unnamed failure: handled by the backoff).
func TestTargetFault(t *testing.T) {
	st := decide.Stripe{Version: "v", Shards: []cairn.ShardLoc{{Disk: "a"}, {Disk: "b"}, {Disk: "c"}}}
	shards, onto := []int{1, 2}, []cairn.DiskID{"t1", "c"} // shard 2 rewritten in place
	named := func(disk cairn.DiskID, shard string, err error) error {
		return fmt.Errorf("push: %w", &wire.Error{Op: "push", Disk: disk, Shard: shard, Err: err})
	}
	tests := []struct {
		name string
		err  error
		want cairn.DiskID
	}{
		{"target missing", named("t1", "v.1", cairn.ErrNotFound), "t1"},
		{"target full", named("t1", "v.1", fmt.Errorf("%w: %w", cairn.ErrUnavailable, cairn.ErrNoSpace)), "t1"},
		{"target unreachable", named("t1", "v.1", cairn.ErrUnavailable), "t1"},
		{"target i/o error", named("t1", "v.1", errors.New("input/output error")), "t1"},
		{"in-place target missing", named("c", cairn.ShardName("v", 2), cairn.ErrNotFound), "c"},
		{"target rejects the request", named("t1", "v.1", cairn.ErrInvalid), ""},
		{"rebuilt shard corrupt", named("t1", "v.1", cairn.ErrCorrupt), ""},
		{"helper missing", named("a", cairn.ShardName("v", 0), cairn.ErrNotFound), ""},
		{"another disk", named("elsewhere", "", cairn.ErrNoSpace), ""},
		{"unnamed", fmt.Errorf("%w: link down", cairn.ErrUnavailable), ""},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		d, ok := targetFault(tt.err, st, shards, onto)
		if d != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: targetFault = %q, %v; want %q", tt.name, d, ok, tt.want)
		}
	}
}

// TestTargetsThatDoNotFitOnePlan reproduces issue #24: after a node was
// killed, an rs-6-3 stripe that had lost 3 shards (risk 0) kept the
// targets of an earlier attempt, one on a node and two on another. A -Rep
// plan sends its j-th lost shard to the (j mod n)th of its n replacement
// nodes, so every round failed with "targets … do not fit one repair
// plan". Now the first round repairs the stripe, under both -Rep schemes,
// and the object reads back byte-exact (also with two more shards that
// were not rebuilt unreadable).
func TestTargetsThatDoNotFitOnePlan(t *testing.T) {
	for _, scheme := range []plan.Scheme{plan.PushRep, plan.PullRep} {
		t.Run(scheme.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testTargetsThatDoNotFit(t, scheme) })
		})
	}
}

func testTargetsThatDoNotFit(t *testing.T, scheme plan.Scheme) {
	e := newEnv(t, 12, "rs-6-3", 1)
	ctx := t.Context()
	m := e.orig["obj-000"]
	holds := map[string]bool{}
	for _, s := range m.Shards {
		holds[string(s.Disk[:strings.Index(string(s.Disk), "/")])] = true
	}
	var free []string // nodes holding nothing of the stripe
	for n := 1; n <= 12; n++ {
		if id := fmt.Sprintf("n%d", n); !holds[id] {
			free = append(free, id)
		}
	}
	// Three shards lost: risk 0.
	var lost []int
	for i := 6; i < 9; i++ {
		e.loseNode(t, string(m.Shards[i].Disk[:strings.Index(string(m.Shards[i].Disk), "/")]))
		lost = append(lost, i)
	}
	r := New(e.meta, e.exec, Config{Scheme: scheme, Unit: 4096, Parallel: 1})
	if added, err := r.Scan(ctx, time.Now()); err != nil || added != 1 {
		t.Fatalf("scan: %d tasks, %v", added, err)
	}
	ts, err := meta.AllRepairTasks(ctx, e.meta)
	if err != nil || len(ts) != 1 {
		t.Fatalf("%d tasks, %v", len(ts), err)
	}
	task := ts[0]
	if task.Risk != 0 {
		t.Fatalf("task at risk %d, want 0", task.Risk)
	}
	// The targets an earlier attempt recorded, as in the issue:
	// [n2/disk1 n5/disk3 n5/disk1] (on nodes nA, nB, nB).
	a, b := free[0], free[1]
	targets := []cairn.DiskID{cairn.DiskID(a + "/d1"), cairn.DiskID(b + "/d2"), cairn.DiskID(b + "/d1")}
	task.Lost, task.Targets = lost, targets
	if err := e.meta.PutRepairTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Work(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("stripe not repaired in one round: %+v", ts[0])
	}
	if st := r.Stats(); st.Failed != 0 || st.Repaired != 1 || st.Shards != 3 {
		t.Fatalf("stats %+v, want 1 task of 3 shards repaired and no failure", st)
	}
	got, _ := e.meta.Manifest(ctx, "bkt", "obj-000")
	for j, i := range lost {
		if got.Shards[i].Disk != targets[j] {
			t.Fatalf("shard %d on %s, its recorded target was %s", i, got.Shards[i].Disk, targets[j])
		}
	}
	e.check(t)
}
