package metatest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

func testUpdateManifest(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "bkt")
	m := manifest("bkt", "k", "v1")
	noErr(t, "commit", s.CommitManifest(ctx, m, ""))
	prev, err := s.Manifest(ctx, "bkt", "k")
	noErr(t, "Manifest", err)

	moved := *prev
	moved.Shards = append([]cairn.ShardLoc(nil), prev.Shards...)
	moved.Shards[0].Disk = "node9/disk9"
	noErr(t, "UpdateManifest", s.UpdateManifest(ctx, &moved, prev))
	got, err := s.Manifest(ctx, "bkt", "k")
	noErr(t, "Manifest after update", err)
	sameManifest(t, "after update", got, &moved)
	noErr(t, "UpdateManifest retried", s.UpdateManifest(ctx, &moved, prev))

	// prev is stale now: another update must not overwrite the first.
	other := *prev
	other.Shards = append([]cairn.ShardLoc(nil), prev.Shards...)
	other.Shards[0].Disk = "node8/disk8"
	wantErr(t, "UpdateManifest over a stale manifest", s.UpdateManifest(ctx, &other, prev), cairn.ErrConflict)

	// An overwrite by a new version wins over a repair of the old one.
	noErr(t, "overwrite", s.CommitManifest(ctx, manifest("bkt", "k", "v2"), "v1"))
	wantErr(t, "UpdateManifest after overwrite", s.UpdateManifest(ctx, &other, got), cairn.ErrConflict)
	_, err = s.DeleteManifest(ctx, "bkt", "k", "")
	noErr(t, "delete", err)
	wantErr(t, "UpdateManifest after delete", s.UpdateManifest(ctx, &other, got), cairn.ErrNotFound)

	broken := *got
	broken.Layout = cairn.Layout{}
	wantErr(t, "UpdateManifest to no layout", s.UpdateManifest(ctx, &broken, got), cairn.ErrInvalid)

	v3 := manifest("bkt", "k", "v3")
	wantErr(t, "UpdateManifest across versions", s.UpdateManifest(ctx, v3, got), cairn.ErrInvalid)
	wantErr(t, "UpdateManifest nil prev", s.UpdateManifest(ctx, v3, nil), cairn.ErrInvalid)
}

// testUpdateManifestRace: of concurrent updates from the same prev,
// exactly one lands.
func testUpdateManifestRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "bkt")
	noErr(t, "commit", s.CommitManifest(ctx, manifest("bkt", "k", "v1"), ""))
	prev, err := s.Manifest(ctx, "bkt", "k")
	noErr(t, "Manifest", err)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := *prev
			m.Shards = append([]cairn.ShardLoc(nil), prev.Shards...)
			m.Shards[0].Disk = cairn.DiskID("node/disk" + string(rune('a'+i)))
			errs[i] = s.UpdateManifest(ctx, &m, prev)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !isConflict(err):
			t.Fatalf("racing update: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d racing updates landed, want 1", won, n)
	}
}

func testRepairTasks(t *testing.T, s meta.Store) {
	ctx := t.Context()
	ts, err := meta.AllRepairTasks(ctx, s)
	noErr(t, "RepairTasks empty", err)
	if len(ts) != 0 {
		t.Fatalf("RepairTasks on a new store: %v", ts)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(key string, risk int, created time.Time) cairn.RepairTask {
		return cairn.RepairTask{ID: cairn.RepairTaskID("b", key, "v", 0), Bucket: "b", Key: key, Version: "v",
			Policy: "rs-4-2", Lost: []int{1}, Risk: risk, Bytes: 100, Created: created}
	}
	a, b, c := mk("a", 1, t0), mk("b", 0, t0.Add(time.Second)), mk("c", 1, t0.Add(-time.Second))
	for _, x := range []cairn.RepairTask{a, b, c} {
		noErr(t, "PutRepairTask", s.PutRepairTask(ctx, x))
	}
	a.Targets, a.Attempts, a.LastError = []cairn.DiskID{"n/d"}, 1, "boom"
	noErr(t, "PutRepairTask replace", s.PutRepairTask(ctx, a))
	ts, err = meta.AllRepairTasks(ctx, s)
	noErr(t, "RepairTasks", err)
	if len(ts) != 3 || ts[0].Key != "b" || ts[1].Key != "c" || ts[2].Key != "a" {
		t.Fatalf("RepairTasks order: %+v", ts)
	}
	if got := ts[2]; got.Attempts != 1 || got.LastError != "boom" || len(got.Targets) != 1 || got.Targets[0] != "n/d" || !got.Created.Equal(t0) {
		t.Fatalf("replaced task read back as %+v", got)
	}
	ts[2].Lost[0] = 99
	if again, _ := meta.AllRepairTasks(ctx, s); again[2].Lost[0] == 99 {
		t.Fatalf("RepairTasks returned a slice the store still uses")
	}
	noErr(t, "DeleteRepairTask", s.DeleteRepairTask(ctx, b.ID))
	wantErr(t, "DeleteRepairTask twice", s.DeleteRepairTask(ctx, b.ID), cairn.ErrNotFound)
	wantErr(t, "PutRepairTask no ID", s.PutRepairTask(ctx, cairn.RepairTask{}), cairn.ErrInvalid)
	wantErr(t, "PutRepairTask slash", s.PutRepairTask(ctx, cairn.RepairTask{ID: "a/b"}), cairn.ErrInvalid)
	ts, _ = meta.AllRepairTasks(ctx, s)
	if len(ts) != 2 {
		t.Fatalf("after delete: %+v", ts)
	}

	_, err = s.RepairProgress(ctx)
	wantErr(t, "RepairProgress before any", err, cairn.ErrNotFound)
	p := cairn.RepairProgress{Director: "n1", Updated: t0, Shards: 3, Bytes: 300, Failed: 1, Rate: 12.5}
	noErr(t, "PutRepairProgress", s.PutRepairProgress(ctx, p))
	p.Shards = 4
	noErr(t, "PutRepairProgress again", s.PutRepairProgress(ctx, p))
	got, err := s.RepairProgress(ctx)
	noErr(t, "RepairProgress", err)
	if got.Director != "n1" || got.Shards != 4 || got.Rate != 12.5 || !got.Updated.Equal(t0) {
		t.Fatalf("RepairProgress = %+v, want %+v", got, p)
	}
}

func isConflict(err error) bool { return errors.Is(err, cairn.ErrConflict) }

// testRepairTaskPages pages the queue: empty, exactly one page, across
// page boundaries, from a given ID, with deletions during the walk, and
// the riskiest-first selection over pages.
func testRepairTaskPages(t *testing.T, s meta.Store) {
	ctx := t.Context()
	ts, more, err := s.RepairTaskPage(ctx, "", 3)
	noErr(t, "RepairTaskPage empty", err)
	if len(ts) != 0 || more {
		t.Fatalf("RepairTaskPage of an empty queue: %v, more %v", ts, more)
	}
	for _, bad := range []int{0, -1, meta.MaxPage + 1} {
		_, _, err := s.RepairTaskPage(ctx, "", bad)
		wantErr(t, fmt.Sprintf("RepairTaskPage limit %d", bad), err, cairn.ErrInvalid)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []string
	for i := range 7 {
		task := cairn.RepairTask{ID: cairn.RepairTaskID("b", fmt.Sprint("k", i), "v", 0), Bucket: "b", Key: fmt.Sprint("k", i),
			Version: "v", Policy: "rs-4-2", Lost: []int{1}, Risk: (i * 5) % 3, Created: t0.Add(time.Duration(-i) * time.Second)}
		noErr(t, "PutRepairTask", s.PutRepairTask(ctx, task))
		ids = append(ids, task.ID)
	}
	slices.Sort(ids)
	page := func(after string, limit int) ([]string, bool) {
		t.Helper()
		ts, more, err := s.RepairTaskPage(ctx, after, limit)
		noErr(t, "RepairTaskPage", err)
		var got []string
		for _, x := range ts {
			got = append(got, x.ID)
		}
		return got, more
	}
	if got, more := page("", 7); !slices.Equal(got, ids) || more {
		t.Fatalf("one exact page: %v more %v, want %v", got, more, ids)
	}
	if got, more := page("", 3); !slices.Equal(got, ids[:3]) || !more {
		t.Fatalf("first page of 3: %v more %v", got, more)
	}
	if got, more := page(ids[2], 3); !slices.Equal(got, ids[3:6]) || !more {
		t.Fatalf("second page of 3: %v more %v", got, more)
	}
	if got, more := page(ids[5], 3); !slices.Equal(got, ids[6:]) || more {
		t.Fatalf("last page: %v more %v", got, more)
	}
	if got, more := page(ids[6], 3); len(got) != 0 || more {
		t.Fatalf("after the last: %v more %v", got, more)
	}
	// An ID that is not queued starts after where it would sort.
	if got, _ := page(ids[2]+"0", 2); !slices.Equal(got, ids[3:5]) {
		t.Fatalf("after an absent ID: %v", got)
	}
	// Deleting the page's last task does not lose the next page.
	first, _ := page("", 2)
	noErr(t, "DeleteRepairTask", s.DeleteRepairTask(ctx, first[1]))
	if got, _ := page(first[1], 2); !slices.Equal(got, ids[2:4]) {
		t.Fatalf("page after a deleted ID: %v, want %v", got, ids[2:4])
	}
	all, err := meta.AllRepairTasks(ctx, s)
	noErr(t, "AllRepairTasks", err)
	if len(all) != 6 {
		t.Fatalf("AllRepairTasks: %d tasks, want 6", len(all))
	}
	for n := 1; n <= 7; n++ {
		top, err := meta.RiskiestRepairTasks(ctx, s, n, func(x cairn.RepairTask) bool { return x.Risk < 2 })
		noErr(t, "RiskiestRepairTasks", err)
		var want []cairn.RepairTask
		for _, x := range all {
			if x.Risk < 2 {
				want = append(want, x)
			}
		}
		want = want[:min(n, len(want))]
		if len(top) != len(want) {
			t.Fatalf("RiskiestRepairTasks(%d): %d tasks, want %d", n, len(top), len(want))
		}
		for i := range top {
			if top[i].ID != want[i].ID {
				t.Fatalf("RiskiestRepairTasks(%d)[%d] = %s (risk %d), want %s", n, i, top[i].ID, top[i].Risk, want[i].ID)
			}
		}
	}
	_, err = meta.RiskiestRepairTasks(ctx, s, 0, nil)
	wantErr(t, "RiskiestRepairTasks 0", err, cairn.ErrInvalid)
}

// testRepairQueue reads the queue in its order (riskiest first, then
// oldest, then by ID) a page at a time: risks below 0 and far apart,
// creation times before 1970 and the zero time, ties broken by ID, tasks
// whose risk changes (they move, and are met once), deleted tasks.
func testRepairQueue(t *testing.T, s meta.Store) {
	ctx := t.Context()
	ts, more, err := s.RepairQueuePage(ctx, nil, 5)
	noErr(t, "RepairQueuePage empty", err)
	if len(ts) != 0 || more {
		t.Fatalf("RepairQueuePage of an empty queue: %v", ts)
	}
	_, _, err = s.RepairQueuePage(ctx, nil, meta.MaxPage+1)
	wantErr(t, "RepairQueuePage limit", err, cairn.ErrInvalid)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	times := []time.Time{{}, time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), t0, t0.Add(time.Nanosecond), t0.Add(time.Hour)}
	risks := []int{-1, 0, 1, 2, 9, 10, 100}
	var all []cairn.RepairTask
	for i := range 40 {
		key := fmt.Sprint("k", i)
		task := cairn.RepairTask{ID: cairn.RepairTaskID("b", key, "v", 0), Bucket: "b", Key: key, Version: "v", Policy: "rs-4-2",
			Lost: []int{1}, Risk: risks[i%len(risks)], Created: times[(i/3)%len(times)]}
		noErr(t, "PutRepairTask", s.PutRepairTask(ctx, task))
		all = append(all, task)
	}
	walk := func(limit int) []string {
		t.Helper()
		var ids []string
		var after *cairn.RepairTask
		for {
			ts, more, err := s.RepairQueuePage(ctx, after, limit)
			noErr(t, "RepairQueuePage", err)
			for _, x := range ts {
				ids = append(ids, x.ID)
			}
			if !more {
				return ids
			}
			after = &ts[len(ts)-1]
		}
	}
	order := func() []string {
		sorted := slices.Clone(all)
		meta.SortRepairTasks(sorted)
		var ids []string
		for _, x := range sorted {
			ids = append(ids, x.ID)
		}
		return ids
	}
	for _, limit := range []int{1, 7, 40, meta.MaxPage} {
		if got, want := walk(limit), order(); !slices.Equal(got, want) {
			t.Fatalf("queue order by pages of %d:\n got %v\nwant %v", limit, got, want)
		}
	}
	// A task whose risk changes moves; one deleted goes.
	all[5].Risk, all[5].Attempts = -1, 3
	noErr(t, "PutRepairTask moves", s.PutRepairTask(ctx, all[5]))
	all[6].Created = time.Time{}
	noErr(t, "PutRepairTask moves again", s.PutRepairTask(ctx, all[6]))
	noErr(t, "DeleteRepairTask", s.DeleteRepairTask(ctx, all[7].ID))
	all = slices.Delete(all, 7, 8)
	if got, want := walk(3), order(); !slices.Equal(got, want) {
		t.Fatalf("queue order after moves:\n got %v\nwant %v", got, want)
	}
	first, _, err := s.RepairQueuePage(ctx, nil, 1)
	noErr(t, "RepairQueuePage", err)
	if first[0].ID != order()[0] {
		t.Fatalf("riskiest task %+v, want %s", first[0], order()[0])
	}
	page, _, err := s.RepairQueuePage(ctx, nil, meta.MaxPage)
	noErr(t, "RepairQueuePage", err)
	if i := slices.IndexFunc(page, func(x cairn.RepairTask) bool { return x.ID == all[5].ID }); i < 0 || page[i].Attempts != 3 {
		t.Fatalf("the moved task is not read back as put")
	}
	// From a task that is gone: after its position.
	gone := first[0]
	noErr(t, "DeleteRepairTask", s.DeleteRepairTask(ctx, gone.ID))
	all = slices.DeleteFunc(all, func(x cairn.RepairTask) bool { return x.ID == gone.ID })
	ts, _, err = s.RepairQueuePage(ctx, &gone, meta.MaxPage)
	noErr(t, "RepairQueuePage after a deleted task", err)
	if len(ts) != len(all) || ts[0].ID != order()[0] {
		t.Fatalf("after a deleted task: %d tasks", len(ts))
	}
	top, err := meta.RiskiestRepairTasks(ctx, s, 4, func(x cairn.RepairTask) bool { return x.Risk >= 0 })
	noErr(t, "RiskiestRepairTasks", err)
	var want []string
	for _, id := range order() {
		i := slices.IndexFunc(all, func(x cairn.RepairTask) bool { return x.ID == id })
		if all[i].Risk >= 0 && len(want) < 4 {
			want = append(want, id)
		}
	}
	for i := range top {
		if top[i].ID != want[i] {
			t.Fatalf("RiskiestRepairTasks: %d = %s, want %s", i, top[i].ID, want[i])
		}
	}
}
