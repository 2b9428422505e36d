package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/meta"
	"cairn/repair"
	"cairn/repair/decide"
	"cairn/repair/plan"
)

// Judging the repair queue: which of its stripes the director can rebuild
// now and why the others wait, decided by package repair/decide against
// the cluster map, as the director decides. An ETA is given only for what
// can be rebuilt, and only while the director makes progress.

// queueCheckLimit bounds the tasks judged (one manifest read each),
// riskiest first; the rest are counted as rebuildable.
const queueCheckLimit = 1000

// taskJudgement is what can be done about one task now.
type taskJudgement struct {
	Ready int64  // bytes the director can rebuild now
	Wait  string // why (the rest of) the stripe waits; "" when nothing stops it
}

// judgeTask judges task t against its object's manifest m (nil: gone) and
// the cluster map v.
func judgeTask(t *cairn.RepairTask, m *cairn.Manifest, v *decide.View) taskJudgement {
	if m == nil || m.Version != t.Version {
		return taskJudgement{} // the director drops it
	}
	st, ok := decide.FindStripe(m, t.Part)
	if !ok || st.Version != t.Stripe && t.Upload != "" { // a part uploaded again: dropped too
		return taskJudgement{}
	}
	code, err := all.New(m.LayoutCode())
	if err != nil {
		return taskJudgement{Wait: fmt.Sprintf("policy %q: %v", m.LayoutCode(), err)}
	}
	if l := decide.CodedLayout(m, t.Part); l != nil {
		return judgeCoded(t, l, code.Params().K, code.Params().N(), v)
	}
	rd, err := decide.Next(t, st, code, v, plan.PushSur)
	switch {
	case errors.Is(err, decide.ErrNoTarget):
		return taskJudgement{Wait: noTarget(st, m.LayoutCode(), v)}
	case errors.Is(err, cairn.ErrUnavailable):
		lost := decide.LostShards(t, st, v)
		return taskJudgement{Wait: fmt.Sprintf("too few readable shards to rebuild from (%d of %d): a disk must come back",
			len(decide.Available(st, lost, v)), len(st.Shards))}
	case err != nil:
		return taskJudgement{Wait: err.Error()}
	}
	shards, _ := rd.Placed()
	var j taskJudgement
	for _, i := range shards {
		j.Ready += st.Shards[i].Size
	}
	if len(shards) < len(rd.Lost) {
		j.Wait = fmt.Sprintf("%d of its %d lost shards: %s", len(rd.Lost)-len(shards), len(rd.Lost), noTarget(st, m.LayoutCode(), v))
	}
	if j.Wait == "" && t.Attempts >= stuckAttempts {
		// Rebuildable as far as the cluster map says, yet every attempt
		// fails: no ETA counts on it; its last error is the reason.
		return taskJudgement{Wait: "its repair keeps failing; last error: " + t.LastError}
	}
	return j
}

// judgeCoded is judgeTask for an lt task: its coded stripes of layout l
// (k source blocks, n blocks each) as the repair plans them
// (decide.PlanCoded): the new blocks with a disk are ready, those without
// one wait.
func judgeCoded(t *cairn.RepairTask, l *cairn.Layout, k, n int, v *decide.View) taskJudgement {
	var j taskJudgement
	for _, s := range decide.CodedWork(l, n, v, t.BadBlocks) {
		cs := &l.Coded[s]
		pl, err := decide.PlanCoded(cs, k, n, v, t.BadBlocks)
		switch {
		case err != nil:
			j.Wait = err.Error()
		case len(pl.Helpers) < k:
			j.Wait = fmt.Sprintf("too few readable blocks to decode coded stripe %d from (%d, %d needed): a disk must come back", s, len(pl.Helpers), k)
		default:
			j.Ready += int64(len(pl.New)) * int64(cmp.Or(cs.BlockSize, l.BlockSize))
			if pl.Short > 0 && j.Wait == "" {
				j.Wait = fmt.Sprintf("coded stripe %d is %d blocks short: no writable disk within its bounds (%d blocks a disk, %d a node)",
					s, pl.Short, pl.Bounds.PerDisk, pl.Bounds.PerNode)
			}
		}
	}
	if j.Wait == "" && t.Attempts >= stuckAttempts {
		return taskJudgement{Wait: "its repair keeps failing; last error: " + t.LastError}
	}
	return j
}

// stuckAttempts is how many failed attempts in a row make a stripe that
// the decisions find rebuildable count as not progressing: judged waiting,
// with its last error as the reason, instead of in the ETA (issue #24).
const stuckAttempts = 3

// noTarget says why a stripe has no disk to rebuild onto: "no writable
// disk outside the stripe (6-wide rs-4-2 on 8 disks, 2 down)".
func noTarget(st decide.Stripe, policy string, v *decide.View) string {
	states := map[cairn.DiskState]int{}
	for _, d := range v.List {
		if !d.State.Writable() {
			states[d.State]++
		}
	}
	var not []string
	for _, s := range []cairn.DiskState{cairn.DiskDown, cairn.DiskOut, cairn.DiskSuspect, cairn.DiskDraining} {
		if n := states[s]; n > 0 {
			not = append(not, fmt.Sprintf("%d %s", n, s))
		}
	}
	where := fmt.Sprintf("%d-wide %s on %s", len(st.Shards), policy, plural(len(v.List), "disk"))
	if len(not) > 0 {
		where += ", " + strings.Join(not, ", ")
	}
	return fmt.Sprintf("%s (%s)", decide.ErrNoTarget, where)
}

// queueReport is the repair queue judged.
type queueReport struct {
	Tasks   int
	Bytes   int64             // to rebuild in all
	Ready   int64             // of Bytes, what the director can rebuild now
	Waiting []waitGroup       // by reason, most stripes first
	Why     map[string]string // task ID → why it waits ("" or absent: nothing stops it)
	Checked int               // tasks judged (the first queueCheckLimit)
	Failing int               // tasks whose last attempt failed
}

// waitGroup is the stripes that wait for one reason.
type waitGroup struct {
	Reason  string `json:"reason"`
	Stripes int    `json:"stripes"`
	Bytes   int64  `json:"bytes"` // of them, what waits
}

// judgeQueue judges the tasks ts (riskiest first) against the cluster map
// and the manifests in store.
func judgeQueue(ctx context.Context, store meta.Store, ts []cairn.RepairTask) (queueReport, error) {
	r := queueReport{Tasks: len(ts), Why: map[string]string{}}
	for _, t := range ts {
		r.Bytes += t.Bytes
		if t.Attempts > 0 {
			r.Failing++
		}
	}
	if len(ts) == 0 {
		return r, nil
	}
	nodes, err := store.Nodes(ctx)
	if err != nil {
		return r, err
	}
	disks, err := store.Disks(ctx)
	if err != nil {
		return r, err
	}
	v := decide.NewView(nodes, disks)
	groups := map[string]*waitGroup{}
	for i := range ts {
		t := &ts[i]
		if i >= queueCheckLimit {
			r.Ready += t.Bytes
			continue
		}
		if t.RAIDP != nil { // a RAIDP recovery step names no object: it can run
			r.Checked++
			r.Ready += t.Bytes
			continue
		}
		var m *cairn.Manifest
		if t.Upload != "" { // a part of an upload in progress
			m, err = repair.OpenPart(ctx, store, t)
		} else {
			m, err = store.Manifest(ctx, t.Bucket, t.Key)
		}
		if err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return r, err
		}
		r.Checked++
		j := judgeTask(t, m, v)
		r.Ready += j.Ready
		if j.Wait == "" {
			continue
		}
		r.Why[t.ID] = j.Wait
		g := groups[j.Wait]
		if g == nil {
			g = &waitGroup{Reason: j.Wait}
			groups[j.Wait] = g
		}
		g.Stripes++
		g.Bytes += max(0, t.Bytes-j.Ready)
	}
	for _, g := range groups {
		r.Waiting = append(r.Waiting, *g)
	}
	slices.SortFunc(r.Waiting, func(a, b waitGroup) int {
		if a.Stripes != b.Stripes {
			return b.Stripes - a.Stripes
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return r, nil
}

// staleProgress is how old the director's progress report may be before
// it is taken to have stopped reporting (it reports at least every 30 s).
const staleProgress = 2 * time.Minute

// eta says how long rebuilding the queue's rebuildable bytes takes at the
// director's recent rate: "ETA 1.1 s" — or, when it cannot be said, why
// not: "no ETA: no shard rebuilt in the last 30 s".
func (r queueReport) eta(p *cairn.RepairProgress, now time.Time) string {
	switch {
	case r.Ready == 0:
		return "no ETA: nothing can be rebuilt now"
	case p == nil:
		return "no ETA yet: the director has reported no repair"
	case now.Sub(p.Updated) > staleProgress:
		return fmt.Sprintf("no ETA: the director has reported no progress since %s", p.Updated.Local().Format(time.DateTime))
	case p.Rate <= 0 && r.Failing > 0:
		return fmt.Sprintf("no ETA: no shard rebuilt lately (the last attempt failed for %s)", plural(r.Failing, "stripe"))
	case p.Rate <= 0:
		return "no ETA yet: no shard rebuilt lately"
	}
	return "ETA " + seconds(float64(r.Ready)/p.Rate)
}

// summary is one line on the queue for cairn admin status: "3 stripes
// with lost shards, 1.5 MiB to rebuild, ETA 1.1 s; 2 wait: no writable
// disk outside the stripe (…)".
func (r queueReport) summary(p *cairn.RepairProgress, now time.Time) string {
	if r.Tasks == 0 {
		return "nothing to repair"
	}
	s := fmt.Sprintf("%s with lost shards, %s to rebuild", plural(r.Tasks, "stripe"), fmtBytes(r.Bytes))
	if r.Ready > 0 {
		s += ", " + r.eta(p, now)
		if r.Ready < r.Bytes {
			s += " for " + fmtBytes(r.Ready)
		}
	}
	for i, g := range r.Waiting {
		if i == 0 {
			s += fmt.Sprintf("; %d wait: %s", g.Stripes, g.Reason)
		} else {
			s += fmt.Sprintf(" (and %s for other reasons)", plural(r.waiting()-r.Waiting[0].Stripes, "stripe"))
			break
		}
	}
	return s
}

// waiting is the number of stripes that wait, in whole or in part.
func (r queueReport) waiting() int {
	n := 0
	for _, g := range r.Waiting {
		n += g.Stripes
	}
	return n
}
