package etcdmeta_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"cairn"
	etcdmeta "cairn/meta/etcd"
)

// freezer is a TCP proxy to an etcd member that can stop forwarding, as
// a member frozen by SIGSTOP or cut off by a partition: connections stay
// open, nothing answers.
type freezer struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	thawed chan struct{} // closed while forwarding; guarded by mu
	wg     sync.WaitGroup
	conns  []net.Conn // guarded by mu
}

func newFreezer(t *testing.T, target string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	f.wg.Go(f.accept)
	t.Cleanup(func() {
		ln.Close()
		f.thaw()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *freezer) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, u)
		f.mu.Unlock()
		f.wg.Go(func() { f.pipe(u, c) })
		f.wg.Go(func() { f.pipe(c, u) })
	}
}

// pipe copies src to dst, holding each chunk while frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.mu.Lock()
		gate := f.thawed
		f.mu.Unlock()
		<-gate
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.thawed = make(chan struct{})
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.thawed:
	default:
		close(f.thawed)
	}
}

// TestCallDeadline: with the member frozen, reads and writes fail within
// the call timeout with an error wrapping cairn.ErrUnavailable and
// context.DeadlineExceeded; once it answers again, so does the store.
func TestCallDeadline(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	f := newFreezer(t, srv.Endpoints()[0][len("http://"):])
	const timeout = 500 * time.Millisecond
	s, err := etcdmeta.Open(t.Context(), []string{"http://" + f.ln.Addr().String()}, etcdmeta.Options{CallTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rep-1"}); err != nil {
		t.Fatal(err)
	}
	f.freeze()
	m := &cairn.Manifest{Bucket: "bkt", Key: "k", Version: "0123456789abcdef0123456789abcdef", Size: 7, Policy: "rep-1", Layout: oneCopy}
	calls := map[string]func() error{
		"Bucket":         func() error { _, err := s.Bucket(ctx, "bkt"); return err },
		"CommitManifest": func() error { return s.CommitManifest(ctx, m, "") },
		"Cleanups":       func() error { _, err := s.Cleanups(ctx, time.Now(), 10); return err },
		"KeepAlive":      func() error { return s.KeepAlive(ctx, "holder", time.Second) },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		took := time.Since(start)
		if !errors.Is(err, cairn.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with the member frozen: %v, want ErrUnavailable and DeadlineExceeded", name, err)
		}
		// A commit reads, then writes: two calls at most.
		if took > 2*timeout+time.Second {
			t.Errorf("%s took %v, want about the call timeout %v", name, took, timeout)
		}
		t.Logf("%s failed after %v", name, took.Round(time.Millisecond))
	}
	f.thaw()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.Bucket(ctx, "bkt")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store does not answer again after the member did: %v", err)
		}
	}
	if err := s.CommitManifest(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
}
