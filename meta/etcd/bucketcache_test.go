package etcdmeta_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/metatest"
)

// TestConformanceBucketCache: a store with the bucket cache on keeps
// every promise of meta.Store to its own callers.
func TestConformanceBucketCache(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	var n atomic.Int64
	metatest.Run(t, func(t *testing.T) meta.Store {
		s, err := etcdmeta.Open(t.Context(), srv.Endpoints(), etcdmeta.Options{
			Prefix: fmt.Sprintf("/cached/%d/", n.Add(1)), SessionTTL: 5 * time.Second, BucketCache: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestBucketCache: a cached store reads a bucket's record from etcd once;
// its own writes show at once, and another store's (another gateway's)
// reach it through the watch.
func TestBucketCache(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	var mu sync.Mutex
	ranges := 0
	a, err := etcdmeta.Open(t.Context(), srv.Endpoints(), etcdmeta.Options{Prefix: "/bc/", BucketCache: 5 * time.Second,
		ObserveCall: func(op string, _ time.Duration, _ error) {
			mu.Lock()
			defer mu.Unlock()
			if op == "Range" {
				ranges++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := open(t, srv.Endpoints(), "/bc/")
	defer b.Close()
	ctx := context.Background()
	if err := a.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	reads := func() int {
		mu.Lock()
		defer mu.Unlock()
		r := ranges
		ranges = 0
		return r
	}
	// The watch starts with the store; wait until it serves (the second
	// read of a record is then from memory).
	waitFor(t, "the cache to serve", func() bool {
		reads()
		_, err1 := a.Bucket(ctx, "bkt")
		_, err2 := a.Bucket(ctx, "bkt")
		return err1 == nil && err2 == nil && reads() == 1
	})
	for range 3 {
		if _, err := a.Bucket(ctx, "bkt"); err != nil {
			t.Fatal(err)
		}
	}
	if r := reads(); r != 0 {
		t.Fatalf("cached reads made %d Range calls", r)
	}

	// Its own write: the next read sees it.
	if err := a.SetBucketTags(ctx, "bkt", map[string]string{"by": "a"}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Bucket(ctx, "bkt"); err != nil || got.Tags["by"] != "a" {
		t.Fatalf("after its own write: %v, %v", got.Tags, err)
	}
	// Another store's write: delivered by the watch, with no read.
	if _, err := a.Bucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	reads()
	if err := b.SetBucketTags(ctx, "bkt", map[string]string{"by": "b"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's tags", func() bool {
		got, err := a.Bucket(ctx, "bkt")
		return err == nil && maps.Equal(got.Tags, map[string]string{"by": "b"})
	})
	if r := reads(); r != 0 {
		t.Fatalf("the watch's update made %d Range calls", r)
	}
	// Another store's delete, then a create by another owner: never the
	// old owner's record.
	if err := b.DeleteBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delete", func() bool {
		_, err := a.Bucket(ctx, "bkt")
		return errors.Is(err, cairn.ErrNotFound)
	})
	if err := b.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rs-4-2", Owner: "bob"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new owner", func() bool {
		got, err := a.Bucket(ctx, "bkt")
		return err == nil && got.Owner == "bob"
	})
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // real time: etcd's watch delivers on its own goroutines
	}
}

// TestGuessedCommits: commits that guess from the caches (the bucket
// record, the key new, the counter shards this store wrote last) stay
// exact when another store moves the same counters, changes the bucket
// record and commits over the same keys: every wrong guess only fails a
// compare, and the usage counters end equal to what is stored.
func TestGuessedCommits(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	var mu sync.Mutex
	txns := 0
	a, err := etcdmeta.Open(t.Context(), srv.Endpoints(), etcdmeta.Options{Prefix: "/guess/", BucketCache: 5 * time.Second,
		ObserveCall: func(op string, _ time.Duration, _ error) {
			mu.Lock()
			defer mu.Unlock()
			if op == "Txn" {
				txns++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := open(t, srv.Endpoints(), "/guess/")
	defer b.Close()
	ctx := context.Background()
	if err := a.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rep-1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache to serve", func() bool {
		_, err1 := a.Bucket(ctx, "bkt")
		kv, err2 := a.Bucket(ctx, "bkt")
		return err1 == nil && err2 == nil && kv.Name == "bkt"
	})
	mf := func(key string, i int) *cairn.Manifest {
		return &cairn.Manifest{Bucket: "bkt", Key: key, Version: fmt.Sprintf("%032x", i), Size: int64(i), Policy: "rep-1", Layout: oneCopy}
	}
	var sizes = map[string]int64{} // by key: the size of its last commit
	for i := 1; i <= 40; i++ {
		key := fmt.Sprintf("k%d", i%13) // keys come back: overwrites
		s := meta.Store(a)
		if i%3 == 0 {
			s = b
		}
		if i%10 == 0 {
			if err := b.SetBucketTags(ctx, "bkt", map[string]string{"i": fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CommitManifest(ctx, mf(key, i), meta.AnyVersion); err != nil {
			t.Fatalf("commit %d of %s: %v", i, key, err)
		}
		sizes[key] = int64(i)
	}
	var want cairn.Tally
	for key, size := range sizes {
		got, err := b.Manifest(ctx, "bkt", key)
		if err != nil || got.Size != size {
			t.Fatalf("%s: %v, %v; want the commit of size %d", key, got, err, size)
		}
		want.Objects++
		want.Logical += size
	}
	for _, s := range []meta.Store{a, b} {
		got, err := s.BucketUsage(ctx, "bkt")
		if err != nil || got.Objects != want.Objects || got.Logical != want.Logical {
			t.Fatalf("usage %+v, %v; want %d objects of %d bytes", got, err, want.Objects, want.Logical)
		}
	}
	// A new key on a quiet store, once its cache has the bucket's last
	// change: one Txn.
	waitFor(t, "the last tags", func() bool {
		got, err := a.Bucket(ctx, "bkt")
		return err == nil && got.Tags["i"] == "40"
	})
	mu.Lock()
	txns = 0
	mu.Unlock()
	if err := a.CommitManifest(ctx, mf("new", 99), ""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if txns != 1 {
		t.Fatalf("a new key's commit took %d Txns, want 1", txns)
	}
}
