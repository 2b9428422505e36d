package repair

// Scan: finding the stripes that have lost shards (or shards to move off
// a draining disk) and queueing a task for each (decide.NewTask says
// whether a stripe needs one and how risky it is), dropping the tasks of
// stripes whose shards came back, and counting the shards on each disk
// (the census the director's life cycle waits on). The queue lives in the
// metadata store; work.go runs it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"time"

	"cairn"
	"cairn/meta"
	"cairn/repair/decide"
)

// rescanEvery bounds how long Scan trusts its last walk: a repair that
// was already running when a disk went down can land (and delete its
// task) after that walk skipped the stripe, leaving a shard on the newly
// lost disk with no task.
const rescanEvery = 30 * time.Second

// MaxMoves bounds the drain: at most this many tasks that only move
// shards off draining disks are queued at a time; the walk that follows
// (every rescanEvery while a disk drains) queues more as they finish. They
// run after every stripe that lost redundancy (the queue runs riskiest
// first), Config.Parallel at a time, at each node's repair rate.
const MaxMoves = 64

// Scan walks every manifest and queues a task for every stripe with a
// shard on a lost disk (down or out) or on a draining disk (up to
// MaxMoves of those at a time) that is not queued yet, and deletes the
// queued tasks whose stripes have nothing to rebuild any more (their disks
// came back). It returns how many tasks it added. Writes never go to such
// disks, so once a scan has completed, the next ones skip the walk until
// the set of lost and draining disks changes, or, while it is not empty,
// rescanEvery has passed. A complete walk also takes the census
// (Census).
func (r *Repairer) Scan(ctx context.Context, now time.Time) (int, error) {
	disks, err := r.store.Disks(ctx)
	if err != nil {
		return 0, err
	}
	view := decide.NewView(nil, disks) // states only: NewTask needs no addresses
	var lostSet string
	for _, d := range disks {
		if decide.LostDisk(d.State) || decide.Moving(d.State) {
			lostSet += string(d.ID) + ":" + string(d.State) + "\x00"
		}
	}
	damage, err := r.damage(ctx)
	if err != nil {
		return 0, err
	}
	lostSet += damage.sig
	if lostSet == r.scanned && (lostSet == "" || now.Sub(r.scannedAt) < rescanEvery) {
		// A drain's moves queued by the last walk are done once the queue
		// is empty: walk again now, for the next moves and the census
		// that ends the drain, instead of after rescanEvery.
		if !r.scanMoves {
			return 0, nil
		}
		ts, _, err := r.store.RepairTaskPage(ctx, "", 1)
		if err != nil {
			return 0, err
		}
		if len(ts) > 0 {
			return 0, nil
		}
	}
	have := map[string]cairn.RepairTask{}
	moves := 0
	err = meta.EachRepairTask(ctx, r.store, func(t cairn.RepairTask) error {
		have[t.ID] = t
		return nil
	})
	if err != nil {
		return 0, err
	}
	refs := map[cairn.DiskID]int{}
	added := 0
	err = r.walk(ctx, refs, func(m *cairn.Manifest, st decide.Stripe) error {
		id := decide.TaskID(m, st)
		if l := decide.CodedLayout(m, st.Part); l != nil {
			n, err := r.scanCoded(ctx, m, st.Part, l, id, have, damage, view, now) // lt.go
			added += n
			return err
		}
		_, queued := have[id]
		bad := damage.match(st, id, queued)
		if t, ok := have[id]; ok {
			if n := decide.AddBad(&t, bad); n > 0 {
				if err := r.store.PutRepairTask(ctx, t); err != nil {
					return err
				}
				have[id] = t
				r.countDamageQueued(n)
			}
			if len(decide.LostShards(&t, st, view)) == 0 {
				// Its shards came back (or a repair moved them):
				// nothing left to rebuild. Work would drop it too, after
				// its backoff.
				if err := r.store.DeleteRepairTask(ctx, id); err != nil && !errors.Is(err, cairn.ErrNotFound) {
					return err
				}
				delete(have, id)
			} else if decide.OnlyMoves(t, st, view) {
				moves++
			}
			return nil
		}
		code, _ := r.code(m.LayoutCode()) // an unknown policy: risk 0, and the task's run says why
		t, ok := decide.DamagedTask(m, st, code, view, now, bad)
		if !ok {
			return nil
		}
		if decide.OnlyMoves(t, st, view) {
			if moves >= MaxMoves {
				return nil
			}
			moves++
		}
		if err := r.store.PutRepairTask(ctx, t); err != nil {
			return err
		}
		have[t.ID] = t
		added++
		r.countDamageQueued(len(bad))
		return nil
	})
	if err != nil {
		return added, err
	}
	if err := r.settleDamage(ctx, damage); err != nil {
		return added, err
	}
	r.scanned, r.scannedAt, r.scanMoves = lostSet, now, moves > 0
	r.mu.Lock()
	r.census = Census{At: now, Refs: refs}
	r.mu.Unlock()
	return added, nil
}

// walk calls f for every stripe of every committed manifest and of every
// part of the multipart uploads in progress (with the manifest
// cairn.Upload.OpenPart makes of the part), and counts into refs the
// shards each disk holds for them. A stripe's shard counts for the disk
// the manifest or the part places it on; so does a coded block (lt
// objects) for the disk that holds it.
// Every listing is paged: the uploads and each upload's parts are read
// meta.MaxPage at a time.
func (r *Repairer) walk(ctx context.Context, refs map[cairn.DiskID]int, f func(*cairn.Manifest, decide.Stripe) error) error {
	// The uploads first: CompleteUpload moves parts from an upload to its
	// object atomically, so an upload completed after its parts were
	// walked has its object walked too, and none completed before is
	// missed — the census never misses a part that moves meanwhile.
	err := meta.EachUpload(ctx, r.store, "", func(u cairn.Upload) error {
		err := meta.EachPart(ctx, r.store, u.Bucket, u.ID, func(p cairn.Part) error {
			return walkStripes(u.OpenPart(p), refs, f)
		})
		if errors.Is(err, cairn.ErrNotFound) {
			return nil // completed or aborted meanwhile
		}
		return err
	})
	if err != nil {
		return err
	}
	return meta.EachBucket(ctx, r.store, func(b cairn.Bucket) error {
		after := ""
		for {
			ms, more, err := r.store.ListManifests(ctx, b.Name, "", after, 1000)
			if err != nil {
				return err
			}
			for _, m := range ms {
				after = m.Key
				if err := walkStripes(m, refs, f); err != nil {
					return err
				}
			}
			if !more {
				break
			}
		}
		if b.Versioning == "" {
			return nil // no noncurrent versions
		}
		afterKey, afterVersion := "", ""
		for {
			ms, more, err := r.store.ListVersionManifests(ctx, b.Name, afterKey, afterVersion, 1000)
			if err != nil {
				return err
			}
			for _, m := range ms {
				afterKey, afterVersion = m.Key, m.Version
				if err := walkStripes(m, refs, f); err != nil {
					return err
				}
			}
			if !more || len(ms) == 0 {
				return nil
			}
		}
	})
}

// walkStripes calls f for every stripe of m and counts its shards into
// refs (walk).
func walkStripes(m *cairn.Manifest, refs map[cairn.DiskID]int, f func(*cairn.Manifest, decide.Stripe) error) error {
	for _, st := range decide.Stripes(m) {
		for _, s := range st.Shards {
			refs[s.Disk]++
		}
		if l := decide.CodedLayout(m, st.Part); l != nil {
			for _, cs := range l.Coded {
				for _, b := range cs.Blocks {
					refs[b.Disk]++
				}
			}
		}
		if err := f(m, st); err != nil {
			return err
		}
	}
	return nil
}

// Census is what the last complete walk found: how many shards the
// manifests and the multipart uploads in progress place on each disk.
type Census struct {
	At   time.Time            // when the walk started (Scan's now); zero: none yet
	Refs map[cairn.DiskID]int // shards per disk; a disk not in it holds none
}

// Census returns the census of the last complete walk (a copy). Only a
// walk that saw every manifest counts: one that failed midway leaves the
// previous census.
func (r *Repairer) Census() Census {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Census{At: r.census.At, Refs: maps.Clone(r.census.Refs)}
}

// MaxDamage bounds the damage records one Scan reads
// (docs/design/scrub.md): the rest wait for the next scan, once these are
// repaired and gone.
const MaxDamage = 10000

// damageSet is the damage records a Scan read, by shard file, and which
// stripe's task each one matched.
type damageSet struct {
	recs    map[cairn.ShardFile]cairn.Damage
	matched map[cairn.ShardFile]string // the task ID of the stripe naming the file
	healed  map[cairn.ShardFile]bool   // rewritten in place: its task is done
	sig     string                     // changes when the set of records does
}

// damage reads up to MaxDamage damage records.
func (r *Repairer) damage(ctx context.Context) (*damageSet, error) {
	ds := &damageSet{recs: map[cairn.ShardFile]cairn.Damage{}, matched: map[cairn.ShardFile]string{},
		healed: map[cairn.ShardFile]bool{}}
	h := sha256.New()
	after := ""
	for len(ds.recs) < MaxDamage {
		page, more, err := r.store.Damages(ctx, after, min(1000, MaxDamage-len(ds.recs)))
		if err != nil {
			return nil, err
		}
		for _, d := range page {
			after = cairn.DamageKey(d.Disk, d.Shard)
			ds.recs[cairn.ShardFile{Disk: d.Disk, Name: d.Shard}] = d
			h.Write([]byte(after + "\x00"))
		}
		if !more {
			break
		}
	}
	if len(ds.recs) > 0 {
		ds.sig = "damage:" + hex.EncodeToString(h.Sum(nil))
	}
	return ds, nil
}

// match returns the shards of st (by index) with a damage record, and
// notes that they matched task id (queued: whether that task is in the
// queue). A record whose task id was queued for it and is done, though
// the manifest still names the file there, was healed by rewriting the
// file in place (decide.Targets): it is no damage any more.
func (ds *damageSet) match(st decide.Stripe, id string, queued bool) []int {
	if len(ds.recs) == 0 {
		return nil
	}
	var bad []int
	for i, s := range st.Shards {
		f := cairn.ShardFile{Disk: s.Disk, Name: cairn.ShardName(st.Version, st.Row(i))}
		d, ok := ds.recs[f]
		switch {
		case !ok:
		case d.Task == id && !queued:
			ds.healed[f] = true
		default:
			bad = append(bad, i)
			ds.matched[f] = id
		}
	}
	return bad
}

// settleDamage, after a complete walk, records in each matched damage
// record its task, and deletes the records that were healed in place and
// those no manifest names: healed (a repair moved the shard: counted if a
// task was queued for it) or of a file no committed object owns.
func (r *Repairer) settleDamage(ctx context.Context, ds *damageSet) error {
	for f, d := range ds.recs {
		id, ok := ds.matched[f]
		switch {
		case ok && d.Task == id:
		case ok:
			d.Task = id
			if err := r.store.PutDamage(ctx, d); err != nil {
				return err
			}
		default:
			if err := r.store.DeleteDamage(ctx, d.Disk, d.Shard); err != nil && !errors.Is(err, cairn.ErrNotFound) {
				return err
			}
			if d.Task != "" || ds.healed[f] {
				r.mu.Lock()
				r.stats.DamageHealed++
				r.mu.Unlock()
			}
		}
	}
	return nil
}

// countDamageQueued adds n to the damaged shards queued for repair.
func (r *Repairer) countDamageQueued(n int) {
	r.mu.Lock()
	r.stats.DamageQueued += int64(n)
	r.mu.Unlock()
}
