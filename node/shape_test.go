package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/vfs"
	"cairn/node/wire"
	"cairn/repair/plan"
)

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	b := newTokenBucket(1000, 100, t0) // 1000 bytes/s, 100 bytes of burst
	steps := []struct {
		at   time.Duration // since t0
		n    int
		wait time.Duration
	}{
		{0, 100, 0},                // the burst passes at once
		{0, 50, 50 * ms},           // then 1 ms per byte
		{0, 50, 100 * ms},          // behind the previous taker
		{100 * ms, 10, 10 * ms},    // the debt was repaid at 100 ms
		{10 * time.Second, 100, 0}, // refilled, but only up to the burst
		{10 * time.Second, 1, ms},
		{5 * time.Second, 1, 2 * ms}, // a time in the past counts as the last one
		{10*time.Second + 2*ms, 0, 0},
	}
	for i, s := range steps {
		if got := b.take(t0.Add(s.at), s.n); got != s.wait {
			t.Errorf("step %d: take(%v, %d) = %v, want %v", i, s.at, s.n, got, s.wait)
		}
	}
}

// fakeClock advances only when someone sleeps (one sleeper at a time).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(d time.Duration, _ <-chan struct{}) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return nil
}

func TestLinkLimiterFakeClock(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	l := newLinkLimiter(1<<20, clock)
	start := clock.Now()
	for sent := 0; sent < 2<<20; sent += linkChunk {
		if err := l.wait(linkChunk, nil); err != nil {
			t.Fatal(err)
		}
	}
	// 2 MiB at 1 MiB/s, less the burst that passes at once.
	got := clock.Now().Sub(start)
	want := time.Duration(float64(2<<20-linkBurst) / (1 << 20) * float64(time.Second))
	if got != want {
		t.Fatalf("2 MiB took %v of fake time, want %v", got, want)
	}
}

// TestShapedConn runs shaped connections over net.Pipe in a synctest
// bubble, where time is fake and advances when every goroutine waits.
func TestShapedConn(t *testing.T) {
	const rate = 1 << 20
	payload := bytes.Repeat([]byte("cairn"), (2<<20)/5+1)[:2<<20]
	ideal := time.Duration(float64(len(payload)-linkBurst) / rate * float64(time.Second))
	near := func(t *testing.T, what string, got time.Duration) {
		t.Helper()
		t.Logf("%s: %v (ideal %v)", what, got, ideal)
		if got < ideal || got > ideal+50*time.Millisecond {
			t.Errorf("%s took %v, want about %v", what, got, ideal)
		}
	}
	t.Run("send", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, b := net.Pipe()
			s := newLinkShaper(rate, wallClock{})
			c := newShapedConn(a, s.in, s.out)
			start := time.Now()
			go func() {
				c.Write(payload)
				c.Close()
			}()
			got, err := io.ReadAll(b)
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("read %d bytes: %v", len(got), err)
			}
			near(t, "2 MiB sent", time.Since(start))
		})
	})
	t.Run("receive", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, b := net.Pipe()
			s := newLinkShaper(rate, wallClock{})
			c := newShapedConn(a, s.in, s.out)
			start := time.Now()
			go func() {
				b.Write(payload)
				b.Close()
			}()
			got, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("read %d bytes: %v", len(got), err)
			}
			near(t, "2 MiB received", time.Since(start))
		})
	})
	t.Run("shared by connections", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newLinkShaper(rate, wallClock{})
			start := time.Now()
			var wg sync.WaitGroup
			for range 2 {
				a, b := net.Pipe()
				c := newShapedConn(a, s.in, s.out)
				wg.Go(func() {
					c.Write(payload[:len(payload)/2])
					c.Close()
				})
				wg.Go(func() { io.Copy(io.Discard, b) })
			}
			wg.Wait()
			near(t, "2 × 1 MiB sent at once", time.Since(start))
		})
	})
	t.Run("close stops a wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, b := net.Pipe()
			go io.Copy(io.Discard, b)
			s := newLinkShaper(rate, wallClock{})
			c := newShapedConn(a, s.in, s.out)
			errc := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := c.Write(payload)
				errc <- err
			}()
			time.Sleep(100 * time.Millisecond)
			c.Close()
			if err := <-errc; !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("write on a closed connection: %v", err)
			}
			if d := time.Since(start); d > 150*time.Millisecond {
				t.Fatalf("the write returned %v after the close", d)
			}
		})
	})
}

// TestServerLinkRate: a node limited to 1 MiB/s takes about 2 s to
// receive a 2 MiB shard; its sends and its own outgoing connections (a
// pull's fetches) are shaped too. Real time: only lower bounds.
func TestServerLinkRate(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 4 s of real time")
	}
	ctx := context.Background()
	start := func(name string, rate int64) *Server {
		s, err := NewServer(Config{Node: cairn.NodeID(name), Secret: testSecret, LinkRate: rate,
			Disks: []DiskConfig{{ID: cairn.DiskID(name + "/d1"), Path: "/d", FS: vfs.NewMem()}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	slow, fast := start("slow", 1<<20), start("fast", 0)
	c := NewClient(testSecret, func(d cairn.DiskID) (string, error) {
		if d == "slow/d1" {
			return slow.Addr(), nil
		}
		return fast.Addr(), nil
	}, nil)
	timed := func(what string, least time.Duration, f func() error) {
		t.Helper()
		t0 := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		d := time.Since(t0)
		t.Logf("%s: %v", what, d)
		if d < least {
			t.Errorf("%s took %v, less than %v", what, d, least)
		}
	}
	data := randBytes(1, 2<<20)
	name := shardName(1, 0)
	timed("PUT 2 MiB to the slow node", 1500*time.Millisecond, func() error {
		_, err := c.PutShard(ctx, "slow/d1", name, bytes.NewReader(data))
		return err
	})
	timed("GET 1 MiB from the slow node", 700*time.Millisecond, func() error {
		got, err := readAll(t, c, "slow/d1", name, 0, 1<<20)
		if err == nil && !bytes.Equal(got, data[:1<<20]) {
			err = fmt.Errorf("wrong bytes")
		}
		return err
	})
	// The slow node pulls two 512 KiB helpers from the fast one.
	code, err := all.New("rs-2-1")
	if err != nil {
		t.Fatal(err)
	}
	const size = 512 << 10
	shards := codec.Split(code.Params(), data[:2*size])
	if err := code.Encode(shards); err != nil {
		t.Fatal(err)
	}
	version := fmt.Sprintf("%032x", 0x5104)
	for i := range 2 {
		if _, err := c.PutShard(ctx, "fast/d1", cairn.ShardName(version, i), bytes.NewReader(shards[i])); err != nil {
			t.Fatal(err)
		}
	}
	p, err := plan.Build(plan.PullRep, plan.Input{Code: code, Lost: []int{2}, Nodes: []string{"fast", "fast", ""},
		Replacements: []string{"slow"}, ShardSize: size, Unit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	spec := wire.RepairSpec{Size: size, Unit: 64 << 10, Store: []wire.Target{{Addr: slow.Addr(), Disk: "slow/d1", Shard: cairn.ShardName(version, 2)}}}
	for _, h := range p.Tasks[0].Helpers {
		spec.Hops = append(spec.Hops, wire.Hop{Addr: fast.Addr(), Disk: "fast/d1", Shard: cairn.ShardName(version, h.Shard), Coeffs: h.Coeffs})
	}
	timed("the slow node pulls 2 × 512 KiB", 700*time.Millisecond, func() error {
		_, err := c.Pull(ctx, slow.Addr(), spec)
		return err
	})
	got, err := readAll(t, c, "slow/d1", cairn.ShardName(version, 2), 0, -1)
	if err != nil || !bytes.Equal(got, shards[2]) {
		t.Fatalf("pulled shard: %v", err)
	}
}
