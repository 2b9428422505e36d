package raidprun

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestPipeline: chunks arrive in order and whole (the last one short);
// filling overlaps draining, so 8 chunks of 1 s to fill and 1 s to drain
// take 9 s, not 16 (virtual time); an error on either side ends both and
// is returned, with no goroutine left behind.
func TestPipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const chunk = 100
		src := make([]byte, 750)
		for i := range src {
			src[i] = byte(i * 7)
		}
		var dst []byte
		var offs []int64
		start := time.Now()
		err := pipeline(ctx, 0, int64(len(src)), chunk,
			func(p []byte, off int64) error {
				time.Sleep(time.Second)
				copy(p, src[off:])
				return nil
			},
			func(ctx context.Context, p []byte, off int64) error {
				time.Sleep(time.Second)
				dst = append(dst, p...)
				offs = append(offs, off)
				return nil
			})
		if err != nil || !bytes.Equal(dst, src) {
			t.Fatalf("pipeline: %v; %d bytes moved, equal %v", err, len(dst), bytes.Equal(dst, src))
		}
		if w := time.Since(start); w != 9*time.Second {
			t.Errorf("8 chunks of 1 s + 1 s took %v, want 9s (fill and drain overlapped)", w)
		}
		if offs[0] != 0 || offs[7] != 700 {
			t.Errorf("offsets %v", offs)
		}

		// An error of the drain stops the fill; one of the fill ends the
		// drain once it has written the chunks before.
		boom := errors.New("boom")
		fills := 0
		err = pipeline(ctx, 0, 10*chunk, chunk,
			func(p []byte, off int64) error { fills++; return nil },
			func(ctx context.Context, p []byte, off int64) error {
				if off == 2*chunk {
					return boom
				}
				return nil
			})
		if !errors.Is(err, boom) || fills > 2+pipelineDepth {
			t.Errorf("a drain error: %v after %d fills", err, fills)
		}
		drained := 0
		err = pipeline(ctx, 0, 10*chunk, chunk,
			func(p []byte, off int64) error {
				if off == 5*chunk {
					return boom
				}
				return nil
			},
			func(ctx context.Context, p []byte, off int64) error { drained++; return nil })
		if !errors.Is(err, boom) || drained > 5 {
			t.Errorf("a fill error: %v after %d chunks drained", err, drained)
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
