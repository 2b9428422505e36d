package plan

import (
	"bytes"
	"cairn/internal/golden"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"cairn/codec"
	"cairn/codec/all"
)

var seed = flag.Uint64("seed", 1, "seed for the random shard contents")

func newCode(t *testing.T, policy string) codec.Code {
	t.Helper()
	c, err := all.New(policy)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stripe encodes random data and returns all shards.
func stripe(t *testing.T, c codec.Code, size int64, rng *rand.Rand) [][]byte {
	t.Helper()
	p := c.Params()
	shards := make([][]byte, p.N())
	for i := range p.K {
		shards[i] = make([]byte, size)
		for j := range shards[i] {
			shards[i][j] = byte(rng.Uint32())
		}
	}
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	return shards
}

// input places shard i on node "n<i>" and names f replacements "r<j>".
func input(c codec.Code, lost []int, size, unit int64) Input {
	in := Input{Code: c, Lost: lost, ShardSize: size, Unit: unit}
	for i := range c.Params().N() {
		in.Nodes = append(in.Nodes, fmt.Sprintf("n%d", i))
	}
	for j := range lost {
		in.Replacements = append(in.Replacements, fmt.Sprintf("r%d", j))
	}
	return in
}

// run builds, simulates and checks one plan against the original shards.
func run(t *testing.T, s Scheme, in Input, orig [][]byte) *Plan {
	t.Helper()
	p, err := Build(s, in)
	if err != nil {
		t.Fatal(err)
	}
	view := make([][]byte, len(orig))
	for i, sh := range orig {
		if !slices.Contains(in.Lost, i) && in.Nodes[i] != "" {
			view[i] = sh
		}
	}
	got, err := Simulate(p, view)
	if err != nil {
		t.Fatalf("%v\n%s", err, p)
	}
	for l, b := range Assemble(p, got) {
		if !bytes.Equal(b, orig[l]) {
			t.Fatalf("shard %d rebuilt wrong\n%s", l, p)
		}
	}
	// Every node writes only the shards the plan says it stores.
	for node, m := range got {
		for l := range m {
			ok := false
			for _, tk := range p.Tasks {
				for j, st := range tk.Store {
					ok = ok || (st == node && tk.Lost[j] == l)
				}
			}
			if !ok {
				t.Fatalf("%s wrote shard %d without a task saying so", node, l)
			}
		}
	}
	f := len(in.Lost)
	if s.Push() {
		if got := p.MaxPartialsPerSlice(); got > f {
			t.Fatalf("a node receives %d partials per slice, more than f=%d\n%s", got, f, p)
		}
		for _, tk := range p.Tasks {
			for _, h := range tk.Helpers {
				if len(h.Coeffs) != f {
					t.Fatalf("hop carries %d coefficients, want f=%d", len(h.Coeffs), f)
				}
			}
		}
	}
	return p
}

// TestSimulateAll runs every scheme on real shard bytes for each code and
// f ∈ {1, 2}, with several lost patterns, unit sizes and rotations.
func TestSimulateAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 0))
	t.Logf("seed %d", *seed)
	cases := []struct {
		policy string
		lost   [][]int
	}{
		{"rs-6-3", [][]int{{0}, {8}, {0, 1}, {2, 7}}},
		{"rs-12-4", [][]int{{5}, {15}, {0, 11}, {12, 13}}},
		{"lrc-12-2-2", [][]int{{3}, {12}, {14}, {0, 7}, {1, 2}, {4, 13}}},
	}
	for _, tc := range cases {
		c := newCode(t, tc.policy)
		for _, size := range []struct{ shard, unit int64 }{{10000, 1024}, {4096, 4096}, {3000, 8192}} {
			orig := stripe(t, c, size.shard, rng)
			for _, lost := range tc.lost {
				for _, s := range Schemes {
					for rot := range 3 {
						name := fmt.Sprintf("%s/%v/f=%d/lost=%v/%d-%d/rot%d", tc.policy, s, len(lost), lost, size.shard, size.unit, rot)
						t.Run(name, func(t *testing.T) {
							in := input(c, lost, size.shard, size.unit)
							in.Rotate = rot
							run(t, s, in, orig)
						})
					}
				}
			}
		}
	}
}

// TestSurvivorsNotHelpers: -Sur targets that hold no helper shard get the
// finished partials (PUSH) or pull everything (PULL).
func TestSurvivorsNotHelpers(t *testing.T) {
	c := newCode(t, "rs-6-3")
	orig := stripe(t, c, 8192, rand.New(rand.NewPCG(*seed, 1)))
	for _, s := range []Scheme{PullSur, PushSur} {
		for _, f := range []int{1, 2} {
			in := input(c, []int{0, 1}[:f], 8192, 1024)
			in.Survivors = []string{"x1", "x2", "n8"}
			p := run(t, s, in, orig)
			if len(p.Tasks) != 3 {
				t.Fatalf("%v: %d tasks, want one per survivor", s, len(p.Tasks))
			}
		}
	}
}

func TestLRCUsesLocalGroup(t *testing.T) {
	c := newCode(t, "lrc-12-2-2")
	groups := c.(codec.LocalGroups).Groups()
	for _, s := range Schemes {
		p, err := Build(s, input(c, []int{3}, 4096, 1024))
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range p.Tasks {
			if len(tk.Helpers) != len(groups[0])-1 {
				t.Fatalf("%v: %d helpers, want the %d other members of the local group", s, len(tk.Helpers), len(groups[0])-1)
			}
			for _, h := range tk.Helpers {
				if !slices.Contains(groups[0], h.Shard) {
					t.Fatalf("%v: helper shard %d is outside shard 3's group %v", s, h.Shard, groups[0])
				}
			}
		}
	}
}

// TestSurBalance: summed over stripes with rotated layouts, every survivor
// stores an equal share of the rebuilt data and, for RS, reads, sends and
// receives equally.
func TestSurBalance(t *testing.T) {
	for _, policy := range []string{"rs-6-3", "rs-12-4", "lrc-12-2-2"} {
		c := newCode(t, policy)
		n := c.Params().N()
		for _, s := range []Scheme{PullSur, PushSur} {
			total := map[string]*Load{}
			for st := range 4 * n {
				in := layoutInput(c, st, []int{0}, 32*1024, 1024)
				p, err := Build(s, in)
				if err != nil {
					t.Fatal(err)
				}
				AddLoads(total, p.Loads())
			}
			for _, res := range []struct {
				name string
				get  func(*Load) int64
			}{{"write", func(l *Load) int64 { return l.Write }}, {"recv", func(l *Load) int64 { return l.Recv }},
				{"send", func(l *Load) int64 { return l.Send }}, {"read", func(l *Load) int64 { return l.Read }}} {
				lo, hi := int64(1<<62), int64(0)
				for _, l := range total {
					lo, hi = min(lo, res.get(l)), max(hi, res.get(l))
				}
				// An LRC's helpers depend on which shard is lost (local
				// group or k data shards), so only its writes even out.
				if float64(hi) > 1.1*float64(lo) && (res.name == "write" || policy != "lrc-12-2-2") {
					t.Errorf("%s %v: survivors %s between %d and %d bytes", policy, s, res.name, lo, hi)
				}
			}
		}
	}
}

func TestWeightsShiftShares(t *testing.T) {
	c := newCode(t, "rs-6-3")
	in := input(c, []int{0}, 64*1024, 1024)
	in.Weights = map[string]float64{"n1": 0.25}
	p, err := Build(PushSur, in)
	if err != nil {
		t.Fatal(err)
	}
	l := p.Loads()
	if slow, fast := l["n1"].Write, l["n2"].Write; float64(slow) > 0.4*float64(fast) {
		t.Fatalf("weight-¼ node writes %d bytes, a weight-1 node %d", slow, fast)
	}
}

func TestErrors(t *testing.T) {
	rs := newCode(t, "rs-6-3")
	for _, tc := range []struct {
		name string
		s    Scheme
		in   Input
		want error
	}{
		{"no replacement", PushRep, func() Input { in := input(rs, []int{0}, 10, 1); in.Replacements = nil; return in }(), ErrNoTarget},
		{"no survivor", PushSur, func() Input { in := input(rs, []int{0}, 10, 1); in.Survivors = []string{}; return in }(), ErrNoTarget},
		{"too many lost", PushSur, input(rs, []int{0, 1, 2, 3}, 10, 1), codec.ErrUndecodable},
		{"lost out of range", PullRep, input(rs, []int{9}, 10, 1), ErrInvalid},
		{"bad unit", PullRep, input(rs, []int{0}, 10, 0), ErrInvalid},
		{"nodes short", PullRep, func() Input { in := input(rs, []int{0}, 10, 1); in.Nodes = in.Nodes[:3]; return in }(), ErrInvalid},
		{"unavailable helpers", PushRep, func() Input {
			in := input(rs, []int{0}, 10, 1)
			in.Nodes[1], in.Nodes[2], in.Nodes[3] = "", "", ""
			return in
		}(), codec.ErrUndecodable},
		{"clay", PushRep, input(newCode(t, "clay-4-2-5"), []int{0}, 64, 8), ErrNotLinear},
		{"bad scheme", Scheme(9), input(rs, []int{0}, 10, 1), ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.s, tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseScheme(t *testing.T) {
	for _, s := range Schemes {
		if got, err := ParseScheme(s.String()); err != nil || got != s {
			t.Fatalf("%v: %v %v", s, got, err)
		}
	}
	if _, err := ParseScheme("push"); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
}

// layoutInput is stripe st of a cluster of n nodes "n0".."n<n−1>" whose
// shard i lives on node (i+st) mod n; lostNodes are down.
func layoutInput(c codec.Code, st int, lostNodes []int, size, unit int64) Input {
	n := c.Params().N()
	in := Input{Code: c, ShardSize: size, Unit: unit, Rotate: st}
	for i := range n {
		node := (i + st) % n
		in.Nodes = append(in.Nodes, fmt.Sprintf("n%d", node))
		if slices.Contains(lostNodes, node) {
			in.Lost = append(in.Lost, i)
		}
	}
	for j := range lostNodes {
		in.Replacements = append(in.Replacements, fmt.Sprintf("r%d", j))
	}
	return in
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		s      Scheme
		lost   []int
		edit   func(*Input)
	}{
		{"push-rep-rs-6-3-f1.txt", "rs-6-3", PushRep, []int{0}, nil},
		{"push-rep-rs-12-4-f2.txt", "rs-12-4", PushRep, []int{2, 13}, nil},
		{"pull-rep-rs-6-3-f2.txt", "rs-6-3", PullRep, []int{0, 7}, nil},
		{"pull-sur-rs-6-3-f1.txt", "rs-6-3", PullSur, []int{0}, nil},
		{"push-sur-rs-6-3-f1.txt", "rs-6-3", PushSur, []int{0}, nil},
		{"push-sur-rs-6-3-f2-rot1.txt", "rs-6-3", PushSur, []int{0, 1}, func(in *Input) { in.Rotate = 1 }},
		{"push-sur-lrc-12-2-2-f1.txt", "lrc-12-2-2", PushSur, []int{3}, nil},
		{"push-sur-rs-6-3-weighted.txt", "rs-6-3", PushSur, []int{0}, func(in *Input) {
			in.Weights = map[string]float64{"n1": 0.5, "n2": 0.5}
		}},
		{"push-sur-rs-6-3-outside.txt", "rs-6-3", PushSur, []int{0}, func(in *Input) {
			in.Survivors = []string{"x1", "n3"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(newCode(t, tc.policy), tc.lost, 16*1024, 1024)
			if tc.edit != nil {
				tc.edit(&in)
			}
			p, err := Build(tc.s, in)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.name, p.String())
		})
	}
}

// TestOneReplacementTwoLost: one replacement rebuilds both lost shards; it
// pulls each helper once (PULL-Rep) or receives both partials (PUSH-Rep).
func TestOneReplacementTwoLost(t *testing.T) {
	c := newCode(t, "rs-6-3")
	orig := stripe(t, c, 8192, rand.New(rand.NewPCG(*seed, 2)))
	for _, s := range []Scheme{PullRep, PushRep} {
		in := input(c, []int{1, 6}, 8192, 1024)
		in.Replacements = in.Replacements[:1]
		p := run(t, s, in, orig)
		if len(p.Tasks) != 1 || p.Loads()["r0"].Write != 2*8192 {
			t.Fatalf("%v: %d tasks, r0 writes %d\n%s", s, len(p.Tasks), p.Loads()["r0"].Write, p)
		}
		if want := map[Scheme]int64{PullRep: 6 * 8192, PushRep: 2 * 8192}[s]; p.Loads()["r0"].Recv != want {
			t.Fatalf("%v: r0 receives %d bytes, want %d", s, p.Loads()["r0"].Recv, want)
		}
	}
}
