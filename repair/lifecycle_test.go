package repair

import (
	"bytes"
	"context"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta"
	"cairn/repair/decide"
)

// setState sets the state of every disk of node (or the one disk named).
func (e *env) setState(t *testing.T, name string, s cairn.DiskState) {
	t.Helper()
	disks, _ := e.meta.Disks(context.Background())
	for _, d := range disks {
		if string(d.Node) == name || string(d.ID) == name {
			if err := e.meta.SetDiskState(context.Background(), d.ID, s, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// refs counts the shards the manifests place on each disk.
func (e *env) refs(t *testing.T) map[cairn.DiskID]int {
	t.Helper()
	out := map[cairn.DiskID]int{}
	for key := range e.data {
		m, err := e.meta.Manifest(context.Background(), "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range decide.Stripes(m) {
			for _, s := range st.Shards {
				out[s.Disk]++
			}
		}
	}
	return out
}

// A complete scan takes the census: the shards of every manifest and of
// every multipart upload in progress, per disk, stamped with the time the
// walk started.
func TestScanTakesCensus(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 8, "rs-4-2", 30)
	r := New(e.meta, e.exec, Config{Unit: 4096})
	if c := r.Census(); !c.At.IsZero() {
		t.Fatalf("census before any scan: %+v", c)
	}
	u, err := e.c.CreateUpload(ctx, "bkt", "in-progress", client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	part, err := e.c.UploadPart(ctx, "bkt", "in-progress", u.ID, 1, bytes.NewReader(make([]byte, 5000)), client.PutOptions{Size: 5000})
	if err != nil {
		t.Fatal(err)
	}
	want := e.refs(t)
	for _, s := range part.Shards {
		want[s.Disk]++
	}
	// Nothing lost, nothing draining: no walk, no census.
	now := time.Unix(5000, 0)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	if c := r.Census(); !c.At.IsZero() {
		t.Fatalf("census without a walk: %+v", c)
	}
	e.setState(t, "n3/d1", cairn.DiskDown)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	c := r.Census()
	if !c.At.Equal(now) || len(c.Refs) != len(want) {
		t.Fatalf("census at %v: %v, want %v", c.At, c.Refs, want)
	}
	for d, n := range want {
		if c.Refs[d] != n {
			t.Fatalf("census of %s: %d shards, want %d (%v)", d, c.Refs[d], n, c.Refs)
		}
	}
	c.Refs["n3/d1"] = -1
	if r.Census().Refs["n3/d1"] == -1 {
		t.Fatal("Census returned the repairer's own map")
	}
}

// A node down for longer than the grace period comes back intact before
// its shards were rebuilt: the scan drops the queued tasks, and repair
// rebuilds nothing; every object reads back from all its shards.
func TestScanDropsTasksOfReturnedDisks(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 8, "rs-4-2", 40)
	r := New(e.meta, e.exec, Config{Unit: 4096})
	e.setState(t, "n2", cairn.DiskDown) // its files stay: it returns intact
	now := time.Unix(5000, 0)
	added, err := r.Scan(ctx, now)
	if err != nil || added == 0 {
		t.Fatalf("scan after a node went down: %d tasks, %v", added, err)
	}
	// A first attempt of one of them failed: it waits out a backoff.
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	ts[0].Attempts, ts[0].NotBefore = 1, now.Add(time.Hour)
	if err := e.meta.PutRepairTask(ctx, ts[0]); err != nil {
		t.Fatal(err)
	}
	e.setState(t, "n2", cairn.DiskUp)
	if _, err := r.Scan(ctx, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("%d tasks left after the node came back, e.g. %+v", len(ts), ts[0])
	}
	if _, err := r.Work(ctx, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Shards != 0 || e.exec.pushes.Load() != 0 {
		t.Fatalf("repair rebuilt %d shards (%d pushes) of a node that came back", st.Shards, e.exec.pushes.Load())
	}
	for key, orig := range e.orig {
		m, _ := e.meta.Manifest(ctx, "bkt", key)
		for i, s := range m.Shards {
			if s.Disk != orig.Shards[i].Disk {
				t.Fatalf("%s: shard %d moved from %s to %s", key, i, orig.Shards[i].Disk, s.Disk)
			}
		}
	}
	e.check(t)
}

// Work drops a task whose disk came back even without a scan, and rebuilds
// only the shards still lost, while a shard it found bad stays lost.
func TestWorkRebuildsOnlyWhatIsStillLost(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 8, "rs-4-2", 20)
	r := New(e.meta, e.exec, Config{Unit: 4096})
	e.setState(t, "n2", cairn.DiskDown)
	e.setState(t, "n5", cairn.DiskDown)
	now := time.Unix(5000, 0)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	e.setState(t, "n2", cairn.DiskUp)
	e.loseNode(t, "n5") // down for good: its files are gone
	if _, err := r.Work(ctx, now); err != nil {
		t.Fatal(err)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("%d tasks left, e.g. %+v", len(ts), ts[0])
	}
	moved := 0
	for key, orig := range e.orig {
		m, _ := e.meta.Manifest(ctx, "bkt", key)
		for i, s := range m.Shards {
			was := orig.Shards[i].Disk
			switch {
			case s.Disk == was:
			case string(was[:2]) == "n5":
				moved++
			default:
				t.Fatalf("%s: shard %d moved from %s (not lost) to %s", key, i, was, s.Disk)
			}
		}
	}
	if moved == 0 || r.Stats().Shards != moved {
		t.Fatalf("%d shards moved off n5, %d rebuilt", moved, r.Stats().Shards)
	}
	e.check(t)
}

// A draining disk is emptied: its shards are rebuilt elsewhere, at most
// MaxMoves tasks queued at a time, after the stripes that lost redundancy;
// then no manifest places a shard on it and the census says so.
func TestDrainMovesShardsOff(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 8, "rs-4-2", 400)
	r := New(e.meta, e.exec, Config{Unit: 4096})
	const victim cairn.DiskID = "n4/d1"
	if n := e.refs(t)[victim]; n <= MaxMoves {
		t.Fatalf("the draining disk holds %d shards; the test needs more than %d", n, MaxMoves)
	}
	e.setState(t, string(victim), cairn.DiskDraining)
	now := time.Unix(5000, 0)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != MaxMoves || ts[0].Risk != 2 {
		t.Fatalf("queued %d drain tasks (risk %d), want %d (risk 2: nothing lost)", len(ts), ts[0].Risk, MaxMoves)
	}
	// A disk lost meanwhile: its stripes run first.
	e.setState(t, "n7/d1", cairn.DiskDown)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	moves, lost := 0, 0
	view := decide.NewView(nil, mustDisks(t, e))
	for i, tk := range ts {
		m, _ := e.meta.Manifest(ctx, tk.Bucket, tk.Key)
		st, _ := decide.FindStripe(m, tk.Part)
		if decide.OnlyMoves(tk, st, view) {
			moves++
			continue
		}
		lost++
		if moves > 0 {
			t.Fatalf("task %d lost redundancy but is queued after %d drain tasks", i, moves)
		}
	}
	if moves > MaxMoves || lost == 0 {
		t.Fatalf("queued %d drain tasks (at most %d) and %d repairs", moves, MaxMoves, lost)
	}
	for range 20 {
		if _, err := r.Work(ctx, now); err != nil {
			t.Fatal(err)
		}
		now = now.Add(rescanEvery)
		if _, err := r.Scan(ctx, now); err != nil {
			t.Fatal(err)
		}
		if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) == 0 {
			break
		}
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("%d tasks left, e.g. %+v", len(ts), ts[0])
	}
	if n := e.refs(t)[victim]; n != 0 {
		t.Fatalf("%d shards still on the drained disk", n)
	}
	// One more walk (the last one may have run before the last move).
	now = now.Add(rescanEvery)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	if c := r.Census(); !c.At.Equal(now) || c.Refs[victim] != 0 {
		t.Fatalf("census after the drain: %v at %v", c.Refs, c.At)
	}
	e.check(t)
}

func mustDisks(t *testing.T, e *env) []cairn.Disk {
	t.Helper()
	ds, err := e.meta.Disks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
