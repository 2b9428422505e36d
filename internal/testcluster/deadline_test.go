package testcluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// s3Client is testcluster.S3Client.
func s3Client(url string) *s3.Client { return testcluster.S3Client(url) }

// startGateway starts `cairn gateway` for c with the test credentials and
// extra flags, and returns an S3 client of it.
func startGateway(t *testing.T, c *testcluster.Cluster, extra ...string) *s3.Client {
	t.Helper()
	args := append([]string{"gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey}, extra...)
	p := testcluster.StartProc(t, "gateway", args...)
	return s3Client(p.Addr(proc.S3))
}

// unavailable checks that err is a 503 (ServiceUnavailable or SlowDown)
// with Retry-After.
func unavailable(t *testing.T, what string, err error) {
	t.Helper()
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusServiceUnavailable {
		t.Errorf("%s: %v, want 503", what, err)
		return
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() != "ServiceUnavailable" && ae.ErrorCode() != "SlowDown" {
		t.Errorf("%s: S3 error %s, want ServiceUnavailable or SlowDown", what, ae.ErrorCode())
	}
	if re.Response.Header.Get("Retry-After") == "" {
		t.Errorf("%s: 503 without Retry-After", what)
	}
}

func s3Put(ctx context.Context, c *s3.Client, key string, data []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), Body: bytes.NewReader(data)})
	return err
}

func s3Get(ctx context.Context, c *s3.Client, key string) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func patternBytes(n int64, seed uint64) []byte {
	b, _ := io.ReadAll(newPattern(n, seed))
	return b
}

// TestMetadataUnreachable: with the metadata member frozen (SIGSTOP, and
// every thread seen stopped), every S3 request gets 503 with Retry-After
// within the gateway's metadata deadline (plus a generous 5 s: real
// processes), not a hang or a 500;
// once the member runs again (SIGCONT), the gateway serves reads at once
// and writes once the nodes have renewed their liveness.
func TestMetadataUnreachable(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{Nodes: 4, DisksPerNode: 2, Grace: 5 * time.Minute})
	const deadline = 2 * time.Second
	s := startGateway(t, c, "--meta-timeout", deadline.String())
	ctx := context.Background()
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	data := patternBytes(1<<20, 1)
	if err := s3Put(ctx, s, "obj", data); err != nil {
		t.Fatal(err)
	}
	meta := c.Metas[0]
	if err := meta.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Thaw() })
	ops := []struct {
		name string
		do   func() error
	}{
		{"GET", func() error { _, err := s3Get(ctx, s, "obj"); return err }},
		{"HEAD", func() error {
			_, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")})
			return err
		}},
		{"PUT", func() error { return s3Put(ctx, s, "new", []byte("small")) }},
		{"LIST", func() error {
			_, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
			return err
		}},
		{"DELETE", func() error {
			_, err := s.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")})
			return err
		}},
		{"LIST BUCKETS", func() error { _, err := s.ListBuckets(ctx, &s3.ListBucketsInput{}); return err }},
	}
	var times []string
	for _, op := range ops {
		start := time.Now()
		err := op.do()
		took := time.Since(start)
		unavailable(t, op.name+" with the metadata store frozen", err)
		if took > deadline+5*time.Second {
			t.Errorf("%s took %v with the metadata store frozen: more than the deadline %v + 5 s", op.name, took, deadline)
		}
		times = append(times, fmt.Sprintf("%s %v", op.name, took.Round(10*time.Millisecond)))
	}
	t.Logf("time to 503 with the metadata store frozen (deadline %v): %s", deadline, strings.Join(times, ", "))

	if err := meta.Thaw(); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	var got []byte
	waitFor(t, time.Minute, "the gateway to serve again", func() bool {
		var err error
		got, err = s3Get(ctx, s, "obj")
		return err == nil
	})
	t.Logf("served again %v after the metadata store resumed", time.Since(resumed).Round(10*time.Millisecond))
	if !bytes.Equal(got, data) {
		t.Fatal("the object reads back different after the metadata store resumed")
	}
	// The nodes' liveness leases ran out while the store was frozen, so
	// the director may hold their disks suspect (not writable) until the
	// nodes have renewed them: writes resume a moment later.
	waitFor(t, time.Minute, "PUTs to succeed again", func() bool { return s3Put(ctx, s, "after", []byte("after")) == nil })
	t.Logf("writes again %v after the metadata store resumed", time.Since(resumed).Round(10*time.Millisecond))
}

// TestNodeStopped: with a storage node frozen (SIGSTOP), GETs complete
// byte-exact from the other shards, and overwrites and deletes are not
// held up by the deletes of the old shards on it (they are queued); once
// the node runs again, the queue deletes them.
func TestNodeStopped(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{Nodes: 6, DisksPerNode: 2, Grace: 5 * time.Minute,
		NodeArgs: []string{"--cleanup-grace", "0s", "--cleanup-every", "1s"}})
	const idle = 5 * time.Second
	s := startGateway(t, c, "--node-idle-timeout", idle.String())
	d := openDirect(t, c)
	ctx := context.Background()
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	const n = 12
	data := map[string][]byte{}
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		data[k] = patternBytes(int64(256<<10+i*40_000), uint64(i))
		if err := s3Put(ctx, s, k, data[k]); err != nil {
			t.Fatal(err)
		}
	}
	victim := c.Nodes[0]
	if err := victim.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Thaw() })

	// Every stripe has a shard on the frozen node or not; GETs of all of
	// them complete within the node's idle timeout (they decode around it).
	var slowest time.Duration
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		start := time.Now()
		got, err := s3Get(ctx, s, k)
		took := time.Since(start)
		if err != nil || !bytes.Equal(got, data[k]) {
			t.Fatalf("GET %s with a node frozen: %v (after %v)", k, err, took)
		}
		slowest = max(slowest, took)
	}
	t.Logf("GET with a node frozen: slowest %v", slowest.Round(time.Millisecond))
	if slowest > idle+5*time.Second {
		t.Errorf("a GET took %v with a node frozen, more than the idle timeout %v + 5 s", slowest, idle)
	}

	// Overwrites and deletes of objects with shards on the frozen node.
	var slowestPut, slowestDelete time.Duration
	for i := range n / 2 {
		k := fmt.Sprintf("k%02d", i)
		data[k] = patternBytes(300<<10, uint64(100+i))
		start := time.Now()
		if err := s3Put(ctx, s, k, data[k]); err != nil {
			t.Fatalf("overwrite %s with a node frozen: %v", k, err)
		}
		slowestPut = max(slowestPut, time.Since(start))
	}
	for i := n / 2; i < n; i++ {
		k := fmt.Sprintf("k%02d", i)
		start := time.Now()
		if _, err := s.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String(k)}); err != nil {
			t.Fatalf("delete %s with a node frozen: %v", k, err)
		}
		slowestDelete = max(slowestDelete, time.Since(start))
		delete(data, k)
	}
	t.Logf("with a node frozen: slowest overwrite %v, slowest delete %v", slowestPut.Round(time.Millisecond), slowestDelete.Round(time.Millisecond))
	// An overwrite never waits for the old shards' deletes. Its own new
	// shard may land on the frozen node (until the director sees the node
	// gone, its disks are writable): the node takes the few bytes into
	// its socket and never answers, so the stream is replaced by a spare
	// after the node's answer timeout (--node-idle-timeout) — twice if
	// the spare is the frozen node's other disk.
	if slowestPut > 2*idle+5*time.Second || slowestDelete > 5*time.Second {
		t.Errorf("overwrites (%v) or deletes (%v) were held up by the frozen node", slowestPut, slowestDelete)
	}
	for k, want := range data {
		if got, err := s3Get(ctx, s, k); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("GET %s after the overwrites: %v", k, err)
		}
	}

	// The frozen node's old shards wait in the queue until it runs again.
	if err := victim.Thaw(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the cleanup queue to empty", func() bool {
		cs, err := d.meta.Cleanups(ctx, time.Now().Add(24*time.Hour), 1)
		return err == nil && len(cs) == 0
	})
}

// TestReadInFlightRealProcesses: a GET through a real `cairn server`
// reads its object to the end, byte for byte, while the object is
// overwritten and then deleted and the cleanup duty runs; the old
// version's shard files go once the grace period has passed.
func TestReadInFlightRealProcesses(t *testing.T) {
	srv := testcluster.StartServer(t, "", "--cleanup-grace", "15s", "--cleanup-every", "1s")
	s := s3Client(srv.S3)
	d := serverDirect(t, srv)
	ctx := context.Background()
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20 // four of the gateway's read-ahead windows
	want := sha256.Sum256(patternBytes(size, 7))
	if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("big"),
		Body: newPattern(size, 7), ContentLength: aws.Int64(size)}); err != nil {
		t.Fatal(err)
	}
	m, err := d.meta.Manifest(ctx, "bkt", "big")
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, out.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := s3Put(ctx, s, "big", []byte("the new version")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("big")}); err != nil {
		t.Fatal(err)
	}
	// real time: the real director's cleanup duty runs every second; let
	// it run a few times while the GET is still open.
	time.Sleep(3 * time.Second)
	_, byVersion, _, _ := shardBytes(t, srv.Data)
	if byVersion[m.Version] == 0 {
		t.Fatal("the old version's shard files are gone within the grace period")
	}
	if _, err := io.Copy(h, out.Body); err != nil {
		t.Fatalf("the GET in flight across an overwrite and a delete: %v", err)
	}
	if !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("the GET in flight returned other bytes than the version it opened")
	}
	waitFor(t, time.Minute, "the old version's shard files to go after the grace period", func() bool {
		_, byVersion, _, _ := shardBytes(t, srv.Data)
		return byVersion[m.Version] == 0
	})
}
