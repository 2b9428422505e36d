package engine

import (
	"container/heap"
	"fmt"
	"strings"
	"testing"
	"time"
)

// simDisk serves one request at a time, each taking service (or failing).
type simDisk struct {
	service time.Duration
	fail    bool
	busy    time.Duration // free from this time on
}

type event struct {
	at   time.Duration
	req  ReqID
	tick bool
	seq  int
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// machine is what sim drives: Write or Read.
type machine interface {
	Start(now time.Duration) []Action
	Tick(now time.Duration) []Action
}

// simResult is a finished simulation.
type simResult struct {
	trace     strings.Builder
	done      time.Duration
	failed    error
	sent      map[ReqID]Action
	completed map[ReqID]bool
	cancelled map[ReqID]bool
	finishAt  map[ReqID]time.Duration // when a request would have completed
}

// sim runs m against disks on a virtual clock. finish delivers a
// completion to m. Ticks come every tick.
func sim(t *testing.T, m machine, disks []*simDisk, finish func(ReqID, bool, time.Duration) []Action, tick time.Duration) *simResult {
	t.Helper()
	res := &simResult{sent: map[ReqID]Action{}, completed: map[ReqID]bool{}, cancelled: map[ReqID]bool{}, finishAt: map[ReqID]time.Duration{}}
	var q events
	seq := 0
	push := func(e event) { seq++; e.seq = seq; heap.Push(&q, e) }
	pending := map[ReqID]bool{}
	ended := false
	apply := func(now time.Duration, acts []Action) {
		for _, a := range acts {
			fmt.Fprintf(&res.trace, "%6s  %s\n", now, a)
			switch a.Kind {
			case Send:
				d := disks[a.Disk]
				start := max(d.busy, now)
				d.busy = start + d.service
				res.sent[a.Req] = a
				res.finishAt[a.Req] = d.busy
				pending[a.Req] = true
				push(event{at: d.busy, req: a.Req})
			case Cancel:
				res.cancelled[a.Req] = true
				delete(pending, a.Req)
			case Done:
				res.done, ended = now, true
			case Fail:
				res.done, res.failed, ended = now, a.Err, true
			}
		}
	}
	apply(0, m.Start(0))
	push(event{at: tick, tick: true})
	for q.Len() > 0 && !ended {
		e := heap.Pop(&q).(event)
		if e.at > time.Hour {
			t.Fatal("simulation ran past an hour of virtual time")
		}
		if e.tick {
			apply(e.at, m.Tick(e.at))
			push(event{at: e.at + tick, tick: true})
			continue
		}
		if !pending[e.req] {
			continue // cancelled
		}
		delete(pending, e.req)
		ok := !disks[res.sent[e.req].Disk].fail
		res.completed[e.req] = true
		fmt.Fprintf(&res.trace, "%6s  finished r%d ok=%v\n", e.at, e.req, ok)
		apply(e.at, finish(e.req, ok, e.at))
	}
	if !ended {
		t.Fatal("the machine never finished")
	}
	// Every request sent was either completed or cancelled.
	for id := range res.sent {
		if !res.completed[id] && !res.cancelled[id] {
			t.Fatalf("request r%d was neither completed nor cancelled", id)
		}
	}
	return res
}

func disks(services ...time.Duration) []*simDisk {
	var out []*simDisk
	for _, s := range services {
		out = append(out, &simDisk{service: s})
	}
	return out
}

const ms = time.Millisecond
