package cli

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/meta/mem"
)

// TestServeFlags: the deadline, limit and cleanup flags are in --help with
// their defaults, and bad values are usage errors before anything starts.
func TestServeFlags(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"gateway": {"--allow-policies", "--users-refresh", "--meta-timeout", "--node-timeout", "--node-idle-timeout", "--read-timeout", "--write-timeout", "--max-requests", "--max-memory", "--queue-wait", "--raidp-deletes"},
		"server":  {"--meta-timeout", "--max-requests", "--max-memory", "--write-timeout", "--cleanup-grace", "--cleanup-rate", "--cleanup-every", "--raidp-deletes", "--raidp-zero-grace", "--raidp-compact-dead"},
		"node":    {"--cleanup-grace", "--cleanup-rate", "--cleanup-every", "--raidp-zero-every", "--raidp-zero-batch", "--raidp-compact-every"},
	} {
		out, _, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		for _, f := range flags {
			if !strings.Contains(out, strings.TrimPrefix(f, "-")) {
				t.Errorf("%s --help does not mention %s", cmd, f)
			}
		}
	}
	if out, _, _ := run(t, "gateway", "--help"); !strings.Contains(out, `(default "1GiB")`) || !strings.Contains(out, "(default 5s)") {
		t.Errorf("gateway --help does not show the defaults:\n%s", out)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"gateway", "--max-memory", "1"}, "--max-memory"},
		{[]string{"gateway", "--max-requests", "0"}, "--max-requests"},
		{[]string{"gateway", "--meta-timeout", "0s"}, "--meta-timeout"},
		{[]string{"gateway", "--allow-policies", "rs-4-2,bogus"}, `--allow-policies: policy "bogus"`},
		{[]string{"gateway", "--users-refresh", "0s"}, "--users-refresh"},
		{[]string{"gateway", "--raidp-deletes", "eager"}, `--raidp-deletes "eager"`},
		{[]string{"server", "--data", dir, "--raidp-compact-dead", "1.5"}, "--raidp-compact-dead"},
		{[]string{"server", "--data", dir, "--raidp-zero-grace", "-1s"}, "--raidp-zero-grace"},
		{[]string{"server", "--data", dir, "--queue-wait", "-1s"}, "--queue-wait"},
		{[]string{"server", "--data", dir, "--cleanup-grace", "-1s"}, "--cleanup-grace"},
		{[]string{"node", "--id", "n1", "--meta", "http://127.0.0.1:1", "--disk", dir, "--cleanup-rate", "0"}, "--cleanup-rate"},
	} {
		_, _, err := run(t, tc.args...)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: %v, want a usage error about %s", tc.args, err, tc.mention)
		}
	}
}

// countingStore counts the cluster-map reads of a store and can hold
// them until released.
type countingStore struct {
	*mem.Store
	reads atomic.Int64
	hold  chan struct{} // nil: reads do not wait
	mu    sync.Mutex
	fail  error // guarded by mu
}

func (s *countingStore) Nodes(ctx context.Context) ([]cairn.Node, error) {
	s.reads.Add(1)
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	err := s.fail
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.Store.Nodes(ctx)
}

// TestResolver: one cluster-map read serves every caller waiting for it,
// a caller whose ctx ends stops waiting, a map that cannot be re-read
// serves on while stale, and an unknown disk is ErrNotFound.
func TestResolver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := &countingStore{Store: mem.New(), hold: make(chan struct{})}
		if err := st.PutNode(ctx, cairn.Node{ID: "n1", Addr: "host1:1"}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutDisk(ctx, cairn.Disk{ID: "n1/d1", Node: "n1"}); err != nil {
			t.Fatal(err)
		}
		r := &resolver{store: st}
		var wg sync.WaitGroup
		got := make([]string, 5)
		for i := range got {
			wg.Go(func() { got[i], _ = r.resolve(ctx, "n1/d1") })
		}
		synctest.Wait() // every caller reads or waits for the read
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { _, err := r.resolve(cctx, "n1/d1"); done <- err }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("a caller whose ctx ended while waiting: %v", err)
		}
		close(st.hold)
		wg.Wait()
		if n := st.reads.Load(); n != 1 || got[0] != "host1:1" || got[4] != "host1:1" {
			t.Fatalf("%d map reads for 5 callers, got %q", n, got)
		}
		st.mu.Lock()
		st.fail = errors.New("etcd is gone")
		st.mu.Unlock()
		time.Sleep(resolverMaxAge) // the bubble's clock: the map is stale
		if a, err := r.resolve(ctx, "n1/d1"); err != nil || a != "host1:1" {
			t.Fatalf("a stale map that cannot be re-read: %q, %v; want the stale address", a, err)
		}
		if _, err := r.resolve(ctx, "n9/d9"); err == nil || errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("an unknown disk with the map unreadable: %v, want the read's error", err)
		}
		st.mu.Lock()
		st.fail = nil
		st.mu.Unlock()
		if _, err := r.resolve(ctx, "n9/d9"); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("an unknown disk: %v, want ErrNotFound", err)
		}
	})
}

// TestResolverForgetsUnreachable: a node that restarted on another
// address is found at the next call after one could not connect to the
// old one, not after resolverMaxAge; a dead node (the map still names the
// address) costs at most one read of the map per resolverRecheck.
func TestResolverForgetsUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := &countingStore{Store: mem.New(), hold: make(chan struct{})}
		close(st.hold)
		if err := st.PutNode(ctx, cairn.Node{ID: "n1", Addr: "host1:1"}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutDisk(ctx, cairn.Disk{ID: "n1/d1", Node: "n1"}); err != nil {
			t.Fatal(err)
		}
		r := &resolver{store: st}
		if a, _ := r.resolve(ctx, "n1/d1"); a != "host1:1" {
			t.Fatalf("first resolve: %q", a)
		}
		if err := st.PutNode(ctx, cairn.Node{ID: "n1", Addr: "host1:2"}); err != nil { // restarted elsewhere
			t.Fatal(err)
		}
		r.unreachable("n1/d1", "host1:1") // too soon after the read: ignored
		if a, _ := r.resolve(ctx, "n1/d1"); a != "host1:1" || st.reads.Load() != 1 {
			t.Fatalf("within resolverRecheck: %q after %d reads, want the cached address", a, st.reads.Load())
		}
		time.Sleep(resolverRecheck + time.Millisecond) // the bubble's clock
		r.unreachable("n1/d1", "host1:9")              // an address the map does not give: ignored
		if a, _ := r.resolve(ctx, "n1/d1"); a != "host1:1" {
			t.Fatalf("after a failure at another address: %q", a)
		}
		r.unreachable("n1/d1", "host1:1")
		if a, _ := r.resolve(ctx, "n1/d1"); a != "host1:2" || st.reads.Load() != 2 {
			t.Fatalf("after the cached address could not connect: %q after %d reads, want host1:2 from a second read", a, st.reads.Load())
		}
	})
}
