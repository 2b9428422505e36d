package raidp

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"cairn/internal/golden"
)

var seed = flag.Uint64("seed", 0, "seed of the randomized tests (0: a fixed default)")

func testRand(t *testing.T) *rand.Rand {
	s := *seed
	if s == 0 {
		s = 17
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return rand.New(rand.NewPCG(s, s))
}

// randomLayout places superchunks at random, keeping the invariants.
func randomLayout(r *rand.Rand, n, slots, count int) Layout {
	l := Layout{Disks: n, Slots: slots}
	used := make(map[Place]bool)
	shared := make(map[[2]int]bool)
	for tries := 0; len(l.Superchunks) < count && tries < 1000; tries++ {
		a, b := r.IntN(n), r.IntN(n)
		if a == b || shared[[2]int{min(a, b), max(a, b)}] {
			continue
		}
		pa, pb := Place{a, r.IntN(slots)}, Place{b, r.IntN(slots)}
		if used[pa] || used[pb] {
			continue
		}
		used[pa], used[pb] = true, true
		shared[[2]int{min(a, b), max(a, b)}] = true
		l.Superchunks = append(l.Superchunks, Superchunk{ID: len(l.Superchunks), Replicas: [2]Place{pa, pb}})
	}
	return l
}

// bruteRemirror enumerates every assignment of the failed disk's
// superchunks to receivers and returns the least total cost, or −1.
func bruteRemirror(l Layout, failed int, cost []int64) int64 {
	type item struct{ from int }
	var items []item
	live := make(map[[2]int]bool)
	for _, s := range l.Superchunks {
		a, b := s.Replicas[0].Disk, s.Replicas[1].Disk
		switch failed {
		case a:
			items = append(items, item{b})
		case b:
			items = append(items, item{a})
		default:
			live[[2]int{min(a, b), max(a, b)}] = true
		}
	}
	var recv []int
	for d := range l.Disks {
		if d != failed && l.freeSlot(d) >= 0 {
			recv = append(recv, d)
		}
	}
	best := int64(-1)
	taken := make([]bool, len(recv))
	to := make([]int, len(items))
	var rec func(i int, total int64)
	rec = func(i int, total int64) {
		if i == len(items) {
			pairs := make(map[[2]int]bool)
			for k, it := range items {
				p := [2]int{min(it.from, to[k]), max(it.from, to[k])}
				if pairs[p] || live[p] {
					return
				}
				pairs[p] = true
			}
			if best < 0 || total < best {
				best = total
			}
			return
		}
		for j, r := range recv {
			if taken[j] || r == items[i].from {
				continue
			}
			taken[j], to[i] = true, r
			rec(i+1, total+cost[r])
			taken[j] = false
		}
	}
	rec(0, 0)
	return best
}

// checkRemirroring checks a plan's own promises against its input. (A
// step of a dual plan may leave a failed disk sharing two superchunks with
// a live one: the next step takes them off it.)
func checkRemirroring(t *testing.T, l Layout, failed []int, p Remirroring) {
	t.Helper()
	dead := make([]bool, l.Disks)
	for _, d := range failed {
		dead[d] = true
	}
	if err := p.After.check(dead); err != nil {
		t.Fatalf("after re-mirroring: %v\nbefore:\n%s\nafter:\n%s", err, l, p.After)
	}
	recv := make(map[int]bool)
	for _, tr := range p.Transfers {
		if recv[tr.To.Disk] {
			t.Fatalf("disk %d receives two superchunks: %+v", tr.To.Disk, p.Transfers)
		}
		recv[tr.To.Disk] = true
		if slices.Contains(failed, tr.From.Disk) || slices.Contains(failed, tr.To.Disk) {
			t.Fatalf("transfer %+v touches a failed disk", tr)
		}
	}
	if len(failed) == 1 {
		offFailed(t, p.After, failed)
	}
}

func offFailed(t *testing.T, l Layout, failed []int) {
	t.Helper()
	for _, s := range l.Superchunks {
		for _, r := range s.Replicas {
			if slices.Contains(failed, r.Disk) {
				t.Fatalf("superchunk %d still on failed disk %d", s.ID, r.Disk)
			}
		}
	}
}

// TestRemirrorMatchesBruteForce: on small random layouts with random
// costs, the matching finds an assignment exactly when one exists, and
// one of least cost.
func TestRemirrorMatchesBruteForce(t *testing.T) {
	r := testRand(t)
	found := 0
	for iter := range 400 {
		n := 4 + r.IntN(4)
		slots := 2 + r.IntN(3)
		l := randomLayout(r, n, slots, r.IntN(n*slots/2+1))
		cost := make([]int64, n)
		for d := range cost {
			cost[d] = int64(r.IntN(6))
		}
		failed := r.IntN(n)
		want := bruteRemirror(l, failed, cost)
		got, err := Remirror(l, []int{failed}, cost)
		if want < 0 {
			if !errors.Is(err, ErrNoAssignment) {
				t.Fatalf("iter %d: brute force finds no assignment, Remirror: %+v, %v\n%s", iter, got.Transfers, err, l)
			}
			continue
		}
		if err != nil {
			t.Fatalf("iter %d: brute force cost %d, Remirror: %v\n%s", iter, want, err, l)
		}
		if got.Cost != want {
			t.Fatalf("iter %d: cost %d, brute force %d\n%s%+v", iter, got.Cost, want, l, got.Transfers)
		}
		checkRemirroring(t, l, []int{failed}, got)
		found++
	}
	if found < 100 {
		t.Fatalf("only %d of 400 random cases had an assignment: the test does not exercise the matching", found)
	}
}

// TestRemirrorMutual is the paper's Fig. 6 trap: the cheapest plain
// matching sends D0's copy to D2 and D2's to D0, which would make them
// share two superchunks.
func TestRemirrorMutual(t *testing.T) {
	// D1 fails; it shares one superchunk with D0 and one with D2. D0 and D2
	// are the cheap receivers, D3 and D4 dear.
	l := Layout{Disks: 5, Slots: 3, Superchunks: []Superchunk{
		{0, [2]Place{{0, 0}, {1, 0}}},
		{1, [2]Place{{1, 1}, {2, 0}}},
	}}
	p, err := Remirror(l, []int{1}, []int64{0, 0, 0, 9, 9})
	if err != nil {
		t.Fatal(err)
	}
	checkRemirroring(t, l, []int{1}, p)
	if p.Cost != 9 {
		t.Fatalf("cost %d, want 9 (one cheap receiver, one dear): %+v", p.Cost, p.Transfers)
	}
}

func TestRemirrorErrors(t *testing.T) {
	l, err := New(7, 6, 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Remirror(l, []int{3}, nil); !errors.Is(err, ErrNoAssignment) {
		t.Fatalf("complete layout: %v, want ErrNoAssignment", err)
	}
	if _, err := Remirror(l, []int{0, 1}, nil); !errors.Is(err, ErrLost) {
		t.Fatalf("dual failure: %v, want ErrLost", err)
	}
	if _, err := Remirror(l, []int{9}, nil); !errors.Is(err, ErrBadInput) {
		t.Fatalf("disk 9: %v, want ErrBadInput", err)
	}
	if _, err := Remirror(l, []int{1}, []int64{1, 2}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("2 costs: %v, want ErrBadInput", err)
	}
}

// group is a RAIDP group's contents in memory: every slot's bytes and
// every disk's Lstor, the XOR of its slots.
type group struct {
	l     Layout
	size  int64
	data  map[int][]byte // superchunk ID → contents
	lstor [][]byte
}

func newGroup(r *rand.Rand, l Layout, size int64) *group {
	g := &group{l: l, size: size, data: make(map[int][]byte)}
	for _, s := range l.Superchunks {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		g.data[s.ID] = b
	}
	g.lstor = g.parity(l)
	return g
}

// parity computes every disk's Lstor from the layout and contents.
func (g *group) parity(l Layout) [][]byte {
	p := make([][]byte, l.Disks)
	for d := range p {
		p[d] = make([]byte, g.size)
		for _, s := range l.OnDisk(d) {
			for i, c := range g.data[s.ID] {
				p[d][i] ^= c
			}
		}
	}
	return p
}

// run carries out a dual plan on the slots' bytes: the surviving slots of
// l (the failed disks' are gone), each rebuild side computed from the
// failed disks' Lstors and the mirrors it names alone and written into its
// target, then the exchange of halves and the re-mirroring copies, each
// reading only what an earlier step or the survivors hold. It returns the
// slots' bytes at the end.
func (g *group) run(t *testing.T, l Layout, p DualPlan) map[Place][]byte {
	t.Helper()
	slots := make(map[Place][]byte)
	for _, s := range l.Superchunks {
		for _, r := range s.Replicas {
			if r.Disk != p.A && r.Disk != p.B {
				slots[r] = slices.Clone(g.data[s.ID])
			}
		}
	}
	slot := func(at Place) []byte {
		if slots[at] == nil {
			if at.Disk == p.A || at.Disk == p.B {
				t.Fatalf("the plan writes to failed disk %d", at.Disk)
			}
			slots[at] = make([]byte, g.size) // a free slot reads zero
		}
		return slots[at]
	}
	if p.Shared {
		if len(p.Targets) != len(p.Sides) {
			t.Fatalf("%d targets for %d sides", len(p.Targets), len(p.Sides))
		}
		covered := int64(0)
		for i, side := range p.Sides {
			part := slices.Clone(g.lstor[side.Lstor][side.Off : side.Off+side.Len])
			for _, rd := range side.Reads {
				if rd.Disk == p.A || rd.Disk == p.B {
					t.Fatalf("side of Lstor %d reads failed disk %d", side.Lstor, rd.Disk)
				}
				from, ok := slots[rd]
				if !ok {
					t.Fatalf("side reads empty slot %+v", rd)
				}
				for i := range part {
					part[i] ^= from[side.Off+int64(i)]
				}
			}
			copy(slot(p.Targets[i])[side.Off:], part)
			covered += side.Len
		}
		if covered != g.size {
			t.Fatalf("sides cover %d of %d bytes", covered, g.size)
		}
	}
	copies := func(ts []Transfer) {
		// A step's copies run at once: each reads what was there before.
		var src [][]byte
		for _, tr := range ts {
			from, ok := slots[tr.From]
			if !ok {
				t.Fatalf("copy of superchunk %d from empty slot %+v", tr.Superchunk, tr.From)
			}
			src = append(src, slices.Clone(from))
		}
		for i, tr := range ts {
			off, n := int64(0), g.size
			if tr.Len > 0 {
				off, n = tr.Off, tr.Len
			}
			copy(slot(tr.To)[off:off+n], src[i][off:off+n])
		}
	}
	copies(p.Swap)
	for _, step := range p.Remirror {
		copies(step.Transfers)
	}
	return slots
}

// TestDualEveryPair: in a group of 8 disks, any two disks fail; the plan
// rebuilds their shared superchunk byte-exact from the Lstors and mirrors
// alone (each Lstor alone, and both halves in parallel), and the layout
// after recovery keeps 1-mirroring and 1-sharing with every superchunk off
// the failed disks.
func TestDualEveryPair(t *testing.T) {
	r := testRand(t)
	const n, size = 8, 64
	// With 4 slots and 3 rows the six live disks have exactly the free
	// slots the lost replicas need (the cluster's default rows): the two
	// steps must be planned together for some pairs.
	for _, c := range []struct{ slots, rows int }{{7, 2}, {7, 3}, {4, 3}} {
		rows := c.rows
		l, err := New(n, c.slots, rows)
		if err != nil {
			t.Fatal(err)
		}
		g := newGroup(r, l, size)
		split := 0
		for a := range n {
			for b := a + 1; b < n; b++ {
				for _, ok := range [][2]bool{{true, true}, {true, false}, {false, true}} {
					p, err := Dual(l, a, b, size, ok, nil)
					if err != nil {
						t.Fatalf("rows=%d disks %d,%d lstors %v: %v", rows, a, b, ok, err)
					}
					if x, shared := l.Shared(a, b); shared != p.Shared || shared && x.ID != p.Lost {
						t.Fatalf("disks %d,%d: plan lost %v/%d, layout shares %v/%d", a, b, p.Shared, p.Lost, shared, x.ID)
					}
					// Every replica of the layout after holds its
					// superchunk's bytes, the lost one's included.
					slots := g.run(t, l, p)
					for _, s := range p.After.Superchunks {
						for _, r := range s.Replicas {
							if !bytes.Equal(slots[r], g.data[s.ID]) {
								t.Fatalf("rows=%d slots=%d disks %d,%d lstors %v: superchunk %d at %+v differs after the plan (lost %d, targets %v)",
									rows, c.slots, a, b, ok, s.ID, r, p.Lost, p.Targets)
							}
						}
					}
					if p.Shared {
						if want := 1 + btoi(ok[0] && ok[1]); len(p.Sides) != want {
							t.Fatalf("%d sides, want %d", len(p.Sides), want)
						}
						if p.Split() {
							split++
							if _, x := p.After.Shared(p.Targets[0].Disk, p.Targets[1].Disk); !x || len(p.Swap) != 2 {
								t.Fatalf("disks %d,%d: split into %v, swap %+v: the targets are not the lost superchunk's pair", a, b, p.Targets, p.Swap)
							}
						}
						for _, tg := range p.Targets {
							for _, step := range p.Remirror {
								if slices.ContainsFunc(step.Transfers, func(tr Transfer) bool { return tr.To.Disk == tg.Disk }) {
									t.Fatalf("disks %d,%d: target %+v also receives a re-mirroring copy", a, b, tg)
								}
							}
						}
					}
					for _, step := range p.Remirror {
						checkRemirroring(t, l, []int{a, b}, step)
					}
					if err := p.After.Check(); err != nil {
						t.Fatal(err)
					}
					offFailed(t, p.After, []int{a, b})
					if len(p.After.Superchunks) != len(l.Superchunks) {
						t.Fatalf("after: %d superchunks, want %d", len(p.After.Superchunks), len(l.Superchunks))
					}
					// The parity of the recovered group is well defined: every
					// disk's Lstor is the XOR of its slots again once the
					// receivers folded their copies in.
					_ = g.parity(p.After)
				}
			}
		}
		// Both Lstors left, the rebuild splits over two targets where
		// the free slots allow.
		t.Logf("slots=%d rows=%d: %d of the plans split their rebuild", c.slots, rows, split)
		if c.slots > rows+1 && split == 0 {
			t.Fatalf("slots=%d rows=%d: no plan split its rebuild over two targets", c.slots, rows)
		}
	}
	l, _ := New(n, 7, 3)
	if _, err := Dual(l, 0, 1, size, [2]bool{}, nil); !errors.Is(err, ErrLost) {
		t.Fatalf("both Lstors lost: %v, want ErrLost", err)
	}
}

// TestRecoveryGolden pins the plans on the N=8, 3-row layout: a single
// failure and a dual failure of neighbours.
func TestRecoveryGolden(t *testing.T) {
	l, err := New(8, 7, 3)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	single, err := Remirror(l, []int{2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "# disk 2 fails\n%scost %d\n%s\n", transfers(single), single.Cost, single.After)
	dual, err := Dual(l, 2, 3, 1<<20, [2]bool{true, true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "# disks 2 and 3 fail: superchunk %d lost\n", dual.Lost)
	for i, s := range dual.Sides {
		fmt.Fprintf(&b, "side Lstor %d [%d, %d) reads %v into %+v\n", s.Lstor, s.Off, s.Off+s.Len, s.Reads, dual.Targets[i])
	}
	for _, tr := range dual.Swap {
		fmt.Fprintf(&b, "swap [%d, %d): D%d slot %d → D%d slot %d\n", tr.Off, tr.Off+tr.Len, tr.From.Disk, tr.From.Slot, tr.To.Disk, tr.To.Slot)
	}
	for i, st := range dual.Remirror {
		fmt.Fprintf(&b, "step %d\n%s", i+1, transfers(st))
	}
	b.WriteString(dual.After.String())
	golden.Check(t, "recovery.txt", b.String())
}

func transfers(p Remirroring) string {
	var b strings.Builder
	for _, tr := range p.Transfers {
		fmt.Fprintf(&b, "superchunk %d: D%d slot %d → D%d slot %d\n", tr.Superchunk, tr.From.Disk, tr.From.Slot, tr.To.Disk, tr.To.Slot)
	}
	return b.String()
}

// TestRemirrorNaive: the naive baseline keeps the invariants too, but
// piles superchunks on some receivers, which the matching never does.
func TestRemirrorNaive(t *testing.T) {
	r := testRand(t)
	l, err := New(16, 15, 8)
	if err != nil {
		t.Fatal(err)
	}
	piled := 0
	for range 50 {
		d := r.IntN(16)
		p, err := RemirrorNaive(l, []int{d}, r)
		if err != nil {
			t.Fatal(err)
		}
		checkRemirroringNaive(t, l, d, p)
		if p.Cost > 1 {
			piled++
		}
	}
	if piled == 0 {
		t.Fatal("50 naive assignments never gave a receiver two superchunks: the baseline is not naive")
	}
}

func checkRemirroringNaive(t *testing.T, l Layout, failed int, p Remirroring) {
	t.Helper()
	if err := p.After.Check(); err != nil {
		t.Fatal(err)
	}
	offFailed(t, p.After, []int{failed})
	if len(p.Transfers) != len(l.OnDisk(failed)) {
		t.Fatalf("%d transfers for %d superchunks", len(p.Transfers), len(l.OnDisk(failed)))
	}
}

// TestRepeatedFailures: disks of a 16-disk group fail one after another
// and each failure is re-mirrored on the layout the previous one left;
// the invariants hold after every step, the failed disks hold nothing,
// and the group absorbs several failures before running out of receivers.
func TestRepeatedFailures(t *testing.T) {
	r := testRand(t)
	for run := range 20 {
		l, err := New(16, 15, 6)
		if err != nil {
			t.Fatal(err)
		}
		var failed []int
		for {
			d := r.IntN(16)
			if slices.Contains(failed, d) {
				continue
			}
			p, err := Remirror(l, append(slices.Clone(failed), d), nil)
			if errors.Is(err, ErrNoAssignment) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			failed = append(failed, d)
			checkRemirroring(t, l, failed, p)
			offFailed(t, p.After, failed)
			l = p.After
		}
		if len(failed) < 4 {
			t.Fatalf("run %d: only %d failures absorbed", run, len(failed))
		}
		t.Logf("run %d: %d failures absorbed", run, len(failed))
	}
}
