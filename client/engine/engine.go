package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ReqID names a request within one operation.
type ReqID int

// Kind is what an Action asks the driver to do.
type Kind int

// Action kinds.
const (
	Send   Kind = iota // start request Req: Block to or from Disk
	Cancel             // cancel request Req (its disk work must stop)
	Done               // the operation succeeded; nothing more will be sent
	Fail               // the operation failed with Err
)

func (k Kind) String() string {
	return [...]string{"send", "cancel", "done", "fail"}[k]
}

// Action is one instruction to the driver.
type Action struct {
	Kind  Kind
	Req   ReqID
	Disk  int
	Block int
	Err   error
}

func (a Action) String() string {
	switch a.Kind {
	case Send, Cancel:
		return fmt.Sprintf("%s r%d disk%d block%d", a.Kind, a.Req, a.Disk, a.Block)
	case Fail:
		return fmt.Sprintf("fail: %v", a.Err)
	}
	return a.Kind.String()
}

// ErrUnavailable: too few disks could take (or give) the blocks needed.
var ErrUnavailable = errors.New("engine: not enough disks answered")

// request is one outstanding or finished request.
type request struct {
	id          ReqID
	disk, block int
	sent        time.Duration
	hedged      bool // a replacement was already issued for it
	open        bool
}

// tracker is the bookkeeping Write and Read share.
type tracker struct {
	reqs      []*request
	opened    map[int]int     // open requests per disk
	nopen     int             // open requests in all
	latencies []time.Duration // of finished successful requests
	factor    float64
	minWait   time.Duration
	finished  bool
	out       []Action
}

func (t *tracker) send(disk, block int, now time.Duration) *request {
	r := &request{id: ReqID(len(t.reqs)), disk: disk, block: block, sent: now, open: true}
	t.reqs = append(t.reqs, r)
	if t.opened == nil {
		t.opened = map[int]int{}
	}
	t.opened[disk]++
	t.nopen++
	t.out = append(t.out, Action{Kind: Send, Req: r.id, Disk: disk, Block: block})
	return r
}

func (t *tracker) get(id ReqID) *request {
	if id < 0 || int(id) >= len(t.reqs) {
		return nil
	}
	return t.reqs[id]
}

// finish closes a request; it returns nil for an unknown or closed one
// (a late answer to a cancelled request).
func (t *tracker) finish(id ReqID, ok bool, now time.Duration) *request {
	r := t.get(id)
	if r == nil || !r.open {
		return nil
	}
	t.close(r)
	if ok {
		t.latencies = append(t.latencies, now-r.sent)
	}
	return r
}

// close marks open request r closed (finished or withdrawn).
func (t *tracker) close(r *request) {
	r.open = false
	t.opened[r.disk]--
	t.nopen--
}

func (t *tracker) openOn(disk int) int { return t.opened[disk] }

func (t *tracker) anyOpen() bool { return t.nopen > 0 }

// end emits Done or Fail and cancels everything outstanding.
func (t *tracker) end(err error) {
	for _, r := range t.reqs {
		if r.open {
			t.close(r)
			t.out = append(t.out, Action{Kind: Cancel, Req: r.id, Disk: r.disk, Block: r.block})
		}
	}
	if err != nil {
		t.out = append(t.out, Action{Kind: Fail, Err: err})
	} else {
		t.out = append(t.out, Action{Kind: Done})
	}
	t.finished = true
}

// stragglers returns open, not yet hedged requests older than the
// straggler threshold.
func (t *tracker) stragglers(now time.Duration) []*request {
	if len(t.latencies) == 0 {
		return nil
	}
	lat := slices.Clone(t.latencies)
	slices.Sort(lat)
	limit := max(time.Duration(float64(lat[len(lat)/2])*t.factor), t.minWait)
	var out []*request
	for _, r := range t.reqs {
		if r.open && !r.hedged && now-r.sent > limit {
			out = append(out, r)
		}
	}
	return out
}

func (t *tracker) flush() []Action {
	out := t.out
	t.out = nil
	return out
}
