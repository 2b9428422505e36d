package scale_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/etcd/etcdtest"
	"cairn/node/wire"
	"cairn/repair"
	"cairn/s3"
)

// size is one form of the test: objects, multipart objects of parts
// parts, on nodes nodes of disksEach disks. A stripe has width shards on
// distinct nodes, so losing one disk affects width/(nodes·disksEach) of
// the stripes: 3/64 in the reduced form (> 1,100 tasks, more than a page
// and than a Work batch), 1/4 in the full one (> 100,000 tasks).
type size struct {
	objects, multipart, parts, nodes int
}

var (
	reduced = size{objects: 5000, multipart: 20, parts: 1000, nodes: 64}
	full    = size{objects: 100_000, multipart: 300, parts: 1000, nodes: 12}
)

const (
	disksEach = 2
	bucket    = "scale"
	policy    = "rs-4-2"
	width     = 6    // shards of an rs-4-2 stripe
	shardSize = 4096 // each shard: one block of zeros
	lost      = cairn.DiskID("n01/d1")
)

// zeroCRC is the CRC-32C of a shard of n zero bytes.
func zeroCRC(n int64) uint32 {
	return crc32.Checksum(make([]byte, n), crc32.MakeTable(crc32.Castagnoli))
}

// layout places stripe s (an object, or a part of one) on width distinct
// nodes, spread so that every disk holds shards of many stripes.
func layout(s, nodes int) cairn.Layout {
	l := cairn.Layout{BlockSize: shardSize, PG: s % 64}
	crc := zeroCRC(shardSize)
	for j := range width {
		n := 1 + (s*7+j)%nodes
		d := 1 + (s/nodes)%disksEach
		l.Shards = append(l.Shards, cairn.ShardLoc{Disk: cairn.DiskID(fmt.Sprintf("n%02d/d%d", n, d)), Size: shardSize, CRC: crc})
	}
	return l
}

func onLost(l cairn.Layout) bool {
	for _, s := range l.Shards {
		if s.Disk == lost {
			return true
		}
	}
	return false
}

// zeroExec is the node layer: it answers every rebuild with what a node
// would store for a stripe of zeros, and counts the shards.
type zeroExec struct {
	mu     sync.Mutex
	shards int
}

func (z *zeroExec) stored(spec wire.RepairSpec) []wire.ShardInfo {
	z.mu.Lock()
	z.shards += len(spec.Store)
	z.mu.Unlock()
	out := make([]wire.ShardInfo, len(spec.Store))
	for j := range out {
		out[j] = wire.ShardInfo{Size: spec.Size, CRC: zeroCRC(spec.Size)}
	}
	return out
}

func (z *zeroExec) Push(_ context.Context, spec wire.RepairSpec) ([]wire.ShardInfo, error) {
	return z.stored(spec), nil
}

func (z *zeroExec) Pull(_ context.Context, _ string, spec wire.RepairSpec) ([]wire.ShardInfo, error) {
	return z.stored(spec), nil
}

func (z *zeroExec) PutShard(_ context.Context, _ cairn.DiskID, _ string, r io.Reader) (wire.ShardInfo, error) {
	b, err := io.ReadAll(r)
	return wire.ShardInfo{Size: int64(len(b)), CRC: crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))}, err
}

// TestScale: see the package documentation.
func TestScale(t *testing.T) {
	sz := reduced
	if os.Getenv("CAIRN_SCALE") == "full" {
		sz = full
	}
	ctx := t.Context()
	store := etcdtest.Store(t, etcdmeta.Options{CallTimeout: time.Minute})

	for n := 1; n <= sz.nodes; n++ {
		id := cairn.NodeID(fmt.Sprintf("n%02d", n))
		if err := store.PutNode(ctx, cairn.Node{ID: id, Addr: "addr-" + string(id)}); err != nil {
			t.Fatal(err)
		}
		for d := 1; d <= disksEach; d++ {
			disk := cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/d%d", id, d)), Node: id, Capacity: 1 << 50, State: cairn.DiskUp}
			if err := store.PutDisk(ctx, disk); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: bucket, Policy: policy}); err != nil {
		t.Fatal(err)
	}

	// Write the manifests, counting the stripes with a shard on the disk
	// that will be lost.
	created := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	affected := 0
	var ms []*cairn.Manifest
	for i := range sz.objects {
		m := &cairn.Manifest{Bucket: bucket, Key: fmt.Sprintf("obj/%07d", i), Version: fmt.Sprintf("%032x", i+1),
			Size: 4 * shardSize, ETag: fmt.Sprintf("%032x", i), Created: created, Policy: policy, Layout: layout(i, sz.nodes)}
		if onLost(m.Layout) {
			affected++
		}
		ms = append(ms, m)
	}
	stripe := sz.objects
	for i := range sz.multipart {
		m := &cairn.Manifest{Bucket: bucket, Key: fmt.Sprintf("mp/%04d", i), Version: fmt.Sprintf("%032x", 1<<40+i),
			ETag: fmt.Sprintf("%032x-%d", i, sz.parts), Created: created, Policy: policy}
		for n := 1; n <= sz.parts; n++ {
			p := cairn.Part{Number: n, Version: fmt.Sprintf("%032x", 1<<48+stripe), Size: 4 * shardSize, ETag: "e", Created: created,
				Layout: layout(stripe, sz.nodes)}
			if onLost(p.Layout) {
				affected++
			}
			stripe++
			m.Parts = append(m.Parts, p)
			m.Size += p.Size
		}
		ms = append(ms, m)
	}
	if affected <= max(meta.MaxPage, repair.WorkBatch) {
		t.Fatalf("only %d stripes on %s: the queue would fit one page", affected, lost)
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, m := range ms {
		g.Go(func() error { return store.CommitManifest(gctx, m, "") })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("committed %d objects (%d multipart of %d parts) in %v", len(ms), sz.multipart, sz.parts, time.Since(start).Round(time.Millisecond))

	// ListObjectsV2 through the S3 handler pages through every object.
	h, err := s3.New(s3.Config{
		Objects:     client.New(store, clienttest.NewMemShards(), client.Config{}),
		Meta:        store,
		Credentials: s3.RootCredentials("AKIASCALE", "scale-secret"),
	})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(h)
	t.Cleanup(web.Close)
	sdk := s3sdk.New(s3sdk.Options{Region: "us-east-1", BaseEndpoint: aws.String(web.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIASCALE", "scale-secret", ""), Retryer: aws.NopRetryer{}})
	start = time.Now()
	listed, pages, token := 0, 0, (*string)(nil)
	var last string
	for {
		out, err := sdk.ListObjectsV2(ctx, &s3sdk.ListObjectsV2Input{Bucket: aws.String(bucket), ContinuationToken: token})
		if err != nil {
			t.Fatalf("ListObjectsV2 page %d: %v", pages, err)
		}
		for _, o := range out.Contents {
			if *o.Key <= last {
				t.Fatalf("ListObjectsV2: key %q after %q", *o.Key, last)
			}
			last = *o.Key
		}
		listed += len(out.Contents)
		pages++
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		token = out.NextContinuationToken
	}
	if listed != len(ms) {
		t.Fatalf("ListObjectsV2 listed %d objects in %d pages, want %d", listed, pages, len(ms))
	}
	t.Logf("ListObjectsV2: %d objects in %d pages in %v", listed, pages, time.Since(start).Round(time.Millisecond))

	// A disk is lost: Scan queues a task for every affected stripe.
	if err := store.SetDiskState(ctx, lost, cairn.DiskDown, created); err != nil {
		t.Fatal(err)
	}
	exec := &zeroExec{}
	r := repair.New(store, exec, repair.Config{Parallel: 16})
	now := created.Add(time.Hour)
	start = time.Now()
	added, err := r.Scan(ctx, now)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	scanned := time.Since(start)
	if added != affected {
		t.Fatalf("Scan queued %d tasks, %d stripes have a shard on %s", added, affected, lost)
	}
	queued, err := queueLength(ctx, store)
	if err != nil || queued != affected {
		t.Fatalf("queue holds %d tasks (%v), want %d", queued, err, affected)
	}
	dbSize := etcdSize(t, store)
	t.Logf("Scan queued %d tasks in %v: %.0f tasks/s; etcd database %d MiB with the queue",
		added, scanned.Round(time.Millisecond), float64(added)/scanned.Seconds(), dbSize>>20)

	// Work drains the queue, a batch at a time.
	start = time.Now()
	done := 0
	for round := 0; ; round++ {
		n, err := r.Work(ctx, now)
		if err != nil {
			t.Fatalf("Work: %v", err)
		}
		done += n
		left, err := queueLength(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if n == 0 || round > affected/repair.WorkBatch+10 {
			st := r.Stats()
			t.Fatalf("Work stalls with %d tasks left: %+v", left, st)
		}
	}
	drained := time.Since(start)
	if st := r.Stats(); done != affected || st.Repaired != affected || st.Failed != 0 || exec.shards != affected {
		t.Fatalf("Work completed %d tasks, want %d; stats %+v, %d shards rebuilt", done, affected, st, exec.shards)
	}
	t.Logf("Work drained %d tasks in %v: %.0f tasks/s", done, drained.Round(time.Millisecond), float64(done)/drained.Seconds())

	// Every affected stripe was repaired: no manifest names the lost disk.
	after, seen := "", 0
	for {
		page, more, err := store.ListManifests(ctx, bucket, "", after, meta.MaxPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			if onLost(m.Layout) {
				t.Fatalf("%s still has a shard on %s", m.Key, lost)
			}
			for _, p := range m.Parts {
				if onLost(p.Layout) {
					t.Fatalf("%s part %d still has a shard on %s", m.Key, p.Number, lost)
				}
			}
			after = m.Key
		}
		seen += len(page)
		if !more {
			break
		}
	}
	if seen != len(ms) {
		t.Fatalf("walked %d manifests after the repair, want %d", seen, len(ms))
	}
	t.Logf("etcd database %d MiB after the repair", etcdSize(t, store)>>20)
}

// queueLength counts the queued repair tasks, a page at a time.
func queueLength(ctx context.Context, s meta.Store) (int, error) {
	n := 0
	err := meta.EachRepairTask(ctx, s, func(cairn.RepairTask) error { n++; return nil })
	return n, err
}

// etcdSize returns the etcd database's size in bytes.
func etcdSize(t *testing.T, s *etcdmeta.Store) int64 {
	t.Helper()
	st, err := s.Client().Status(t.Context(), s.Client().Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return st.DbSize
}
