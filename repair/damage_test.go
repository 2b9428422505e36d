package repair

import (
	"context"
	"slices"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// TestDamageBecomesRepair: damage records on disks that are up (what
// scrub and reads report) become tasks with the damaged shards lost and
// bad; the repair moves each damaged shard to another disk, its file is
// queued for cleanup, and the next scan deletes the records as healed. A
// record no manifest names is dropped without counting as healed.
func TestDamageBecomesRepair(t *testing.T) {
	e := newEnv(t, 8, "rs-4-2", 20)
	ctx := context.Background()
	r := New(e.meta, e.exec, Config{Unit: 4096, Parallel: 1})
	now := time.Unix(1000, 0)

	// Damage two shards of obj-003 and one of obj-011: corrupt their
	// files and record them.
	type hit struct {
		key   string
		shard int
	}
	hits := []hit{{"obj-003", 1}, {"obj-003", 4}, {"obj-011", 0}}
	for _, h := range hits {
		m := e.orig[h.key]
		f := cairn.ShardFile{Disk: m.Shards[h.shard].Disk, Name: cairn.ShardName(m.Version, h.shard)}
		e.files.Mu.Lock()
		b := e.files.Files[string(f.Disk)+"/"+f.Name]
		b[len(b)/2] ^= 0x10
		e.files.Mu.Unlock()
		if err := e.meta.PutDamage(ctx, cairn.Damage{Disk: f.Disk, Shard: f.Name, Kind: cairn.DamageCorrupt,
			Source: cairn.DamageScrub, Found: now}); err != nil {
			t.Fatal(err)
		}
	}
	stale := cairn.Damage{Disk: "n1/d1", Shard: cairn.ShardName("0123456789abcdef0123456789abcdef", 3),
		Kind: cairn.DamageCorrupt, Source: cairn.DamageRead, Found: now}
	if err := e.meta.PutDamage(ctx, stale); err != nil {
		t.Fatal(err)
	}

	added, err := r.Scan(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if added != 2 {
		t.Fatalf("Scan queued %d tasks, want 2", added)
	}
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	for _, tk := range ts {
		want := []int{1, 4}
		if tk.Key == "obj-011" {
			want = []int{0}
		}
		if !slices.Equal(tk.Lost, want) || !slices.Equal(tk.Bad, want) || tk.Risk != 2-len(want) {
			t.Fatalf("task %s: lost %v bad %v risk %d, want lost and bad %v", tk.Key, tk.Lost, tk.Bad, tk.Risk, want)
		}
	}
	ds, _, _ := e.meta.Damages(ctx, "", 100)
	if len(ds) != 3 {
		t.Fatalf("after the scan: %d damage records, want the 3 matched (%+v)", len(ds), ds)
	}
	for _, d := range ds {
		if d.Task == "" {
			t.Fatalf("matched record without its task: %+v", d)
		}
	}
	if st := r.Stats(); st.DamageQueued != 3 || st.DamageHealed != 0 {
		t.Fatalf("stats after the scan: %+v", st)
	}

	// A second scan within rescanEvery changes nothing; a read reports
	// obj-003's shard 4 again meanwhile: still one record, one task.
	if err := e.meta.PutDamage(ctx, cairn.Damage{Disk: ds[0].Disk, Shard: ds[0].Shard, Kind: cairn.DamageCorrupt,
		Source: cairn.DamageRead, Found: now}); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Scan(ctx, now.Add(time.Second)); err != nil || n != 0 {
		t.Fatalf("second scan: %d, %v", n, err)
	}

	if _, err := r.Work(ctx, now); err != nil {
		t.Fatal(err)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("tasks left after Work: %+v", ts)
	}
	for _, h := range hits {
		m, _ := e.meta.Manifest(ctx, "bkt", h.key)
		if m.Shards[h.shard].Disk == e.orig[h.key].Shards[h.shard].Disk {
			t.Fatalf("%s shard %d still on its damaged disk", h.key, h.shard)
		}
	}
	cs, _ := e.meta.Cleanups(ctx, time.Now().Add(time.Hour), 100)
	var queued []cairn.ShardFile
	for _, c := range cs {
		queued = append(queued, c.Files...)
	}
	for _, h := range hits {
		m := e.orig[h.key]
		f := cairn.ShardFile{Disk: m.Shards[h.shard].Disk, Name: cairn.ShardName(m.Version, h.shard)}
		if !slices.Contains(queued, f) {
			t.Fatalf("damaged file %v not queued for cleanup (queued %v)", f, queued)
		}
	}

	// The next walk (rescanEvery later) finds the records' shards moved:
	// healed; the stale one is dropped without counting.
	// (The second scan walked: the stale record's deletion changed the
	// set.)
	if _, err := r.Scan(ctx, now.Add(time.Second+rescanEvery)); err != nil {
		t.Fatal(err)
	}
	if ds, _, _ := e.meta.Damages(ctx, "", 100); len(ds) != 0 {
		t.Fatalf("records left after healing: %+v", ds)
	}
	if st := r.Stats(); st.DamageHealed != 3 || st.DamageQueued != 3 {
		t.Fatalf("stats after healing: %+v", st)
	}
	// The objects read back, also with shards of the survivors failing.
	e.check(t)
}

// TestDamageRewrittenInPlace: with no disk outside the stripe (6 disks,
// rs-4-2), a damaged shard is rewritten onto its own disk; the record is
// then healed although the manifest names the same disk.
func TestDamageRewrittenInPlace(t *testing.T) {
	e := newEnv(t, 3, "rs-4-2", 5) // 3 nodes × 2 disks: every stripe uses every disk
	ctx := context.Background()
	r := New(e.meta, e.exec, Config{Unit: 4096, Parallel: 1})
	now := time.Unix(1000, 0)
	m := e.orig["obj-002"]
	f := cairn.ShardFile{Disk: m.Shards[2].Disk, Name: cairn.ShardName(m.Version, 2)}
	e.files.Mu.Lock()
	b := e.files.Files[string(f.Disk)+"/"+f.Name]
	good := slices.Clone(b)
	b[0] ^= 1
	e.files.Mu.Unlock()
	if err := e.meta.PutDamage(ctx, cairn.Damage{Disk: f.Disk, Shard: f.Name, Kind: cairn.DamageCorrupt,
		Source: cairn.DamageRead, Found: now}); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Scan(ctx, now); err != nil || n != 1 {
		t.Fatalf("Scan: %d tasks, %v", n, err)
	}
	if _, err := r.Work(ctx, now); err != nil {
		t.Fatal(err)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("tasks left: %+v", ts)
	}
	cur, _ := e.meta.Manifest(ctx, "bkt", "obj-002")
	if cur.Shards[2].Disk != f.Disk {
		t.Fatalf("shard 2 moved to %s; no disk outside the stripe exists", cur.Shards[2].Disk)
	}
	e.files.Mu.Lock()
	healed := slices.Equal(e.files.Files[string(f.Disk)+"/"+f.Name], good)
	e.files.Mu.Unlock()
	if !healed {
		t.Fatal("the damaged file was not rewritten with its content")
	}
	if _, err := r.Scan(ctx, now.Add(rescanEvery)); err != nil {
		t.Fatal(err)
	}
	if ds, _, _ := e.meta.Damages(ctx, "", 10); len(ds) != 0 {
		t.Fatalf("records left: %+v", ds)
	}
	if st := r.Stats(); st.DamageHealed != 1 || st.DamageQueued != 1 {
		t.Fatalf("stats %+v", st)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("the healed record queued another task: %+v", ts)
	}
	e.check(t)
}
