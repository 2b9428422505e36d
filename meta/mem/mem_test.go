package mem_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn/meta"
	"cairn/meta/mem"
	"cairn/meta/metatest"
)

func TestConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store { return mem.New() })
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func alive(t *testing.T, s *mem.Store) []string {
	t.Helper()
	hs, err := s.Alive(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

func TestLeaseExpiresByClock(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	s := mem.New(mem.WithClock(clk.Now))
	defer s.Close()
	ctx := t.Context()
	const ttl = 10 * time.Second

	actx, stopA := context.WithCancel(ctx)
	if err := s.KeepAlive(actx, "a", ttl); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(ctx, "b", ttl); err != nil {
		t.Fatal(err)
	}
	// Renewing entries live however far the clock moves.
	clk.Advance(time.Hour)
	if got := alive(t, s); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Alive = %v", got)
	}
	stopA()
	if got := alive(t, s); !slices.Equal(got, []string{"a", "b"}) { // fixes a's stop time
		t.Fatalf("Alive right after a stopped = %v", got)
	}
	// Now a expires exactly ttl after the stop, not before.
	clk.Advance(ttl - time.Nanosecond)
	if got := alive(t, s); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Alive just before expiry = %v", got)
	}
	clk.Advance(time.Nanosecond)
	if got := alive(t, s); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Alive at expiry = %v", got)
	}

	// Close stops renewal; entries expire ttl later.
	s.Close()
	if _, err := s.Alive(ctx); err == nil {
		t.Fatal("Alive after Close succeeded")
	}
}

func TestLeaseReannounce(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	s := mem.New(mem.WithClock(clk.Now))
	defer s.Close()
	ctx := t.Context()
	first, stop := context.WithCancel(ctx)
	if err := s.KeepAlive(first, "a", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepAlive(ctx, "a", time.Second); err != nil {
		t.Fatal(err)
	}
	stop()
	alive(t, s)
	clk.Advance(time.Hour)
	if got := alive(t, s); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Alive = %v: the first renewal's end removed the second", got)
	}
}

// TestCampaignOrder: campaigners win in the order they started. It runs in
// a synctest bubble: synctest.Wait returns once a campaigner is blocked,
// i.e. queued, so the order is defined without polling.
func TestCampaignOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mem.New()
		defer s.Close()
		ctx := t.Context()
		first, err := s.Campaign(ctx, "r", "0")
		if err != nil {
			t.Fatal(err)
		}
		var ls []chan meta.Leadership
		for i := range 5 {
			ch := make(chan meta.Leadership, 1)
			ls = append(ls, ch)
			go func() {
				l, err := s.Campaign(ctx, "r", string(rune('1'+i)))
				if err != nil {
					t.Error(err)
				}
				ch <- l
			}()
			synctest.Wait()
			if n := s.Waiting("r"); n != i+1 {
				t.Fatalf("%d campaigners waiting, want %d", n, i+1)
			}
		}
		prev := first
		for i, ch := range ls {
			if err := prev.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			prev = <-ch
			if id, _ := s.Leader(ctx, "r"); id != string(rune('1'+i)) {
				t.Fatalf("leader %q, want %q", id, string(rune('1'+i)))
			}
		}
	})
}
