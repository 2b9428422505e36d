package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/internal/retry"
)

func TestDelay(t *testing.T) {
	p := retry.Policy{Base: 100 * time.Millisecond, Max: time.Second}
	tests := []struct {
		name string
		p    retry.Policy
		i    int
		want time.Duration
	}{
		{"first", p, 0, 100 * time.Millisecond},
		{"doubles", p, 1, 200 * time.Millisecond},
		{"doubles again", p, 3, 800 * time.Millisecond},
		{"capped", p, 4, time.Second},
		{"capped far out", p, 1000, time.Second},
		{"negative failure index", p, -1, 100 * time.Millisecond},
		{"no cap", retry.Policy{Base: time.Second}, 10, 1024 * time.Second},
		{"no cap stops short of overflow", retry.Policy{Base: time.Second}, 200, time.Second << 33},
		{"zero base", retry.Policy{Max: time.Second}, 5, 0},
		{"the repair queue's", retry.Policy{Base: time.Second, Max: 5 * time.Minute}, 8, 256 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.i); got != tt.want {
				t.Fatalf("Delay(%d) = %v, want %v", tt.i, got, tt.want)
			}
		})
	}
}

// TestDelayJitter: jittered waits stay within [d/2, d] and vary.
func TestDelayJitter(t *testing.T) {
	p := retry.Policy{Base: 100 * time.Millisecond, Max: time.Second, Rand: rand.New(rand.NewPCG(7, 1))}
	for i := range 8 {
		d := retry.Policy{Base: p.Base, Max: p.Max}.Delay(i)
		seen := map[time.Duration]bool{}
		for range 100 {
			got := p.Delay(i)
			if got < d/2 || got > d {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", i, got, d/2, d)
			}
			seen[got] = true
		}
		if len(seen) < 10 {
			t.Fatalf("Delay(%d): %d distinct waits in 100", i, len(seen))
		}
	}
}

// The tests of Do run in synctest bubbles: the waits are virtual time, so
// the time between attempts is exact.

func TestDoRetriesTransientWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 5, Base: 100 * time.Millisecond, Max: 300 * time.Millisecond}
		start := time.Now()
		var at []time.Duration
		err := retry.Do(t.Context(), p, func(context.Context) error {
			at = append(at, time.Since(start))
			if len(at) < 4 {
				return fmt.Errorf("commit: %w", cairn.ErrConflict)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond}
		if fmt.Sprint(at) != fmt.Sprint(want) {
			t.Fatalf("attempts at %v, want %v", at, want)
		}
	})
}

func TestDoStopsAtAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 3, Base: time.Second, Max: time.Minute}
		calls := 0
		start := time.Now()
		err := retry.Do(t.Context(), p, func(context.Context) error {
			calls++
			return fmt.Errorf("read %d: %w", calls, cairn.ErrUnavailable)
		})
		if calls != 3 || err == nil || err.Error() != "read 3: unavailable" {
			t.Fatalf("%d calls, %v; want 3 and the last error", calls, err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Fatalf("took %v, want 1 s + 2 s of waits", took)
		}
	})
}

func TestDoReturnsPermanentAtOnce(t *testing.T) {
	for _, perm := range []error{cairn.ErrNotFound, cairn.ErrInvalid, cairn.ErrCorrupt, context.Canceled,
		fmt.Errorf("%w: disk full: %w", cairn.ErrUnavailable, cairn.ErrNoSpace)} {
		t.Run(perm.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				start := time.Now()
				err := retry.Do(t.Context(), retry.Policy{Attempts: 10, Base: time.Second}, func(context.Context) error {
					calls++
					return perm
				})
				if calls != 1 || !errors.Is(err, perm) || time.Since(start) != 0 {
					t.Fatalf("%d calls in %v, %v; want 1 at once", calls, time.Since(start), err)
				}
			})
		})
	}
}

func TestDoZeroAttemptsCallsOnce(t *testing.T) {
	calls := 0
	err := retry.Do(t.Context(), retry.Policy{}, func(context.Context) error { calls++; return cairn.ErrUnavailable })
	if calls != 1 || !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("%d calls, %v", calls, err)
	}
}

// TestDoCancelledDuringWait: ctx ending during a wait ends Do at once
// with both ctx's error and the last failure.
func TestDoCancelledDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		done := make(chan error)
		start := time.Now()
		go func() {
			done <- retry.Do(ctx, retry.Policy{Attempts: 10, Base: time.Minute}, func(context.Context) error {
				calls++
				return cairn.ErrConflict
			})
		}()
		synctest.Wait() // Do is waiting out its first backoff
		cancel()
		err := <-done
		if calls != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, cairn.ErrConflict) {
			t.Fatalf("%d calls, %v; want 1, and both errors", calls, err)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("returned after %v of the minute's wait, want at once", took)
		}
	})
}

// TestDoSharedRand: concurrent Do calls may share a Policy whose Rand is
// made over LockedSource (the race detector checks it).
func TestDoSharedRand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond,
			Rand: rand.New(retry.LockedSource(rand.NewPCG(1, 2)))}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_ = retry.Do(t.Context(), p, func(context.Context) error { return cairn.ErrUnavailable })
			})
		}
		wg.Wait()
	})
}
