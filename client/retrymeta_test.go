package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
)

// flakyMeta fails chosen calls of a Meta: the next fail[method] calls of
// method return err. A commit in applyThenFail is applied, then reported
// as failed (an unknown outcome).
type flakyMeta struct {
	Meta
	err error

	mu            sync.Mutex
	fail          map[string]int // guarded by mu
	calls         map[string]int // guarded by mu
	applyThenFail int            // guarded by mu
}

var _ Meta = (*flakyMeta)(nil)

func newFlakyMeta(m Meta, err error, fail map[string]int) *flakyMeta {
	return &flakyMeta{Meta: m, err: err, fail: fail, calls: map[string]int{}}
}

// call counts a call of method and reports whether it fails.
func (f *flakyMeta) call(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if f.fail[method] > 0 {
		f.fail[method]--
		return f.err
	}
	return nil
}

func (f *flakyMeta) Bucket(ctx context.Context, name string) (cairn.Bucket, error) {
	if err := f.call("Bucket"); err != nil {
		return cairn.Bucket{}, err
	}
	return f.Meta.Bucket(ctx, name)
}

func (f *flakyMeta) Disks(ctx context.Context) ([]cairn.Disk, error) {
	if err := f.call("Disks"); err != nil {
		return nil, err
	}
	return f.Meta.Disks(ctx)
}

func (f *flakyMeta) Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error) {
	if err := f.call("Manifest"); err != nil {
		return nil, err
	}
	return f.Meta.Manifest(ctx, bucket, key)
}

func (f *flakyMeta) CommitManifest(ctx context.Context, m *cairn.Manifest, prev string) error {
	if err := f.call("CommitManifest"); err != nil {
		return err
	}
	err := f.Meta.CommitManifest(ctx, m, prev)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && f.applyThenFail > 0 {
		f.applyThenFail--
		return f.err
	}
	return err
}

// errNoLeader is what etcd answers while it elects a leader: no sentinel,
// so transient.
var errNoLeader = errors.New("etcdserver: no leader")

// The tests below run in synctest bubbles: the retries' waits are virtual
// time.

// TestMetaReadsRideOutElection: metadata reads that fail transiently a few
// times are retried, and the PUT and GET succeed.
func TestMetaReadsRideOutElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 4096})
		flaky := newFlakyMeta(e.meta, errNoLeader, map[string]int{"Bucket": 3, "Disks": 2, "Manifest": 5})
		c := New(flaky, e.shards, Config{BlockSize: 4096})
		ctx := t.Context()
		data := randBytes(1, 10000)
		start := time.Now()
		if _, err := c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		_, rc, err := c.Get(ctx, "bkt", "k", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, %v", len(got), err)
		}
		if time.Since(start) == 0 {
			t.Fatal("no time waited between retries")
		}
		flaky.mu.Lock()
		defer flaky.mu.Unlock()
		for m, n := range flaky.fail {
			if n != 0 {
				t.Errorf("%s: %d injected failures never met", m, n)
			}
		}
	})
}

// TestMetaReadsBounded: a store that stays away fails the call after the
// policy's attempts, with its error; a permanent error fails it at once.
func TestMetaReadsBounded(t *testing.T) {
	for _, tt := range []struct {
		name     string
		err      error
		calls    int
		min, max time.Duration
	}{
		{"transient", errNoLeader, metaReads.Attempts, 2550 * time.Millisecond, 5100 * time.Millisecond}, // waits of 0.1 … 2 s, jittered to [d/2, d]
		{"permanent", cairn.ErrNotFound, 1, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 4096})
				flaky := newFlakyMeta(e.meta, tt.err, map[string]int{"Bucket": 1000})
				c := New(flaky, e.shards, Config{BlockSize: 4096})
				start := time.Now()
				_, err := c.Put(t.Context(), "bkt", "k", bytes.NewReader([]byte("x")), PutOptions{Size: 1})
				took := time.Since(start)
				if !errors.Is(err, tt.err) {
					t.Fatalf("put: %v, want %v", err, tt.err)
				}
				if n := flaky.calls["Bucket"]; n != tt.calls || took < tt.min || took > tt.max {
					t.Fatalf("%d reads in %v; want %d in [%v, %v]", n, took, tt.calls, tt.min, tt.max)
				}
			})
		})
	}
}

// TestCommitRetriesUnknownOutcome: a commit that was applied but reported
// as failed (a member died mid-request) is retried, finds its own version
// current, and the PUT succeeds with its shards in place.
func TestCommitRetriesUnknownOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 4096})
		flaky := newFlakyMeta(e.meta, errNoLeader, map[string]int{"CommitManifest": 2})
		flaky.applyThenFail = 1
		c := New(flaky, e.shards, Config{BlockSize: 4096})
		data := randBytes(2, 20000)
		m, err := c.Put(t.Context(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		if flaky.calls["CommitManifest"] != 4 {
			t.Fatalf("%d commits, want 2 failed, 1 applied but unanswered, 1 found current", flaky.calls["CommitManifest"])
		}
		cur, err := e.meta.Manifest(t.Context(), "bkt", "k")
		if err != nil || cur.Version != m.Version {
			t.Fatalf("current manifest %v, %v; want version %s", cur, err, m.Version)
		}
		got := e.get(t, "k", 0, -1)
		if !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, differing", len(got))
		}
	})
}
