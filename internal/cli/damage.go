package cli

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"cairn"
	"cairn/client"
)

// Bounds of a damageReporter (docs/design/scrub.md, "Damage records").
const (
	damageQueue    = 256              // reports waiting to be written; more are dropped
	damageSeen     = 4096             // shards remembered as reported; the set starts over when full
	damageRepeat   = 10 * time.Minute // a shard is reported again after this
	damageTimeout  = 10 * time.Second // bounds one write of a record
	damageDrainFor = 2 * time.Second  // Close waits this long for queued reports
)

// damageStore is where damage records go; meta.Store satisfies it.
type damageStore interface {
	PutDamage(ctx context.Context, d cairn.Damage) error
}

// damageReporter turns the shards a read found corrupt
// (client.Config.OnDamage) into damage records, so the director queues
// their repair. Report never blocks a read: it drops a report when its
// queue is full and skips a shard reported within damageRepeat; one
// goroutine writes the records. Close writes what is queued (for at most
// damageDrainFor) and stops it.
type damageReporter struct {
	store damageStore
	log   *slog.Logger
	queue chan cairn.Damage
	now   func() time.Time

	mu   sync.Mutex
	seen map[cairn.ShardFile]time.Time // guarded by mu: when each shard was last reported

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newDamageReporter(store damageStore, log *slog.Logger) *damageReporter {
	r := &damageReporter{store: store, log: log, queue: make(chan cairn.Damage, damageQueue), now: time.Now,
		seen: map[cairn.ShardFile]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

// damageKind says what a read's error means for the shard: corrupt, or
// "" — not damage the reader can vouch for: the node or disk did not
// answer, the read was cancelled, or the file is not there (the disk's
// directory may have vanished: the node reports that as the disk's fault,
// and a repair rebuilds a missing helper when it meets one).
func damageKind(err error) string {
	if errors.Is(err, cairn.ErrCorrupt) {
		return cairn.DamageCorrupt
	}
	return ""
}

// Report queues a record of d if it is damage, not reported lately, and
// the queue has room. Safe for concurrent use; never blocks.
func (r *damageReporter) Report(d client.Damage) {
	kind := damageKind(d.Err)
	if kind == "" || d.Disk == "" || cairn.ValidateShardName(d.Name) != nil {
		return
	}
	f := cairn.ShardFile{Disk: d.Disk, Name: d.Name}
	now := r.now()
	r.mu.Lock()
	if at, ok := r.seen[f]; ok && now.Sub(at) < damageRepeat {
		r.mu.Unlock()
		return
	}
	if len(r.seen) >= damageSeen {
		clear(r.seen)
	}
	r.seen[f] = now
	r.mu.Unlock()
	detail := d.Err.Error()
	if len(detail) > cairn.MaxDamageDetail {
		detail = detail[:cairn.MaxDamageDetail]
	}
	rec := cairn.Damage{Disk: d.Disk, Shard: d.Name, Kind: kind, Detail: detail, Source: cairn.DamageRead, Found: now}
	select {
	case r.queue <- rec:
	default:
		r.log.Warn("damage reports queue full; dropped (scrub finds it)", "disk", string(d.Disk), "shard", d.Name)
		r.mu.Lock()
		delete(r.seen, f)
		r.mu.Unlock()
	}
}

func (r *damageReporter) run() {
	defer close(r.done)
	for {
		select {
		case d := <-r.queue:
			r.write(context.Background(), d)
		case <-r.stop:
			// Write what is queued, within damageDrainFor in all.
			ctx, cancel := context.WithTimeout(context.Background(), damageDrainFor)
			defer cancel()
			for ctx.Err() == nil {
				select {
				case d := <-r.queue:
					r.write(ctx, d)
				default:
					return
				}
			}
			return
		}
	}
}

func (r *damageReporter) write(ctx context.Context, d cairn.Damage) {
	ctx, cancel := context.WithTimeout(ctx, damageTimeout)
	defer cancel()
	if err := r.store.PutDamage(ctx, d); err != nil {
		r.log.Warn("recording a damaged shard failed", "disk", string(d.Disk), "shard", d.Shard, "err", err)
		return
	}
	r.log.Warn("damaged shard recorded for repair", "disk", string(d.Disk), "shard", d.Shard, "kind", d.Kind)
}

// Close writes the queued reports (for at most damageDrainFor) and stops.
// Idempotent.
func (r *damageReporter) Close() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}
