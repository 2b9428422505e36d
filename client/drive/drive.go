package drive

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cairn/client/engine"
)

// Machine is what Run drives: the speculative engine's Write, Read and
// AdaptiveRead (through WriteMachine, ReadMachine, AdaptiveMachine), or
// any plan with the same shape.
type Machine interface {
	Start(now time.Duration) []engine.Action
	Tick(now time.Duration) []engine.Action
	Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action
}

// The engine's machines name their completion event differently; these
// adapt them to Machine.
type (
	WriteMachine    struct{ *engine.Write }
	ReadMachine     struct{ *engine.Read }
	AdaptiveMachine struct{ *engine.AdaptiveRead }
)

// Finished implements Machine.
func (m WriteMachine) Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action {
	return m.Acked(id, ok, now)
}

// Finished implements Machine.
func (m ReadMachine) Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action {
	return m.Arrived(id, ok, now)
}

// Finished implements Machine.
func (m AdaptiveMachine) Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action {
	return m.Arrived(id, ok, now)
}

// Fixed is a write of a fixed layout: every (block, disk) is sent at once
// and the write is done when all are durable — how RAID-0 and replication
// write, the same share to every disk, waiting for the slowest.
type Fixed struct {
	Locs []engine.Loc
	left int
	done bool
}

var (
	_ Machine = (*Fixed)(nil)
	_ Machine = WriteMachine{}
	_ Machine = ReadMachine{}
	_ Machine = AdaptiveMachine{}
)

// Start implements Machine.
func (f *Fixed) Start(time.Duration) []engine.Action {
	f.left = len(f.Locs)
	out := make([]engine.Action, len(f.Locs))
	for i, l := range f.Locs {
		out[i] = engine.Action{Kind: engine.Send, Req: engine.ReqID(i), Disk: l.Disk, Block: l.Block}
	}
	return out
}

// Tick implements Machine.
func (f *Fixed) Tick(time.Duration) []engine.Action { return nil }

// Finished implements Machine.
func (f *Fixed) Finished(id engine.ReqID, ok bool, _ time.Duration) []engine.Action {
	if f.done {
		return nil
	}
	if !ok {
		f.done = true
		return []engine.Action{{Kind: engine.Fail, Err: fmt.Errorf("%w: block %d on disk %d failed", engine.ErrUnavailable, f.Locs[id].Block, f.Locs[id].Disk)}}
	}
	if f.left--; f.left == 0 {
		f.done = true
		return []engine.Action{{Kind: engine.Done}}
	}
	return nil
}

// result is one finished request.
type result struct {
	act  engine.Action
	data []byte
	err  error
}

// Options are Run's knobs.
type Options struct {
	Depth int           // requests a disk serves at once (at least 1)
	Tick  time.Duration // how often the machine's Tick runs (default 10 ms)
	// Do carries out one Send: a PUT or GET of one block. It runs on its
	// own goroutine and must return when ctx ends.
	Do func(ctx context.Context, a engine.Action) ([]byte, error)
	// Got, if set, sees every successful result on Run's goroutine before
	// the machine does (a read feeds its decoder here).
	Got func(a engine.Action, data []byte)
	// Failed, if set, sees every failed request's error on Run's
	// goroutine (to explain a failure).
	Failed func(a engine.Action, err error)
}

// Run runs m to its end: Send actions queue on their disk, which serves
// depth of them at a time; Cancel drops a queued request or cancels a
// running one (its disk work stops with its context). It returns the time
// from Start to Done, after every request it started has ended (so byte
// counts are final), or the machine's failure.
func Run(ctx context.Context, m Machine, o Options) (time.Duration, error) {
	o.Depth = max(o.Depth, 1)
	if o.Tick <= 0 {
		o.Tick = 10 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queues := map[int][]engine.Action{}
	busy := map[int]int{}
	inflight := map[engine.ReqID]context.CancelFunc{}
	results := make(chan result)
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	pump := func(disk int) {
		for busy[disk] < o.Depth && len(queues[disk]) > 0 {
			a := queues[disk][0]
			queues[disk] = queues[disk][1:]
			rctx, rcancel := context.WithCancel(ctx)
			inflight[a.Req] = rcancel
			busy[disk]++
			go func() {
				data, err := o.Do(rctx, a)
				results <- result{act: a, data: data, err: err}
			}()
		}
	}
	var latency time.Duration
	var outcome error
	ended := false
	apply := func(acts []engine.Action) {
		for _, a := range acts {
			switch a.Kind {
			case engine.Send:
				queues[a.Disk] = append(queues[a.Disk], a)
				pump(a.Disk)
			case engine.Cancel:
				if cancel, ok := inflight[a.Req]; ok {
					cancel()
				} else {
					queues[a.Disk] = slices.DeleteFunc(queues[a.Disk], func(q engine.Action) bool { return q.Req == a.Req })
				}
			case engine.Done, engine.Fail:
				if !ended {
					latency, outcome, ended = since(), a.Err, true
				}
			}
		}
	}
	ticker := time.NewTicker(o.Tick)
	defer ticker.Stop()
	apply(m.Start(0))
	for !ended {
		select {
		case <-ctx.Done():
			latency, outcome, ended = since(), ctx.Err(), true
		case <-ticker.C:
			apply(m.Tick(since()))
		case r := <-results:
			delete(inflight, r.act.Req)
			busy[r.act.Disk]--
			if ctx.Err() != nil { // the caller gave up: its requests fail because of that
				latency, outcome, ended = since(), ctx.Err(), true
				break
			}
			pump(r.act.Disk)
			ok := r.err == nil
			if ok && o.Got != nil {
				o.Got(r.act, r.data)
			}
			if !ok && o.Failed != nil {
				o.Failed(r.act, r.err)
			}
			apply(m.Finished(r.act.Req, ok, since()))
		}
	}
	// The machine cancelled what it no longer needs; stop that disk work
	// and wait for it, so the caller's byte counts are final.
	for _, cancel := range inflight {
		cancel()
	}
	for n := sumBusy(busy); n > 0; n-- {
		<-results
	}
	return latency, outcome
}

func sumBusy(busy map[int]int) int {
	n := 0
	for _, b := range busy {
		n += b
	}
	return n
}
