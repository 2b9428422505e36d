package director

import (
	"context"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta/mem"
)

// Two directors on one store: one leads and marks the disks of a node whose
// lease lapsed; when it closes, the other takes over.
func TestDirectorMarksDeadNodesDisks(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	store := mem.New(mem.WithClock(clock))
	for _, n := range []cairn.NodeID{"a", "b"} {
		if err := store.PutDisk(ctx, cairn.Disk{ID: cairn.DiskID(n + "/1"), Node: n, State: cairn.DiskUp}); err != nil {
			t.Fatal(err)
		}
	}
	kctx, stopA := context.WithCancel(ctx)
	if err := store.KeepAlive(kctx, "a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	states := make(chan Transition, 16)
	cfg := Config{Interval: 5 * time.Millisecond, Grace: time.Minute, Now: clock, OnTransition: func(tr Transition) { states <- tr }}
	cfg.ID = "d1"
	d1 := Start(store, cfg)
	cfg.ID = "d2"
	d2 := Start(store, cfg)
	defer d2.Close()

	expect := func(disk cairn.DiskID, to cairn.DiskState) {
		t.Helper()
		select {
		case tr := <-states:
			if tr.Disk != disk || tr.To != to {
				t.Fatalf("transition %+v, want %s → %s", tr, disk, to)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no transition %s → %s", disk, to)
		}
	}
	expect("b/1", cairn.DiskSuspect) // b never had a lease
	d1.Close()                       // whichever leads, the other must go on
	d1 = nil
	// Past the grace period b/1 goes down; once a stops renewing and its
	// lease (10 s on the store's clock) runs out, a/1 becomes suspect.
	stopA()
	advance(2 * time.Minute)
	want := map[cairn.DiskID]cairn.DiskState{"b/1": cairn.DiskDown, "a/1": cairn.DiskSuspect}
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case <-time.After(50 * time.Millisecond):
			advance(20 * time.Second) // the lease stops some time after stopA
		case <-deadline:
			t.Fatalf("transitions still missing: %v", want)
		case tr := <-states:
			if want[tr.Disk] != tr.To {
				t.Fatalf("unexpected transition %+v", tr)
			}
			delete(want, tr.Disk)
		}
	}
}

// The leader runs its duties: at once, then every Every on its clock.
func TestDirectorRunsDuties(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := mem.New(mem.WithClock(clock))
	runs := make(chan time.Time, 16)
	d := Start(store, Config{ID: "d", Interval: time.Millisecond, Now: clock, Duties: []Duty{{
		Name: "count", Every: time.Hour,
		Run: func(_ context.Context, at time.Time) error { runs <- at; return nil },
	}}})
	defer d.Close()
	wait := func() time.Time {
		t.Helper()
		select {
		case at := <-runs:
			return at
		case <-time.After(10 * time.Second):
			t.Fatal("duty did not run")
		}
		return time.Time{}
	}
	first := wait()
	time.Sleep(20 * time.Millisecond) // many intervals, no hour: no second run
	select {
	case at := <-runs:
		t.Fatalf("duty ran again at %v within the hour", at)
	default:
	}
	mu.Lock()
	now = now.Add(61 * time.Minute)
	mu.Unlock()
	if second := wait(); second.Sub(first) < time.Hour {
		t.Fatalf("second run %v is less than an hour after %v", second, first)
	}
}
