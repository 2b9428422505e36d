package raidprun

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestPipeline: every chunk arrives whole (the last one short), drains
// start in chunk order; two chunks fill at once while two drain, so 8
// chunks of 1 s to fill and 1 s to drain take 5 s, not 16 (virtual time);
// an error on either side ends both and is returned, with no goroutine left
// behind.
func TestPipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const chunk = 100
		src := make([]byte, 750)
		for i := range src {
			src[i] = byte(i * 7)
		}
		dst := make([]byte, len(src))
		var mu sync.Mutex
		var offs []int64 // in the order drains started
		filling, draining, maxFill, maxDrain := 0, 0, 0, 0
		start := time.Now()
		err := pipeline(ctx, 0, int64(len(src)), chunk,
			func(p []byte, off int64) error {
				mu.Lock()
				filling++
				maxFill = max(maxFill, filling)
				mu.Unlock()
				time.Sleep(time.Second)
				copy(p, src[off:])
				mu.Lock()
				filling--
				mu.Unlock()
				return nil
			},
			func(ctx context.Context, p []byte, off int64) error {
				mu.Lock()
				offs = append(offs, off)
				draining++
				maxDrain = max(maxDrain, draining)
				mu.Unlock()
				time.Sleep(time.Second)
				copy(dst[off:], p)
				mu.Lock()
				draining--
				mu.Unlock()
				return nil
			})
		if err != nil || !bytes.Equal(dst, src) {
			t.Fatalf("pipeline: %v; equal %v", err, bytes.Equal(dst, src))
		}
		if w := time.Since(start); w != 5*time.Second {
			t.Errorf("8 chunks of 1 s + 1 s took %v, want 5s (two filled and two drained at once, overlapped)", w)
		}
		if !slices.IsSorted(offs) || len(offs) != 8 || maxFill != pipelineWidth || maxDrain != pipelineWidth {
			t.Errorf("drains started at offsets %v; at most %d fills and %d drains at once, want %d", offs, maxFill, maxDrain, pipelineWidth)
		}

		// An error of the drain stops the fill; one of the fill ends the
		// drain once it has written the chunks before.
		boom := errors.New("boom")
		var fills atomic.Int32
		err = pipeline(ctx, 0, 10*chunk, chunk,
			func(p []byte, off int64) error { fills.Add(1); return nil },
			func(ctx context.Context, p []byte, off int64) error {
				if off == 2*chunk {
					return boom
				}
				return nil
			})
		// Fills after the failed drain: at most a buffer's worth beyond
		// the chunks drained or draining when it failed.
		if !errors.Is(err, boom) || fills.Load() > 2+pipelineWidth+pipelineBuffers {
			t.Errorf("a drain error: %v after %d fills", err, fills.Load())
		}
		var drained atomic.Int32
		err = pipeline(ctx, 0, 10*chunk, chunk,
			func(p []byte, off int64) error {
				if off == 5*chunk {
					return boom
				}
				return nil
			},
			func(ctx context.Context, p []byte, off int64) error { drained.Add(1); return nil })
		if !errors.Is(err, boom) || drained.Load() > 5 {
			t.Errorf("a fill error: %v after %d chunks drained", err, drained.Load())
		}
		// A cancelled context ends a pipeline waiting on a slow drain.
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(3 * time.Second); cancel() }()
		err = pipeline(cctx, 0, 10*chunk, chunk,
			func(p []byte, off int64) error { return nil },
			func(ctx context.Context, p []byte, off int64) error {
				select {
				case <-time.After(time.Hour):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
	})
}
