package plan

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const (
	mb = 1e6
	gb = 1e9
)

// hdd is a node like the paper's testbed (§4.2): sequential reads of
// 120 MB/s (and batched writes at 110 MB/s) beat an ≈800 Mbit/s receive
// path, and the mixed read/write
// pattern of PULL-Sur writes at under 5 MB/s (Fig. 6).
var hdd = Rates{Read: 120 * mb, Write: 110 * mb, MixedWrite: 5 * mb, Send: 100 * mb, Recv: 100 * mb}

// fast is a node whose disks outrun its 1 Gbit/s link.
var fast = Rates{Read: 2000 * mb, Write: 1000 * mb, Send: 125 * mb, Recv: 125 * mb}

// spin is a node with one spinning disk behind a 1 Gbit/s link: reads in
// large runs and batched writes near its sequential rate, but unit-sized
// reads served to pullers pay a seek each.
var spin = Rates{Read: 200 * mb, Write: 120 * mb, ServeRead: 25 * mb, SharedDisk: true, Send: 125 * mb, Recv: 125 * mb}

func model(k, r, f int, rates Rates) Model {
	return Model{K: k, R: r, F: f, SNode: 10 * gb, SBlock: 128 * 1024, Survivors: []Rates{rates}, Replacement: rates}
}

func predict(t *testing.T, m Model, s Scheme) Prediction {
	t.Helper()
	p, err := m.Predict(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Abs(b) }

// TestRepRatioIsK checks Eq. 13: with reads faster than the network,
// T_PULL-Rep / T_PUSH-Rep ≈ k (§4.2.2).
func TestRepRatioIsK(t *testing.T) {
	for _, k := range []int{6, 9, 12} {
		for _, rates := range []Rates{hdd, fast} {
			m := model(k, 3, 1, rates)
			pull, push := predict(t, m, PullRep), predict(t, m, PushRep)
			for _, x := range []struct {
				name       string
				pull, push float64
			}{{"paper", pull.Paper, push.Paper}, {"seconds", pull.Seconds, push.Seconds}} {
				if r := x.pull / x.push; !near(r, float64(k), 1e-9) {
					t.Errorf("k=%d %s: PULL-Rep/PUSH-Rep = %.3f, want k", k, x.name, r)
				}
			}
		}
	}
}

// TestPaperEquations evaluates Eqs. 9–12 by hand for one point.
func TestPaperEquations(t *testing.T) {
	m := model(6, 3, 1, hdd)
	B := m.SBlock
	rows := m.SNode / B
	tRecv, tRead, tMixed, tWrite := B/hdd.Recv, B/hdd.Read, B/hdd.MixedWrite, B/hdd.Write
	for _, tc := range []struct {
		s    Scheme
		eq   string
		want float64
	}{
		{PullRep, "Eq. 9", 6 * tRecv * rows},
		{PullSur, "Eq. 10", tMixed * m.SNode / (8 * B)},
		{PushRep, "Eq. 11", math.Max(tRecv, tRead) * rows},
		{PushSur, "Eq. 12", math.Max(5*tRecv, tWrite) * m.SNode / (8 * B)},
	} {
		p := predict(t, m, tc.s)
		if p.Eq != tc.eq || !near(p.Paper, tc.want, 1e-9) {
			t.Errorf("%v: %s = %.2fs, want %s = %.2fs", tc.s, p.Eq, p.Paper, tc.eq, tc.want)
		}
		// On the paper's testbed its equations name the binding resource.
		if !near(p.Seconds, p.Paper, 1e-9) {
			t.Errorf("%v: bottleneck model %.2fs (%s) differs from %s %.2fs", tc.s, p.Seconds, p.Bound, tc.eq, p.Paper)
		}
	}
}

// TestPaperOrdering checks the qualitative results of §5.3: on HDD nodes
// PUSH-Sur < PUSH-Rep and PUSH-Sur < PULL-Sur < PULL-Rep; PUSH-Rep gains more
// over PULL-Rep as k grows; and the default choice is PUSH-Sur.
func TestPaperOrdering(t *testing.T) {
	prev := 0.0
	for _, k := range []int{6, 9, 12} {
		m := model(k, 3, 1, hdd)
		pr, ps, ur, us := predict(t, m, PullRep), predict(t, m, PullSur), predict(t, m, PushRep), predict(t, m, PushSur)
		if !(us.Seconds < ur.Seconds && us.Seconds < ps.Seconds && ps.Seconds < pr.Seconds && ur.Seconds < pr.Seconds) {
			t.Errorf("k=%d: pull-rep %.0f pull-sur %.0f push-rep %.0f push-sur %.0f", k, pr.Seconds, ps.Seconds, ur.Seconds, us.Seconds)
		}
		if sp := pr.Seconds / ur.Seconds; sp <= prev {
			t.Errorf("k=%d: PUSH-Rep speedup %.2f does not grow with k", k, sp)
		} else {
			prev = sp
		}
		best, all, err := Choose(m, nil)
		if err != nil || best.Scheme != PushSur || len(all) != 4 {
			t.Errorf("k=%d: chose %v (%v)", k, best.Scheme, err)
		}
	}
}

// TestRSensitivity: §5.3.2, the -Sur times fall by (k+r2−1)/(k+r1−1) from
// r=3 to r=4 (1.125 at k=6) and PULL-Rep does not change.
func TestRSensitivity(t *testing.T) {
	for _, s := range Schemes {
		a, b := predict(t, model(6, 3, 1, hdd), s), predict(t, model(6, 4, 1, hdd), s)
		want := 1.0
		if !s.Rep() {
			want = 9.0 / 8
		}
		if r := a.Seconds / b.Seconds; !near(r, want, 1e-9) {
			t.Errorf("%v: T(r=3)/T(r=4) = %.3f, want %.3f", s, r, want)
		}
	}
}

// TestTwoFailures: §5.3.3, PULL-Rep barely changes with f (each replacement
// still receives k blocks per row) and the chain schemes' partial traffic
// grows with f; Eq. 11 generalised doubles.
func TestTwoFailures(t *testing.T) {
	m1, m2 := model(6, 3, 1, hdd), model(6, 3, 2, hdd)
	if a, b := predict(t, m1, PullRep), predict(t, m2, PullRep); !near(a.Seconds, b.Seconds, 1e-9) {
		t.Errorf("PULL-Rep f=1 %.0fs, f=2 %.0fs", a.Seconds, b.Seconds)
	}
	if a, b := predict(t, m1, PushRep), predict(t, m2, PushRep); !near(b.Paper/a.Paper, 2, 1e-9) || b.Seconds <= a.Seconds {
		t.Errorf("PUSH-Rep f=1 %.0fs (paper %.0f), f=2 %.0fs (paper %.0f)", a.Seconds, a.Paper, b.Seconds, b.Paper)
	}
	for _, s := range []Scheme{PullSur, PushSur} {
		a, b := predict(t, m1, s), predict(t, m2, s)
		if r := b.Seconds / a.Seconds; r < 1.2 || r > 2.5 {
			t.Errorf("%v: f=2 / f=1 = %.2f", s, r)
		}
	}
}

// TestLinkBound: with fast disks and slow links the paper's PULL-Sur term
// (random writes) no longer binds; the bottleneck model charges the network
// and PULL-Sur ≈ PUSH-Sur at f = 1 (same partial traffic per node).
func TestLinkBound(t *testing.T) {
	m := model(6, 3, 1, fast)
	ps, us := predict(t, m, PullSur), predict(t, m, PushSur)
	if ps.Seconds < 10*ps.Paper || !strings.HasPrefix(ps.Bound, "survivor 0 ") {
		t.Errorf("PULL-Sur: %.1fs bound by %q, paper %.1fs", ps.Seconds, ps.Bound, ps.Paper)
	}
	if !near(ps.Seconds, us.Seconds, 0.01) {
		t.Errorf("link-bound PULL-Sur %.1fs vs PUSH-Sur %.1fs", ps.Seconds, us.Seconds)
	}
}

// TestSlowNode: one survivor with a 4× slower link dominates the -Sur
// schemes in the bottleneck model (Paper's Eq. 12 sum averages it away).
func TestSlowNode(t *testing.T) {
	m := model(6, 3, 1, hdd)
	m.Survivors = make([]Rates, 8)
	for i := range m.Survivors {
		m.Survivors[i] = hdd
	}
	m.Survivors[3].Send, m.Survivors[3].Recv = 25*mb, 25*mb
	p := predict(t, m, PushSur)
	if !strings.HasPrefix(p.Bound, "survivor 3 ") || p.Seconds < 2.5*p.Paper {
		t.Errorf("slow node: %.0fs bound %q, paper %.0fs", p.Seconds, p.Bound, p.Paper)
	}
}

func TestChooseAllowed(t *testing.T) {
	m := model(6, 3, 1, hdd)
	for _, tc := range []struct {
		allowed []Scheme
		want    Scheme
	}{
		{nil, PushSur},
		{[]Scheme{PullRep, PushRep}, PushRep},
		{[]Scheme{PullRep, PullSur}, PullSur},
		{[]Scheme{PullRep}, PullRep},
	} {
		best, _, err := Choose(m, tc.allowed)
		if err != nil || best.Scheme != tc.want {
			t.Errorf("allowed %v: chose %v (%v), want %v", tc.allowed, best.Scheme, err, tc.want)
		}
	}
	// A tie goes to the preferred scheme: link-bound PULL-Sur ≈ PUSH-Sur.
	if best, _, _ := Choose(model(6, 3, 1, fast), []Scheme{PullSur, PushSur}); best.Scheme != PushSur {
		t.Errorf("tie went to %v", best.Scheme)
	}
	if _, _, err := Choose(m, []Scheme{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no scheme: %v", err)
	}
}

func TestModelValidate(t *testing.T) {
	for _, m := range []Model{
		{K: 6, R: 3, F: 4, SNode: 1, SBlock: 1, Survivors: []Rates{hdd}, Replacement: hdd},
		{K: 6, R: 3, F: 1, SNode: 0, SBlock: 1, Survivors: []Rates{hdd}, Replacement: hdd},
		{K: 6, R: 3, F: 1, SNode: 1, SBlock: 1, Survivors: []Rates{hdd, hdd}, Replacement: hdd},
		{K: 6, R: 3, F: 1, SNode: 1, SBlock: 1, Survivors: []Rates{{}}, Replacement: hdd},
	} {
		if _, err := m.Predict(PushSur); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", m, err)
		}
	}
}

// TestEstimateMatchesModel runs the planner over a whole node's worth of
// stripes (rotated layout, as the model assumes), sums the loads, and
// checks the plan-driven Estimate against Model.Predict's Seconds.
func TestEstimateMatchesModel(t *testing.T) {
	for _, tc := range []struct {
		policy string
		k, r   int
	}{{"rs-6-3", 6, 3}, {"rs-12-4", 12, 4}} {
		c := newCode(t, tc.policy)
		n := tc.k + tc.r
		for _, f := range []int{1, 2} {
			var down []int
			for j := range f {
				down = append(down, j)
			}
			for _, s := range Schemes {
				const size, unit = 16 * 1024, 1024
				stripes := 8 * n * (n - f)
				total := map[string]*Load{}
				for st := range stripes {
					p, err := Build(s, layoutInput(c, st, down, size, unit))
					if err != nil {
						t.Fatal(err)
					}
					if s.Push() && p.MaxPartialsPerSlice() > f {
						t.Fatalf("stripe %d: a node receives %d partials per slice, f=%d", st, p.MaxPartialsPerSlice(), f)
					}
					AddLoads(total, p.Loads())
				}
				for _, rates := range []Rates{hdd, fast, spin} {
					rm := map[string]Rates{}
					for node := range total {
						rm[node] = rates
					}
					est, err := Estimate(total, rm, s == PullSur)
					if err != nil {
						t.Fatal(err)
					}
					m := Model{K: tc.k, R: tc.r, F: f, SNode: float64(stripes * size), SBlock: unit, Survivors: []Rates{rates}, Replacement: rates}
					p := predict(t, m, s)
					if !near(est, p.Seconds, 0.05) {
						t.Errorf("%s f=%d %v rates %+v: plans give %.4fs, model %.4fs (%s)", tc.policy, f, s, rates, est, p.Seconds, p.Bound)
					}
				}
			}
		}
	}
}

// TestSpinningDisk: on one spinning disk per node, PULL-Sur's helpers
// serve (k−1)/n units per row at the seek-bound ServeRead, on the same
// disk as their own read and write, while PUSH-Sur reads in runs and stays
// link-bound: the paper's PULL-Sur vs PUSH-Sur gap, by hand.
func TestSpinningDisk(t *testing.T) {
	m := model(6, 3, 1, spin)
	B, n := m.SBlock, 8.0
	rows := m.SNode / B
	pullDisk := (1/n)*B/spin.Read + (5/n)*B/spin.ServeRead + (1/n)*B/spin.Write
	pushNet := (5 / n) * B / spin.Recv
	pushDisk := (6/n)*B/spin.Read + (1/n)*B/spin.Write
	ps, us := predict(t, m, PullSur), predict(t, m, PushSur)
	if !near(ps.Seconds, pullDisk*rows, 1e-9) || !strings.HasSuffix(ps.Bound, " disk") {
		t.Errorf("PULL-Sur %.2fs (%s), want %.2fs bound by the disk", ps.Seconds, ps.Bound, pullDisk*rows)
	}
	if !near(us.Seconds, math.Max(pushNet, pushDisk)*rows, 1e-9) || (strings.HasSuffix(us.Bound, " disk")) {
		t.Errorf("PUSH-Sur %.2fs (%s), want %.2fs bound by the link", us.Seconds, us.Bound, pushNet*rows)
	}
	if r := ps.Seconds / us.Seconds; r < 2 {
		t.Errorf("PULL-Sur/PUSH-Sur = %.2f on seek-bound disks, want > 2", r)
	}
	// Without SharedDisk the same rates overlap reads and writes.
	split := spin
	split.SharedDisk = false
	if p := predict(t, model(6, 3, 1, split), PullSur); p.Seconds >= ps.Seconds {
		t.Errorf("overlapping reads and writes (%.2fs) should be faster than one shared disk (%.2fs)", p.Seconds, ps.Seconds)
	}
}
