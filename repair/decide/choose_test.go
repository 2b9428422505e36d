package decide

import (
	"fmt"
	"slices"
	"testing"

	"cairn/codec"
	"cairn/codec/all"
	"cairn/repair/plan"
)

// TestChooseScheme: with rates the time models pick between the
// PUSH and PULL form of the scheme the targets allow. On the paper's disks
// (PULL-Sur writes at 5 MB/s under mixed I/O) PUSH wins; with fast disks
// behind slow links, a -Sur stripe that lost two shards is pulled (one pull
// serves both, while a push hop carries two partials); LRC keeps the
// configured scheme.
func TestChooseScheme(t *testing.T) {
	hdd := plan.Rates{Read: 120e6, Write: 110e6, MixedWrite: 5e6, Send: 100e6, Recv: 100e6}
	fast := plan.Rates{Read: 2e9, Write: 1e9, Send: 125e6, Recv: 125e6}
	rs, _ := all.New("rs-6-3")
	lrc, _ := all.New("lrc-4-2-1")
	for _, c := range []struct {
		rates       *plan.Rates
		code        codec.Code
		f           int
		given, want plan.Scheme
	}{
		{nil, rs, 2, plan.PushSur, plan.PushSur},
		{&hdd, rs, 1, plan.PushSur, plan.PushSur},
		{&hdd, rs, 2, plan.PushSur, plan.PushSur},
		{&hdd, rs, 1, plan.PullSur, plan.PushSur},
		{&fast, rs, 1, plan.PushSur, plan.PushSur}, // a tie: PUSH first
		{&fast, rs, 2, plan.PushSur, plan.PullSur},
		{&fast, rs, 2, plan.PushRep, plan.PushRep}, // -Rep: the replacement's link binds PULL
		{&fast, rs, 2, plan.PullRep, plan.PushRep},
		{&fast, lrc, 2, plan.PushSur, plan.PushSur},
	} {
		if got := Choose(c.given, c.code, c.f, 64<<20, c.rates, 1<<20); got != c.want {
			t.Errorf("rates %+v, %d lost, given %s: chose %s, want %s", c.rates, c.f, c.given, got, c.want)
		}
	}
}

// TestRepGroups checks RepGroups' promise on every assignment of up to 6
// targets to up to 3 nodes: every index once, and each set fits one -Rep
// plan (its j-th index on the (j mod n)th of its n distinct nodes).
func TestRepGroups(t *testing.T) {
	names := []string{"a", "b", "c"}
	for size := 1; size <= 6; size++ {
		total := 1
		for range size {
			total *= len(names)
		}
		for code := range total {
			nodes := make([]string, size)
			for j, c := 0, code; j < size; j, c = j+1, c/len(names) {
				nodes[j] = names[c%len(names)]
			}
			for _, pull := range []bool{false, true} {
				groups := RepGroups(nodes, pull)
				seen := map[int]bool{}
				for _, g := range groups {
					var reps []string
					for _, j := range g {
						if seen[j] {
							t.Fatalf("%v pull=%v: %v has index %d twice", nodes, pull, groups, j)
						}
						seen[j] = true
						if !slices.Contains(reps, nodes[j]) {
							reps = append(reps, nodes[j])
						}
					}
					for k, j := range g {
						if reps[k%len(reps)] != nodes[j] {
							t.Fatalf("%v pull=%v: set %v of %v does not fit one plan", nodes, pull, g, groups)
						}
					}
				}
				if len(seen) != size {
					t.Fatalf("%v pull=%v: %v misses indices", nodes, pull, groups)
				}
			}
		}
	}
	// Examples: in order when it fits, reordered when counts differ by
	// one, layers (PUSH) or by node (PULL) beyond.
	for _, c := range []struct {
		nodes []string
		pull  bool
		want  string
	}{
		{[]string{"n2", "n5", "n2"}, false, "[[0 1 2]]"},
		{[]string{"n2", "n5", "n5"}, false, "[[1 0 2]]"},
		{[]string{"n5", "n5", "n5", "n2"}, false, "[[0 3] [1] [2]]"},
		{[]string{"n5", "n5", "n5", "n2"}, true, "[[0 1 2] [3]]"},
	} {
		if got := fmt.Sprint(RepGroups(c.nodes, c.pull)); got != c.want {
			t.Errorf("RepGroups(%v, %v) = %s, want %s", c.nodes, c.pull, got, c.want)
		}
	}
}
