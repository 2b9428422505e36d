package drive

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn/client/engine"
)

// A disk serves at most Depth requests at once; every Send is carried out.
func TestDepthPerDisk(t *testing.T) {
	var locs []engine.Loc
	for b := range 12 {
		locs = append(locs, engine.Loc{Block: b, Disk: b % 2})
	}
	var mu sync.Mutex
	running, most, done := map[int]int{}, 0, 0
	_, err := Run(context.Background(), &Fixed{Locs: locs}, Options{Depth: 2, Do: func(ctx context.Context, a engine.Action) ([]byte, error) {
		mu.Lock()
		running[a.Disk]++
		most = max(most, running[a.Disk])
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		running[a.Disk]--
		done++
		mu.Unlock()
		return nil, nil
	}})
	if err != nil || done != 12 || most > 2 {
		t.Fatalf("err %v, %d of 12 done, at most %d at once on a disk (depth 2)", err, done, most)
	}
}

// A read that is done cancels what it no longer needs: a running request
// sees its context end (and Run waits for it to return), a queued one is
// never started.
func TestCancelRunningAndQueued(t *testing.T) {
	blocks := []engine.Loc{{Block: 0, Disk: 0}, {Block: 1, Disk: 1}, {Block: 2, Disk: 1}}
	have := 0
	rd, err := engine.NewRead(engine.ReadConfig{Blocks: blocks, Decodable: func([]int) bool { return have >= 1 }})
	if err != nil {
		t.Fatal(err)
	}
	var started [3]atomic.Bool
	var slowEnded atomic.Bool
	_, err = Run(context.Background(), ReadMachine{Read: rd}, Options{Depth: 1,
		Do: func(ctx context.Context, a engine.Action) ([]byte, error) {
			started[a.Block].Store(true)
			if a.Disk == 1 {
				<-ctx.Done() // a slow disk: only cancellation ends it
				slowEnded.Store(true)
				return nil, ctx.Err()
			}
			time.Sleep(5 * time.Millisecond)
			return []byte("x"), nil
		},
		Got: func(engine.Action, []byte) { have++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slowEnded.Load() {
		t.Fatal("Run returned before the cancelled request ended")
	}
	if started[2].Load() {
		t.Fatal("the request queued behind the slow one was started")
	}
}

// A failed request fails a fixed write; Failed sees the error.
func TestFailure(t *testing.T) {
	boom := errors.New("disk on fire")
	var seen error
	_, err := Run(context.Background(), &Fixed{Locs: []engine.Loc{{Block: 0, Disk: 0}, {Block: 1, Disk: 1}}}, Options{
		Do: func(ctx context.Context, a engine.Action) ([]byte, error) {
			if a.Disk == 1 {
				return nil, boom
			}
			return nil, nil
		},
		Failed: func(_ engine.Action, err error) { seen = err },
	})
	if !errors.Is(err, engine.ErrUnavailable) || !errors.Is(seen, boom) {
		t.Fatalf("Run: %v; Failed saw %v", err, seen)
	}
}

// Cancelling Run's context ends it with the context's error after every
// request returned.
func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ended atomic.Int32
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err := Run(ctx, &Fixed{Locs: []engine.Loc{{Block: 0, Disk: 0}, {Block: 1, Disk: 1}}}, Options{
		Do: func(ctx context.Context, a engine.Action) ([]byte, error) {
			<-ctx.Done()
			ended.Add(1)
			return nil, ctx.Err()
		},
	})
	if !errors.Is(err, context.Canceled) || ended.Load() != 2 {
		t.Fatalf("Run: %v, %d requests ended", err, ended.Load())
	}
}
