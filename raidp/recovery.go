package raidp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Recovery is a recovery plan as it is stored before any byte moves (the
// metadata record raidp/recovery/NAME, docs/design/raidp.md "Recovery
// plans", "Stored plan"): the steps of a Remirror or Dual plan with their
// progress, so that a recovery interrupted at any point is resumed with
// the same receivers instead of re-planned with others.
//
// A plan belongs to one generation of its group: it was planned from
// that generation's layout, and the recovery ends by storing
// Group.Recovered(After, Failed...) — the next generation — by
// compare-and-swap. A stored plan of an older generation is therefore
// finished (the generation only moves by a recovery's commit, the last
// thing a plan does).
type Recovery struct {
	Group      string `json:"group"`
	Generation uint64 `json:"generation"`
	// Attempt counts the plans made for this generation: a plan given up
	// (the failed disks changed) is replaced by one with the next
	// attempt, and progress is only recorded against the attempt that
	// made it.
	Attempt int   `json:"attempt"`
	Failed  []int `json:"failed"`
	// Steps in order of phase; the steps of one phase run in parallel,
	// phases one after the other.
	Steps []Step `json:"steps"`
	// After is the layout once every step is done.
	After Layout `json:"after"`
}

// StepKind names what a Step does.
type StepKind string

const (
	// StepZero zeroes a slot an abandoned plan may have written to
	// (data and parity), so the disk's Lstor is again the XOR of the
	// superchunks its layout puts on it.
	StepZero StepKind = "zero"
	// StepRebuild is one side of a dual rebuild (Step.Rebuild): the range
	// [Off, Off+Len) of the lost superchunk, Lstor ⊕ Reads, written to To.
	StepRebuild StepKind = "rebuild"
	// StepCopy is a re-mirroring transfer: the superchunk copied whole
	// from Step.From to To.
	StepCopy StepKind = "copy"
	// StepExchange is half of a split rebuild's exchange (DualPlan.Swap):
	// the byte range Off, Len of the superchunk copied from Step.From to
	// To. A kind of its own, not a copy with a range: a runner that knows
	// only whole copies refuses the plan (unknown kind) instead of copying
	// a half-rebuilt slot whole over its partner's half.
	StepExchange StepKind = "exchange"
)

// Step is one unit of a stored plan: redoing it is harmless (a copy or
// rebuild writes the same bytes to the same place, a zero zeroes again),
// which is what makes a plan resumable.
type Step struct {
	Phase int      `json:"phase"`
	Kind  StepKind `json:"kind"`
	// Superchunk is the superchunk copied or rebuilt; -1 for a zero.
	Superchunk int `json:"superchunk"`
	// To is the slot written: the receiver of a copy, the target of a
	// rebuild, the slot a zero clears.
	To Place `json:"to"`
	// From is the sender of a copy.
	From *Place `json:"from,omitempty"`
	// Off and Len are the byte range an exchange moves (Len > 0); absent
	// for every other kind.
	Off int64 `json:"off,omitempty"`
	Len int64 `json:"len,omitempty"`
	// Rebuild is the side of a rebuild.
	Rebuild *Side `json:"rebuild,omitempty"`
	Done    bool  `json:"done,omitempty"`
	// Queued: a repair-queue task runs the step (the director queued
	// it); it is not queued again.
	Queued bool `json:"queued,omitempty"`
}

// Phases returns the steps' indexes grouped by phase, in phase order.
func (r Recovery) Phases() [][]int {
	var out [][]int
	for i, s := range r.Steps {
		if len(out) == 0 || r.Steps[out[len(out)-1][0]].Phase != s.Phase {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], i)
	}
	return out
}

// Next returns the indexes of the steps left (not done) of the first
// phase that has any: what may run now. None once Complete.
func (r Recovery) Next() []int {
	for _, ph := range r.Phases() {
		var left []int
		for _, i := range ph {
			if !r.Steps[i].Done {
				left = append(left, i)
			}
		}
		if len(left) > 0 {
			return left
		}
	}
	return nil
}

// UpdateStep is the compare-and-swap of one step's progress in a stored
// plan: it decodes old, checks that it is still the plan of generation
// gen and attempt attempt (ErrStale if not: another plan replaced it),
// applies f to step i and returns the new stored form.
func UpdateStep(old []byte, gen uint64, attempt, i int, f func(*Step)) ([]byte, error) {
	if old == nil {
		return nil, fmt.Errorf("%w: no stored plan", ErrStale)
	}
	cur, err := DecodeRecovery(old)
	if err != nil {
		return nil, err
	}
	if cur.Generation != gen || cur.Attempt != attempt || i < 0 || i >= len(cur.Steps) {
		return nil, fmt.Errorf("%w: the stored plan of %s is generation %d attempt %d, not %d attempt %d (or has no step %d)",
			ErrStale, cur.Group, cur.Generation, cur.Attempt, gen, attempt, i)
	}
	f(&cur.Steps[i])
	return json.Marshal(cur)
}

// ErrStale: a stored plan is not the one a step belongs to any more.
var ErrStale = errors.New("raidp: the recovery plan was replaced")

// Complete reports whether every step is done.
func (r Recovery) Complete() bool {
	return !slices.ContainsFunc(r.Steps, func(s Step) bool { return !s.Done })
}

// Same reports whether r is the plan for the failed disks of generation
// gen: the plan to resume.
func (r Recovery) Same(gen uint64, failed []int) bool {
	return r.Generation == gen && slices.Equal(r.Failed, normFailed(failed, nil))
}

// touched returns the slots r may have written that no layout accounts
// for if r is given up: every place its copies and rebuilds write, and
// the slots it was to zero but has not yet.
func (r Recovery) touched() []Place {
	var out []Place
	for _, s := range r.Steps {
		if s.Kind == StepZero && s.Done {
			continue
		}
		if !slices.Contains(out, s.To) {
			out = append(out, s.To)
		}
	}
	return out
}

func normFailed(failed, out []int) []int {
	f := slices.DeleteFunc(slices.Clone(failed), func(d int) bool { return slices.Contains(out, d) })
	slices.Sort(f)
	return slices.Compact(f)
}

// PlanRecovery plans the recovery of g from the loss of its failed disks
// (layout indexes; those already out are ignored): one by Remirror, two
// by Dual, with lstorOK saying whose Lstor can be read. prev is the plan
// stored before, or nil. If prev is the plan for the same generation and
// the same failed disks, it is returned unchanged: it is resumed. If prev
// is of the same generation but other failed disks, it is given up: every
// slot it may have written on a live disk becomes a StepZero of the new
// plan's first phase (unless the new plan rewrites the same slot whole),
// and a failed disk it wrote to is not used as a rebuild's Lstor (its
// parity then holds bytes no superchunk of the layout accounts for). A
// prev of an older generation is finished and ignored.
//
// The phases run in the risk order: zeroing first (it only touches free
// slots), then a dual rebuild's sides (the superchunk with a single copy
// left), then the re-mirroring steps. Errors: ErrLost when more than two
// disks failed or no Lstor can rebuild the shared superchunk, the errors
// of Remirror and Dual, ErrBadInput when nothing failed.
func PlanRecovery(g Group, failed []int, lstorOK map[int]bool, prev *Recovery) (Recovery, error) {
	failed = normFailed(failed, g.Out)
	if prev != nil && prev.Group == g.Name && prev.Same(g.Generation, failed) {
		return *prev, nil
	}
	r := Recovery{Group: g.Name, Generation: g.Generation, Failed: failed}
	var stray []Place
	if prev != nil && prev.Generation == g.Generation {
		r.Attempt = prev.Attempt + 1
		stray = prev.touched()
	}
	strayOn := func(d int) bool { return slices.ContainsFunc(stray, func(p Place) bool { return p.Disk == d }) }
	var steps []Step
	phase := 0
	addPhase := func(s []Step) {
		if len(s) == 0 {
			return
		}
		phase++
		for i := range s {
			s[i].Phase = phase
		}
		steps = append(steps, s...)
	}
	copies := func(m Remirroring) []Step {
		var s []Step
		for _, t := range m.Transfers {
			k := StepCopy
			if t.Len > 0 {
				k = StepExchange
			}
			s = append(s, Step{Kind: k, Superchunk: t.Superchunk, From: &t.From, To: t.To, Off: t.Off, Len: t.Len})
		}
		return s
	}
	switch len(failed) {
	case 0:
		return Recovery{}, fmt.Errorf("%w: no failed disk to recover in group %s", ErrBadInput, g.Name)
	case 1:
		m, err := Remirror(g.Layout, failed, nil, g.Out...)
		if err != nil {
			return Recovery{}, fmt.Errorf("plan re-mirroring disk %d of %s: %w", failed[0], g.Name, err)
		}
		addPhase(copies(m))
		r.After = m.After
	case 2:
		a, b := failed[0], failed[1]
		ok := [2]bool{lstorOK[a] && !strayOn(a), lstorOK[b] && !strayOn(b)}
		d, err := Dual(g.Layout, a, b, g.Size, ok, nil, g.Out...)
		if err != nil {
			return Recovery{}, fmt.Errorf("plan the recovery of disks %d and %d of %s: %w", a, b, g.Name, err)
		}
		var sides []Step
		for i, s := range d.Sides {
			side := Side{Lstor: s.Lstor, Reads: slices.Clone(s.Reads), Off: s.Off, Len: s.Len}
			sides = append(sides, Step{Kind: StepRebuild, Superchunk: d.Lost, To: d.Targets[i], Rebuild: &side})
		}
		addPhase(sides)
		addPhase(copies(Remirroring{Transfers: d.Swap}))
		addPhase(copies(d.Remirror[0]))
		addPhase(copies(d.Remirror[1]))
		r.After = d.After
	default:
		return Recovery{}, fmt.Errorf("%w: %d disks of group %s failed; RAIDP survives two", ErrLost, len(failed), g.Name)
	}
	// Zero what the abandoned plan left on live disks, first: a copy or
	// a rebuild (its sides cover the superchunk) of the new plan to the
	// same slot rewrites it whole and needs no zero.
	var zero []Step
	for _, p := range stray {
		if slices.Contains(failed, p.Disk) || slices.Contains(g.Out, p.Disk) {
			continue
		}
		if slices.ContainsFunc(steps, func(s Step) bool { return s.To == p }) {
			continue
		}
		zero = append(zero, Step{Kind: StepZero, Superchunk: -1, To: p})
	}
	for i := range steps {
		if len(zero) > 0 {
			steps[i].Phase++
		}
	}
	for i := range zero {
		zero[i].Phase = 1
	}
	r.Steps = append(zero, steps...)
	return r, nil
}

// DecodeRecovery parses a stored plan and checks that its steps are in
// phase order and name places of its layout's geometry.
func DecodeRecovery(b []byte) (Recovery, error) {
	var r Recovery
	if err := json.Unmarshal(b, &r); err != nil {
		return Recovery{}, fmt.Errorf("%w: recovery plan: %v", ErrBadInput, err)
	}
	if err := r.After.Check(); err != nil {
		return Recovery{}, fmt.Errorf("recovery plan of %s: layout after: %w", r.Group, err)
	}
	in := func(p Place) bool {
		return p.Disk >= 0 && p.Disk < r.After.Disks && p.Slot >= 0 && p.Slot < r.After.Slots
	}
	for i, s := range r.Steps {
		if i > 0 && s.Phase < r.Steps[i-1].Phase {
			return Recovery{}, fmt.Errorf("%w: recovery plan of %s: step %d in phase %d after phase %d", ErrBadInput, r.Group, i, s.Phase, r.Steps[i-1].Phase)
		}
		bad := !in(s.To)
		switch s.Kind {
		case StepZero:
		case StepCopy, StepExchange:
			bad = bad || s.From == nil || !in(*s.From)
			if s.Kind == StepCopy && (s.Off != 0 || s.Len != 0) || s.Kind == StepExchange && (s.Off < 0 || s.Len <= 0) {
				return Recovery{}, fmt.Errorf("%w: recovery plan of %s: step %d (%s) moves range [%d, +%d)", ErrBadInput, r.Group, i, s.Kind, s.Off, s.Len)
			}
		case StepRebuild:
			d := s.Rebuild
			bad = bad || d == nil || d.Off < 0 || d.Len <= 0 || d.Lstor < 0 || d.Lstor >= r.After.Disks || slices.ContainsFunc(d.Reads, func(p Place) bool { return !in(p) })
		default:
			return Recovery{}, fmt.Errorf("%w: recovery plan of %s: step %d of kind %q", ErrBadInput, r.Group, i, s.Kind)
		}
		if bad {
			return Recovery{}, fmt.Errorf("%w: recovery plan of %s: step %d (%s) names a place outside %d disks × %d slots", ErrBadInput, r.Group, i, s.Kind, r.After.Disks, r.After.Slots)
		}
	}
	return r, nil
}
