package drive

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
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

// Progresser is a Machine whose requests report progress while they run
// (Request.Progress): the engine's stream write, whose requests take one
// block after another.
type Progresser interface {
	Machine
	Progress(id engine.ReqID, now time.Duration) []engine.Action
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

// Progress implements Progresser: a stream write's request took its next
// block (engine.Write.Progress, which returns no actions).
func (m WriteMachine) Progress(id engine.ReqID, now time.Duration) []engine.Action {
	m.Write.Progress(id, now)
	return nil
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
	_ Machine    = (*Fixed)(nil)
	_ Progresser = WriteMachine{}
	_ Machine    = ReadMachine{}
	_ Machine    = AdaptiveMachine{}
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

// A Request is one Send being carried out, as Do sees it.
type Request struct {
	engine.Action
	ctx       context.Context // Do's
	cancel    context.CancelFunc
	cancelled bool // by the machine; Run's goroutine only
	events    chan<- event
	progress  bool // the machine is a Progresser
}

// Progress tells the machine that the request took its next block
// (Progresser). It returns once Run has taken the report, which the
// machine sees before any event Run takes after it; it may be called from
// any goroutine. Once the request's context has ended (cancelled, Run
// over, or Do returned) a report may be dropped. For other machines it
// does nothing.
func (r *Request) Progress() {
	if !r.progress {
		return
	}
	select {
	case r.events <- event{r: r, progress: true}:
	case <-r.ctx.Done():
	}
}

// event is a request's progress report or its end.
type event struct {
	r        *Request
	progress bool
	data     []byte
	err      error
}

// An Inbox brings the machine of one Run events from other goroutines
// (Options.Inbox): what the driver's user learns outside any request, such
// as a PUT's encoder letting go of the stripes a new spare would start
// from.
type Inbox struct {
	ch     chan func(now time.Duration) []engine.Action
	closed chan struct{} // Run takes no more
}

// NewInbox returns an inbox for one Run.
func NewInbox() *Inbox {
	return &Inbox{ch: make(chan func(time.Duration) []engine.Action), closed: make(chan struct{})}
}

// Post has Run call fn on its goroutine with the time since Start and
// carry out the actions fn returns. It returns true once Run has taken
// fn, which then runs before any event Run takes after it, and false if
// Run takes no more events (the machine is done or failed, or Run's
// context ended): then fn never runs. It waits for Run to start.
func (in *Inbox) Post(fn func(now time.Duration) []engine.Action) bool {
	select {
	case in.ch <- fn:
		return true
	case <-in.closed:
		return false
	}
}

// Options are Run's knobs.
type Options struct {
	Depth int           // requests a disk serves at once (at least 1)
	Tick  time.Duration // how often the machine's Tick runs (default 10 ms)
	// Start, if set, is called on Run's goroutine as each request starts,
	// with the request's context, before Do runs: in step with the
	// machine's events, so what a request needs of state that other
	// goroutines change and tell the machine of (Inbox) is taken here — a
	// PUT's spare stream takes the stripes held at that moment.
	Start func(ctx context.Context, a engine.Action)
	// Do carries out one Send: a PUT or GET of one block, or a stream of
	// blocks that reports its progress (r.Progress). It runs on its own
	// goroutine and must return when ctx ends; ctx ends when the machine
	// cancels the request, when Run ends, and once Do returned.
	Do func(ctx context.Context, r *Request) ([]byte, error)
	// Got, if set, sees every successful result on Run's goroutine before
	// the machine does (a read feeds its decoder here).
	Got func(a engine.Action, data []byte)
	// Failed, if set, sees the error of every request that failed while
	// the machine ran, on Run's goroutine (to explain a failure); not of
	// the requests the machine cancelled.
	Failed func(a engine.Action, err error)
	// Inbox, if set, brings the machine events from other goroutines.
	Inbox *Inbox
	// Counts, if set, is added to as Run goes (for metrics); several
	// Runs may share one.
	Counts *Counts
}

// Counts are what Runs did with their requests. The fields are atomic: a
// Counts may be shared by concurrent Runs and read while they go.
type Counts struct {
	Started   atomic.Int64 // requests started on their disk
	Succeeded atomic.Int64 // requests that ended without error
	Failed    atomic.Int64 // requests that failed, not counting those cancelled
	// Cancelled counts the requests the machine cancelled, queued or
	// running, and those still running when Run ended: stragglers and
	// the losers of a k-of-n race.
	Cancelled atomic.Int64
	// Hedged counts the Sends a machine issued on a Tick or a stream's
	// progress report, because a request was too slow: hedges for
	// stragglers (for a write, a spare row's stream).
	Hedged atomic.Int64
	// Replaced counts the Sends a machine issued when a request failed:
	// replacements.
	Replaced atomic.Int64
}

// sends is the number of Send actions in acts.
func sends(acts []engine.Action) int64 {
	var n int64
	for _, a := range acts {
		if a.Kind == engine.Send {
			n++
		}
	}
	return n
}

// Run runs m to its end: Send actions queue on their disk, which serves
// depth of them at a time; Cancel drops a queued request or cancels a
// running one (its disk work stops with its context). It returns the time
// from Start to Done, or the machine's failure, or ctx's error — always
// after every request it started has ended, so no goroutine of it
// outlives it and callers' byte counts are final.
func Run(ctx context.Context, m Machine, o Options) (time.Duration, error) {
	o.Depth = max(o.Depth, 1)
	if o.Tick <= 0 {
		o.Tick = 10 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &driver{m: m, o: o, ctx: ctx, start: time.Now(), queues: map[int][]engine.Action{}, busy: map[int]int{},
		running: map[engine.ReqID]*Request{}, events: make(chan event)}
	d.stream, _ = m.(Progresser)
	return d.run()
}

// driver is one Run's state, owned by Run's goroutine.
type driver struct {
	m       Machine
	stream  Progresser // m, if it takes progress reports
	o       Options
	ctx     context.Context
	start   time.Time
	queues  map[int][]engine.Action // Sends waiting for their disk
	busy    map[int]int             // requests running per disk
	running map[engine.ReqID]*Request
	events  chan event

	ended   bool
	latency time.Duration
	outcome error
}

func (d *driver) since() time.Duration { return time.Since(d.start) }

func (d *driver) run() (time.Duration, error) {
	var posts chan func(time.Duration) []engine.Action // nil without an inbox: never ready
	if d.o.Inbox != nil {
		posts = d.o.Inbox.ch
	}
	ticker := time.NewTicker(d.o.Tick)
	defer ticker.Stop()
	d.apply(d.m.Start(0))
	for !d.ended {
		select {
		case <-d.ctx.Done():
			d.end(d.ctx.Err())
		case <-ticker.C:
			acts := d.m.Tick(d.since())
			if c := d.o.Counts; c != nil {
				c.Hedged.Add(sends(acts))
			}
			d.apply(acts)
		case fn := <-posts:
			d.apply(fn(d.since()))
		case ev := <-d.events:
			d.handle(ev)
		}
	}
	if d.o.Inbox != nil {
		close(d.o.Inbox.closed)
	}
	// The machine cancelled what it no longer needs (or the caller gave
	// up); stop that disk work and wait for it.
	for _, r := range d.running {
		if c := d.o.Counts; c != nil && !r.cancelled {
			c.Cancelled.Add(1) // a loser: the operation ended without it
		}
		r.cancel()
	}
	for len(d.running) > 0 {
		if ev := <-d.events; !ev.progress {
			delete(d.running, ev.r.Req)
		}
	}
	return d.latency, d.outcome
}

func (d *driver) end(err error) {
	if !d.ended {
		d.latency, d.outcome, d.ended = d.since(), err, true
	}
}

// apply carries out the machine's actions.
func (d *driver) apply(acts []engine.Action) {
	for _, a := range acts {
		switch a.Kind {
		case engine.Send:
			d.queues[a.Disk] = append(d.queues[a.Disk], a)
			d.pump(a.Disk)
		case engine.Cancel:
			var cancelled bool
			if r, ok := d.running[a.Req]; ok {
				r.cancelled, cancelled = true, !r.cancelled
				r.cancel()
			} else {
				n := len(d.queues[a.Disk])
				d.queues[a.Disk] = slices.DeleteFunc(d.queues[a.Disk], func(q engine.Action) bool { return q.Req == a.Req })
				cancelled = len(d.queues[a.Disk]) < n
			}
			if c := d.o.Counts; c != nil && cancelled {
				c.Cancelled.Add(1)
			}
		case engine.Done, engine.Fail:
			d.end(a.Err)
		}
	}
}

// pump starts the requests queued on disk while it has room.
func (d *driver) pump(disk int) {
	for d.busy[disk] < d.o.Depth && len(d.queues[disk]) > 0 {
		a := d.queues[disk][0]
		d.queues[disk] = d.queues[disk][1:]
		ctx, cancel := context.WithCancel(d.ctx)
		r := &Request{Action: a, ctx: ctx, cancel: cancel, events: d.events, progress: d.stream != nil}
		d.running[a.Req] = r
		d.busy[disk]++
		if c := d.o.Counts; c != nil {
			c.Started.Add(1)
		}
		if d.o.Start != nil {
			d.o.Start(ctx, a)
		}
		go func() {
			data, err := d.o.Do(ctx, r)
			cancel()
			d.events <- event{r: r, data: data, err: err}
		}()
	}
}

// handle takes a request's progress report or its end.
func (d *driver) handle(ev event) {
	r := ev.r
	if _, ok := d.running[r.Req]; !ok {
		return // a late progress report of a request that ended
	}
	if ev.progress {
		acts := d.stream.Progress(r.Req, d.since())
		if c := d.o.Counts; c != nil {
			c.Hedged.Add(sends(acts))
		}
		d.apply(acts)
		return
	}
	delete(d.running, r.Req)
	d.busy[r.Disk]--
	if err := d.ctx.Err(); err != nil { // the caller gave up: its requests fail because of that
		d.end(err)
		return
	}
	d.pump(r.Disk)
	ok := ev.err == nil
	if ok && d.o.Got != nil {
		d.o.Got(r.Action, ev.data)
	}
	if !ok && !r.cancelled && d.o.Failed != nil {
		d.o.Failed(r.Action, ev.err)
	}
	acts := d.m.Finished(r.Req, ok, d.since())
	if c := d.o.Counts; c != nil {
		switch {
		case ok:
			c.Succeeded.Add(1)
		case !r.cancelled:
			c.Failed.Add(1)
			c.Replaced.Add(sends(acts))
		}
	}
	d.apply(acts)
}
