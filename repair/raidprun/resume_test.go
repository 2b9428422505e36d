package raidprun_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"cairn/raidp"
	"cairn/repair/raidprun"
)

// TestResumeStoredPlan runs a stored dual plan (raidp.PlanRecovery) on
// in-process disks, cut after every step in turn: each run is resumed
// from the steps recorded done, and at the end the group checks out. A
// plan given up half-way leaves a copy in a free slot that Stray finds;
// the next plan's zero step clears it.
func TestResumeStoredPlan(t *testing.T) {
	r := testRand(t)
	// The first layout (by rows) where disk a fails alone first, then disk
	// b too, and the dual plan gives up a slot the first plan wrote to. In
	// the bipartite three-row layout of 8 disks the dual plans rewrite the
	// single plans' slots; the search finds a layout where one does not.
	var (
		g      *group
		grp    raidp.Group
		a, b   = -1, -1
		single raidp.Recovery
	)
	for rows := 1; rows < n-1 && a < 0; rows++ {
		l, err := raidp.New(n, slots, rows)
		if err != nil {
			t.Fatal(err)
		}
		grp = raidp.Group{Name: "g", Generation: 1, Size: size, Layout: l}
		for d := range n {
			grp.Disks = append(grp.Disks, raidp.GroupDisk{ID: string(rune('a' + d)), Domain: string(rune('a' + d))})
		}
		for x := 0; x < n && a < 0; x++ {
			p1, err := raidp.PlanRecovery(grp, []int{x}, nil, nil)
			if err != nil {
				continue // this layout leaves no single-failure plan
			}
			for y := range n {
				if _, shared := l.Shared(x, y); !shared {
					continue // a dual failure with a rebuild
				}
				p, err := raidp.PlanRecovery(grp, []int{x, y}, map[int]bool{x: true, y: true}, &p1)
				if err == nil && slices.ContainsFunc(p.Steps, func(s raidp.Step) bool { return s.Kind == raidp.StepZero }) && a < 0 {
					a, b, single = x, y, p1
					g = newGroupRows(t, r, rows)
					t.Logf("%d rows: disk %d, then disk %d", rows, a, b)
				}
			}
		}
	}
	if a < 0 {
		t.Fatal("no dual failure gives up a slot of a single failure's plan in any layout of 8 disks")
	}
	cfg := raidprun.Config{Size: size, Chunk: chunk}
	ctx := context.Background()
	g.fail(t, a)
	errCut := errors.New("cut")
	err := raidprun.Resume(ctx, single, g.disks(a), cfg, func(i int) error {
		single.Steps[i].Done = true
		return errCut
	})
	if !errors.Is(err, errCut) {
		t.Fatalf("the cut run: %v", err)
	}
	stray, err := raidprun.Stray(ctx, g.l, g.live(a), cfg)
	if err != nil || len(stray) == 0 {
		t.Fatalf("after a copy of the given-up plan: stray slots %v, %v", stray, err)
	}
	g.fail(t, b)
	plan, err := raidp.PlanRecovery(grp, []int{a, b}, map[int]bool{a: true, b: true}, &single)
	if err != nil {
		t.Fatal(err)
	}
	for runs := 0; !plan.Complete(); runs++ {
		if runs > len(plan.Steps) {
			t.Fatalf("not complete after %d runs", runs)
		}
		err := raidprun.Resume(ctx, plan, g.disks(a, b), cfg, func(i int) error {
			plan.Steps[i].Done = true
			return errCut // one step per run
		})
		if err != nil && !errors.Is(err, errCut) {
			t.Fatal(err)
		}
	}
	g.check(t, plan.After, []int{a, b}, "resumed dual plan")
	if stray, err := raidprun.Stray(ctx, plan.After, g.live(a, b), cfg); err != nil || len(stray) > 0 {
		t.Fatalf("after the dual plan: stray slots %v, %v", stray, err)
	}
}

// live returns the group's disks but the failed ones.
func (g *group) live(failed ...int) map[int]raidprun.Disk {
	m := g.disks()
	for _, d := range failed {
		delete(m, d)
	}
	return m
}

// TestZeroStepLowersHighWaterMark: a stored plan's zero step leaves the
// slot wholly below its high-water mark (0), so the copy that lands there
// next skips the old-data read; zeroed front to back, the mark stayed at
// the last chunk's start.
func TestZeroStepLowersHighWaterMark(t *testing.T) {
	g := newGroup(t, testRand(t))
	sc := g.l.Superchunks[0]
	p := sc.Replicas[0]
	s := g.stores[p.Disk]
	if got := s.HWM(p.Slot); got != size {
		t.Fatalf("a full slot's high-water mark is %d, want %d", got, size)
	}
	step := raidp.Step{Kind: raidp.StepZero, Superchunk: -1, To: p}
	if err := raidprun.RunStep(context.Background(), step, g.disks(), raidprun.Config{Size: size, Chunk: chunk}); err != nil {
		t.Fatal(err)
	}
	if got := s.HWM(p.Slot); got != 0 {
		t.Fatalf("after the zero step the slot's high-water mark is %d, want 0", got)
	}
	b := make([]byte, size)
	if err := s.ReadAt(p.Slot, b, 0); err != nil || !bytes.Equal(b, make([]byte, size)) {
		t.Fatalf("the zeroed slot reads back non-zero (%v)", err)
	}
}

func TestDefaultChunk(t *testing.T) {
	for size, want := range map[int64]int{256 << 10: 64 << 10, 4 << 20: 512 << 10, 8 << 20: 1 << 20, 1 << 30: 1 << 20} {
		if got := raidprun.DefaultChunk(size); got != want {
			t.Errorf("DefaultChunk(%d) = %d, want %d", size, got, want)
		}
	}
}
