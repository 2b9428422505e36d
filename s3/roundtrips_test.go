package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/etcd/etcdtest"
)

// callCounter counts a store's etcd calls by name (etcdmeta.Options.ObserveCall).
type callCounter struct {
	mu sync.Mutex
	n  map[string]int // guarded by mu
}

func (c *callCounter) observe(op string, _ time.Duration, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op]++
}

// take returns the counts since the last take and starts again.
func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// etcdGateway serves a gateway over a real (embedded) etcd store with
// the bucket cache on, as cairn gateway opens it, whose calls calls
// counts, and in-memory shards: 8 disks on 8 nodes.
func etcdGateway(t *testing.T, creds Credentials) (*httptest.Server, *callCounter) {
	t.Helper()
	ctx := t.Context()
	calls := &callCounter{n: map[string]int{}}
	store := etcdtest.Store(t, etcdmeta.Options{ObserveCall: calls.observe, BucketCache: 2 * time.Second})
	for n := 1; n <= 8; n++ {
		id := cairn.NodeID(fmt.Sprintf("node%d", n))
		if err := store.PutNode(ctx, cairn.Node{ID: id, Addr: "x"}); err != nil {
			t.Fatal(err)
		}
		d := cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/disk1", id)), Node: id, Capacity: 1 << 40, State: cairn.DiskUp}
		if err := store.PutDisk(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(Config{
		Objects: client.New(store, clienttest.NewMemShards(), client.Config{}), Meta: store, Credentials: creds,
		DefaultPolicy: "rs-4-4",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, calls
}

// TestSmallObjectRoundTrips counts the etcd calls of a 64 KiB PUT and GET
// through the gateway, by root and by a bucket's owner, once the
// gateway's caches are warm: each is latency on the request's path, and a
// write Txn waits for etcd's WAL fsync (issue 22). The numbers are pinned:
// a change that adds a round trip fails here and must say why.
func TestSmallObjectRoundTrips(t *testing.T) {
	creds := StaticCredentials{
		testAccess: Identity{Name: "root", Root: true, AccessKey: testAccess, SecretKey: testSecret},
		"AKALICE":  Identity{Name: "alice", AccessKey: "AKALICE", SecretKey: "alice-secret"},
	}
	srv, calls := etcdGateway(t, creds)
	cl := func(access, secret string) *s3.Client {
		return s3.New(s3.Options{Region: testRegion, BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(access, secret, ""), Retryer: aws.NopRetryer{}})
	}
	body := bytes.Repeat([]byte("cairn!"), 64<<10/6+1)[:64<<10]
	tests := []struct {
		who      string
		c        *s3.Client
		put, get map[string]int
	}{
		// PUT: the commit's one Txn (the bucket record is cached, the
		// store guesses the key is new and knows its counter shards).
		// GET: the manifest.
		{"root", cl(testAccess, testSecret), map[string]int{"Txn": 1}, map[string]int{"Range": 1}},
		{"owner", cl("AKALICE", "alice-secret"), map[string]int{"Txn": 1}, map[string]int{"Range": 1}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.who, func(t *testing.T) {
			bucket := "b-" + tt.who
			if _, err := tt.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Fatal(err)
			}
			put := func(key string) map[string]int {
				calls.take()
				if _, err := tt.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
					t.Fatal(err)
				}
				return calls.take()
			}
			get := func(key string) map[string]int {
				calls.take()
				out, err := tt.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("GET %s: %d bytes, %v", key, len(got), err)
				}
				return calls.take()
			}
			// The first PUT and GET warm the caches (PG table, disks).
			// Those expire (after 2 s, 5 s), so on a slow machine one
			// request may read them again: each count must be met by one
			// of three requests (a round trip added to every request
			// fails them all).
			put("k0")
			get("k0")
			var puts, gets, overwrites []map[string]int
			for i := 1; i <= 3; i++ {
				key := fmt.Sprintf("k%d", i)
				puts = append(puts, put(key))
				gets = append(gets, get(key))
			}
			for range 3 {
				// An overwrite: the guess that the key is new fails (a
				// Txn), the client reads the version it replaces (a raidp
				// one's bytes are freed: client.commit) and commits over
				// it (the store's read and write Txns).
				overwrites = append(overwrites, put("k1"))
			}
			for _, c := range []struct {
				what string
				got  []map[string]int
				want map[string]int
			}{{"PUT", puts, tt.put}, {"GET", gets, tt.get}, {"PUT over a key", overwrites, map[string]int{"Txn": 3, "Range": 1}}} {
				if !slices.ContainsFunc(c.got, func(n map[string]int) bool { return maps.Equal(n, c.want) }) {
					t.Errorf("%s: etcd calls %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}
