package repair

// Work: running the queue. Each task runs in rounds: read the manifest and
// the cluster map, let package repair/decide choose the lost shards, their
// targets, the scheme and the node calls, persist the task's choices, run
// the calls on the executor, and hand the rebuilt shards to commit
// (commit.go). A helper found bad re-plans without it; a target that
// fails (targetFault) is avoided for Config.AvoidTarget and the round is
// re-planned onto another disk at once; any other failed attempt is
// recorded in the queue with a backoff: doubling from 1 s after a
// transient error, MaxBackoff at once after a permanent one
// (cairn.IsPermanent).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/codec"
	"cairn/meta"
	"cairn/node/wire"
	"cairn/repair/decide"
	"cairn/repair/plan"
)

// WorkBatch bounds one Work call: it reads the queue in its order
// (riskiest first) a page at a time until it has the WorkBatch riskiest
// due tasks; the next call (the director's repair duty runs every second)
// takes the next batch, so a riskier task queued meanwhile waits at most
// one batch.
const WorkBatch = 1000

// Work runs the due tasks of the queue, riskiest first, Parallel at a
// time, until the WorkBatch riskiest due tasks have been attempted once or
// ctx ends. It returns the number of tasks completed.
func (r *Repairer) Work(ctx context.Context, now time.Time) (int, error) {
	tasks, err := meta.RiskiestRepairTasks(ctx, r.store, WorkBatch, func(t cairn.RepairTask) bool {
		return !t.NotBefore.After(now)
	})
	if err != nil {
		return 0, err
	}
	var g errgroup.Group // not WithContext: one failing task never stops the others
	g.SetLimit(r.cfg.Parallel)
	var done atomic.Int64
	for _, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() == nil && r.attempt(ctx, t, now) {
				done.Add(1)
			}
			return nil // attempt records a failure in the task
		})
	}
	_ = g.Wait()
	return int(done.Load()), ctx.Err()
}

// attempt runs one task and records the outcome in the queue; it reports
// whether the task is finished (repaired or dropped).
func (r *Repairer) attempt(ctx context.Context, t cairn.RepairTask, now time.Time) bool {
	start := time.Now() // for Stats only; decisions take no clock reads
	res, err := r.run(ctx, &t, now)
	r.mu.Lock()
	permanent := err != nil && ctx.Err() == nil && cairn.IsPermanent(err)
	r.stats.Busy += time.Since(start)
	r.stats.HelpersMarked += res.marked
	r.stats.TargetsFailed += res.avoided
	r.stats.Shards += res.shards // a partial repair counts too
	r.stats.Bytes += res.bytes
	if res.shards > 0 {
		if r.stats.Schemes == nil {
			r.stats.Schemes = map[string]int{}
		}
		name := res.scheme.String()
		if res.coded {
			name = "lt"
		}
		r.stats.Schemes[name]++
	}
	switch {
	case err == nil && res.dropped:
		r.stats.Dropped++
	case err == nil:
		r.stats.Repaired++
	default:
		r.stats.Failed++
		if permanent {
			r.stats.Permanent++
		}
	}
	r.mu.Unlock()
	if err == nil {
		if derr := r.store.DeleteRepairTask(context.WithoutCancel(ctx), t.ID); derr != nil && !errors.Is(derr, cairn.ErrNotFound) {
			r.cfg.Logger.Warn("repair: task done but not dequeued; it will run again harmlessly", "task", t.ID, "err", derr)
		}
		return true
	}
	if ctx.Err() != nil {
		return false // stopping (e.g. leadership lost): the task stays as it was
	}
	t.Attempts++
	t.LastError = err.Error()
	wait := r.backoff.Delay(t.Attempts - 1)
	if permanent {
		// Trying again soon meets the same failure (a rebuilt shard that
		// differs from the manifest, no disk with space); the cluster may
		// still change, so the task is kept, and waits the longest.
		wait = r.cfg.MaxBackoff
		t.LastError = "permanent: " + t.LastError
	}
	t.NotBefore = now.Add(wait)
	r.cfg.Logger.Warn("repair: attempt failed; will retry", "task", t.ID, "bucket", t.Bucket, "key", t.Key, "part", t.Part,
		"attempt", t.Attempts, "permanent", permanent, "after", wait, "err", err)
	if perr := r.store.PutRepairTask(context.WithoutCancel(ctx), t); perr != nil {
		r.cfg.Logger.Warn("repair: recording a failed attempt", "task", t.ID, "err", perr)
	}
	return false
}

// result is what one run did.
type result struct {
	dropped bool
	shards  int
	bytes   int64
	marked  int
	avoided int         // targets that failed and were replaced
	scheme  plan.Scheme // the scheme of the round that rebuilt shards (when shards > 0)
	coded   bool        // an lt object's stripes: new blocks decoded and encoded (lt.go), no scheme
}

// run repairs one task's stripe now: it re-reads the manifest and the
// cluster map, rebuilds every lost shard onto its target, checks the
// rebuilt shards against the manifest's checksums and updates the
// manifest. t's Lost and Targets may be updated (helpers found bad,
// targets chosen) and are persisted before any shard is written. now is
// the time a failed target is avoided from.
func (r *Repairer) run(ctx context.Context, t *cairn.RepairTask, now time.Time) (result, error) {
	if t.RAIDP != nil {
		return r.runRAIDP(ctx, t) // raidp.go
	}
	var res result
	for range 4 { // re-plans after a bad helper, a bounded number of times
		m, err := r.manifest(ctx, t)
		if t.Upload != "" && errors.Is(err, errUploadGone) {
			// Aborted, or completed: the rebuilt files are left to the
			// orphan collector, for the object a completion committed
			// may name the very same files once its own task rebuilds
			// them (docs/design/repair.md, "Parts of uploads in
			// progress").
			res.dropped = true
			r.cfg.Logger.Info("repair: upload ended meanwhile; task dropped", "task", t.ID, "bucket", t.Bucket, "key", t.Key,
				"upload", t.Upload, "part", t.Part)
			return res, nil
		}
		if errors.Is(err, cairn.ErrNotFound) || err == nil && m.Version != t.Version {
			res.dropped = true
			r.deleteTargets(ctx, t)
			return res, nil
		}
		if err != nil {
			return res, err
		}
		if decide.CodedLayout(m, t.Part) != nil {
			return r.runCoded(ctx, t, now) // lt.go
		}
		st, ok := decide.FindStripe(m, t.Part)
		if ok && t.Upload != "" && st.Version != t.Stripe {
			// The part was uploaded again: the stripe the task was made
			// for is gone for good (the upload's completion can name
			// only the new one), and so are its rebuilt files.
			res.dropped = true
			r.deleteTargets(ctx, t)
			return res, nil
		}
		if !ok {
			res.dropped = true
			return res, nil
		}
		view, err := r.view(ctx, now)
		if err != nil {
			return res, err
		}
		code, err := r.code(m.LayoutCode())
		if err != nil {
			return res, fmt.Errorf("policy of %s/%s: %w", m.Bucket, m.Key, err)
		}
		if err := validStored(m, t.Part, code); err != nil {
			return res, err
		}
		rd, err := decide.Next(t, st, code, view, r.cfg.Scheme)
		if err != nil {
			return res, err
		}
		if len(rd.Lost) == 0 {
			return res, nil // nothing left to do (e.g. the disk came back)
		}
		if !slices.Equal(t.Lost, rd.Lost) || !slices.Equal(t.Targets, rd.Targets) || !maps.Equal(t.SpareRows, st.SpareRows()) ||
			!slices.Equal(t.InPlace, rd.InPlace) {
			t.Lost, t.Targets, t.SpareRows, t.InPlace = rd.Lost, rd.Targets, st.SpareRows(), rd.InPlace
			if err := r.store.PutRepairTask(ctx, *t); err != nil {
				return res, err
			}
		}
		// This round rebuilds the shards that have a target.
		shards, onto := rd.Placed()
		scheme := decide.Choose(rd.Scheme, code, len(shards), st.Shards[shards[0]].Size, r.cfg.Rates, r.cfg.Unit)
		if err := r.pace(ctx, r.moveRate(t, st, shards, view), int64(len(shards))*st.Shards[shards[0]].Size); err != nil {
			return res, err
		}
		infos, err := r.rebuild(ctx, t, m, shards, onto, st, rd.Code, scheme, view)
		if d, ok := targetFault(err, st, shards, onto); ok && ctx.Err() == nil {
			// Not the stripe's fault: the next round picks another disk
			// (the task's target for the shard is replaced and persisted).
			r.cfg.Logger.Warn("repair: target failed; re-planning onto another disk", "task", t.ID, "bucket", t.Bucket, "key", t.Key,
				"disk", d, "avoid", r.cfg.AvoidTarget, "err", err)
			r.avoidTarget(d, now)
			res.avoided++
			continue
		}
		var ne *wire.Error
		if err != nil && errors.As(err, &ne) && isHelperFault(ne) && decide.HelperIndex(st, ne.Disk, ne.Shard) >= 0 {
			i := decide.HelperIndex(st, ne.Disk, ne.Shard)
			r.cfg.Logger.Warn("repair: helper shard is bad; re-planning without it", "task", t.ID, "bucket", t.Bucket, "key", t.Key,
				"shard", i, "disk", ne.Disk, "err", err)
			res.marked++
			// Aligned with Targets (no target yet); the next round sorts
			// both out.
			t.Lost, t.Targets, t.Bad = append(t.Lost, i), append(t.Targets, ""), append(t.Bad, i)
			continue
		}
		if err != nil {
			return res, err
		}
		changed, err := r.commit(ctx, t, m, st, shards, onto, infos)
		if changed {
			continue // the manifest changed meanwhile: look again
		}
		if err != nil {
			return res, err
		}
		res.shards, res.bytes, res.scheme = len(shards), int64(len(shards))*st.Shards[shards[0]].Size, scheme
		r.cfg.Logger.Info("repair: stripe repaired", "task", t.ID, "bucket", t.Bucket, "key", t.Key, "part", t.Part,
			"shards", shards, "targets", onto, "scheme", scheme)
		if len(shards) < len(t.Lost) {
			return res, fmt.Errorf("rebuilt %d of the %d lost shards of %s/%s part %d; %w for the rest",
				len(shards), len(t.Lost), t.Bucket, t.Key, t.Part, decide.ErrNoTarget)
		}
		return res, nil
	}
	return res, fmt.Errorf("repair of %s/%s part %d: gave up after repeated re-plans", t.Bucket, t.Key, t.Part)
}

// manifest reads what a task's round decides on: the object's manifest,
// or for a part's stripe the manifest with only that part
// (Store.ManifestPart), so that a part's repair costs the same whatever
// the number of parts.
//
// A task made for a version that is not current (any more) reads that
// version, which a versioned bucket keeps as a noncurrent one
// (docs/design/versioning.md): whole, parts and all. If it is gone too,
// the current manifest is returned, whose version tells the task it is
// stale.
func (r *Repairer) manifest(ctx context.Context, t *cairn.RepairTask) (*cairn.Manifest, error) {
	if t.Upload != "" {
		return OpenPart(ctx, r.store, t)
	}
	var m *cairn.Manifest
	var err error
	if t.Part == 0 {
		m, err = r.store.Manifest(ctx, t.Bucket, t.Key)
	} else {
		m, err = r.store.ManifestPart(ctx, t.Bucket, t.Key, t.Part)
	}
	if t.Version == "" || err == nil && m.Version == t.Version || err != nil && !errors.Is(err, cairn.ErrNotFound) {
		return m, err
	}
	v, verr := r.store.ObjectVersion(ctx, t.Bucket, t.Key, t.Version)
	if verr != nil || v.Manifest == nil {
		return m, err
	}
	if t.Part == 0 {
		return v.Manifest, nil
	}
	nm := *v.Manifest
	for _, p := range v.Manifest.Parts {
		if p.Number == t.Part {
			nm.Parts = []cairn.Part{p} // as ManifestPart: the part alone
			return &nm, nil
		}
	}
	return m, err
}

// errUploadGone: the upload of a task's part in progress is no longer in
// progress (aborted or completed).
var errUploadGone = fmt.Errorf("upload ended: %w", cairn.ErrNotFound)

// UploadPartReader is the part of the metadata store OpenPart reads;
// meta.Store satisfies it.
type UploadPartReader interface {
	Upload(ctx context.Context, bucket, id string) (cairn.Upload, error)
	PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error)
}

// OpenPart reads what the task t of a part of an upload in progress
// (t.Upload set) decides on: the part, as cairn.Upload.OpenPart shows it,
// read alone (PartPage of one part), whatever its version (a part
// uploaded again is not t's stripe: compare its version with t.Stripe).
// An error wrapping cairn.ErrNotFound if the upload (or the part) is gone:
// aborted or completed.
func OpenPart(ctx context.Context, s UploadPartReader, t *cairn.RepairTask) (*cairn.Manifest, error) {
	u, err := s.Upload(ctx, t.Bucket, t.Upload)
	if errors.Is(err, cairn.ErrNotFound) || err == nil && u.Key != t.Key {
		return nil, errUploadGone
	}
	if err != nil {
		return nil, err
	}
	ps, _, err := s.PartPage(ctx, t.Bucket, t.Upload, t.Part-1, 1)
	if errors.Is(err, cairn.ErrNotFound) || err == nil && (len(ps) == 0 || ps[0].Number != t.Part) {
		return nil, errUploadGone
	}
	if err != nil {
		return nil, err
	}
	return u.OpenPart(ps[0]), nil
}

// validStored checks the stored manifest m read for a task's stripe
// (part: see manifest): the whole manifest, or the part as the
// single-part object it is laid out as.
func validStored(m *cairn.Manifest, part int, code codec.Code) error {
	k, n := code.Params().K, code.Params().N()
	if part == 0 || len(m.Parts) != 1 {
		return m.ValidateStored(k, n)
	}
	return m.PartManifest(m.Parts[0]).ValidateStored(k, n)
}

// isHelperFault reports whether a node's error blames a helper shard's
// content (missing or corrupt), which another round can route around.
func isHelperFault(e *wire.Error) bool {
	return errors.Is(e, cairn.ErrCorrupt) || errors.Is(e, cairn.ErrNotFound)
}

// targetFault reports whether err, from rebuilding shards of st onto
// targets onto, blames one of the targets and is about the disk rather
// than the stripe — missing (cairn.ErrNotFound: the disk was replaced or
// removed), full (cairn.ErrNoSpace), or failing to take the write (a
// transient error: an I/O error, its node unreachable) — and names it.
// Such a failure is no reason to park the task: another disk can take the
// shard now. A rebuilt shard found corrupt or a request found invalid is
// not a target's fault; a helper's error does not name a target (a shard
// rewritten in place is lost, not a helper).
func targetFault(err error, st decide.Stripe, shards []int, onto []cairn.DiskID) (cairn.DiskID, bool) {
	var ne *wire.Error
	if err == nil || !errors.As(err, &ne) || ne.Disk == "" {
		return "", false
	}
	j := slices.Index(onto, ne.Disk)
	if j < 0 {
		return "", false
	}
	if h := decide.HelperIndex(st, ne.Disk, ne.Shard); h >= 0 && !slices.Contains(shards, h) {
		return "", false // a helper on the disk (not a target's shard)
	}
	if errors.Is(ne, cairn.ErrNotFound) || errors.Is(ne, cairn.ErrNoSpace) || !cairn.IsPermanent(ne) {
		return ne.Disk, true
	}
	return "", false
}

// avoidTarget keeps disk out of the targets until now+AvoidTarget.
func (r *Repairer) avoidTarget(disk cairn.DiskID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.avoid == nil {
		r.avoid = map[cairn.DiskID]time.Time{}
	}
	r.avoid[disk] = now.Add(r.cfg.AvoidTarget)
}

// avoided returns the disks not to choose as targets at now, dropping the
// entries that expired.
func (r *Repairer) avoided(now time.Time) map[cairn.DiskID]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[cairn.DiskID]bool, len(r.avoid))
	for d, until := range r.avoid {
		if !now.Before(until) {
			delete(r.avoid, d)
			continue
		}
		out[d] = true
	}
	return out
}

// view reads the cluster map a round decides against at now, with the
// targets that failed lately avoided.
func (r *Repairer) view(ctx context.Context, now time.Time) (*decide.View, error) {
	nodes, err := r.store.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	disks, err := r.store.Disks(ctx)
	if err != nil {
		return nil, err
	}
	v := decide.NewView(nodes, disks)
	v.Avoid = r.avoided(now)
	return v, nil
}

// rebuild runs the node calls that rebuild shards[j] onto targets[j]
// (decide.Jobs) one after the other and returns what was stored, in
// shards order. code decodes the stripe (decide.StripeCode); m is the
// manifest st is of, which names the rebuilt files' identities.
func (r *Repairer) rebuild(ctx context.Context, t *cairn.RepairTask, m *cairn.Manifest, shards []int, targets []cairn.DiskID, st decide.Stripe, code codec.Code, scheme plan.Scheme, view *decide.View) ([]wire.ShardInfo, error) {
	jobs, err := decide.Jobs(t, shards, targets, st, code, scheme, view, r.cfg.Unit)
	if err != nil {
		return nil, err
	}
	decide.IdentifyTargets(jobs, m, st.Part)
	infos := make([]wire.ShardInfo, len(shards))
	for _, job := range jobs {
		var got []wire.ShardInfo
		switch job.Op {
		case decide.Create:
			var info wire.ShardInfo
			tg := job.Spec.Store[0]
			if ip, ok := r.exec.(identifiedPutter); ok && tg.Identity != nil {
				info, err = ip.PutShardIdentified(ctx, tg.Disk, tg.Shard, tg.Identity, bytes.NewReader(nil))
			} else {
				info, err = r.exec.PutShard(ctx, tg.Disk, tg.Shard, bytes.NewReader(nil))
			}
			got = []wire.ShardInfo{info}
		case decide.Pull:
			got, err = r.exec.Pull(ctx, job.Puller, job.Spec)
		default:
			got, err = r.exec.Push(ctx, job.Spec)
		}
		if err != nil {
			return nil, err
		}
		if len(got) != len(job.Spec.Store) {
			return nil, fmt.Errorf("%w: the node stored %d shards, %d were asked", cairn.ErrUnavailable, len(got), len(job.Spec.Store))
		}
		for j, k := range job.Into {
			infos[k] = got[j]
		}
	}
	return infos, nil
}
