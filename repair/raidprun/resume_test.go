package raidprun_test

import (
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
	g := newGroup(t, r)
	grp := raidp.Group{Name: "g", Generation: 1, Size: size, Layout: g.l}
	for d := range n {
		grp.Disks = append(grp.Disks, raidp.GroupDisk{ID: string(rune('a' + d)), Domain: string(rune('a' + d))})
	}
	cfg := raidprun.Config{Size: size, Chunk: chunk}
	ctx := context.Background()

	// Disk a alone first; then disk b fails too, and the dual plan gives
	// up a slot the first plan wrote to.
	a, b := -1, -1
	var single raidp.Recovery
	for x := 0; x < n && a < 0; x++ {
		p1, err := raidp.PlanRecovery(grp, []int{x}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for y := range n {
			p, err := raidp.PlanRecovery(grp, []int{x, y}, map[int]bool{x: true, y: true}, &p1)
			if err == nil && slices.ContainsFunc(p.Steps, func(s raidp.Step) bool { return s.Kind == raidp.StepZero }) && a < 0 {
				a, b, single = x, y, p1
			}
		}
	}
	if a < 0 {
		t.Fatal("no dual failure gives up a slot of a single failure's plan in this layout")
	}
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
