package raidp

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"cairn/internal/golden"
)

// TestPlanRecoveryStored: the stored form of a dual plan (golden), its
// phases in the risk order (rebuild sides first), a plan for the same
// generation and disks resumed unchanged, one for an older generation
// ignored, and a plan given up for other failed disks followed by the
// zeroing of the slots it wrote that the new plan does not rewrite.
func TestPlanRecoveryStored(t *testing.T) {
	g, err := NewGroup("warm", testDisks(10), 1<<20, 6, 2)
	if err != nil {
		t.Fatal(err)
	}
	all := map[int]bool{}
	for d := range 10 {
		all[d] = true
	}
	dual, err := PlanRecovery(g, []int{1, 0, 1}, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(dual, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "recovery-plan.json", string(b)+"\n")
	back, err := DecodeRecovery(b)
	if err != nil || !reflect.DeepEqual(back, dual) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if !slices.Equal(dual.Failed, []int{0, 1}) || dual.Attempt != 0 || dual.Generation != g.Generation {
		t.Fatalf("dual plan: failed %v attempt %d generation %d", dual.Failed, dual.Attempt, dual.Generation)
	}
	var kinds []StepKind
	for _, ph := range dual.Phases() {
		kinds = append(kinds, dual.Steps[ph[0]].Kind)
		for _, i := range ph {
			if dual.Steps[i].Kind != kinds[len(kinds)-1] {
				t.Fatalf("phase %d mixes %s and %s", dual.Steps[i].Phase, dual.Steps[i].Kind, kinds[len(kinds)-1])
			}
		}
	}
	// A split rebuild (both Lstors, two targets) exchanges its halves
	// before the re-mirroring.
	if !slices.Equal(kinds, []StepKind{StepRebuild, StepExchange, StepCopy, StepCopy}) || dual.Steps[0].To == dual.Steps[1].To {
		t.Fatalf("phases %v, targets %+v %+v: want the rebuild split over two targets first, then the exchange of halves and the two re-mirroring steps",
			kinds, dual.Steps[0].To, dual.Steps[1].To)
	}
	if dual.Complete() {
		t.Fatal("a new plan is complete")
	}

	// Resumed: the same plan, progress kept.
	dual.Steps[0].Done = true
	again, err := PlanRecovery(g, []int{0, 1}, map[int]bool{}, &dual)
	if err != nil || !reflect.DeepEqual(again, dual) {
		t.Fatalf("resumed plan %+v, %v; want the stored one", again, err)
	}
	// Finished (an older generation): ignored.
	next, _ := g.Recovered(dual.After, 0, 1)
	fresh, err := PlanRecovery(next, []int{2}, nil, &dual)
	if err != nil || fresh.Attempt != 0 || fresh.Generation != next.Generation || slices.ContainsFunc(fresh.Steps, func(s Step) bool { return s.Kind == StepZero }) {
		t.Fatalf("plan after a finished one: %+v, %v", fresh, err)
	}

	// Given up: disk 3's re-mirroring for disks 3 and 2, every slot it
	// wrote and the new plan leaves is zeroed first.
	single, err := PlanRecovery(g, []int{3}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	given, err := PlanRecovery(g, []int{3, 2}, all, &single)
	if err != nil {
		t.Fatal(err)
	}
	if given.Attempt != single.Attempt+1 {
		t.Fatalf("attempt %d after %d", given.Attempt, single.Attempt)
	}
	var zeroed []Place
	for _, s := range given.Steps {
		if s.Kind == StepZero {
			zeroed = append(zeroed, s.To)
			if s.Phase != 1 {
				t.Errorf("zero of %+v in phase %d, want 1", s.To, s.Phase)
			}
		}
	}
	for _, s := range single.Steps {
		rewritten := slices.ContainsFunc(given.Steps, func(n Step) bool { return n.Kind != StepZero && n.To == s.To })
		if rewritten == slices.Contains(zeroed, s.To) {
			t.Errorf("slot %+v of the given-up plan: rewritten %v, zeroed %v", s.To, rewritten, slices.Contains(zeroed, s.To))
		}
	}
	if len(zeroed) == 0 {
		t.Fatalf("giving up %+v for %+v zeroes nothing: the case is not exercised", single.Steps, given.Steps)
	}
	// Given up again before the zeroes ran: they are carried over.
	third, err := PlanRecovery(g, []int{3, 4}, all, &given)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range zeroed {
		if p.Disk == 4 {
			continue
		}
		if !slices.ContainsFunc(third.Steps, func(s Step) bool { return s.To == p }) {
			t.Errorf("slot %+v, never zeroed, is forgotten by the third plan", p)
		}
	}
}

// TestPlanRecoveryStrayLstor: a dual failure of a disk that received a
// copy of a given-up plan does not rebuild from its Lstor, which holds
// bytes of a slot no layout accounts for.
func TestPlanRecoveryStrayLstor(t *testing.T) {
	g, err := NewGroup("warm", testDisks(10), 1<<20, 6, 2)
	if err != nil {
		t.Fatal(err)
	}
	for a := range 10 {
		single, err := PlanRecovery(g, []int{a}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := single.Steps[0].To.Disk
		if _, shared := g.Layout.Shared(a, r); !shared {
			continue
		}
		p, err := PlanRecovery(g, []int{a, r}, map[int]bool{a: true, r: true}, &single)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Steps {
			if s.Kind == StepRebuild && s.Rebuild.Lstor == r {
				t.Fatalf("disks %d and %d: the rebuild reads the Lstor of %d, which received %+v", a, r, r, single.Steps[0])
			}
		}
		if !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Kind == StepRebuild && s.Rebuild.Lstor == a && s.Rebuild.Len == g.Size }) {
			t.Fatalf("disks %d and %d: no whole rebuild from the Lstor of %d: %+v", a, r, a, p.Steps)
		}
		return
	}
	t.Fatal("no receiver of a single failure's plan shares a superchunk with the failed disk: the case is not exercised")
}

// TestDecodeRecoveryRefuses: a stored plan that is not JSON, has steps
// out of phase order, names a place outside the group or an unknown kind
// is refused.
func TestDecodeRecoveryRefuses(t *testing.T) {
	g, err := NewGroup("warm", testDisks(6), 1<<20, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	good, err := PlanRecovery(g, []int{0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(r *Recovery)
	}{
		{"out of phase order", func(r *Recovery) { r.Steps = append(r.Steps, Step{Phase: 0, Kind: StepZero}) }},
		{"place outside", func(r *Recovery) { r.Steps[0].To.Slot = 4 }},
		{"sender outside", func(r *Recovery) { r.Steps[0].From = &Place{Disk: -1} }},
		{"copy without sender", func(r *Recovery) { r.Steps[0].From = nil }},
		{"unknown kind", func(r *Recovery) { r.Steps[0].Kind = "move" }},
		{"empty rebuild", func(r *Recovery) { r.Steps[0].Kind = StepRebuild }},
		{"copy with a range", func(r *Recovery) { r.Steps[0].Len = 4096 }},
		{"copy with an offset", func(r *Recovery) { r.Steps[0].Off = 4096 }},
		{"exchange without a range", func(r *Recovery) { r.Steps[0].Kind = StepExchange }},
		{"exchange with a negative offset", func(r *Recovery) { r.Steps[0].Kind, r.Steps[0].Off, r.Steps[0].Len = StepExchange, -1, 4096 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			r.Steps = slices.Clone(good.Steps)
			tt.edit(&r)
			b, _ := json.Marshal(r)
			if _, err := DecodeRecovery(b); !errors.Is(err, ErrBadInput) {
				t.Fatalf("decoded: %v", err)
			}
		})
	}
	if _, err := DecodeRecovery([]byte("{")); !errors.Is(err, ErrBadInput) {
		t.Fatalf("not JSON: %v", err)
	}
}
