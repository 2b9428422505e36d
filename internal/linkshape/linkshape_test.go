package linkshape

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"
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

// TestLimiter: on a synctest bubble's clock, which moves only when every
// goroutine waits, 2 MiB through a 1 MiB/s limiter take exactly the time
// the bucket owes.
func TestLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(1<<20, WallClock{})
		start := time.Now()
		for sent := 0; sent < 2<<20; sent += Chunk {
			if err := l.Wait(Chunk, nil); err != nil {
				t.Fatal(err)
			}
		}
		// 2 MiB at 1 MiB/s, less the burst that passes at once.
		got := time.Since(start)
		want := time.Duration(float64(2<<20-Burst) / (1 << 20) * float64(time.Second))
		if got != want {
			t.Fatalf("2 MiB took %v of fake time, want %v", got, want)
		}
	})
}

// TestShapedConn runs shaped connections over net.Pipe in a synctest
// bubble, where time is fake and advances when every goroutine waits.
func TestShapedConn(t *testing.T) {
	const rate = 1 << 20
	payload := bytes.Repeat([]byte("cairn"), (2<<20)/5+1)[:2<<20]
	ideal := time.Duration(float64(len(payload)-Burst) / rate * float64(time.Second))
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
			s := New(rate, WallClock{})
			c := NewConn(a, s.in, s.out)
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
			s := New(rate, WallClock{})
			c := NewConn(a, s.in, s.out)
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
			s := New(rate, WallClock{})
			start := time.Now()
			var wg sync.WaitGroup
			for range 2 {
				a, b := net.Pipe()
				c := NewConn(a, s.in, s.out)
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
			s := New(rate, WallClock{})
			c := NewConn(a, s.in, s.out)
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
