package lrc

import (
	"errors"
	"slices"
	"testing"

	"cairn/codec"
	"cairn/codec/codectest"
)

func mustNew(t testing.TB, k, l, r int) *Code {
	t.Helper()
	c, err := New(k, l, r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	for _, p := range [][3]int{{6, 2, 2}, {12, 2, 2}, {4, 2, 1}, {6, 3, 0}, {14, 2, 2}, {12, 4, 2}} {
		c := mustNew(t, p[0], p[1], p[2])
		t.Run(c.Policy().String(), func(t *testing.T) {
			// Every pattern of up to r+1 failures decodes (one per group is
			// local, r more are global); beyond that CanReconstruct decides.
			// LRC(12,2,2) decodes real data for every pattern, too.
			exhaustive := p == [3]int{12, 2, 2}
			codectest.Run(t, codectest.Config{Code: c, Tolerance: p[2] + 1, Exhaustive: exhaustive})
		})
	}
}

func FuzzReconstruct(f *testing.F) { codectest.Fuzz(f, mustNew(f, 6, 2, 2)) }

func BenchmarkLRC(b *testing.B) { codectest.Bench(b, mustNew(b, 12, 2, 2)) }

func TestNewErrors(t *testing.T) {
	for _, p := range [][3]int{{12, 5, 2}, {0, 1, 1}, {4, 0, 1}, {4, 8, 1}, {4, 2, -1}, {240, 8, 10}} {
		_, err := New(p[0], p[1], p[2])
		if !errors.Is(err, codec.ErrInvalidParams) {
			t.Errorf("New(%v) = %v, want ErrInvalidParams", p, err)
		}
	}
}

// The acceptance point of issue 2: LRC(12,2,2) rebuilds a lost data shard
// from its group, 6 shards, not 12 — through the code's own repair plan.
func TestLocalRepairReadsGroup(t *testing.T) {
	c := mustNew(t, 12, 2, 2)
	for lost := range 14 { // every data and local-parity shard
		var avail []int
		for i := 15; i >= 0; i-- { // preference order deliberately unhelpful
			if i != lost {
				avail = append(avail, i)
			}
		}
		plan, err := c.RepairPlan([]int{lost}, avail)
		if err != nil {
			t.Fatal(err)
		}
		g := c.groupOf[lost]
		var want []int
		for _, m := range c.Groups()[g] {
			if m != lost {
				want = append(want, m)
			}
		}
		got := slices.Sorted(slices.Values(plan.Helpers))
		if !slices.Equal(got, want) {
			t.Fatalf("lost %d: helpers %v, want its group %v", lost, got, want)
		}
		for _, x := range plan.Coeffs[0] {
			if x != 1 {
				t.Fatalf("lost %d: local repair coefficient %d, want 1 (XOR)", lost, x)
			}
		}
	}
	// A global parity needs the K data shards.
	plan, err := c.RepairPlan([]int{14}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Helpers) != 12 {
		t.Fatalf("global parity repair reads %d shards, want 12", len(plan.Helpers))
	}
	// Reconstruct of one lost data shard also uses only its group: poison
	// everything outside the group and check the result.
	rng := codectest.Rand(t)
	orig := codectest.Stripe(t, c, rng, 256)
	shards := make([][]byte, 16)
	for i := range shards {
		shards[i] = slices.Clone(orig[i])
	}
	shards[3] = nil
	for i := 6; i < 16; i++ {
		if i != 12 {
			for j := range shards[i] {
				shards[i][j] ^= 0x5a // wrong data: must not be read
			}
		}
	}
	if err := c.Reconstruct(shards, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shards[3], orig[3]) {
		t.Fatal("local reconstruct of shard 3 read shards outside its group")
	}
}

// mrDecodable is the maximal-recoverability rule for LRC with one local
// parity per group (docs/codes.md#lrc): Σ_g max(0, e_g−1) ≤ r − lost globals.
func mrDecodable(k, l, r int, lost []int) bool {
	size := k / l
	e := make([]int, l)
	globals := 0
	for _, i := range lost {
		switch {
		case i < k:
			e[i/size]++
		case i < k+l:
			e[i-k]++
		default:
			globals++
		}
	}
	need := 0
	for _, x := range e {
		need += max(0, x-1)
	}
	return need <= r-globals
}

// Our coefficients make the code maximally recoverable: for every failure
// pattern of every size, rank-based decodability equals the MR rule. And the
// share of decodable 4-failure patterns matches the figures in
// docs/codes.md#lrc.
func TestMaximallyRecoverable(t *testing.T) {
	for _, tc := range []struct {
		k, l, r   int
		fourRatio float64 // decodable share of 4-failure patterns, docs/codes.md#lrc
	}{
		{6, 2, 2, 0.857},
		{12, 2, 2, 0.862},
		{14, 2, 2, 0.863},
	} {
		c := mustNew(t, tc.k, tc.l, tc.r)
		n := tc.k + tc.l + tc.r
		if testing.Short() && n > 16 {
			continue
		}
		counts := make([][2]int, n+1) // per failure count: decodable, total
		for mask := range 1 << n {
			var lost []int
			present := make([]bool, n)
			for i := range n {
				if mask&(1<<i) != 0 {
					lost = append(lost, i)
				} else {
					present[i] = true
				}
			}
			if len(lost) > tc.l+tc.r {
				continue // fewer than k survivors: never decodable
			}
			got, want := c.CanReconstruct(present), mrDecodable(tc.k, tc.l, tc.r, lost)
			if got != want {
				t.Fatalf("%s: pattern %v: rank says %v, MR rule says %v", c.Policy(), lost, got, want)
			}
			counts[len(lost)][1]++
			if got {
				counts[len(lost)][0]++
			}
		}
		for f := 1; f <= tc.r+1; f++ {
			if counts[f][0] != counts[f][1] {
				t.Errorf("%s: %d of %d %d-failure patterns decode, want all", c.Policy(), counts[f][0], counts[f][1], f)
			}
		}
		ratio := float64(counts[4][0]) / float64(counts[4][1])
		t.Logf("%s: %d of %d 4-failure patterns decodable (%.1f%%)", c.Policy(), counts[4][0], counts[4][1], 100*ratio)
		if ratio < tc.fourRatio-0.0005 || ratio > tc.fourRatio+0.0005 {
			t.Errorf("%s: 4-failure decodable share %.4f, want %.3f", c.Policy(), ratio, tc.fourRatio)
		}
	}
}

func TestUndecodableSaysWhy(t *testing.T) {
	c := mustNew(t, 12, 2, 2)
	orig := codectest.Stripe(t, c, codectest.Rand(t), 64)
	shards := slices.Clone(orig)
	for _, i := range []int{0, 1, 2, 3} { // four in one group: needs 3 globals
		shards[i] = nil
	}
	err := c.Reconstruct(shards, nil)
	var ue *codec.UndecodableError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want *codec.UndecodableError", err)
	}
	if !slices.Equal(ue.Want, []int{0, 1, 2, 3}) {
		t.Fatalf("error names %v as wanted, want [0 1 2 3]", ue.Want)
	}
	t.Log(err)
}
