package repair

// Rebalance: the rebalancer (docs/design/rebalance.md). When the repair
// queue is empty it walks the manifests twice — once for the bytes they
// place on each disk, once offering each stripe to a decide.Balancer —
// and queues the moves the Balancer plans as tasks with Move shards,
// which Work runs like any other (rebuild onto the target, check, swap
// the manifest; the old file is cleaned up after the grace), paced as
// moves are (pace.go).

import (
	"context"
	"errors"
	"time"

	"cairn"
	"cairn/meta"
	"cairn/repair/decide"
)

// DefaultMinSpread is the least spread between the most and the least
// used disk worth moving shards for: below it the placement groups' own
// spread of new objects is left alone (a small cluster's few objects are
// never evenly spread, and moving them would only churn).
const DefaultMinSpread = 1 << 30

// recheckEvery is how long a balanced cluster whose writable disks have
// not changed goes without a rebalancer round (two walks of the
// manifests): new objects shift the use slowly, joining disks at once.
const recheckEvery = 5 * time.Minute

// DefaultTolerance is how far apart the disks' use may be once balanced:
// the least used at least 90% of the most used.
const DefaultTolerance = 0.1

// Balance is what the rebalancer's last round found and did.
type Balance struct {
	At       time.Time // when the round ran; zero: none yet
	Balanced bool      // the disks' use was within tolerance before the round's moves
	Lo, Hi   float64   // least and most use of the target disks, bytes per capacity weight
	Queued   int       // moves the round queued
	Total    int64     // moves queued since the Repairer was made
}

// errPlanned stops a walk once the Balancer has planned its moves.
var errPlanned = errors.New("moves planned")

// Rebalance runs one round of the rebalancer at now and returns how many
// moves it queued: nothing while the repair queue holds any task (repairs
// and drains go first, and a stripe has at most one task) or any disk is
// suspect, down or draining (the cluster is settling: a down node's disks
// would be moved around while its shards are rebuilt), nor for
// recheckEvery after a round found the disks balanced unless the set of
// writable disks changed; else up to MaxMoves moves over the stripes the
// manifests name, in walk order.
func (r *Repairer) Rebalance(ctx context.Context, now time.Time) (int, error) {
	busy := false
	err := meta.EachRepairTask(ctx, r.store, func(cairn.RepairTask) error {
		busy = true
		return errPlanned
	})
	if err != nil && !errors.Is(err, errPlanned) {
		return 0, err
	}
	if busy {
		return 0, nil
	}
	view, err := r.view(ctx, now)
	if err != nil {
		return 0, err
	}
	for _, d := range view.List {
		if d.State == cairn.DiskSuspect || d.State == cairn.DiskDown || d.State == cairn.DiskDraining {
			return 0, nil // the cluster is settling: repair and drains first
		}
	}
	var sig string // the writable disks: a change calls for a round now
	for _, d := range view.List {
		if view.Target(d.ID) {
			sig += string(d.ID) + "\x00"
		}
	}
	r.mu.Lock()
	last, lastSig := r.balance, r.balanceSig
	r.mu.Unlock()
	if last.Balanced && last.Queued == 0 && sig == lastSig && now.Sub(last.At) < recheckEvery {
		return 0, nil
	}
	bytes := map[cairn.DiskID]int64{}
	err = r.walk(ctx, map[cairn.DiskID]int{}, func(_ *cairn.Manifest, st decide.Stripe) error {
		for _, s := range st.Shards {
			bytes[s.Disk] += s.Size
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	tol := r.cfg.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	minSpread := r.cfg.MinSpread
	switch {
	case minSpread == 0:
		minSpread = DefaultMinSpread
	case minSpread < 0:
		minSpread = 0
	}
	b := decide.NewBalancer(view, bytes, tol, minSpread, MaxMoves)
	lo, hi := b.Spread()
	res := Balance{At: now, Balanced: b.Balanced(), Lo: lo, Hi: hi}
	err = r.walk(ctx, map[cairn.DiskID]int{}, func(m *cairn.Manifest, st decide.Stripe) error {
		if b.Full() {
			return errPlanned
		}
		if m.IsOpenPart() {
			// An upload in progress is left where it is: moving its
			// parts would only make its completion read them again
			// (meta.Store.UpdateUploadPart changes its stamp), and it
			// ends soon.
			return nil
		}
		code, err := r.code(m.LayoutCode())
		if err != nil {
			return nil // an unknown policy: not moved
		}
		p := code.Params()
		moves := b.Offer(st, p.N()-p.K)
		if len(moves) == 0 {
			return nil
		}
		t := decide.MoveTask(m, st, decide.Risk(code, 0), moves, now)
		if err := r.store.PutRepairTask(ctx, t); err != nil {
			return err
		}
		res.Queued++
		for _, mv := range moves {
			r.cfg.Logger.Info("rebalance: shard queued to move", "bucket", m.Bucket, "key", m.Key, "part", st.Part,
				"shard", mv.Shard, "from", st.Shards[mv.Shard].Disk, "to", mv.To, "why", mv.Why)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPlanned) {
		return res.Queued, err
	}
	r.mu.Lock()
	r.balance.Total += int64(res.Queued)
	res.Total = r.balance.Total
	r.balance, r.balanceSig = res, sig
	r.mu.Unlock()
	return res.Queued, nil
}

// Balance returns what the rebalancer's last round found and did.
func (r *Repairer) Balance() Balance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.balance
}
