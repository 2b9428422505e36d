package robustore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cairn/client/engine"
)

// machine is what drive runs: the speculative engine's Write, Read and
// AdaptiveRead, and the fixed plans of the baselines' writes.
type machine interface {
	Start(now time.Duration) []engine.Action
	Tick(now time.Duration) []engine.Action
	Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action
}

// The engine's machines name their completion event differently.
type (
	writeMachine    struct{ *engine.Write }
	readMachine     struct{ *engine.Read }
	adaptiveMachine struct{ *engine.AdaptiveRead }
)

func (m writeMachine) Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action {
	return m.Acked(id, ok, now)
}
func (m readMachine) Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action {
	return m.Arrived(id, ok, now)
}
func (m adaptiveMachine) Finished(id engine.ReqID, ok bool, now time.Duration) []engine.Action {
	return m.Arrived(id, ok, now)
}

// fixed is the baselines' write: every (block, disk) of a fixed layout is
// sent at once and the write is done when all are durable — RAID-0 and
// replication write the same share to every disk and wait for the slowest.
type fixed struct {
	locs []engine.Loc
	left int
	done bool
}

func (f *fixed) Start(time.Duration) []engine.Action {
	f.left = len(f.locs)
	out := make([]engine.Action, len(f.locs))
	for i, l := range f.locs {
		out[i] = engine.Action{Kind: engine.Send, Req: engine.ReqID(i), Disk: l.Disk, Block: l.Block}
	}
	return out
}

func (f *fixed) Tick(time.Duration) []engine.Action { return nil }

func (f *fixed) Finished(id engine.ReqID, ok bool, _ time.Duration) []engine.Action {
	if f.done {
		return nil
	}
	if !ok {
		f.done = true
		return []engine.Action{{Kind: engine.Fail, Err: fmt.Errorf("%w: block %d on disk %d failed", engine.ErrUnavailable, f.locs[id].Block, f.locs[id].Disk)}}
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

// driveOpts are drive's knobs.
type driveOpts struct {
	depth int           // requests a disk serves at once
	tick  time.Duration // how often the machine's Tick runs
	// do carries out one Send: a PUT or GET of one block. It runs on its
	// own goroutine and must return when ctx ends.
	do func(ctx context.Context, a engine.Action) ([]byte, error)
	// got, if set, sees every successful result on drive's goroutine
	// before the machine does (a read feeds its decoder here).
	got func(a engine.Action, data []byte)
}

// drive runs m to its end: Send actions queue on their disk, which serves
// depth of them at a time; Cancel drops a queued request or cancels a
// running one (its disk work stops with its context). It returns the time
// from Start to Done, after every request it started has ended (so byte
// counts are final), or the machine's failure.
func drive(ctx context.Context, m machine, o driveOpts) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type running struct{ cancel context.CancelFunc }
	queues := map[int][]engine.Action{}
	busy := map[int]int{}
	inflight := map[engine.ReqID]running{}
	results := make(chan result)
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	var pump func(disk int)
	pump = func(disk int) {
		for busy[disk] < o.depth && len(queues[disk]) > 0 {
			a := queues[disk][0]
			queues[disk] = queues[disk][1:]
			rctx, rcancel := context.WithCancel(ctx)
			inflight[a.Req] = running{rcancel}
			busy[disk]++
			go func() {
				data, err := o.do(rctx, a)
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
				if r, ok := inflight[a.Req]; ok {
					r.cancel()
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
	ticker := time.NewTicker(o.tick)
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
			pump(r.act.Disk)
			ok := r.err == nil
			if ok && o.got != nil {
				o.got(r.act, r.data)
			}
			apply(m.Finished(r.act.Req, ok, since()))
		}
	}
	// The machine cancelled what it no longer needs; stop that disk work
	// and wait for it, so the caller's byte counts are final.
	for _, r := range inflight {
		r.cancel()
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
