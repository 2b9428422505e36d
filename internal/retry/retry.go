package retry

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"cairn"
)

// Policy says how many times Do calls its function and how long it waits
// between calls.
type Policy struct {
	// Attempts is the most calls of the function (values below 1 mean 1).
	Attempts int
	// Base is the wait after the first failure; each further failure
	// doubles it.
	Base time.Duration
	// Max caps one wait (0: no cap).
	Max time.Duration
	// Rand, if not nil, jitters each wait (see Delay). It must be safe
	// for the calls that share the Policy (LockedSource).
	Rand *rand.Rand
}

// Delay returns the wait after failure i (from 0): Base·2^i, at most Max.
// With Rand set it is drawn uniformly from [d/2, d] instead.
func (p Policy) Delay(i int) time.Duration {
	d := max(p.Base, 0)
	for range max(i, 0) {
		if d == 0 || p.Max > 0 && d >= p.Max || d > math.MaxInt64/2 {
			break
		}
		d *= 2
	}
	if p.Max > 0 {
		d = min(d, p.Max)
	}
	if p.Rand != nil && d > 0 {
		d = d/2 + time.Duration(p.Rand.Int64N(int64(d-d/2)+1))
	}
	return d
}

// Do calls fn until it returns nil or a permanent error (cairn.IsPermanent),
// or has been called p.Attempts times, waiting p.Delay(i) after failure i.
// It returns nil or fn's last error. If ctx ends during a wait, it returns
// ctx's error wrapped with fn's last error (errors.Is finds both).
func Do(ctx context.Context, p Policy, fn func(ctx context.Context) error) error {
	attempts := max(p.Attempts, 1)
	for i := 0; ; i++ {
		err := fn(ctx)
		if err == nil || cairn.IsPermanent(err) || i+1 >= attempts {
			return err
		}
		if werr := wait(ctx, p.Delay(i)); werr != nil {
			return fmt.Errorf("%w (retrying after: %w)", werr, err)
		}
	}
}

// wait sleeps for d, or until ctx ends (returning its error).
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LockedSource returns a source that serializes calls to src, so that one
// rand.New(LockedSource(src)) may jitter concurrent calls of Do (a
// *rand.Rand keeps no state beyond its source).
func LockedSource(src rand.Source) rand.Source {
	return &lockedSource{src: src}
}

type lockedSource struct {
	mu  sync.Mutex
	src rand.Source // guarded by mu
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}
