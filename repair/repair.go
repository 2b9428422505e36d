package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/node/wire"
	"cairn/placement"
	"cairn/repair/plan"
)

// Store is the part of the metadata store the repairer uses; meta.Store
// satisfies it.
type Store interface {
	Nodes(ctx context.Context) ([]cairn.Node, error)
	Disks(ctx context.Context) ([]cairn.Disk, error)
	Buckets(ctx context.Context) ([]cairn.Bucket, error)
	ListManifests(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]*cairn.Manifest, bool, error)
	Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
	UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error
	PutRepairTask(ctx context.Context, t cairn.RepairTask) error
	RepairTasks(ctx context.Context) ([]cairn.RepairTask, error)
	DeleteRepairTask(ctx context.Context, id string) error
}

// Executor runs repairs on the storage nodes; node.Client satisfies it.
// Errors that blame a helper or a target are *wire.Error naming its disk
// and shard.
type Executor interface {
	Push(ctx context.Context, spec wire.RepairSpec) ([]wire.ShardInfo, error)
	Pull(ctx context.Context, puller string, spec wire.RepairSpec) ([]wire.ShardInfo, error)
	PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error)
	DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error
}

// Config configures a Repairer. Zero values take defaults.
type Config struct {
	// Scheme is the preferred scheme (default plan.PushSur).
	Scheme plan.Scheme
	// Rates, if set, are the nodes' measured rates, and each task's
	// scheme is chosen by the time models (plan.Choose) between the PUSH
	// and PULL form that its targets allow (-Sur when they are on a
	// survivor, else -Rep). Codes whose repair reads a local group (LRC)
	// keep Scheme.
	Rates *plan.Rates
	// Unit is the request unit in bytes (default 1 MiB).
	Unit int64
	// Parallel is how many tasks run at once (default 2).
	Parallel int
	// MaxBackoff caps the wait before a failed task is retried (default
	// 5 min); the wait doubles from 1 s with each attempt.
	MaxBackoff time.Duration
	Logger     *slog.Logger
}

// Repairer scans for and runs repair tasks. Its methods are safe to call
// from one goroutine at a time (the director's leader loop).
type Repairer struct {
	store Store
	exec  Executor
	cfg   Config

	mu    sync.Mutex
	stats Stats                 // guarded by mu
	codes map[string]codec.Code // by policy; guarded by mu

	scanned   string    // the lost disks the last complete Scan saw
	scannedAt time.Time // when it completed
}

// rescanEvery bounds how long Scan trusts its last walk: a repair that
// was already running when a disk went down can land (and delete its
// task) after that walk skipped the stripe, leaving a shard on the newly
// lost disk with no task.
const rescanEvery = 30 * time.Second

// Stats counts what a Repairer did since it was made.
type Stats struct {
	Repaired      int           // tasks completed
	Shards        int           // shards rebuilt
	Bytes         int64         // bytes rebuilt
	Busy          time.Duration // time spent running tasks (summed over parallel tasks)
	Failed        int           // failed attempts
	Dropped       int           // tasks dropped (object overwritten or deleted)
	HelpersMarked int           // helper shards found missing or corrupt
}

// New returns a Repairer.
func New(store Store, exec Executor, cfg Config) *Repairer {
	if cfg.Scheme == 0 {
		cfg.Scheme = plan.PushSur
	}
	if cfg.Unit <= 0 {
		cfg.Unit = 1 << 20
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 2
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Repairer{store: store, exec: exec, cfg: cfg}
}

// Stats returns the counters so far.
func (r *Repairer) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// lostDisk reports whether shards on a disk in state s are gone for good
// (to be rebuilt), as opposed to temporarily unreachable (suspect).
func lostDisk(s cairn.DiskState) bool { return s == cairn.DiskDown || s == cairn.DiskFailed }

// stripe is one shard set of a manifest.
type stripe struct {
	part    int // 0: the object; n: part n
	version string
	shards  []cairn.ShardLoc
}

// row returns the code row shard i holds (and names its file).
func (st stripe) row(i int) int { return cairn.RowOf(st.shards, i) }

// spareRows returns the shards holding spare rows, by index (nil if none).
func (st stripe) spareRows() map[int]int {
	var out map[int]int
	for i, s := range st.shards {
		if s.Row != 0 {
			if out == nil {
				out = map[int]int{}
			}
			out[i] = s.Row
		}
	}
	return out
}

// stripeCode returns the code that decodes st: the policy's code, or the
// code extended to the spare rows some of its shards hold.
func stripeCode(code codec.Code, st stripe) (codec.Code, error) {
	rows := cairn.Rows(st.shards)
	if rows == code.Params().N() {
		return code, nil
	}
	x, ok := code.(codec.Extensible)
	if !ok {
		return nil, fmt.Errorf("%w: a shard holds row %d, and the code has no spare rows", cairn.ErrCorrupt, rows-1)
	}
	return x.ExtendTo(rows)
}

func stripes(m *cairn.Manifest) []stripe {
	if len(m.Parts) == 0 {
		return []stripe{{0, m.Version, m.Shards}}
	}
	out := make([]stripe, len(m.Parts))
	for i, p := range m.Parts {
		out[i] = stripe{p.Number, p.Version, p.Shards}
	}
	return out
}

func findStripe(m *cairn.Manifest, part int) (stripe, bool) {
	for _, s := range stripes(m) {
		if s.part == part {
			return s, true
		}
	}
	return stripe{}, false
}

// Scan walks every manifest and queues a task for every stripe with a
// shard on a down or failed disk that is not queued yet. It returns how
// many tasks it added. Writes never go to such disks, so once a scan has
// completed, the next ones skip the walk until the set of lost disks
// changes, or rescanEvery has passed.
func (r *Repairer) Scan(ctx context.Context, now time.Time) (int, error) {
	disks, err := r.store.Disks(ctx)
	if err != nil {
		return 0, err
	}
	state := make(map[cairn.DiskID]cairn.DiskState, len(disks))
	var lostSet string
	for _, d := range disks {
		state[d.ID] = d.State
		if lostDisk(d.State) {
			lostSet += string(d.ID) + "\x00"
		}
	}
	if lostSet == "" || lostSet == r.scanned && now.Sub(r.scannedAt) < rescanEvery {
		return 0, nil
	}
	queued, err := r.store.RepairTasks(ctx)
	if err != nil {
		return 0, err
	}
	have := make(map[string]bool, len(queued))
	for _, t := range queued {
		have[t.ID] = true
	}
	buckets, err := r.store.Buckets(ctx)
	if err != nil {
		return 0, err
	}
	added := 0
	for _, b := range buckets {
		after := ""
		for {
			ms, more, err := r.store.ListManifests(ctx, b.Name, "", after, 1000)
			if err != nil {
				return added, err
			}
			for _, m := range ms {
				after = m.Key
				for _, st := range stripes(m) {
					code, _ := r.code(m.Policy) // an unknown policy: risk 0, and Run says why
					t, ok := newTask(m, st, code, state, now)
					if !ok || have[t.ID] {
						continue
					}
					if err := r.store.PutRepairTask(ctx, t); err != nil {
						return added, err
					}
					have[t.ID] = true
					added++
				}
			}
			if !more {
				break
			}
		}
	}
	r.scanned, r.scannedAt = lostSet, now
	return added, nil
}

// newTask returns the task for a stripe if it has lost shards.
func newTask(m *cairn.Manifest, st stripe, code codec.Code, state map[cairn.DiskID]cairn.DiskState, now time.Time) (cairn.RepairTask, bool) {
	var lost []int
	unavailable := 0
	var size int64
	for i, s := range st.shards {
		ds, known := state[s.Disk]
		switch {
		case !known || lostDisk(ds):
			lost = append(lost, i)
			size = max(size, s.Size)
		case !ds.Readable():
			unavailable++
		}
	}
	if len(lost) == 0 {
		return cairn.RepairTask{}, false
	}
	t := cairn.RepairTask{
		ID:        cairn.RepairTaskID(m.Bucket, m.Key, m.Version, st.part),
		Bucket:    m.Bucket,
		Key:       m.Key,
		Version:   m.Version,
		Part:      st.part,
		Stripe:    st.version,
		Policy:    m.Policy,
		Lost:      lost,
		SpareRows: st.spareRows(),
		Bytes:     size * int64(len(lost)),
		Created:   now,
	}
	t.Risk = risk(code, len(lost)+unavailable)
	return t, true
}

// risk is how many more shards a stripe of code can lose after gone
// (0 if the policy is unknown).
func risk(code codec.Code, gone int) int {
	if code == nil {
		return 0
	}
	p := code.Params()
	return max(p.N()-p.K-gone, 0)
}

// code returns the codec of a policy, made once per Repairer: codecs keep
// their decoding plans, and a scan meets the same few policies on every
// manifest.
func (r *Repairer) code(policy string) (codec.Code, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.codes[policy]; ok {
		return c, nil
	}
	c, err := all.New(policy)
	if err != nil {
		return nil, err
	}
	if r.codes == nil {
		r.codes = map[string]codec.Code{}
	}
	r.codes[policy] = c
	return c, nil
}

// Work runs the due tasks of the queue, riskiest first, Parallel at a
// time, until every due task has been attempted once or ctx ends. It
// returns the number of tasks completed.
func (r *Repairer) Work(ctx context.Context, now time.Time) (int, error) {
	tasks, err := r.store.RepairTasks(ctx)
	if err != nil {
		return 0, err
	}
	sem := make(chan struct{}, r.cfg.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for _, t := range tasks {
		if t.NotBefore.After(now) {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if r.attempt(ctx, t, now) {
				mu.Lock()
				done++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return done, ctx.Err()
}

// attempt runs one task and records the outcome in the queue; it reports
// whether the task is finished (repaired or dropped).
func (r *Repairer) attempt(ctx context.Context, t cairn.RepairTask, now time.Time) bool {
	start := time.Now() // for Stats only; decisions take no clock reads
	res, err := r.Run(ctx, &t)
	r.mu.Lock()
	r.stats.Busy += time.Since(start)
	r.stats.HelpersMarked += res.marked
	r.stats.Shards += res.shards // a partial repair counts too
	r.stats.Bytes += res.bytes
	switch {
	case err == nil && res.dropped:
		r.stats.Dropped++
	case err == nil:
		r.stats.Repaired++
	default:
		r.stats.Failed++
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
	t.NotBefore = now.Add(min(time.Second<<min(t.Attempts-1, 20), r.cfg.MaxBackoff))
	r.cfg.Logger.Warn("repair: attempt failed; will retry", "bucket", t.Bucket, "key", t.Key, "part", t.Part,
		"attempt", t.Attempts, "err", err)
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
}

// Run repairs one task's stripe now: it re-reads the manifest and the
// cluster map, rebuilds every lost shard onto its target, checks the
// rebuilt shards against the manifest's checksums and updates the
// manifest. t's Lost and Targets may be updated (helpers found bad,
// targets chosen) and are persisted before any shard is written.
func (r *Repairer) Run(ctx context.Context, t *cairn.RepairTask) (result, error) {
	var res result
	for range 4 { // re-plans after a bad helper, a bounded number of times
		m, err := r.store.Manifest(ctx, t.Bucket, t.Key)
		if errors.Is(err, cairn.ErrNotFound) || err == nil && m.Version != t.Version {
			res.dropped = true
			r.deleteTargets(ctx, t)
			return res, nil
		}
		if err != nil {
			return res, err
		}
		st, ok := findStripe(m, t.Part)
		if !ok {
			res.dropped = true
			return res, nil
		}
		cl, err := r.cluster(ctx)
		if err != nil {
			return res, err
		}
		code, err := r.code(m.Policy)
		if err != nil {
			return res, fmt.Errorf("policy of %s/%s: %w", m.Bucket, m.Key, err)
		}
		lost := r.lostShards(t, st, cl)
		if len(lost) == 0 {
			return res, nil // nothing left to do (e.g. the disk came back)
		}
		scode, err := stripeCode(code, st)
		if err != nil {
			return res, fmt.Errorf("%s/%s part %d: %w", m.Bucket, m.Key, t.Part, err)
		}
		present := make([]bool, scode.Params().N())
		for _, i := range available(st, lost, cl) {
			present[st.row(i)] = true
		}
		if !scode.CanReconstruct(present) {
			return res, fmt.Errorf("%w: %s/%s part %d: too few shards left to rebuild %v", cairn.ErrUnavailable, t.Bucket, t.Key, t.Part, lost)
		}
		targets, scheme, err := r.targets(t, st, lost, cl)
		if err != nil {
			return res, err
		}
		if !slices.Equal(t.Lost, lost) || !slices.Equal(t.Targets, targets) || !maps.Equal(t.SpareRows, st.spareRows()) {
			t.Lost, t.Targets, t.SpareRows = lost, targets, st.spareRows()
			if err := r.store.PutRepairTask(ctx, *t); err != nil {
				return res, err
			}
		}
		// This round rebuilds the shards that have a target.
		var now []int
		var onto []cairn.DiskID
		for j, i := range t.Lost {
			if t.Targets[j] != "" {
				now, onto = append(now, i), append(onto, t.Targets[j])
			}
		}
		scheme = r.choose(scheme, code, len(now), st.shards[now[0]].Size)
		infos, err := r.rebuild(ctx, t, now, onto, st, scode, scheme, cl)
		var ne *wire.Error
		if err != nil && errors.As(err, &ne) && isHelperFault(ne) && helperIndex(st, ne) >= 0 {
			i := helperIndex(st, ne)
			r.cfg.Logger.Warn("repair: helper shard is bad; re-planning without it", "bucket", t.Bucket, "key", t.Key,
				"shard", i, "disk", ne.Disk, "err", err)
			res.marked++
			// Aligned with Targets (no target yet); the next round sorts
			// both out.
			t.Lost, t.Targets = append(t.Lost, i), append(t.Targets, "")
			continue
		}
		if err != nil {
			return res, err
		}
		for j, i := range now {
			want := st.shards[i]
			if infos[j].Size != want.Size || infos[j].CRC != want.CRC {
				return res, fmt.Errorf("%w: rebuilt shard %d of %s/%s is %d bytes, CRC %08x; the manifest says %d bytes, CRC %08x",
					cairn.ErrCorrupt, i, t.Bucket, t.Key, infos[j].Size, infos[j].CRC, want.Size, want.CRC)
			}
		}
		next := withShards(m, t.Part, now, onto)
		if err := r.store.UpdateManifest(ctx, next, m); err != nil {
			if errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound) {
				continue // changed meanwhile: look again
			}
			return res, err
		}
		res.shards, res.bytes = len(now), int64(len(now))*st.shards[now[0]].Size
		r.cfg.Logger.Info("repair: stripe repaired", "bucket", t.Bucket, "key", t.Key, "part", t.Part,
			"shards", now, "targets", onto, "scheme", scheme)
		if len(now) < len(t.Lost) {
			return res, fmt.Errorf("%w: rebuilt %d of the %d lost shards of %s/%s part %d; no writable disk outside the stripe for the rest",
				cairn.ErrNoSpace, len(now), len(t.Lost), t.Bucket, t.Key, t.Part)
		}
		return res, nil
	}
	return res, fmt.Errorf("repair of %s/%s part %d: gave up after repeated re-plans", t.Bucket, t.Key, t.Part)
}

func isHelperFault(e *wire.Error) bool {
	return errors.Is(e, cairn.ErrCorrupt) || errors.Is(e, cairn.ErrNotFound)
}

// helperIndex returns the shard index of the stripe that e names, or -1.
func helperIndex(st stripe, e *wire.Error) int {
	for i, s := range st.shards {
		if s.Disk == e.Disk && cairn.ShardName(st.version, st.row(i)) == e.Shard {
			return i
		}
	}
	return -1
}

// clusterView is the cluster map a run plans against.
type clusterView struct {
	disks map[cairn.DiskID]cairn.Disk
	addr  map[cairn.NodeID]string
	list  []cairn.Disk // in ID order
}

func (r *Repairer) cluster(ctx context.Context) (*clusterView, error) {
	nodes, err := r.store.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	disks, err := r.store.Disks(ctx)
	if err != nil {
		return nil, err
	}
	cl := &clusterView{disks: make(map[cairn.DiskID]cairn.Disk), addr: make(map[cairn.NodeID]string), list: disks}
	for _, n := range nodes {
		cl.addr[n.ID] = n.Addr
	}
	for _, d := range disks {
		cl.disks[d.ID] = d
	}
	return cl, nil
}

// usable reports whether a shard on disk can serve as a helper: its disk
// is up or draining (not suspect: its node may be gone).
func (cl *clusterView) usable(disk cairn.DiskID) bool {
	d, ok := cl.disks[disk]
	return ok && (d.State == cairn.DiskUp || d.State == cairn.DiskDraining) && cl.addr[d.Node] != ""
}

// lostShards is the task's lost set brought up to date: shards on lost
// disks, plus those the task already found bad, minus those a target
// already holds (a previous attempt rebuilt them and updated the manifest).
func (r *Repairer) lostShards(t *cairn.RepairTask, st stripe, cl *clusterView) []int {
	var lost []int
	for i, s := range st.shards {
		d, known := cl.disks[s.Disk]
		if !known || lostDisk(d.State) || slices.Contains(t.Lost, i) && !movedTo(t, i, s.Disk) {
			lost = append(lost, i)
		}
	}
	return lost
}

func available(st stripe, lost []int, cl *clusterView) []int {
	var out []int
	for i, s := range st.shards {
		if !slices.Contains(lost, i) && cl.usable(s.Disk) {
			out = append(out, i)
		}
	}
	return out
}

// targets returns a target disk for every lost shard (kept from earlier
// attempts when still writable) and the scheme to use.
func (r *Repairer) targets(t *cairn.RepairTask, st stripe, lost []int, cl *clusterView) ([]cairn.DiskID, plan.Scheme, error) {
	holding := map[cairn.NodeID]bool{}
	used := map[cairn.DiskID]bool{}
	for i, s := range st.shards {
		used[s.Disk] = true
		if !slices.Contains(lost, i) {
			holding[cl.disks[s.Disk].Node] = true
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
		if d, ok := prev[i]; ok && d != "" && !used[d] && cl.disks[d].State.Writable() && cl.usable(d) {
			out[j], used[d], chosen[cl.disks[d].Node] = d, true, true
		}
	}
	for j, i := range lost {
		if out[j] != "" {
			continue
		}
		d, ok := pick(t.ID, i, cl, used, func(d cairn.Disk) int {
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
		})
		if !ok {
			continue // none left: this shard waits (out[j] == "")
		}
		out[j], used[d], chosen[cl.disks[d].Node] = d, true, true
	}
	if !slices.ContainsFunc(out, func(d cairn.DiskID) bool { return d != "" }) {
		return nil, 0, fmt.Errorf("%w: no writable disk outside the stripe of %s/%s to rebuild its lost shards %v on", cairn.ErrNoSpace, t.Bucket, t.Key, lost)
	}
	// The scheme follows where the targets are: on survivors, -Sur.
	onSurvivors := true
	var placed []cairn.DiskID
	for _, d := range out {
		if d != "" {
			onSurvivors = onSurvivors && holding[cl.disks[d].Node]
			placed = append(placed, d)
		}
	}
	scheme := r.cfg.Scheme
	switch {
	case onSurvivors && scheme == plan.PushRep:
		// Rep with a replacement that is a helper: still fine as Rep.
	case !onSurvivors && scheme == plan.PushSur:
		scheme = plan.PushRep
	case !onSurvivors && scheme == plan.PullSur:
		scheme = plan.PullRep
	}
	if !scheme.Rep() && len(distinctNodes(placed, cl)) > 1 {
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

// choose returns the scheme the time models predict fastest for
// rebuilding f shards of a stripe of code, between the PUSH and PULL form
// of the given one (Config.Rates; without them, the given one).
func (r *Repairer) choose(given plan.Scheme, code codec.Code, f int, shard int64) plan.Scheme {
	p := code.Params()
	if _, local := code.(codec.LocalGroups); local || r.cfg.Rates == nil || f < 1 || shard <= 0 || p.Alpha != 1 {
		return given
	}
	m := plan.Model{K: p.K, R: p.M, F: min(f, p.M), SNode: float64(shard), SBlock: float64(min(r.cfg.Unit, shard)),
		Survivors: []plan.Rates{*r.cfg.Rates}, Replacement: *r.cfg.Rates}
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

// movedTo reports whether the task rebuilt shard i onto disk (an earlier
// attempt got as far as the manifest update).
func movedTo(t *cairn.RepairTask, i int, disk cairn.DiskID) bool {
	j := slices.Index(t.Lost, i)
	return j >= 0 && j < len(t.Targets) && t.Targets[j] == disk
}

func distinctNodes(ds []cairn.DiskID, cl *clusterView) []cairn.NodeID {
	var out []cairn.NodeID
	for _, d := range ds {
		if n := cl.disks[d].Node; !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// pick chooses a writable disk not in used for shard of task id, best
// rank first (placement.Spare).
func pick(id string, shard int, cl *clusterView, used map[cairn.DiskID]bool, rank func(cairn.Disk) int) (cairn.DiskID, bool) {
	return placement.Spare(cl.list, fmt.Sprintf("%s\x00%d", id, shard), func(d cairn.Disk) bool {
		return !used[d.ID] && d.State.Writable() && cl.usable(d.ID)
	}, rank)
}

// rebuild plans and executes the repair of lost[j] onto targets[j] (the
// task's other lost shards are unavailable too) and returns what was
// stored, in lost order. code decodes the stripe (stripeCode): the plan is
// made over code rows, which a spare row shard holds instead of its index.
func (r *Repairer) rebuild(ctx context.Context, t *cairn.RepairTask, lost []int, targets []cairn.DiskID, st stripe, code codec.Code, scheme plan.Scheme, cl *clusterView) ([]wire.ShardInfo, error) {
	size := st.shards[lost[0]].Size
	for _, i := range lost {
		if st.shards[i].Size != size {
			return nil, fmt.Errorf("%w: shards of %s/%s differ in size", cairn.ErrCorrupt, t.Bucket, t.Key)
		}
	}
	if size == 0 { // an empty object: nothing to compute, only files to make
		infos := make([]wire.ShardInfo, len(lost))
		for j, i := range lost {
			info, err := r.exec.PutShard(ctx, targets[j], cairn.ShardName(st.version, st.row(i)), bytes.NewReader(nil))
			if err != nil {
				return nil, err
			}
			infos[j] = info
		}
		return infos, nil
	}
	// The plan works on code rows: slot[row] is the shard holding it.
	nodes := make([]string, code.Params().N())
	slot := map[int]int{}
	for i, s := range st.shards {
		slot[st.row(i)] = i
		if !slices.Contains(t.Lost, i) && cl.usable(s.Disk) {
			nodes[st.row(i)] = string(cl.disks[s.Disk].Node)
		}
	}
	target := map[int]cairn.DiskID{} // by row
	var tnodes []string
	var lostRows []int
	for j, i := range lost {
		target[st.row(i)] = targets[j]
		lostRows = append(lostRows, st.row(i))
		tnodes = append(tnodes, string(cl.disks[targets[j]].Node))
	}
	in := plan.Input{Code: code, Lost: lostRows, Nodes: nodes, ShardSize: size, Unit: r.cfg.Unit, Rotate: int(hashString(t.ID) % 1024)}
	if scheme.Rep() {
		// The plan sends Lost[j] to Replacements[j mod len] and wants
		// them distinct.
		var reps []string
		for _, n := range distinctNodes(targets, cl) {
			reps = append(reps, string(n))
		}
		for j, n := range tnodes {
			if reps[j%len(reps)] != n {
				return nil, fmt.Errorf("%w: targets %v of %s/%s do not fit one repair plan", cairn.ErrUnavailable, targets, t.Bucket, t.Key)
			}
		}
		in.Replacements = reps
	} else {
		in.Survivors = tnodes[:1]
	}
	p, err := plan.Build(scheme, in)
	if err != nil {
		return nil, err
	}
	infos := make([]wire.ShardInfo, len(lost))
	for _, task := range p.Tasks {
		if task.First != 0 || task.End != p.Slices() {
			return nil, fmt.Errorf("repair plan %s splits a shard into shares; cairn stores whole shards", scheme)
		}
		spec := wire.RepairSpec{Size: size, Unit: r.cfg.Unit}
		for _, h := range task.Helpers {
			d := st.shards[slot[h.Shard]].Disk
			spec.Hops = append(spec.Hops, wire.Hop{Addr: cl.addr[cl.disks[d].Node], Disk: d, Shard: cairn.ShardName(st.version, h.Shard), Coeffs: h.Coeffs})
		}
		for j, row := range task.Lost {
			d := target[row]
			if string(cl.disks[d].Node) != task.Store[j] {
				return nil, fmt.Errorf("repair plan stores row %d on node %s, its target disk %s is elsewhere", row, task.Store[j], d)
			}
			spec.Store = append(spec.Store, wire.Target{Addr: cl.addr[cl.disks[d].Node], Disk: d, Shard: cairn.ShardName(st.version, row)})
		}
		var got []wire.ShardInfo
		if task.Puller != "" {
			got, err = r.exec.Pull(ctx, cl.addr[cairn.NodeID(task.Puller)], spec)
		} else {
			got, err = r.exec.Push(ctx, spec)
		}
		if err != nil {
			return nil, err
		}
		if len(got) != len(task.Lost) {
			return nil, fmt.Errorf("%w: the node stored %d shards, %d were asked", cairn.ErrUnavailable, len(got), len(task.Lost))
		}
		for j, row := range task.Lost {
			infos[slices.Index(lost, slot[row])] = got[j]
		}
	}
	return infos, nil
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// withShards returns a copy of m whose stripe part has shards lost[j]
// moved to targets[j] (sizes and CRCs unchanged: they were checked).
func withShards(m *cairn.Manifest, part int, lost []int, targets []cairn.DiskID) *cairn.Manifest {
	next := *m
	move := func(shards []cairn.ShardLoc) []cairn.ShardLoc {
		out := slices.Clone(shards)
		for j, i := range lost {
			out[i].Disk = targets[j]
		}
		return out
	}
	if part == 0 {
		next.Shards = move(m.Shards)
		return &next
	}
	next.Parts = slices.Clone(m.Parts)
	for k := range next.Parts {
		if next.Parts[k].Number == part {
			next.Parts[k].Shards = move(next.Parts[k].Shards)
		}
	}
	return &next
}

// deleteTargets removes rebuilt files of a dropped task (best effort; the
// scrubber would find them as orphans otherwise).
func (r *Repairer) deleteTargets(ctx context.Context, t *cairn.RepairTask) {
	for j, i := range t.Lost {
		if j < len(t.Targets) && t.Targets[j] != "" {
			row, ok := t.SpareRows[i]
			if !ok {
				row = i
			}
			_ = r.exec.DeleteShard(context.WithoutCancel(ctx), t.Targets[j], cairn.ShardName(t.Stripe, row))
		}
	}
}
