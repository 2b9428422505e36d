package repair

// Pacing moves: the shards of draining disks (and the rebalancer's) are
// moved at a bounded rate in bytes per second, so a drain never takes
// the cluster's bandwidth from its clients. A token bucket on bytes: it
// fills at the rate up to one second's worth, a move takes its bytes out
// (the level may go below zero: a shard larger than a second's worth is
// not refused) and waits until the level is back at zero.

import (
	"context"
	"time"

	"cairn"
	"cairn/repair/decide"
)

// bucket is a token bucket on bytes whose rate may change between takes.
// It is pure: the caller passes the time.
type bucket struct {
	level float64   // bytes available; negative: owed
	last  time.Time // when level was last brought up to date
}

// take removes n bytes at now from a bucket filling at rate bytes per
// second (at most one second's worth kept), and returns how long the
// caller must wait before moving them. rate must be positive.
func (b *bucket) take(now time.Time, rate, n int64) time.Duration {
	r := float64(rate)
	if b.last.IsZero() {
		b.level = r // a fresh bucket is full
	} else if el := now.Sub(b.last); el > 0 {
		b.level = min(r, b.level+r*el.Seconds())
	}
	b.last = now
	b.level -= float64(n)
	if b.level >= 0 {
		return 0
	}
	return time.Duration(-b.level / r * float64(time.Second))
}

// moveRate is the rate a round of t moving shards of st is paced at: the
// lowest MoveRate of the draining disks the round moves them off, or
// Config.MoveRate; 0 if the round rebuilds a shard that is lost (a
// repair, never paced) or no rate is set. The rebalancer's moves
// (t.Move) are moves too.
func (r *Repairer) moveRate(t *cairn.RepairTask, st decide.Stripe, shards []int, v *decide.View) int64 {
	rate := r.cfg.MoveRate
	for _, i := range shards {
		if !decide.IsMove(t, st, i, v) {
			return 0
		}
		d := v.Disks[st.Shards[i].Disk]
		if decide.Moving(d.State) && d.MoveRate > 0 && (rate == 0 || d.MoveRate < rate) {
			rate = d.MoveRate
		}
	}
	return rate
}

// pace waits until n bytes may be moved at rate (0: at once), or ctx
// ends.
func (r *Repairer) pace(ctx context.Context, rate, n int64) error {
	if rate <= 0 {
		return nil
	}
	r.mu.Lock()
	wait := r.moves.take(time.Now(), rate, n)
	r.stats.Moved += n
	r.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
