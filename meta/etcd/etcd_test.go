package etcdmeta_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/metatest"
)

// startSingle starts a single-member embedded etcd on ports the kernel
// picks. Short raft timeouts make the minimum lease TTL 1 s.
func startSingle(t testing.TB, dir string) *etcdmeta.Server {
	t.Helper()
	srv, err := etcdmeta.StartEmbedded(t.Context(), etcdmeta.EmbedConfig{
		Dir:           dir,
		ClientURL:     "http://127.0.0.1:0",
		PeerURL:       "http://127.0.0.1:0",
		TickMs:        50,
		ElectionMs:    500,
		UnsafeNoFsync: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// oneCopy is the layout of a small one-copy (rep-1) object, for manifests
// these tests commit.
var oneCopy = cairn.Layout{BlockSize: 8, Shards: []cairn.ShardLoc{{Disk: "node1/disk1", Size: 8}}}

func open(t testing.TB, endpoints []string, prefix string) *etcdmeta.Store {
	t.Helper()
	s, err := etcdmeta.Open(t.Context(), endpoints, etcdmeta.Options{Prefix: prefix, SessionTTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	var n atomic.Int64
	metatest.Run(t, func(t *testing.T) meta.Store {
		return open(t, srv.Endpoints(), fmt.Sprintf("/conformance/%d/", n.Add(1)))
	})
}

// TestRestart: committed metadata survives a restart of the member.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startSingle(t, dir)
	s := open(t, srv.Endpoints(), "")
	ctx := t.Context()
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "keep", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	m := &cairn.Manifest{Bucket: "keep", Key: "a/b", Version: "0123456789abcdef0123456789abcdef", Size: 7, Policy: "rep-1", Layout: oneCopy}
	if err := s.CommitManifest(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	s.Close()
	srv.Close()

	srv = startSingle(t, dir)
	s = open(t, srv.Endpoints(), "")
	defer s.Close()
	got, err := s.Manifest(ctx, "keep", "a/b")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != m.Version || got.Size != 7 {
		t.Fatalf("after restart: %+v", got)
	}
}

// TestLayoutVersion: Open refuses a prefix written by another layout.
func TestLayoutVersion(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	s := open(t, srv.Endpoints(), "/lv/")
	if _, err := s.Client().Put(t.Context(), "/lv/layout", "99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := etcdmeta.Open(t.Context(), srv.Endpoints(), etcdmeta.Options{Prefix: "/lv"}); err == nil {
		s.Close()
		t.Fatal("Open accepted layout 99")
	} else if !strings.Contains(err.Error(), "layout") {
		t.Fatalf("Open: %v", err)
	}
}

// TestUpgradeLayout1: a store of key layout 1 (no usage counters) is
// upgraded by the first Open: it counts the objects and parts in it, so
// the counters are right from then on, and a second store opened on it
// sees layout 2.
func TestUpgradeLayout1(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	ctx := t.Context()
	s := open(t, srv.Endpoints(), "/up/")
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "old", Policy: "rep-1"}); err != nil {
		t.Fatal(err)
	}
	var objs []*cairn.Manifest
	for i := range 1200 { // more than one page of the count
		m := &cairn.Manifest{Bucket: "old", Key: fmt.Sprintf("k%04d", i), Version: fmt.Sprintf("v%d", i), Size: int64(i), Policy: "rep-1", Layout: oneCopy}
		objs = append(objs, m)
	}
	if err := s.CreateUpload(ctx, cairn.Upload{Bucket: "old", Key: "mp", ID: "up", Policy: "rep-1"}); err != nil {
		t.Fatal(err)
	}
	part := cairn.Part{Number: 1, Version: "p1", Size: 8, Layout: cairn.Layout{BlockSize: 8, Shards: []cairn.ShardLoc{{Disk: "node2/disk1", Size: 8}}}}
	if _, err := s.PutPart(ctx, "old", "up", part); err != nil {
		t.Fatal(err)
	}
	// What a build of layout 1 leaves: records without counters.
	cli := s.Client()
	for _, m := range objs {
		if err := s.CommitManifest(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/up/usage/", "/up/list/"} {
		if _, err := cli.Delete(ctx, p, clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/up/layout", "1"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, srv.Endpoints(), "/up/")
	defer s.Close()
	cli = s.Client()
	if resp, err := cli.Get(ctx, "/up/layout"); err != nil || string(resp.Kvs[0].Value) != "4" {
		t.Fatalf("layout after the upgrade: %v %v", resp, err)
	}
	if os, more, err := s.ListObjects(ctx, "old", "", "k1199", 10); err != nil || len(os) != 0 || more {
		t.Fatalf("listing records after the upgrade: %v %v %v", os, more, err)
	}
	if os, _, err := s.ListObjects(ctx, "old", "", "k1189", 10); err != nil || len(os) != 10 || os[9].Key != "k1199" || os[9].Size != 1199 {
		t.Fatalf("listing records after the upgrade: %v %v", os, err)
	}
	u, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := cairn.Tally{Objects: 1200, Logical: 1199 * 1200 / 2, Stored: 1200 * cairn.ShardFileBytes(8)}
	if u.Buckets["old"] != want || u.Codes["rep-1"] != want {
		t.Fatalf("counted %+v and %+v, want %+v", u.Buckets["old"], u.Codes["rep-1"], want)
	}
	if d := u.Disks["node2/disk1"]; d != (cairn.DiskTally{Files: 1, Bytes: cairn.ShardFileBytes(8)}) {
		t.Fatalf("the part's disk: %+v", d)
	}
	// From now on the counters move with every write.
	if _, err := s.DeleteManifest(ctx, "old", "k0001", ""); err != nil {
		t.Fatal(err)
	}
	if bt, err := s.BucketUsage(ctx, "old"); err != nil || bt.Objects != 1199 || bt.Logical != want.Logical-1 {
		t.Fatalf("after a delete: %+v, %v", bt, err)
	}
	open(t, srv.Endpoints(), "/up/").Close() // layout 4 now: nothing to do
}

// TestUpgradeLayout2: a store of key layout 2 (manifests without listing
// records) is upgraded by the first Open: every object gets its listing
// record — more objects than a page of keys and than a batch, and
// multipart manifests of 1000 parts — and everything lists and reads as
// before.
func TestUpgradeLayout2(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	ctx := t.Context()
	s := open(t, srv.Endpoints(), "/up2/")
	for _, b := range []string{"one", "two"} {
		if err := s.CreateBucket(ctx, cairn.Bucket{Name: b, Policy: "rep-1"}); err != nil {
			t.Fatal(err)
		}
	}
	var objs []*cairn.Manifest
	for i := range 1100 {
		objs = append(objs, &cairn.Manifest{Bucket: "one", Key: fmt.Sprintf("k%04d", i), Version: fmt.Sprintf("v%d", i), Size: int64(i),
			ETag: fmt.Sprintf("e%d", i), Policy: "rep-1", Layout: oneCopy})
	}
	for i := range 3 {
		m := &cairn.Manifest{Bucket: "two", Key: fmt.Sprintf("mp%d", i), Version: fmt.Sprintf("mv%d", i), Policy: "rep-1"}
		for n := 1; n <= 1000; n++ {
			m.Parts = append(m.Parts, cairn.Part{Number: n, Version: fmt.Sprintf("p%d-%d", i, n), Size: 8, ETag: "x", Layout: oneCopy})
			m.Size += 8
		}
		objs = append(objs, m)
	}
	for _, m := range objs {
		if err := s.CommitManifest(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 70 { // more than a batch of the index
		task := cairn.RepairTask{ID: cairn.RepairTaskID("one", fmt.Sprint(i), "v", 0), Bucket: "one", Key: fmt.Sprint(i), Version: "v",
			Policy: "rep-1", Lost: []int{0}, Risk: i % 3}
		if err := s.PutRepairTask(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	// What a build of layout 2 leaves: manifests without listing records,
	// a repair queue without its index.
	cli := s.Client()
	for _, p := range []string{"/up2/list/", "/up2/repairq/"} {
		if _, err := cli.Delete(ctx, p, clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/up2/layout", "2"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, srv.Endpoints(), "/up2/")
	defer s.Close()
	if resp, err := s.Client().Get(ctx, "/up2/layout"); err != nil || string(resp.Kvs[0].Value) != "4" {
		t.Fatalf("layout after the upgrade: %v %v", resp, err)
	}
	var got []cairn.ObjectInfo
	for _, b := range []string{"one", "two"} {
		after := ""
		for {
			os, more, err := s.ListObjects(ctx, b, "", after, 500)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, os...)
			if !more {
				break
			}
			after = os[len(os)-1].Key
		}
	}
	if len(got) != len(objs) {
		t.Fatalf("listed %d objects after the upgrade, want %d", len(got), len(objs))
	}
	for i, o := range got {
		if w := objs[i].Info(); o.Key != w.Key || o.Version != w.Version || o.Size != w.Size || o.ETag != w.ETag || o.Parts != w.Parts {
			t.Fatalf("listing record %d = %+v, want %+v", i, o, w)
		}
	}
	if ts, more, err := s.RepairQueuePage(ctx, nil, 100); err != nil || len(ts) != 70 || more || ts[0].Risk != 0 || ts[69].Risk != 2 {
		t.Fatalf("the repair queue after the upgrade: %d tasks, %v", len(ts), err)
	}
	ms, _, err := s.ListManifests(ctx, "two", "", "", 0)
	if err != nil || len(ms) != 3 || len(ms[2].Parts) != 1000 {
		t.Fatalf("manifests after the upgrade: %d, %v", len(ms), err)
	}
	if m, err := s.Manifest(ctx, "one", "k0042"); err != nil || m.Size != 42 {
		t.Fatalf("Manifest after the upgrade: %v %v", m, err)
	}
	// A layout-2 record keeps its parts inline until written: reading one
	// part works, and updating it splits the record.
	one, err := s.ManifestPart(ctx, "two", "mp1", 500)
	if err != nil || len(one.Parts) != 1 || one.Parts[0].Number != 500 {
		t.Fatalf("ManifestPart of an inline record: %v", err)
	}
	moved := one.Parts[0]
	moved.Shards = []cairn.ShardLoc{{Disk: "node7/disk7", Size: 8}}
	if err := s.UpdatePart(ctx, "two", "mp1", one.Version, moved, one.Parts[0]); err != nil {
		t.Fatal(err)
	}
	if resp, err := s.Client().Get(ctx, "/up2/mparts/two/"+one.Version+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 1000 {
		t.Fatalf("part records after updating an inline record: %v %v", resp, err)
	}
	if m, err := s.Manifest(ctx, "two", "mp1"); err != nil || len(m.Parts) != 1000 || m.Parts[499].Shards[0].Disk != "node7/disk7" {
		t.Fatalf("Manifest after UpdatePart of an inline record: %v", err)
	}
	open(t, srv.Endpoints(), "/up2/").Close() // layout 4 now: nothing to do
}

// TestSessionLoss: when a leader's session lease is lost (here revoked
// behind its back, as if it had been partitioned for the session TTL), its
// Leadership ends and the next campaigner — on another client — wins.
// Closing a store hands its leadership over at once.
func TestSessionLoss(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	ctx := t.Context()
	a := open(t, srv.Endpoints(), "/sl/")
	defer a.Close()
	b := open(t, srv.Endpoints(), "/sl/")
	defer b.Close()

	la, err := a.Campaign(ctx, "director", "a")
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan meta.Leadership, 1)
	go func() {
		l, err := b.Campaign(ctx, "director", "b")
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	waitCandidates(t, a.Client(), "/sl/election/director/", 2) // b has queued behind a
	if id, _ := b.Leader(ctx, "director"); id != "a" {
		t.Fatalf("leader %q, want a", id)
	}
	resp, err := a.Client().Get(ctx, "/sl/election/director/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("leader key: %v", err)
	}
	if _, err := a.Client().Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("leadership not Done after its lease was revoked")
	}
	var lb meta.Leadership
	select {
	case lb = <-won:
	case <-time.After(10 * time.Second):
		t.Fatal("b did not win after a's session was lost")
	}
	if id, _ := a.Leader(ctx, "director"); id != "b" {
		t.Fatalf("leader %q, want b", id)
	}

	// a campaigns again and blocks behind b; closing b's store hands over.
	go func() {
		l, err := a.Campaign(ctx, "director", "a")
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	waitCandidates(t, b.Client(), "/sl/election/director/", 2) // a has queued behind b
	t0 := time.Now()
	b.Close()
	select {
	case <-lb.Done():
	default:
		t.Fatal("b's leadership not Done after Close")
	}
	// Close resigned: b's key is gone, not left to expire with its lease.
	if resp, err := a.Client().Get(ctx, "/sl/election/director/", clientv3.WithPrefix()); err != nil ||
		len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "a" {
		t.Fatalf("candidates after b's store closed: %v, %v", resp, err)
	}
	select {
	case <-won:
	case <-time.After(3 * time.Second):
		t.Fatal("a did not win promptly after b's store closed")
	}
	t.Logf("handover after Close took %v", time.Since(t0))
}

// TestCampaignRevokesOwnStaleSession: a candidate key left by a killed
// run of a process (its lease alive until its TTL runs out) is revoked
// when the process, restarted with the same ID, campaigns — so a restarted
// director leads at once — while a campaigner with another ID, or a store
// opened before the key was made (a live process, not a past run), still
// waits behind it.
func TestCampaignRevokesOwnStaleSession(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	ctx := t.Context()
	earlier := open(t, srv.Endpoints(), "/st/")
	defer earlier.Close()
	// The killed run: a lease of a minute and its candidate key, as
	// concurrency.Election writes it.
	cli := earlier.Client()
	g, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, fmt.Sprintf("/st/election/director/%x", g.ID), "n1", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	blocked := func(s *etcdmeta.Store, id string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if l, err := s.Campaign(cctx, "director", id); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("campaign of %s behind the stale key: %v, %v", id, l, err)
		}
	}
	other := open(t, srv.Endpoints(), "/st/")
	defer other.Close()
	blocked(other, "n2")
	blocked(earlier, "n1")
	restarted := open(t, srv.Endpoints(), "/st/")
	defer restarted.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := restarted.Campaign(cctx, "director", "n1"); err != nil {
		t.Fatalf("the restarted n1 did not win at once: %v", err)
	}
	if ttl, err := cli.TimeToLive(ctx, g.ID); err != nil || ttl.TTL != -1 {
		t.Fatalf("the stale lease: %+v, %v (want revoked)", ttl, err)
	}
	if id, err := other.Leader(ctx, "director"); err != nil || id != "n1" {
		t.Fatalf("leader %q, %v", id, err)
	}
}

// waitCandidates waits until exactly n candidate keys are queued under an
// election prefix: it reads the count, then watches the prefix from the
// next revision until something changes, and reads again.
func waitCandidates(t *testing.T, cli *clientv3.Client, prefix string, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("waiting for %d candidates: %v", n, err)
		}
		if resp.Count == n {
			return
		}
		if resp.Count > n {
			t.Fatalf("%d candidates under %s, want %d", resp.Count, prefix, n)
		}
		wctx, wcancel := context.WithCancel(ctx)
		wr, ok := <-cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		wcancel()
		if !ok || wr.Err() != nil {
			t.Fatalf("waiting for %d candidates (have %d): %v, %v", n, resp.Count, ctx.Err(), wr.Err())
		}
	}
}

// TestThreeMembers runs a real 3-member cluster in this process, kills its
// raft leader, and checks that a store opened on all endpoints loses no
// committed manifest, keeps its leadership and liveness entry, and goes on
// working.
func TestThreeMembers(t *testing.T) {
	ctx := t.Context()
	// The members' peer URLs must be known before any starts: unix sockets
	// named m0:2380… in the working directory (see internal/proc); clients
	// connect on ports the kernel picks.
	t.Chdir(t.TempDir())
	t0 := time.Now()
	servers := startThree(t, "m", nil)
	t.Logf("cluster up in %v", time.Since(t0))

	var endpoints []string
	for _, srv := range servers {
		endpoints = append(endpoints, srv.Endpoints()...)
	}
	s := open(t, endpoints, "")
	defer s.Close()

	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "ha-bucket", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	mk := func(i int) *cairn.Manifest {
		return &cairn.Manifest{Bucket: "ha-bucket", Key: fmt.Sprintf("obj/%03d", i), Version: fmt.Sprintf("v%d", i), Size: int64(i), Policy: "rep-1", Layout: oneCopy}
	}
	for i := range 30 {
		if err := s.CommitManifest(ctx, mk(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.KeepAlive(ctx, "node1", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	lead, err := s.Campaign(ctx, "director", "d1")
	if err != nil {
		t.Fatal(err)
	}

	victim := -1
	for i, srv := range servers {
		if srv.IsLeader() {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatal("no raft leader")
	}
	// A writer keeps committing while the leader goes away. It retries a
	// failed commit with the same manifest (idempotent) until it is
	// acknowledged; every acknowledged object must survive.
	stopWriter := make(chan struct{})
	var acked atomic.Int64
	progress := make(chan struct{}, 1) // a token after each acknowledged commit
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stopWriter:
				writerDone <- nil
				return
			default:
			}
			m := &cairn.Manifest{Bucket: "ha-bucket", Key: fmt.Sprintf("bg/%04d", i), Version: fmt.Sprintf("bg%d", i), Policy: "rep-1", Layout: oneCopy}
			for {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := s.CommitManifest(cctx, m, "")
				cancel()
				if err == nil {
					break
				}
				if errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound) || ctx.Err() != nil {
					writerDone <- fmt.Errorf("background commit %d: %w", i, err)
					return
				}
				// real time: a client's retry pause while the real cluster
				// elects a leader.
				time.Sleep(50 * time.Millisecond)
			}
			acked.Add(1)
			select {
			case progress <- struct{}{}:
			default:
			}
			time.Sleep(5 * time.Millisecond) // real time: paces the load on the real cluster; nothing asserts on it
		}
	}()
	// waitAcked waits until the writer has had n commits acknowledged.
	waitAcked := func(n int64) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for acked.Load() < n {
			select {
			case <-progress:
			case err := <-writerDone:
				t.Fatalf("the writer stopped at %d acknowledged commits: %v", acked.Load(), err)
			case <-deadline:
				t.Fatalf("the writer has %d acknowledged commits, want %d", acked.Load(), n)
			}
		}
	}
	waitAcked(10) // the writer is going before the leader goes away

	t0 = time.Now()
	servers[victim].Close()
	t.Logf("closed raft leader m%d in %v", victim, time.Since(t0))

	// The first write may meet the election; retry it as a client would
	// (a retried commit of the same version is idempotent).
	t0 = time.Now()
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := s.CommitManifest(cctx, mk(30), "")
		cancel()
		if err == nil {
			break
		}
		if errors.Is(err, cairn.ErrConflict) || time.Since(t0) > 20*time.Second {
			t.Fatalf("commit after losing the leader: %v", err)
		}
		t.Logf("commit during election: %v", err)
		time.Sleep(100 * time.Millisecond) // real time: a client's retry pause while the real cluster elects a leader
	}
	t.Logf("writes resumed after %v", time.Since(t0))

	waitAcked(acked.Load() + 10) // the writer too is past the failover
	close(stopWriter)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	ms, _, err := s.ListManifests(ctx, "ha-bucket", "bg/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := acked.Load(); int64(len(ms)) != n {
		t.Fatalf("%d background commits acknowledged, %d listed", n, len(ms))
	}
	t.Logf("%d background commits across the failover, all present", len(ms))

	// From here on everything must work first time.
	for i := 31; i < 50; i++ {
		if err := s.CommitManifest(ctx, mk(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	ms, more, err := s.ListManifests(ctx, "ha-bucket", "obj/", "", 0)
	if err != nil || more || len(ms) != 50 {
		t.Fatalf("list after failover: %d manifests, more=%v, err=%v", len(ms), more, err)
	}
	for i, m := range ms {
		if m.Version != mk(i).Version {
			t.Fatalf("manifest %d: version %s", i, m.Version)
		}
	}
	if hs, err := s.Alive(ctx); err != nil || len(hs) != 1 || hs[0] != "node1" {
		t.Fatalf("Alive after failover: %v %v", hs, err)
	}
	if id, err := s.Leader(ctx, "director"); err != nil || id != "d1" {
		t.Fatalf("Leader after failover: %q %v", id, err)
	}
	select {
	case <-lead.Done():
		t.Fatal("the director lost its role when an etcd member died")
	default:
	}
	if _, err := s.Campaign(ctx, "scrubber", "d1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBucket(ctx, "ha-bucket"); !errors.Is(err, cairn.ErrBucketNotEmpty) {
		t.Fatalf("DeleteBucket: %v", err)
	}

	// The survivors alone hold everything.
	var survivors []string
	for i, srv := range servers {
		if i != victim {
			survivors = append(survivors, srv.Endpoints()...)
		}
	}
	s2 := open(t, survivors, "")
	defer s2.Close()
	for i := range 50 {
		m, err := s2.Manifest(ctx, "ha-bucket", mk(i).Key)
		if err != nil || m.Version != mk(i).Version {
			t.Fatalf("survivors: manifest %d: %v %v", i, m, err)
		}
	}
}

// A multipart object with S3's 10,000 parts has a ~5 MiB manifest, over
// etcd's default 1.5 MiB request limit: the embedded member and the client
// accept it.
func TestManifestWithTenThousandParts(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	s := open(t, srv.Endpoints(), "")
	ctx := context.Background()
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "parts", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	m := &cairn.Manifest{Bucket: "parts", Key: "big", Version: strings.Repeat("a", 32), Policy: "rs-4-2"}
	for i := 1; i <= cairn.MaxParts; i++ {
		p := cairn.Part{Number: i, Version: fmt.Sprintf("%032x", i), Size: 5 << 20, ETag: strings.Repeat("b", 32), Layout: cairn.Layout{BlockSize: 1 << 20}}
		for d := range 6 {
			p.Shards = append(p.Shards, cairn.ShardLoc{Disk: cairn.DiskID(fmt.Sprintf("node%d/disk%d", d, d)), Size: 2 << 20, CRC: uint32(i*7 + d)})
		}
		m.Parts = append(m.Parts, p)
		m.Size += p.Size
	}
	if err := s.CommitManifest(ctx, m, ""); err != nil {
		t.Fatalf("committing a 10,000-part manifest: %v", err)
	}
	got, err := s.Manifest(ctx, "parts", "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Parts) != cairn.MaxParts || got.Parts[9999].Shards[5].CRC != m.Parts[9999].Shards[5].CRC {
		t.Fatalf("read back %d parts", len(got.Parts))
	}
}

// TestMaxParts: an object of cairn.MaxParts parts of rs-6-3 (nine shards
// each, ~6 MB of records) commits in one Txn of the embedded member,
// reads back whole and by part, has a part updated alone, lists in a page
// of its own, and goes with its parts when deleted.
func TestMaxParts(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	ctx := t.Context()
	s := open(t, srv.Endpoints(), "/maxparts/")
	defer s.Close()
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "big", Policy: "rs-6-3"}); err != nil {
		t.Fatal(err)
	}
	m := &cairn.Manifest{Bucket: "big", Key: "huge", Version: fmt.Sprintf("%032x", 1), Policy: "rs-6-3", ETag: "e-10000"}
	for n := 1; n <= cairn.MaxParts; n++ {
		p := cairn.Part{Number: n, Version: fmt.Sprintf("%032x", 1<<32+n), Size: 6 << 20, ETag: fmt.Sprintf("%032x", n),
			Layout: cairn.Layout{BlockSize: 1 << 20, PG: n % 512}}
		for i := range 9 {
			p.Shards = append(p.Shards, cairn.ShardLoc{Disk: cairn.DiskID(fmt.Sprintf("node%02d/disk%d", 1+(n+i)%24, 1+n%4)), Size: 1 << 20, CRC: uint32(n*9 + i)})
		}
		m.Parts = append(m.Parts, p)
		m.Size += p.Size
	}
	if err := s.CommitManifest(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitManifest(ctx, &cairn.Manifest{Bucket: "big", Key: "small", Version: fmt.Sprintf("%032x", 2), Policy: "rep-1", Size: 8, Layout: oneCopy}, ""); err != nil {
		t.Fatal(err)
	}
	got, err := s.Manifest(ctx, "big", "huge")
	if err != nil || len(got.Parts) != cairn.MaxParts || got.Parts[9999].Shards[8] != m.Parts[9999].Shards[8] {
		t.Fatalf("Manifest: %v", err)
	}
	one, err := s.ManifestPart(ctx, "big", "huge", cairn.MaxParts)
	if err != nil || len(one.Parts) != 1 || one.Parts[0].Number != cairn.MaxParts {
		t.Fatalf("ManifestPart: %v", err)
	}
	moved := one.Parts[0]
	moved.Shards = append([]cairn.ShardLoc(nil), moved.Shards...)
	moved.Shards[0].Disk = "node99/disk9"
	if err := s.UpdatePart(ctx, "big", "huge", m.Version, moved, one.Parts[0]); err != nil {
		t.Fatal(err)
	}
	ms, more, err := s.ListManifests(ctx, "big", "", "", 1000)
	if err != nil || len(ms) != 1 || !more || ms[0].Parts[9999].Shards[0].Disk != "node99/disk9" {
		t.Fatalf("ListManifests: %d manifests, more %v, %v (the 6 MB manifest fills a page)", len(ms), more, err)
	}
	if os, _, err := s.ListObjects(ctx, "big", "", "", 10); err != nil || len(os) != 2 || os[0].Parts != cairn.MaxParts {
		t.Fatalf("ListObjects: %+v %v", os, err)
	}
	if _, err := s.DeleteManifest(ctx, "big", "huge", ""); err != nil {
		t.Fatal(err)
	}
	if resp, err := s.Client().Get(ctx, "/maxparts/mparts/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("part records after the delete: %v %v", resp, err)
	}
}

// startThree starts a three-member cluster, members NAME0, NAME1, NAME2,
// in the working directory (their peer URLs are unix sockets NAMEi:2380
// there, see internal/proc; clients connect on ports the kernel picks),
// each in dirs[i] or a new temporary directory if dirs is nil.
func startThree(t *testing.T, name string, dirs []string) []*etcdmeta.Server {
	t.Helper()
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("%s%d=%s", name, i, threePeer(name, i)))
	}
	servers := make([]*etcdmeta.Server, 3)
	errs := make(chan error, 3)
	for i := range 3 {
		dir := t.TempDir()
		if dirs != nil {
			dir = dirs[i]
		}
		go func() {
			srv, err := etcdmeta.StartEmbedded(t.Context(), etcdmeta.EmbedConfig{
				Name:           fmt.Sprintf("%s%d", name, i),
				Dir:            dir,
				ClientURL:      "http://127.0.0.1:0",
				PeerURL:        threePeer(name, i),
				InitialCluster: strings.Join(initial, ","),
				TickMs:         50,
				ElectionMs:     750,
				UnsafeNoFsync:  true,
				StartTimeout:   30 * time.Second,
			})
			servers[i] = srv
			errs <- err
		}()
	}
	var err error
	for range 3 {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	for _, srv := range servers {
		if srv != nil {
			t.Cleanup(func() { srv.Close() })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return servers
}

// threePeer is the peer URL of member i of startThree's cluster NAME.
func threePeer(name string, i int) string { return fmt.Sprintf("unix://%s%d:2380", name, i) }

// TestUpgradeLayout3: a store of key layout 3 (uploads without index
// records) is upgraded by the first Open: every upload — more than a page
// of records — gets its index record, so ListMultipartUploads by key
// finds them all, in order.
func TestUpgradeLayout3(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	ctx := t.Context()
	s := open(t, srv.Endpoints(), "/up3/")
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rep-1"}); err != nil {
		t.Fatal(err)
	}
	const n = meta.MaxPage + 20
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		u := cairn.Upload{Bucket: "bkt", Key: fmt.Sprintf("k%d", i%7), ID: fmt.Sprintf("%05d", i), Created: t0.Add(-time.Duration(i) * time.Second), Policy: "rep-1"}
		if err := s.CreateUpload(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	// What a build of layout 3 leaves: no index records.
	cli := s.Client()
	if _, err := cli.Delete(ctx, "/up3/upkeys/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/up3/layout", "3"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, srv.Endpoints(), "/up3/")
	defer s.Close()
	if resp, err := s.Client().Get(ctx, "/up3/layout"); err != nil || string(resp.Kvs[0].Value) != "4" {
		t.Fatalf("layout after the upgrade: %v %v", resp, err)
	}
	want, err := s.Uploads(ctx, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	var got []cairn.Upload
	key, id := "", ""
	for {
		page, more, err := s.UploadKeyPage(ctx, "bkt", "", key, id, 300)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if !more {
			break
		}
		key, id = page[len(page)-1].Key, page[len(page)-1].ID
	}
	if len(got) != n || len(want) != n {
		t.Fatalf("after the upgrade: %d uploads by key, %d records, want %d", len(got), len(want), n)
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].ID != want[i].ID {
			t.Fatalf("upload %d by key is %s/%s, want %s/%s", i, got[i].Key, got[i].ID, want[i].Key, want[i].ID)
		}
	}
}
