package torture_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"cairn"
	"cairn/director"
	"cairn/internal/proc"
	"cairn/internal/testcluster"
	"cairn/internal/testcluster/torture"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
)

const (
	bucket   = "torture"
	nodes    = 5 // × 2 disks: the default rs-4-2 stripes take 6 of 10 disks
	keys     = 24
	workers  = 2
	grace    = 3 * time.Second // the director's suspect → down delay: a longer kill starts repairs
	partSize = 5 << 20         // the gateway's minimum part size
)

// TestTorture is issue 14's torture test (see the package doc). Each round
// runs the workload, kills one or two victims at a random moment, keeps
// the workload going while they are dead, restarts them, then checks
// every key: it reads back as one of its possible versions, whole, and the
// listing shows exactly the keys that hold an object. At the end the nodes
// restart with a short --gc-grace, the cluster settles (every disk up, the
// repair queue empty), every key is checked again, and every shard file on
// the disks must be named by a committed manifest or a live upload (0
// orphans) — and every file they name must be there. The uploads a killed
// gateway abandoned stay open: repair rebuilds their parts' shards like
// any object's, so a removed disk holding some returns without waiting for
// them to end (docs/design/repair.md, "Parts of uploads in progress").
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of 7 processes and kills them")
	}
	rounds := testcluster.EnvCount(t, "CAIRN_TORTURE", 6)
	seed := testcluster.EnvSeed(t, "CAIRN_TORTURE_SEED")
	t.Logf("torture: %d rounds, seed %d (CAIRN_TORTURE_SEED=%d replays its choices)", rounds, seed, seed)
	tc := start(t, seed)
	begin := time.Now()
	for r := range rounds {
		tc.round(r)
		if t.Failed() {
			t.Fatalf("round %d failed (seed %d)", r, seed)
		}
	}
	tc.finish()
	t.Logf("torture: %d rounds in %v: %d operations acknowledged, %d in doubt %v, %d reads checked; kills: %v; %d uploads left open",
		rounds, time.Since(begin).Round(time.Second), tc.acked.Load(), tc.doubted.Load(), tc.doubts, tc.checked.Load(), tc.kills, tc.openUploads())
}

// tort is one run of the torture test.
type tort struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand // the victims and delays; only the test's goroutine
	c     *testcluster.Cluster
	store meta.Store
	nodes []*testcluster.Proc // nodes[i] is node<i+1>
	gw    *testcluster.Proc
	model *torture.Model

	s3    atomic.Pointer[s3.Client] // the live gateway's client
	epoch atomic.Int64              // counts gateway deaths (see the package doc, "settled")

	acked, doubted, checked atomic.Int64
	mu                      sync.Mutex
	doubts                  map[string]int // guarded by mu; "op error" → count
	kills                   map[string]int // victims → rounds
}

func start(t *testing.T, seed uint64) *tort {
	c := testcluster.Start(t, testcluster.Config{Nodes: nodes, DisksPerNode: 2, Grace: grace, NodeArgs: []string{
		"--repair-scan", "1s", "--repair-unit", "256KiB",
		"--cleanup-grace", "1s", "--cleanup-every", "1s",
		"--scrub-interval", "2s", "--scrub-rate", "1GiB",
		// While the workload runs, a shard file may wait for its
		// manifest as long as a write under kills takes: the orphan
		// collector must not take it (the grace is documented to exceed
		// the longest write). finish restarts the nodes with a short one.
		"--gc-grace", "10m",
	}})
	store, err := etcdmeta.Open(t.Context(), c.MetaEndpoints(), etcdmeta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tc := &tort{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 14)), c: c, store: store,
		nodes: slices.Clone(c.Nodes), model: torture.NewModel("k", keys), kills: map[string]int{},
		doubts: map[string]int{}}
	tc.gw = testcluster.StartProc(t, "gateway", "gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey)
	tc.s3.Store(testcluster.S3Client(tc.gw.Addr(proc.S3)))
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		t.Logf("seed %d", seed)
		for _, p := range append(slices.Clone(tc.nodes), tc.gw) {
			lines := strings.Split(p.Output(), "\n")
			t.Logf("%s (last lines):\n%s", p.Name(), strings.Join(lines[max(0, len(lines)-25):], "\n"))
		}
	})
	if _, err := tc.s3.Load().CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return tc
}

// round runs the workload, kills victims and restarts them, then checks.
func (tc *tort) round(r int) {
	t := tc.t
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		rng := rand.New(rand.NewPCG(tc.seed, uint64(r*workers+w)))
		wg.Go(func() { tc.work(r, rng, stop) })
	}
	before := tc.pause(200*time.Millisecond, 1500*time.Millisecond)
	// real time: the kill lands at a random moment of real processes' work.
	time.Sleep(before)
	victims, down := tc.kill(r)
	// real time: the workload runs against the cluster without the victims.
	time.Sleep(down)
	tc.restart(victims)
	// real time: and on against the cluster they rejoin.
	time.Sleep(tc.pause(300*time.Millisecond, 800*time.Millisecond))
	close(stop)
	wg.Wait()
	t.Logf("round %d: killed %v for %v after %v; disks not up: %v", r, names(victims), down, before, tc.notUp())
	tc.check(fmt.Sprintf("after round %d", r))
}

// pause is a random duration in [lo, hi).
func (tc *tort) pause(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(tc.rng.Int64N(int64(hi-lo)))
}

func names(ps []*testcluster.Proc) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

// kill SIGKILLs this round's victims (or removes a disk's directory) and
// returns them with how long they stay dead. Every tenth round (from the
// second) removes a disk's directory, if the cluster is settled, and every
// tenth (from the fifth) kills a node for longer than its liveness lease
// and the grace period, so that its disks go down and their shards are
// repaired elsewhere before it returns; the other rounds draw their
// victims.
func (tc *tort) kill(r int) ([]*testcluster.Proc, time.Duration) {
	t := tc.t
	node := tc.nodes[tc.rng.IntN(len(tc.nodes))]
	if tc.rng.IntN(2) == 0 {
		node = tc.director()
	}
	down := tc.pause(100*time.Millisecond, 2*grace)
	var victims []*testcluster.Proc
	var kind string
	switch p := tc.rng.IntN(100); {
	case r%10 == 1 && tc.removeDisk(r):
		return nil, down
	case r%10 == 4:
		victims, kind, down = []*testcluster.Proc{node}, "node past its lease", lease+grace+2*time.Second
	case p < 30:
		victims, kind = []*testcluster.Proc{node}, "node"
	case p < 50:
		victims, kind = []*testcluster.Proc{tc.director()}, "director"
	case p < 75:
		victims, kind, down = []*testcluster.Proc{tc.gw}, "gateway", tc.pause(0, time.Second)
	case p < 90:
		victims, kind = []*testcluster.Proc{tc.gw, node}, "gateway+node"
	default:
		victims, kind = []*testcluster.Proc{tc.gw, tc.director()}, "gateway+director"
	}
	tc.kills[kind]++
	queued := tc.repairQueue()
	for _, p := range victims {
		p.Kill()
		if p == tc.gw {
			tc.epoch.Add(1) // after the kill: what it had under way is over
		}
	}
	t.Logf("round %d: SIGKILL %v (%s; %d repair tasks queued)", r, names(victims), kind, queued)
	return victims, down
}

// lease is a node's liveness lease (node.Config.LeaseTTL's default): a
// node dead for longer turns its disks suspect.
const lease = 10 * time.Second

// repairQueue is the length of the repair queue (-1 if unknown).
func (tc *tort) repairQueue() int {
	ctx, cancel := context.WithTimeout(tc.t.Context(), 10*time.Second)
	defer cancel()
	tasks, err := meta.AllRepairTasks(ctx, tc.store)
	if err != nil {
		return -1
	}
	return len(tasks)
}

// director returns the process of the director's node, or a random node
// while none is known (an election under way).
func (tc *tort) director() *testcluster.Proc {
	ctx, cancel := context.WithTimeout(tc.t.Context(), 10*time.Second)
	defer cancel()
	id, err := tc.store.Leader(ctx, director.Role)
	for _, p := range tc.nodes {
		if err == nil && p.Name() == id {
			return p
		}
	}
	tc.t.Logf("no director known (%q, %v): a random node instead", id, err)
	return tc.nodes[tc.rng.IntN(len(tc.nodes))]
}

// removeDisk removes a random disk's directory under its running node (a
// disk pulled out) if the cluster is settled — so no stripe ever loses
// more than the code tolerates for good — and says whether it did. The
// director marks it down, repair rebuilds its shards elsewhere, and the
// node's new empty volume in the directory returns to service.
func (tc *tort) removeDisk(r int) bool {
	t := tc.t
	if !tc.settled() {
		t.Logf("round %d: the cluster is not settled: no disk removed", r)
		return false
	}
	i, d := 1+tc.rng.IntN(nodes), 1+tc.rng.IntN(2)
	// Out of the way at once (the node writes on meanwhile), then gone.
	dir := tc.c.NodeDir(i, d)
	gone := fmt.Sprintf("%s.removed-%d", dir, r)
	if err := os.Rename(dir, gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	tc.kills["disk removed"]++
	t.Logf("round %d: removed node%d/disk%d", r, i, d)
	return true
}

// notUp lists the disks that are not up, with their states.
func (tc *tort) notUp() []string {
	ctx, cancel := context.WithTimeout(tc.t.Context(), 10*time.Second)
	defer cancel()
	disks, err := tc.store.Disks(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, d := range disks {
		if d.State != cairn.DiskUp {
			out = append(out, fmt.Sprintf("%s %s", d.ID, d.State))
		}
	}
	return out
}

// openUploads counts the uploads in progress (those a killed gateway
// abandoned; -1 if the store does not answer).
func (tc *tort) openUploads() int {
	ctx, cancel := context.WithTimeout(tc.t.Context(), 10*time.Second)
	defer cancel()
	n := 0
	err := meta.EachUpload(ctx, tc.store, "", func(cairn.Upload) error {
		n++
		return nil
	})
	if err != nil {
		return -1
	}
	return n
}

// settled says whether every disk is up and the repair queue is empty.
func (tc *tort) settled() bool {
	ctx, cancel := context.WithTimeout(tc.t.Context(), 10*time.Second)
	defer cancel()
	disks, err := tc.store.Disks(ctx)
	if err != nil || len(disks) != 2*nodes {
		return false
	}
	for _, d := range disks {
		if d.State != cairn.DiskUp {
			return false
		}
	}
	tasks, err := meta.AllRepairTasks(ctx, tc.store)
	return err == nil && len(tasks) == 0
}

// restart starts the victims again; a new gateway gets a new port.
func (tc *tort) restart(victims []*testcluster.Proc) {
	t := tc.t
	for _, p := range victims {
		if err := p.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p == tc.gw {
			tc.s3.Store(testcluster.S3Client(p.Addr(proc.S3)))
		}
	}
}

// work runs random operations on random keys until stop is closed.
func (tc *tort) work(r int, rng *rand.Rand, stop <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		k := tc.model.Acquire(rng, tc.epoch.Load())
		if k == nil {
			// real time: every key is held or frozen; another worker's
			// operation or the next gateway restart frees one.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		what := fmt.Sprintf("r%d.%d", r, n)
		switch p := rng.IntN(100); {
		case p < 45:
			tc.put(rng, k, what+" put")
		case p < 55:
			tc.multipart(rng, k, what+" multipart")
		case p < 75:
			tc.del(k, what+" delete")
		default:
			tc.get(k, what+" get")
		}
		tc.model.Release(k)
	}
}

// settle records the outcome of an operation that would leave v in k,
// started in gateway epoch epoch.
func (tc *tort) settle(k *torture.Key, v torture.Version, what string, epoch int64, err error) {
	if err == nil {
		k.Ack(v, what)
		tc.acked.Add(1)
		return
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		// No gateway listens (it is dead): the request went nowhere.
		// real time: wait for the restart rather than spin.
		time.Sleep(20 * time.Millisecond)
		return
	}
	why := shortErr(err)
	k.Doubt(v, what, why)
	tc.doubted.Add(1)
	tc.mu.Lock()
	kind := strings.Fields(what)[1] + " " + why
	if tc.doubts[kind] == 0 {
		tc.t.Logf("first %q: %v", kind, err)
	}
	tc.doubts[kind]++
	tc.mu.Unlock()
	if !answered(err) && tc.epoch.Load() == epoch {
		k.Freeze(epoch) // the gateway may still be running it
	}
}

// answered says whether err is an HTTP answer from the gateway (its
// handler finished); otherwise the request's fate is unknown.
func answered(err error) bool {
	var re *awshttp.ResponseError
	return errors.As(err, &re)
}

func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func shortErr(err error) string {
	if s := status(err); s != 0 {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return fmt.Sprintf("%d %s", s, ae.ErrorCode())
		}
		return strconv.Itoa(s)
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

func (tc *tort) put(rng *rand.Rand, k *torture.Key, what string) {
	v := torture.NewVersion(rng.Uint64(), 1+rng.Int64N(300<<10))
	epoch := tc.epoch.Load()
	_, err := tc.s3.Load().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k.Name),
		Body: bytes.NewReader(torture.Content(v.Seed, v.Size))})
	tc.settle(k, v, what, epoch, err)
}

// multipart uploads a version in two parts and completes it; a failure
// before the completion leaves the key as it was (the upload is aborted
// if the gateway answers).
func (tc *tort) multipart(rng *rand.Rand, k *torture.Key, what string) {
	ctx := context.Background()
	v := torture.NewVersion(rng.Uint64(), partSize+1+rng.Int64N(200<<10))
	b := torture.Content(v.Seed, v.Size)
	s := tc.s3.Load()
	up, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(k.Name)})
	if err != nil {
		// real time: the gateway may be down; wait for it rather than spin.
		time.Sleep(20 * time.Millisecond)
		return
	}
	var parts []types.CompletedPart
	for i, p := range [][]byte{b[:partSize], b[partSize:]} {
		out, err := s.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(k.Name), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			s.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(k.Name), UploadId: up.UploadId})
			return
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}
	epoch := tc.epoch.Load()
	_, err = s.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(k.Name),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	tc.settle(k, v, what, epoch, err)
}

func (tc *tort) del(k *torture.Key, what string) {
	epoch := tc.epoch.Load()
	_, err := tc.s3.Load().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k.Name)})
	tc.settle(k, torture.Absent, what, epoch, err)
}

// get reads k once; what it finds, if the read completes, must be
// possible. A key held by its reader has no operation under way.
func (tc *tort) get(k *torture.Key, what string) {
	v, err := tc.read(context.Background(), k.Name)
	if err != nil {
		return
	}
	tc.checked.Add(1)
	if err := k.Observe(v, what, true); err != nil {
		tc.t.Error(err)
	}
}

// read GETs key whole: its version, Absent for NoSuchKey, or an error (a
// failed request, or a body cut short).
func (tc *tort) read(ctx context.Context, key string) (torture.Version, error) {
	out, err := tc.s3.Load().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if status(err) == http.StatusNotFound {
		return torture.Absent, nil
	}
	if err != nil {
		return torture.Version{}, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return torture.Version{}, err
	}
	if out.ContentLength != nil && *out.ContentLength != int64(len(b)) {
		return torture.Version{}, fmt.Errorf("%d bytes of %d", len(b), *out.ContentLength)
	}
	return torture.Observed(b), nil
}

// check reads back every key (retrying failures for a while: nodes that
// just restarted register again) and compares the listing with the model.
func (tc *tort) check(when string) {
	t := tc.t
	if tc.model.AnyFrozen(tc.epoch.Load()) {
		// An operation without an answer may still be running: end it.
		tc.gw.Kill()
		tc.epoch.Add(1)
		tc.restart([]*testcluster.Proc{tc.gw})
		tc.kills["gateway (to end a request without an answer)"]++
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	present := map[string]int64{}
	for _, k := range tc.model.Keys() {
		var v torture.Version
		var err error
		for {
			if v, err = tc.read(ctx, k.Name); err == nil || ctx.Err() != nil {
				break
			}
			// real time: the cluster's processes are coming back up.
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("%s: %s cannot be read: %v; possible: %v; history: %s", when, k.Name, err, k.Possible(), k.History())
			continue
		}
		tc.checked.Add(1)
		if err := k.Observe(v, when, true); err != nil {
			t.Error(err)
		}
		if v != torture.Absent {
			present[k.Name] = v.Size
		}
	}
	listed := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(tc.s3.Load(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(7)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Errorf("%s: listing: %v", when, err)
			return
		}
		for _, o := range page.Contents {
			listed[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	for key, size := range listed {
		if want, ok := present[key]; !ok || want != size {
			t.Errorf("%s: the listing shows %s with %d bytes; a GET found %d (present: %v)", when, key, size, want, ok)
		}
	}
	for key := range present {
		if _, ok := listed[key]; !ok {
			t.Errorf("%s: %s reads back but is not listed", when, key)
		}
	}
}

// finish restarts every node with a short --gc-grace, waits for the
// cluster to settle, checks every key once more, and waits for 0 orphan
// shard files.
func (tc *tort) finish() {
	t := tc.t
	for i, p := range tc.nodes {
		p.Kill()
		tc.nodes[i] = testcluster.StartProc(t, p.Name(), append(p.Args(), "--gc-grace", "1s")...)
	}
	testcluster.WaitFor(t, 3*time.Minute, "every disk up and the repair queue empty", tc.settled)
	tc.check("at the end")
	tc.c.CLI(t, "admin", "gc", "start")
	var orphans, missing []string
	var err error
	if !testcluster.Poll(2*time.Minute, func() bool {
		orphans, missing, err = tc.orphans()
		return err == nil && len(orphans) == 0 && len(missing) == 0
	}) {
		t.Fatalf("after GC's grace: %d orphan shard files %v, %d named files missing %v (%v)", len(orphans), head(orphans), len(missing), head(missing), err)
	}
	for i := range nodes {
		for d := 1; d <= 2; d++ {
			left, err := os.ReadDir(filepath.Join(tc.c.NodeDir(i+1, d), "tmp"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if len(left) > 0 {
				t.Errorf("node%d/disk%d: %d temporary files left", i+1, d, len(left))
			}
		}
	}
	t.Logf("admin gc status:\n%s", tc.c.CLI(t, "admin", "gc", "status"))
}

func head(s []string) []string { return s[:min(len(s), 10)] }

// orphans compares the shard files on every disk with those the
// committed manifests and the live uploads name: files nobody names
// (orphans) and named files that are not there (missing).
func (tc *tort) orphans() (orphans, missing []string, err error) {
	ctx, cancel := context.WithTimeout(tc.t.Context(), 30*time.Second)
	defer cancel()
	named := map[cairn.ShardFile]bool{}
	buckets, err := tc.store.Buckets(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range buckets {
		ms, _, err := tc.store.ListManifests(ctx, b.Name, "", "", 0)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range ms {
			for _, f := range m.Files() {
				named[f] = true
			}
		}
	}
	uploads, err := tc.store.Uploads(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	for _, u := range uploads {
		parts, _, err := tc.store.Parts(ctx, u.Bucket, u.ID)
		if err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return nil, nil, err
		}
		for _, f := range cairn.PartFiles(parts) {
			named[f] = true
		}
	}
	onDisk := map[cairn.ShardFile]bool{}
	for i := range nodes {
		for d := 1; d <= 2; d++ {
			disk := cairn.DiskID(fmt.Sprintf("node%d/disk%d", i+1, d))
			err := filepath.WalkDir(filepath.Join(tc.c.NodeDir(i+1, d), "shards"), func(_ string, e os.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return err
				}
				onDisk[cairn.ShardFile{Disk: disk, Name: e.Name()}] = true
				return nil
			})
			if err != nil && !os.IsNotExist(err) {
				return nil, nil, err
			}
		}
	}
	for f := range onDisk {
		if !named[f] {
			orphans = append(orphans, string(f.Disk)+"/"+f.Name)
		}
	}
	for f := range named {
		if !onDisk[f] {
			missing = append(missing, string(f.Disk)+"/"+f.Name)
		}
	}
	slices.Sort(orphans)
	slices.Sort(missing)
	return orphans, missing, nil
}
