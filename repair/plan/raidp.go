package plan

import (
	"fmt"
	"math"

	"cairn/raidp"
)

// RAIDPModel holds the inputs of the RAIDP recovery-time models
// (docs/design/raidp.md): the superchunk size in bytes, the rates of each
// disk of the group and its node's links (one entry for all, or one per
// disk; a failed disk's entry stands for its node, which still serves its
// Lstor), and the Lstor's own rate (0: never the bottleneck, the paper's
// assumption that an Lstor is faster than its disk).
//
// Assumptions: every transfer of a step runs in parallel (the matching
// gives no receiver two superchunks); each node's resources work
// concurrently and the slowest binds, as in Model.Seconds; a receiver
// folds its copy into its Lstor as it lands (reads the old parity, writes
// the new one: the slot was free, so no old-data read); a rebuild side runs
// on the node of its Lstor, which receives the mirrors' ranges, XORs them
// into the parity and sends the result to the target.
type RAIDPModel struct {
	Size  float64
	Disks []Rates
	Lstor float64
}

// RAIDPStep is the predicted time of one recovery step and what binds it.
type RAIDPStep struct {
	Seconds float64
	Bound   string // the binding disk and resource
}

// RAIDPDualPrediction is the predicted time of a dual-failure recovery:
// the rebuild of the shared superchunk (after which every byte again
// survives one more failure: the critical state is over), the exchange of
// a split rebuild's halves (Swap, zero if not split), then the two
// re-mirroring steps. Total is their sum.
type RAIDPDualPrediction struct {
	Rebuild  RAIDPStep
	Swap     RAIDPStep
	Remirror [2]RAIDPStep
	Total    float64
}

func (m RAIDPModel) validate(disks int) error {
	if !(m.Size > 0) || math.IsInf(m.Size, 0) || m.Lstor < 0 || math.IsInf(m.Lstor, 0) {
		return fmt.Errorf("%w: RAIDP model size %v, Lstor rate %v", ErrInvalid, m.Size, m.Lstor)
	}
	if len(m.Disks) != 1 && len(m.Disks) != disks {
		return fmt.Errorf("%w: RAIDP model has %d disk rates for a group of %d", ErrInvalid, len(m.Disks), disks)
	}
	for _, r := range m.Disks {
		if !r.valid() {
			return fmt.Errorf("%w: disk rates %+v", ErrInvalid, r)
		}
	}
	return nil
}

func (m RAIDPModel) rates(d int) Rates {
	if len(m.Disks) == 1 {
		return m.Disks[0]
	}
	return m.Disks[d]
}

// loadTime times per-disk work in bytes (plus Lstor bytes) at the model's
// rates: the slowest resource of the slowest disk.
func (m RAIDPModel) loadTime(w map[int]*work, lstor map[int]float64) RAIDPStep {
	var s RAIDPStep
	for d := range max(len(m.Disks), maxKey(w)+1, maxKey(lstor)+1) {
		var t float64
		var res string
		if x, ok := w[d]; ok {
			t, res = x.time(m.rates(d), false)
		}
		if m.Lstor > 0 && lstor[d]/m.Lstor > t {
			t, res = lstor[d]/m.Lstor, "lstor"
		}
		if t > s.Seconds {
			s = RAIDPStep{Seconds: t, Bound: fmt.Sprintf("disk %d %s", d, res)}
		}
	}
	return s
}

func maxKey[V any](m map[int]V) int {
	k := -1
	for d := range m {
		k = max(k, d)
	}
	return k
}

func at(w map[int]*work, d int) *work {
	if w[d] == nil {
		w[d] = &work{}
	}
	return w[d]
}

// Remirror predicts one re-mirroring step: each sender reads and sends a
// superchunk, each receiver receives and writes one and updates its Lstor
// (one parity read and one write).
func (m RAIDPModel) Remirror(p raidp.Remirroring) (RAIDPStep, error) {
	if err := m.validate(p.After.Disks); err != nil {
		return RAIDPStep{}, err
	}
	return m.copies(p.Transfers), nil
}

// copies times transfers run at once.
func (m RAIDPModel) copies(ts []raidp.Transfer) RAIDPStep {
	w, lstor := make(map[int]*work), make(map[int]float64)
	for _, t := range ts {
		m.addCopy(w, lstor, t.From.Disk, t.To.Disk, m.bytes(t.Len))
	}
	return m.loadTime(w, lstor)
}

// bytes is what a copy of length n moves: n, or (0) a whole superchunk.
func (m RAIDPModel) bytes(n int64) float64 {
	if n > 0 {
		return float64(n)
	}
	return m.Size
}

// addCopy adds a copy of n bytes from disk from to disk to.
func (m RAIDPModel) addCopy(w map[int]*work, lstor map[int]float64, from, to int, n float64) {
	at(w, from).read += n
	at(w, from).send += n
	at(w, to).recv += n
	at(w, to).write += n
	lstor[to] += 2 * n
}

// addSide adds one rebuild side writing to disk target, and returns the
// bytes it sends over the network.
func addSide(w map[int]*work, lstor map[int]float64, s raidp.Side, target int) float64 {
	n := float64(s.Len)
	for i, r := range s.Reads {
		at(w, r.Disk).read += n
		at(w, r.Disk).send += n
		if i > 0 {
			at(w, r.Disk).recv += n
		}
	}
	if len(s.Reads) > 0 {
		at(w, s.Lstor).recv += n
	}
	lstor[s.Lstor] += n
	at(w, s.Lstor).send += n
	at(w, target).recv += n
	at(w, target).write += n
	lstor[target] += 2 * n
	return float64(len(s.Reads)+1) * n
}

// Dual predicts a dual-failure recovery. A rebuild side runs as a PUSH
// chain (the PUSH paper's pipelining, as in Model): its mirrors in order,
// each reading its range, XORing it into the partial it received and
// forwarding it, ending at the node of the side's Lstor, which XORs the
// parity in and sends the result to the target; so every link of a side
// carries the side's range once. The target writes the whole superchunk and
// updates its Lstor. Sides run in parallel (a disk in both sides carries
// both loads).
func (m RAIDPModel) Dual(p raidp.DualPlan) (RAIDPDualPrediction, error) {
	var out RAIDPDualPrediction
	if err := m.validate(p.After.Disks); err != nil {
		return out, err
	}
	if p.Shared {
		var size float64
		for _, s := range p.Sides {
			size += float64(s.Len)
		}
		if size != m.Size {
			return out, fmt.Errorf("%w: the plan's sides cover %v bytes, the model's superchunk is %v", ErrInvalid, size, m.Size)
		}
		if len(p.Targets) != len(p.Sides) {
			return out, fmt.Errorf("%w: %d targets for %d rebuild sides", ErrInvalid, len(p.Targets), len(p.Sides))
		}
		w, lstor := make(map[int]*work), make(map[int]float64)
		for i, s := range p.Sides {
			addSide(w, lstor, s, p.Targets[i].Disk)
		}
		out.Rebuild = m.loadTime(w, lstor)
		out.Swap = m.copies(p.Swap)
	}
	out.Total = out.Rebuild.Seconds + out.Swap.Seconds
	for i, step := range p.Remirror {
		s, err := m.Remirror(step)
		if err != nil {
			return RAIDPDualPrediction{}, err
		}
		out.Remirror[i] = s
		out.Total += s.Seconds
	}
	return out, nil
}

// RAIDPPhase is the prediction for one phase of a stored recovery plan
// (raidp.Recovery): the steps left (not done) run in parallel.
type RAIDPPhase struct {
	Phase int            `json:"phase"`
	Kind  raidp.StepKind `json:"kind"`
	Steps int            `json:"steps"`
	Left  int            `json:"left"`
	RAIDPStep
	// Written is the bytes the steps left write to their disks (each
	// also costs its disk's Lstor a parity read and write of as many);
	// Network the bytes they send between nodes.
	Written float64 `json:"written_bytes"`
	Network float64 `json:"network_bytes"`
	// Busiest is the most bytes one disk reads or writes in the phase.
	Busiest float64 `json:"busiest_disk_bytes"`
}

// RAIDPRecoveryPrediction is the predicted time left of a stored recovery
// plan, phase by phase (phases run one after the other).
type RAIDPRecoveryPrediction struct {
	Phases  []RAIDPPhase `json:"phases"`
	Seconds float64      `json:"seconds"`
}

// Recovery predicts what is left of a stored recovery plan: per phase,
// its steps not done yet timed as Remirror (copies) and Dual (rebuild
// sides) do, and a zero as a write of the slot on its disk (an upper
// bound: zeroing past the slot's high-water mark writes nothing). A plan
// whose every step is done predicts 0 s. For a new plan the phases'
// times are Dual's (or Remirror's) steps.
func (m RAIDPModel) Recovery(r raidp.Recovery) (RAIDPRecoveryPrediction, error) {
	var out RAIDPRecoveryPrediction
	if err := m.validate(r.After.Disks); err != nil {
		return out, err
	}
	for _, phase := range r.Phases() {
		ph := RAIDPPhase{Phase: r.Steps[phase[0]].Phase, Kind: r.Steps[phase[0]].Kind, Steps: len(phase)}
		w, lstor := make(map[int]*work), make(map[int]float64)
		for _, i := range phase {
			s := r.Steps[i]
			if s.Done {
				continue
			}
			ph.Left++
			switch s.Kind {
			case raidp.StepCopy, raidp.StepExchange:
				if s.From == nil {
					return RAIDPRecoveryPrediction{}, fmt.Errorf("%w: step %d: a copy without a sender", ErrInvalid, i)
				}
				n := m.bytes(s.Len)
				m.addCopy(w, lstor, s.From.Disk, s.To.Disk, n)
				ph.Written += n
				ph.Network += n
			case raidp.StepRebuild:
				if s.Rebuild == nil {
					return RAIDPRecoveryPrediction{}, fmt.Errorf("%w: step %d: a rebuild without a side", ErrInvalid, i)
				}
				ph.Network += addSide(w, lstor, *s.Rebuild, s.To.Disk)
				ph.Written += float64(s.Rebuild.Len)
			case raidp.StepZero:
				at(w, s.To.Disk).write += m.Size
				lstor[s.To.Disk] += 2 * m.Size
				ph.Written += m.Size
			default:
				return RAIDPRecoveryPrediction{}, fmt.Errorf("%w: step %d of kind %q", ErrInvalid, i, s.Kind)
			}
		}
		for _, x := range w {
			ph.Busiest = max(ph.Busiest, x.read, x.write)
		}
		ph.RAIDPStep = m.loadTime(w, lstor)
		out.Seconds += ph.Seconds
		out.Phases = append(out.Phases, ph)
	}
	return out, nil
}
