package plan

import (
	"testing"

	"cairn/raidp"
)

// TestRAIDPRecoveryMatchesDual: a new stored dual plan predicts, phase
// by phase, what Dual predicts for the same plan (rebuild, then the two
// re-mirroring steps), on every pair of an 8-disk group; its steps done
// one by one, the time left never grows, and ends at 0.
func TestRAIDPRecoveryMatchesDual(t *testing.T) {
	l := raidpLayout(t)
	const size = 1 << 20
	var disks []raidp.GroupDisk
	for d := range l.Disks {
		disks = append(disks, raidp.GroupDisk{ID: string(rune('a' + d)), Domain: string(rune('a' + d))})
	}
	g := raidp.Group{Name: "g", Generation: 1, Size: size, Disks: disks, Layout: l}
	m := RAIDPModel{Size: size, Disks: []Rates{{Read: 200e6, Write: 150e6, Send: 100e6, Recv: 120e6}}, Lstor: 500e6}
	for a := range l.Disks {
		for b := a + 1; b < l.Disks; b++ {
			both := [2]bool{true, true}
			d, err := raidp.Dual(l, a, b, size, both, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Dual(d)
			if err != nil {
				t.Fatal(err)
			}
			r, err := raidp.PlanRecovery(g, []int{a, b}, map[int]bool{a: true, b: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Recovery(r)
			if err != nil {
				t.Fatal(err)
			}
			var steps []RAIDPStep
			if d.Shared {
				steps = append(steps, want.Rebuild)
			}
			if len(d.Swap) > 0 {
				steps = append(steps, want.Swap)
			}
			for i, s := range d.Remirror {
				if len(s.Transfers) > 0 {
					steps = append(steps, want.Remirror[i])
				}
			}
			if len(got.Phases) != len(steps) || !near(got.Seconds, want.Total, 1e-9) {
				t.Fatalf("disks %d and %d: %d phases, %v s; Dual: %d steps, %v s", a, b, len(got.Phases), got.Seconds, len(steps), want.Total)
			}
			for i, ph := range got.Phases {
				if !near(ph.Seconds, steps[i].Seconds, 1e-9) || ph.Left != ph.Steps {
					t.Fatalf("disks %d and %d, phase %d (%s): %v s, Dual's step %v s", a, b, ph.Phase, ph.Kind, ph.Seconds, steps[i].Seconds)
				}
				// A copy moves its range (a split rebuild's half) or the
				// superchunk; every disk sends or receives one copy.
				var net, busiest float64
				for _, s := range r.Steps {
					if s.Phase == ph.Phase {
						n := float64(size)
						if s.Len > 0 {
							n = float64(s.Len)
						}
						net, busiest = net+n, max(busiest, n)
					}
				}
				if (ph.Kind == raidp.StepCopy || ph.Kind == raidp.StepExchange) && (ph.Network != net || ph.Busiest != busiest) {
					t.Fatalf("disks %d and %d, phase %d: network %v, busiest disk %v bytes for %d copies", a, b, ph.Phase, ph.Network, ph.Busiest, ph.Steps)
				}
			}
			last := got.Seconds
			for i := range r.Steps {
				r.Steps[i].Done = true
				p, err := m.Recovery(r)
				if err != nil {
					t.Fatal(err)
				}
				if p.Seconds > last+1e-9 {
					t.Fatalf("disks %d and %d: step %d done, %v s left, was %v", a, b, i, p.Seconds, last)
				}
				last = p.Seconds
			}
			if last != 0 {
				t.Fatalf("disks %d and %d: every step done, %v s left", a, b, last)
			}
		}
	}
}
