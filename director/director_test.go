package director

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/meta/mem"
)

// Two directors on one store: one leads and marks the disks of a node whose
// lease lapsed; when it closes, the other takes over. The test runs in a
// synctest bubble, so the store's lease clock, the directors' tickers and
// their Now are one virtual clock, and every transition happens at an exact
// time.
func TestDirectorMarksDeadNodesDisks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		store := mem.New()
		defer store.Close()
		t0 := time.Now()
		for _, n := range []cairn.NodeID{"a", "b"} {
			if err := store.PutDisk(ctx, cairn.Disk{ID: cairn.DiskID(n + "/1"), Node: n, State: cairn.DiskUp}); err != nil {
				t.Fatal(err)
			}
		}
		kctx, stopA := context.WithCancel(ctx)
		if err := store.KeepAlive(kctx, "a", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		type timed struct {
			Transition
			at time.Time
		}
		states := make(chan timed, 16)
		cfg := Config{Interval: time.Second, Grace: time.Minute,
			OnTransition: func(tr Transition) { states <- timed{tr, time.Now()} }}
		cfg.ID = "d1"
		d1 := Start(store, cfg)
		cfg.ID = "d2"
		d2 := Start(store, cfg)
		defer d2.Close()

		// expect takes the transitions made so far, which must be exactly want.
		expect := func(want ...timed) {
			t.Helper()
			synctest.Wait()
			for _, w := range want {
				select {
				case tr := <-states:
					if tr.Disk != w.Disk || tr.To != w.To || !tr.at.Equal(w.at) {
						t.Fatalf("transition %s → %s at %v, want %s → %s at %v",
							tr.Disk, tr.To, tr.at.Sub(t0), w.Disk, w.To, w.at.Sub(t0))
					}
				default:
					t.Fatalf("no transition %s → %s (at %v)", w.Disk, w.To, w.at.Sub(t0))
				}
			}
			select {
			case tr := <-states:
				t.Fatalf("unexpected transition %+v at %v", tr.Transition, tr.at.Sub(t0))
			default:
			}
		}
		at := func(disk cairn.DiskID, to cairn.DiskState, after time.Duration) timed {
			return timed{Transition{Disk: disk, To: to}, t0.Add(after)}
		}
		// b never had a lease, but a director that has just started
		// leading gives nodes LeaseGrace (10 s) to take theirs.
		expect()
		d1.Close() // whichever leads, the other must go on
		synctest.Wait()
		if id, err := store.Leader(ctx, Role); err != nil || id != "d2" {
			t.Fatalf("leader after d1 closed: %q, %v", id, err)
		}
		// Once a stops renewing, its lease (10 s) runs out and a/1 becomes
		// suspect, as b/1 does once LeaseGrace has passed; each disk goes
		// down a grace period after it became suspect.
		stopA()
		time.Sleep(10*time.Second - time.Nanosecond)
		expect()
		time.Sleep(time.Nanosecond)
		expect(at("a/1", cairn.DiskSuspect, 10*time.Second), at("b/1", cairn.DiskSuspect, 10*time.Second))
		time.Sleep(time.Minute)
		expect(at("a/1", cairn.DiskDown, 10*time.Second+time.Minute), at("b/1", cairn.DiskDown, 10*time.Second+time.Minute))
	})
}

// The leader runs its duties: at once, then every Every on its clock, and
// not in between however many intervals pass.
func TestDirectorRunsDuties(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := mem.New()
		defer store.Close()
		runs := make(chan time.Time, 16)
		start := time.Now()
		d := Start(store, Config{ID: "d", Interval: time.Minute, Duties: []Duty{{
			Name: "count", Every: time.Hour,
			Run: func(_ context.Context, at time.Time) error { runs <- at; return nil },
		}}})
		defer d.Close()
		ran := func() (time.Time, bool) {
			synctest.Wait()
			select {
			case at := <-runs:
				return at, true
			default:
				return time.Time{}, false
			}
		}
		first, ok := ran()
		if !ok || !first.Equal(start) {
			t.Fatalf("first run at %v (%v), want at once", first.Sub(start), ok)
		}
		time.Sleep(time.Hour - time.Nanosecond) // 59 intervals, no hour: no second run
		if at, ok := ran(); ok {
			t.Fatalf("duty ran again %v after the first, within the hour", at.Sub(first))
		}
		time.Sleep(time.Nanosecond)
		if second, ok := ran(); !ok || !second.Equal(first.Add(time.Hour)) {
			t.Fatalf("second run %v after the first (%v), want exactly an hour", second.Sub(first), ok)
		}
		if at, ok := ran(); ok {
			t.Fatalf("a third run at %v", at.Sub(first))
		}
	})
}

// The director applies the life cycle with the census it is given: a disk
// whose node re-registers it with a new volume goes down at once, and
// returns, trusting the new volume, at the first round after a census that
// started a grace period later found no shard on it. A disk the operator
// changed meanwhile is not touched by a stale decision (compare-and-swap).
func TestDirectorReturnsReplacedDisk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		store := mem.New()
		defer store.Close()
		t0 := time.Now()
		reg := cairn.Disk{ID: "a/1", Node: "a", State: cairn.DiskUp, Since: t0, Volume: "v1", Check: cairn.CheckOK}
		if err := store.PutDisk(ctx, reg); err != nil {
			t.Fatal(err)
		}
		if err := store.KeepAlive(ctx, "a", time.Hour); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		census := Census{}
		setCensus := func(c Census) { mu.Lock(); census = c; mu.Unlock() }
		d := Start(store, Config{ID: "d", Interval: time.Second, Grace: time.Minute,
			Census: func() Census { mu.Lock(); defer mu.Unlock(); return census }})
		defer d.Close()
		disk := func() cairn.Disk {
			t.Helper()
			synctest.Wait()
			ds, err := store.Disks(ctx)
			if err != nil || len(ds) != 1 {
				t.Fatalf("disks %v %v", ds, err)
			}
			return ds[0]
		}
		if got := disk(); got.State != cairn.DiskUp || got.Trusted != "v1" {
			t.Fatalf("registered disk %+v", got)
		}
		reg.Volume, reg.Check = "v2", ""
		if err := store.PutDisk(ctx, reg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		down := disk()
		if down.State != cairn.DiskDown || down.Trusted != "v1" || !strings.Contains(down.Reason, "replaced") {
			t.Fatalf("re-formatted disk %+v", down)
		}
		reg.Check = cairn.CheckOK
		if err := store.PutDisk(ctx, reg); err != nil {
			t.Fatal(err)
		}
		// Empty, but the walk started too early: still down.
		setCensus(Census{At: down.Since.Add(time.Minute - time.Nanosecond)})
		time.Sleep(time.Minute)
		if got := disk(); got.State != cairn.DiskDown {
			t.Fatalf("returned on an early census: %+v", got)
		}
		setCensus(Census{At: down.Since.Add(time.Minute)})
		time.Sleep(time.Second)
		if got := disk(); got.State != cairn.DiskUp || got.Trusted != "v2" {
			t.Fatalf("replaced disk after an empty census: %+v", got)
		}
	})
}
