package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/meta/mem"
	"cairn/repair/decide"
)

// view is one node with disks d1…dN, those in down marked down.
func testView(n int, down ...int) *decide.View {
	var disks []cairn.Disk
	for i := 1; i <= n; i++ {
		d := cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("n1/d%d", i)), Node: "n1", State: cairn.DiskUp}
		for _, x := range down {
			if x == i {
				d.State = cairn.DiskDown
			}
		}
		disks = append(disks, d)
	}
	return decide.NewView([]cairn.Node{{ID: "n1", Addr: "127.0.0.1:1"}}, disks)
}

func TestJudgeTask(t *testing.T) {
	m := &cairn.Manifest{Bucket: "b", Key: "k", Version: "v1", Policy: "rs-4-2", Layout: cairn.Layout{BlockSize: 1000}}
	for i := 1; i <= 6; i++ {
		m.Shards = append(m.Shards, cairn.ShardLoc{Disk: cairn.DiskID(fmt.Sprintf("n1/d%d", i)), Size: 1000})
	}
	task := &cairn.RepairTask{ID: "t", Bucket: "b", Key: "k", Version: "v1", Policy: "rs-4-2", Lost: []int{1, 4}, Bytes: 2000}
	for _, tc := range []struct {
		name string
		m    *cairn.Manifest
		v    *decide.View
		want taskJudgement
	}{
		{"two spare disks: all of it now", m, testView(8, 2, 5), taskJudgement{Ready: 2000}},
		{"one spare disk: half now", m, testView(8, 2, 5, 7), taskJudgement{Ready: 1000,
			Wait: "1 of its 2 lost shards: no writable disk outside the stripe (6-wide rs-4-2 on 8 disks, 3 down)"}},
		{"no spare disk", m, testView(6, 2, 5), taskJudgement{
			Wait: "no writable disk outside the stripe (6-wide rs-4-2 on 6 disks, 2 down)"}},
		{"too few shards", m, testView(8, 1, 2, 5), taskJudgement{
			Wait: "too few readable shards to rebuild from (3 of 6): a disk must come back"}},
		{"object gone", nil, testView(6, 2, 5), taskJudgement{}},
		{"failed twice: still counted on", m, testView(8, 2, 5), taskJudgement{Ready: 2000}},
		{"keeps failing: the reason, not an ETA", m, testView(8, 2, 5), taskJudgement{
			Wait: "its repair keeps failing; last error: unavailable: link down"}},
		{"keeps failing and no spare disk: the decision's reason", m, testView(6, 2, 5), taskJudgement{
			Wait: "no writable disk outside the stripe (6-wide rs-4-2 on 6 disks, 2 down)"}},
		{"object rewritten", &cairn.Manifest{Version: "v2"}, testView(6, 2, 5), taskJudgement{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := *task
			switch {
			case strings.HasPrefix(tc.name, "failed twice"):
				task.Attempts, task.LastError = 2, "unavailable: link down"
			case strings.HasPrefix(tc.name, "keeps failing"):
				task.Attempts, task.LastError = stuckAttempts, "unavailable: link down"
			}
			if got := judgeTask(&task, tc.m, tc.v); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestQueueSummary(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	wait := "no writable disk outside the stripe (6-wide rs-4-2 on 6 disks, 2 down)"
	fresh := &cairn.RepairProgress{Updated: now.Add(-10 * time.Second), Rate: 1 << 20}
	idle := &cairn.RepairProgress{Updated: now.Add(-10 * time.Second)}
	for _, tc := range []struct {
		name string
		q    queueReport
		p    *cairn.RepairProgress
		want string
	}{
		{"empty", queueReport{}, nil, "nothing to repair"},
		{"all waiting: no ETA", queueReport{Tasks: 2, Bytes: 4 << 20, Waiting: []waitGroup{{wait, 2, 4 << 20}}}, fresh,
			"2 stripes with lost shards, 4.0 MiB to rebuild; 2 wait: " + wait},
		{"ETA for what can be rebuilt", queueReport{Tasks: 3, Bytes: 6 << 20, Ready: 2 << 20, Waiting: []waitGroup{{wait, 2, 4 << 20}}}, fresh,
			"3 stripes with lost shards, 6.0 MiB to rebuild, ETA 2.0 s for 2.0 MiB; 2 wait: " + wait},
		{"not progressing", queueReport{Tasks: 1, Bytes: 2 << 20, Ready: 2 << 20, Failing: 1}, idle,
			"1 stripe with lost shards, 2.0 MiB to rebuild, no ETA: no shard rebuilt lately (the last attempt failed for 1 stripe)"},
		{"not started", queueReport{Tasks: 1, Bytes: 2 << 20, Ready: 2 << 20}, nil,
			"1 stripe with lost shards, 2.0 MiB to rebuild, no ETA yet: the director has reported no repair"},
		{"stale report", queueReport{Tasks: 1, Bytes: 2 << 20, Ready: 2 << 20}, &cairn.RepairProgress{Updated: now.Add(-time.Hour), Rate: 1},
			"1 stripe with lost shards, 2.0 MiB to rebuild, no ETA: the director has reported no progress since " +
				now.Add(-time.Hour).Local().Format(time.DateTime)},
		{"several reasons", queueReport{Tasks: 3, Bytes: 6 << 20, Waiting: []waitGroup{{wait, 2, 4 << 20}, {"other", 1, 2 << 20}}}, fresh,
			"3 stripes with lost shards, 6.0 MiB to rebuild; 2 wait: " + wait + " (and 1 stripe for other reasons)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.q.summary(tc.p, now); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// An lt task is judged as its repair plans it: the new blocks that find
// a disk within the bounds are ready; a stripe with fewer than K
// readable blocks waits for a disk.
func TestJudgeCodedTask(t *testing.T) {
	// lt-16-2: 32 blocks of 1 KiB, 8 on each of d1..d4 of one node.
	m := &cairn.Manifest{Bucket: "b", Key: "k", Version: "v1", Policy: "lt-16-2", Layout: cairn.Layout{BlockSize: 1024}}
	cs := cairn.CodedStripe{Version: "s1", Next: 32}
	for id := range 32 {
		cs.Blocks = append(cs.Blocks, cairn.BlockLoc{ID: id, Disk: cairn.DiskID(fmt.Sprintf("n1/d%d", 1+id%4))})
	}
	m.Coded = []cairn.CodedStripe{cs}
	task := &cairn.RepairTask{ID: "t", Bucket: "b", Key: "k", Version: "v1", Policy: "lt-16-2", Lost: []int{0}}
	for _, tc := range []struct {
		name string
		v    *decide.View
		want taskJudgement
	}{
		{"one disk down, four spare: all of it now", testView(8, 1), taskJudgement{Ready: 8 * 1024}},
		{"three disks down: too few to decode", testView(8, 1, 2, 3), taskJudgement{
			Wait: "too few readable blocks to decode coded stripe 0 from (8, 16 needed): a disk must come back"}},
		// Three disks cannot hold 32 at 7 each: 11 each, as even as they allow.
		{"one disk down, no spare: the others take more", testView(4, 1), taskJudgement{Ready: 8 * 1024}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeTask(task, m, tc.v); got != tc.want {
				t.Fatalf("judgeTask = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestJudgeUploadTask: a task of a part of an upload in progress is judged
// against that part (repair.OpenPart), not the key's object; once the part
// is uploaded again or the upload ends, the director drops it.
func TestJudgeUploadTask(t *testing.T) {
	ctx := t.Context()
	store := mem.New()
	if err := store.PutNode(ctx, cairn.Node{ID: "n1", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		d := cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("n1/d%d", i)), Node: "n1", State: cairn.DiskUp, Capacity: 1 << 30}
		if i == 2 {
			d.State = cairn.DiskDown
		}
		if err := store.PutDisk(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	u := cairn.Upload{Bucket: "bkt", Key: "k", ID: "00aa", Created: time.Unix(1, 0).UTC(), Policy: "rs-4-2"}
	if err := store.CreateUpload(ctx, u); err != nil {
		t.Fatal(err)
	}
	part := func(version string) cairn.Part {
		p := cairn.Part{Number: 1, Version: version, Size: 4000, ETag: "e", Created: u.Created, Layout: cairn.Layout{BlockSize: 1000}}
		for i := 1; i <= 6; i++ {
			p.Shards = append(p.Shards, cairn.ShardLoc{Disk: cairn.DiskID(fmt.Sprintf("n1/d%d", i)), Size: 1000})
		}
		return p
	}
	if _, err := store.PutPart(ctx, "bkt", u.ID, part("p1")); err != nil {
		t.Fatal(err)
	}
	task := cairn.RepairTask{ID: cairn.UploadRepairTaskID("bkt", u.ID, 1, "p1"), Bucket: "bkt", Key: "k", Upload: u.ID, Part: 1,
		Stripe: "p1", Policy: "rs-4-2", Lost: []int{1}, Bytes: 1000}
	judge := func(when string, want int64) {
		t.Helper()
		r, err := judgeQueue(ctx, store, []cairn.RepairTask{task})
		if err != nil || r.Ready != want || len(r.Waiting) != 0 {
			t.Fatalf("%s: %+v, %v; want %d bytes ready, none waiting", when, r, err, want)
		}
	}
	judge("open upload", 1000)
	if _, err := store.PutPart(ctx, "bkt", u.ID, part("p2")); err != nil {
		t.Fatal(err)
	}
	judge("part uploaded again", 0)
	if _, err := store.DeleteUpload(ctx, "bkt", u.ID); err != nil {
		t.Fatal(err)
	}
	judge("upload aborted", 0)
}
