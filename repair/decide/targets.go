package decide

import (
	"errors"
	"fmt"
	"slices"

	"cairn"
	"cairn/codec"
	"cairn/placement"
	"cairn/repair/plan"
)

// ErrNoTarget: no writable disk outside a stripe is left for its lost
// shards (Targets). The stripe waits for a disk to come up or join; no
// disk is full (that is cairn.ErrNoSpace).
var ErrNoTarget = errors.New("no writable disk outside the stripe")

// Round is what one round of a task's repair does.
type Round struct {
	Lost    []int          // the shards to rebuild (LostShards); empty: nothing to do
	Targets []cairn.DiskID // Targets[j]: where Lost[j] goes; "": no disk for it yet
	InPlace []int          // the shards of Lost rewritten onto their own disk (Targets)
	Scheme  plan.Scheme    // the scheme the targets allow (Targets), before Choose
	Code    codec.Code     // decodes the stripe (StripeCode)
}

// Placed returns the shards this round rebuilds — those with a target —
// and their targets.
func (rd Round) Placed() (shards []int, onto []cairn.DiskID) {
	for j, i := range rd.Lost {
		if rd.Targets[j] != "" {
			shards, onto = append(shards, i), append(onto, rd.Targets[j])
		}
	}
	return shards, onto
}

// Next decides the next round of t's repair of stripe st (code: the
// policy's code), preferring scheme preferred: the lost shards brought up
// to date (LostShards), their targets and the scheme they allow. Shards
// on a draining disk are rebuilt with the lost ones when the stripe can
// do without them, else they help rebuild the lost ones and move in a
// later round. A stripe with nothing lost any more (its disks came back)
// is a Round with no Lost and no error.
// Errors: cairn.ErrCorrupt (a spare row the code cannot have, StripeCode),
// cairn.ErrUnavailable (too few shards left to rebuild from),
// ErrNoTarget (no writable disk for any lost shard, Targets).
func Next(t *cairn.RepairTask, st Stripe, code codec.Code, v *View, preferred plan.Scheme) (Round, error) {
	lost := LostShards(t, st, v)
	if len(lost) == 0 {
		return Round{}, nil
	}
	scode, err := StripeCode(code, st)
	if err != nil {
		return Round{}, fmt.Errorf("%s/%s part %d: %w", t.Bucket, t.Key, t.Part, err)
	}
	canRebuild := func(lost []int) bool {
		present := make([]bool, scode.Params().N())
		for _, i := range Available(st, lost, v) {
			present[st.Row(i)] = true
		}
		return scode.CanReconstruct(present)
	}
	if !canRebuild(lost) {
		// Shards being moved off a draining disk are still there: first
		// rebuild the lost ones with their help, move them later.
		kept := slices.DeleteFunc(slices.Clone(lost), func(i int) bool { return IsMove(t, st, i, v) })
		if len(kept) == 0 || len(kept) == len(lost) || !canRebuild(kept) {
			return Round{}, fmt.Errorf("%w: %s/%s part %d: too few shards left to rebuild %v", cairn.ErrUnavailable, t.Bucket, t.Key, t.Part, lost)
		}
		lost = kept
	}
	targets, scheme, err := Targets(t, st, lost, v, preferred)
	if err != nil {
		return Round{}, err
	}
	var inPlace []int
	for j, i := range lost {
		if targets[j] == st.Shards[i].Disk {
			inPlace = append(inPlace, i)
		}
	}
	return Round{Lost: lost, Targets: targets, InPlace: inPlace, Scheme: scheme, Code: scode}, nil
}

// Targets returns a target disk for every lost shard of st (kept from t's
// earlier attempts when still writable and not avoided (View.Avoid); ""
// when no disk is left for it)
// and the scheme those targets allow, starting from preferred: -Sur keeps
// every rebuilt shard of a stripe on one survivor, so targets off the
// survivors, or on several nodes, make it -Rep. A shard found bad (t.Bad)
// on a disk that is still writable moves only to a node holding nothing
// of the stripe; otherwise it is rewritten in place, onto its own disk
// (the file is replaced atomically): moving it next to another shard of
// the stripe would put two in one failure domain. No target at all is
// ErrNoTarget.
func Targets(t *cairn.RepairTask, st Stripe, lost []int, v *View, preferred plan.Scheme) ([]cairn.DiskID, plan.Scheme, error) {
	holding := map[cairn.NodeID]bool{}
	used := map[cairn.DiskID]bool{}
	for i, s := range st.Shards {
		used[s.Disk] = true
		if !slices.Contains(lost, i) {
			holding[v.Disks[s.Disk].Node] = true
		}
	}
	prev := map[int]cairn.DiskID{}
	for j, i := range t.Lost {
		if j < len(t.Targets) {
			prev[i] = t.Targets[j]
		}
	}
	chosen := map[cairn.NodeID]bool{}
	out := make([]cairn.DiskID, len(lost))
	// Keep earlier choices first (so a new pick cannot take one), then
	// pick for the rest.
	for j, i := range lost {
		if d, ok := prev[i]; ok && d != "" && !used[d] && v.Target(d) {
			out[j], used[d], chosen[v.Disks[d].Node] = d, true, true
		}
	}
	for j, i := range lost {
		if out[j] != "" {
			continue
		}
		rank := func(d cairn.Disk) int {
			// Lower is better: a node holding nothing of the stripe keeps
			// its failure domains apart; then one not chosen for another
			// lost shard of it.
			rk := 0
			if holding[d.Node] {
				rk += 2
			}
			if chosen[d.Node] {
				rk++
			}
			return rk
		}
		var d cairn.DiskID
		var ok bool
		if own := st.Shards[i].Disk; slices.Contains(t.Bad, i) && v.Target(own) {
			d, ok = pickWhere(t.ID, i, v, used, func(d cairn.Disk) bool { return !holding[d.Node] && !chosen[d.Node] }, rank)
			if !ok {
				d, ok = own, true // in place: no other shard of the stripe is on it
			}
		} else {
			d, ok = pick(t.ID, i, v, used, rank)
		}
		if !ok {
			continue // none left: this shard waits (out[j] == "")
		}
		out[j], used[d], chosen[v.Disks[d].Node] = d, true, true
	}
	if !slices.ContainsFunc(out, func(d cairn.DiskID) bool { return d != "" }) {
		return nil, 0, fmt.Errorf("%w of %s/%s to rebuild its lost shards %v on", ErrNoTarget, t.Bucket, t.Key, lost)
	}
	// The scheme follows where the targets are: on survivors, -Sur.
	onSurvivors := true
	var placed []cairn.DiskID
	for _, d := range out {
		if d != "" {
			onSurvivors = onSurvivors && holding[v.Disks[d].Node]
			placed = append(placed, d)
		}
	}
	scheme := preferred
	switch {
	case onSurvivors && scheme == plan.PushRep:
		// Rep with a replacement that is a helper: still fine as Rep.
	case !onSurvivors && scheme == plan.PushSur:
		scheme = plan.PushRep
	case !onSurvivors && scheme == plan.PullSur:
		scheme = plan.PullRep
	}
	if !scheme.Rep() && len(distinctNodes(placed, v)) > 1 {
		// -Sur stores all of a stripe's rebuilt shards on one survivor;
		// targets on several nodes are a -Rep plan.
		if scheme == plan.PushSur {
			scheme = plan.PushRep
		} else {
			scheme = plan.PullRep
		}
	}
	return out, scheme, nil
}

// pick chooses a writable disk not in used for shard of task id, best
// rank first (placement.Spare).
func pick(id string, shard int, v *View, used map[cairn.DiskID]bool, rank func(cairn.Disk) int) (cairn.DiskID, bool) {
	return pickWhere(id, shard, v, used, func(cairn.Disk) bool { return true }, rank)
}

// pickWhere is pick among the disks ok accepts.
func pickWhere(id string, shard int, v *View, used map[cairn.DiskID]bool, ok func(cairn.Disk) bool, rank func(cairn.Disk) int) (cairn.DiskID, bool) {
	return placement.Spare(v.List, fmt.Sprintf("%s\x00%d", id, shard), func(d cairn.Disk) bool {
		return !used[d.ID] && v.Target(d.ID) && ok(d)
	}, rank)
}

func distinctNodes(ds []cairn.DiskID, v *View) []cairn.NodeID {
	var out []cairn.NodeID
	for _, d := range ds {
		if n := v.Disks[d].Node; !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Choose returns the scheme the time models predict fastest for
// rebuilding f shards of shard bytes each of a stripe of code, between
// the PUSH and PULL form of given, with every node at rates and requests
// of unit bytes (plan.Choose). It returns given without rates, for codes
// that repair from a local group (codec.LocalGroups) or have sub-chunks,
// and when the models cannot say.
func Choose(given plan.Scheme, code codec.Code, f int, shard int64, rates *plan.Rates, unit int64) plan.Scheme {
	p := code.Params()
	if _, local := code.(codec.LocalGroups); local || rates == nil || f < 1 || shard <= 0 || p.Alpha != 1 {
		return given
	}
	m := plan.Model{K: p.K, R: p.M, F: min(f, p.M), SNode: float64(shard), SBlock: float64(min(unit, shard)),
		Survivors: []plan.Rates{*rates}, Replacement: *rates}
	allowed := []plan.Scheme{plan.PushSur, plan.PullSur}
	if given.Rep() {
		allowed = []plan.Scheme{plan.PushRep, plan.PullRep}
	}
	best, _, err := plan.Choose(m, allowed)
	if err != nil {
		return given
	}
	return best.Scheme
}
