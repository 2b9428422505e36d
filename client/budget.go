package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// ErrBusy: the buffer memory a request needs stayed taken by others for
// the Budget's whole wait. Transient: the load passes (the gateway
// answers 503 SlowDown).
var ErrBusy = errors.New("too busy: buffer memory is taken")

// Budget bounds the buffer memory of the PUTs and GETs of every client
// that shares it (Config.Memory; docs/design/s3.md, "Limits"): a request
// takes its share before it allocates, waits up to the budget's wait for
// it, and gives it back when done. A PUT takes what its encoder's
// pipeline needs and, for its spare window, only what is free at once,
// so the window shrinks under pressure instead of making others wait. A
// nil *Budget is unbounded. Safe for concurrent use.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
}

// NewBudget returns a budget of size bytes whose requests wait up to wait
// for their share (at most 0: do not wait).
func NewBudget(size int64, wait time.Duration) *Budget {
	return &Budget{sem: semaphore.NewWeighted(size), size: size, wait: max(wait, 0)}
}

// Size returns the budget's bytes.
func (b *Budget) Size() int64 { return b.size }

// take waits for n bytes (at most the budget's size) and returns the
// function that gives them back (once). Errors: ErrBusy after the
// budget's wait, or ctx's error.
func (b *Budget) take(ctx context.Context, n int64) (func(), error) {
	if b == nil || n <= 0 {
		return func() {}, nil
	}
	n = min(n, b.size)
	if b.sem.TryAcquire(n) {
		return sync.OnceFunc(func() { b.sem.Release(n) }), nil
	}
	wctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	if err := b.sem.Acquire(wctx, n); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("%w: waited %v for %d bytes", ErrBusy, b.wait, n)
	}
	return sync.OnceFunc(func() { b.sem.Release(n) }), nil
}

// tryTake takes n bytes if they are free now.
func (b *Budget) tryTake(n int64) (func(), bool) {
	if b == nil || n <= 0 {
		return func() {}, true
	}
	if n > b.size || !b.sem.TryAcquire(n) {
		return nil, false
	}
	return sync.OnceFunc(func() { b.sem.Release(n) }), true
}
