package drive

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cairn/client/engine"
)

// The tests run in synctest bubbles: time is virtual, so a request that
// "takes 2 ms" takes no real time, and Run's ticker fires exactly.

// A disk serves at most Depth requests at once; every Send is carried out.
func TestDepthPerDisk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var locs []engine.Loc
		for b := range 12 {
			locs = append(locs, engine.Loc{Block: b, Disk: b % 2})
		}
		var mu sync.Mutex
		running, most, done := map[int]int{}, 0, 0
		took, err := Run(t.Context(), &Fixed{Locs: locs}, Options{Depth: 2, Do: func(ctx context.Context, a *Request) ([]byte, error) {
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
		if took != 6*time.Millisecond { // 6 blocks per disk, 2 at a time
			t.Fatalf("took %v, want 6ms", took)
		}
	})
}

// A read that is done cancels what it no longer needs: a running request
// sees its context end (and Run waits for it to return), a queued one is
// never started.
func TestCancelRunningAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocks := []engine.Loc{{Block: 0, Disk: 0}, {Block: 1, Disk: 1}, {Block: 2, Disk: 1}}
		have := 0
		rd, err := engine.NewRead(engine.ReadConfig{Blocks: blocks, Decodable: func([]int) bool { return have >= 1 }})
		if err != nil {
			t.Fatal(err)
		}
		var started [3]atomic.Bool
		var slowEnded atomic.Bool
		var failed []engine.Action
		var counts Counts
		_, err = Run(t.Context(), ReadMachine{Read: rd}, Options{Depth: 1, Counts: &counts,
			Do: func(ctx context.Context, a *Request) ([]byte, error) {
				started[a.Block].Store(true)
				if a.Disk == 1 {
					<-ctx.Done() // a slow disk: only cancellation ends it
					slowEnded.Store(true)
					return nil, ctx.Err()
				}
				time.Sleep(5 * time.Millisecond)
				return []byte("x"), nil
			},
			Got:    func(engine.Action, []byte) { have++ },
			Failed: func(a engine.Action, _ error) { failed = append(failed, a) },
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
		if len(failed) > 0 {
			t.Fatalf("Failed saw cancelled requests: %v", failed)
		}
		// Two started, one succeeded; the slow one and the one queued
		// behind it were cancelled, and neither counts as failed.
		got := [...]int64{counts.Started.Load(), counts.Succeeded.Load(), counts.Failed.Load(), counts.Cancelled.Load()}
		if got != [...]int64{2, 1, 0, 2} {
			t.Fatalf("counts started, succeeded, failed, cancelled = %v, want [2 1 0 2]", got)
		}
	})
}

// A failed request fails a fixed write; Failed sees the error.
func TestFailure(t *testing.T) {
	boom := errors.New("disk on fire")
	var seen error
	var counts Counts
	_, err := Run(context.Background(), &Fixed{Locs: []engine.Loc{{Block: 0, Disk: 0}, {Block: 1, Disk: 1}}}, Options{Counts: &counts,
		Do: func(ctx context.Context, a *Request) ([]byte, error) {
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
	if counts.Started.Load() != 2 || counts.Failed.Load() != 1 || counts.Replaced.Load() != 0 {
		t.Fatalf("counts: %d started, %d failed, %d replaced; want 2, 1, 0", counts.Started.Load(), counts.Failed.Load(), counts.Replaced.Load())
	}
}

// Cancelling Run's context ends it with the context's error after every
// request returned.
func TestContextCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(10*time.Millisecond, cancel)
		var ended atomic.Int32
		took, err := Run(ctx, &Fixed{Locs: []engine.Loc{{Block: 0, Disk: 0}, {Block: 1, Disk: 1}}}, Options{
			Do: func(ctx context.Context, a *Request) ([]byte, error) {
				<-ctx.Done()
				ended.Add(1)
				return nil, ctx.Err()
			},
		})
		if !errors.Is(err, context.Canceled) || ended.Load() != 2 || took != 10*time.Millisecond {
			t.Fatalf("Run: %v after %v, %d requests ended", err, took, ended.Load())
		}
	})
}

// A stream write (engine Stream mode) over three disks and a spare: each
// request takes 10 blocks and reports each (Progress); disk 1 takes 50 ms
// a block. It holds the write back, so the engine replaces it with a
// spare block on disk 3 and cancels it; the write is done with disks 0,
// 2 and 3.
func TestStreamProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := engine.NewWrite(engine.WriteConfig{Disks: 4, Primaries: 3, Target: 3, MaxBlock: 4, MaxPerDisk: 1,
			Stream: true, MinWait: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var slowCancelled atomic.Bool
		var counts Counts
		_, err = Run(t.Context(), WriteMachine{Write: w}, Options{Tick: 5 * time.Millisecond, Counts: &counts,
			Do: func(ctx context.Context, r *Request) ([]byte, error) {
				per := time.Millisecond
				if r.Disk == 1 {
					per = 50 * time.Millisecond
				}
				for range 10 {
					select {
					case <-time.After(per):
					case <-ctx.Done():
						slowCancelled.Store(r.Disk == 1)
						return nil, ctx.Err()
					}
					r.Progress()
				}
				return nil, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		var disks []int
		for _, p := range w.Durable() {
			disks = append(disks, p.Disk)
		}
		slices.Sort(disks)
		if !slices.Equal(disks, []int{0, 2, 3}) || !slowCancelled.Load() {
			t.Fatalf("durable on disks %v (want 0, 2, 3); the slow stream cancelled: %v", disks, slowCancelled.Load())
		}
		// The spare's stream is the one hedge; the slow stream the one
		// cancelled.
		if h, c := counts.Hedged.Load(), counts.Cancelled.Load(); h != 1 || c != 1 || counts.Started.Load() != 4 {
			t.Fatalf("counts: %d started, %d hedged, %d cancelled; want 4, 1, 1", counts.Started.Load(), h, c)
		}
	})
}

// Start runs on Run's goroutine before Do, with Do's context; an inbox
// brings events from another goroutine to the machine in step with the
// rest, and refuses them once Run is over.
func TestStartAndInbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := NewInbox()
		m := &posted{}
		var startCtx []context.Context // Run's goroutine
		var mu sync.Mutex
		doCtx := map[engine.ReqID]context.Context{}
		go func() {
			time.Sleep(time.Millisecond)
			// A late block: the machine sends it and then is done when it is.
			if !in.Post(func(time.Duration) []engine.Action {
				m.sent++
				return []engine.Action{{Kind: engine.Send, Req: 1, Disk: 1, Block: 1}}
			}) {
				t.Error("Post refused while Run was running")
			}
		}()
		_, err := Run(t.Context(), m, Options{Inbox: in,
			Start: func(ctx context.Context, a engine.Action) { startCtx = append(startCtx, ctx) },
			Do: func(ctx context.Context, r *Request) ([]byte, error) {
				mu.Lock()
				doCtx[r.Req] = ctx
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				return nil, nil
			},
		})
		if err != nil || m.done != 2 {
			t.Fatalf("Run: %v; %d blocks done, want 2", err, m.done)
		}
		if len(startCtx) != 2 || startCtx[0] != doCtx[0] || startCtx[1] != doCtx[1] {
			t.Fatal("Start did not see each request's context")
		}
		if startCtx[0].Err() == nil {
			t.Fatal("a request's context outlived its Do")
		}
		if in.Post(func(time.Duration) []engine.Action { t.Error("a post ran after Run"); return nil }) {
			t.Fatal("Post after Run returned true")
		}
	})
}

// posted is a machine that sends block 0, takes more sends from its inbox
// and is done when every block sent is.
type posted struct{ sent, done int }

var _ Machine = (*posted)(nil)

func (p *posted) Start(time.Duration) []engine.Action {
	p.sent = 1
	return []engine.Action{{Kind: engine.Send, Req: 0, Disk: 0, Block: 0}}
}

func (p *posted) Tick(time.Duration) []engine.Action { return nil }

func (p *posted) Finished(_ engine.ReqID, ok bool, _ time.Duration) []engine.Action {
	if p.done++; p.done == p.sent {
		return []engine.Action{{Kind: engine.Done}}
	}
	return nil
}
