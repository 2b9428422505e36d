package repair

// The Repairer: its store and executor, its configuration and counters.
// Its work is in three files: scan.go finds stripes with lost shards and
// queues tasks, work.go runs the queue (one task: decide a round with
// package repair/decide, run its jobs on the nodes, retry), commit.go
// accepts rebuilt shards into the manifest or cleans up after a dropped
// task.

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"sync"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/retry"
	"cairn/node/wire"
	"cairn/repair/plan"
)

// Store is the part of the metadata store the repairer uses; meta.Store
// satisfies it.
type Store interface {
	Nodes(ctx context.Context) ([]cairn.Node, error)
	Disks(ctx context.Context) ([]cairn.Disk, error)
	BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error)
	ListManifests(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]*cairn.Manifest, bool, error)
	// ListVersionManifests and ObjectVersion: noncurrent versions of
	// objects in versioned buckets are objects to repair too
	// (docs/design/versioning.md).
	ListVersionManifests(ctx context.Context, bucket, afterKey, afterVersion string, limit int) ([]*cairn.Manifest, bool, error)
	ObjectVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
	UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error
	// ManifestPart and UpdatePart read and update one part of a
	// multipart object: a part's repair reads and writes that part alone,
	// not a manifest that grows with the parts.
	ManifestPart(ctx context.Context, bucket, key string, n int) (*cairn.Manifest, error)
	UpdatePart(ctx context.Context, bucket, key, version string, p, prev cairn.Part) error
	PutRepairTask(ctx context.Context, t cairn.RepairTask) error
	// RepairTaskPage pages the queue (meta.Store.RepairTaskPage): it
	// may hold more tasks than one reply carries.
	RepairTaskPage(ctx context.Context, after string, limit int) ([]cairn.RepairTask, bool, error)
	RepairQueuePage(ctx context.Context, after *cairn.RepairTask, limit int) ([]cairn.RepairTask, bool, error)
	DeleteRepairTask(ctx context.Context, id string) error
	// PutCleanup queues files no manifest names for deletion: the
	// rebuilt files of a dropped task (UpdateManifest queues those a
	// repair supersedes).
	PutCleanup(ctx context.Context, c cairn.Cleanup) error
	// UploadPage and PartPage: the parts of multipart uploads in
	// progress are stripes to repair too, and the census counts their
	// shards; Upload and PartPage read one task's part, and
	// UpdateUploadPart moves its rebuilt shards into the part's record
	// (docs/design/repair.md, "Parts of uploads in progress").
	UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error)
	PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error)
	Upload(ctx context.Context, bucket, id string) (cairn.Upload, error)
	UpdateUploadPart(ctx context.Context, bucket, id string, p, prev cairn.Part) error
	// Damages, PutDamage and DeleteDamage: Scan turns the damage that
	// scrub and reads found into tasks (docs/design/scrub.md).
	Damages(ctx context.Context, after string, limit int) ([]cairn.Damage, bool, error)
	PutDamage(ctx context.Context, d cairn.Damage) error
	DeleteDamage(ctx context.Context, disk cairn.DiskID, shard string) error
}

// Executor runs repairs on the storage nodes; *node.Client satisfies it
// (asserted in internal/cli).
// Errors that blame a helper or a target are *wire.Error naming its disk
// and shard.
type Executor interface {
	Push(ctx context.Context, spec wire.RepairSpec) ([]wire.ShardInfo, error)
	Pull(ctx context.Context, puller string, spec wire.RepairSpec) ([]wire.ShardInfo, error)
	PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error)
}

// identifiedPutter is an Executor that can write a shard file recording
// its identity (*node.Client): an empty rebuilt shard is written with it.
type identifiedPutter interface {
	PutShardIdentified(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (wire.ShardInfo, error)
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
	// 5 min); the wait doubles from 1 s with each attempt that failed
	// with a transient error, and is MaxBackoff at once after a permanent
	// one (cairn.IsPermanent).
	MaxBackoff time.Duration
	// AvoidTarget is how long a disk that failed as a repair's target
	// (missing, full or not writable) is not chosen as a target
	// again (default 5 min), so that the stripe is rebuilt elsewhere at
	// once rather than waiting for the director to notice the disk.
	AvoidTarget time.Duration
	// MoveRate bounds, in bytes per second, how fast shards are moved off
	// draining disks when the disk sets no rate of its own
	// (cairn.Disk.MoveRate); 0: as fast as the repair runs. Moves share
	// one token bucket; the rebuild of a lost shard is never paced.
	MoveRate int64
	// Tolerance is how far apart the rebalancer lets the disks' use be
	// (default DefaultTolerance: the least used within 10% of the most).
	Tolerance float64
	// MinSpread is the least spread in bytes between the most and the
	// least used disk the rebalancer moves shards for (default
	// DefaultMinSpread; negative: any). Spreading a stripe over distinct
	// nodes does not wait for it.
	MinSpread int64
	Logger    *slog.Logger
}

// Repairer scans for and runs repair tasks. Its methods are safe to call
// from one goroutine at a time (the director's leader loop).
type Repairer struct {
	store   Store
	exec    Executor
	cfg     Config
	backoff retry.Policy // the queue's waits between attempts of a task

	mu     sync.Mutex
	stats  Stats                 // guarded by mu
	codes  map[string]codec.Code // by policy; guarded by mu
	census Census                // guarded by mu: the last complete walk's
	// avoid holds the disks that failed as targets, until when they are
	// not chosen again (decide.View.Avoid); guarded by mu. At most one
	// entry per disk, dropped when it expires.
	avoid      map[cairn.DiskID]time.Time
	moves      bucket  // paces moves (pace.go); guarded by mu
	balance    Balance // the rebalancer's last round; guarded by mu
	balanceSig string  // the writable disks it saw; guarded by mu

	scanned   string    // the lost disks the last complete Scan saw
	scannedAt time.Time // when it completed
	scanMoves bool      // the last complete Scan saw moves queued (a drain in progress)
}

// Stats counts what a Repairer did since it was made.
type Stats struct {
	Repaired      int           // tasks completed
	Shards        int           // shards rebuilt
	Bytes         int64         // bytes rebuilt
	Busy          time.Duration // time spent running tasks (summed over parallel tasks)
	Failed        int           // failed attempts
	Permanent     int           // failed attempts whose error was permanent (cairn.IsPermanent)
	Dropped       int           // tasks dropped (object overwritten or deleted)
	HelpersMarked int           // helper shards found missing or corrupt
	TargetsFailed int           // targets that failed (missing, full, not writable) and were replaced
	DamageQueued  int64         // damage records (scrub, reads) turned into tasks
	DamageHealed  int64         // damage records dropped after their task moved the shard
	Moved         int64         // bytes of moves paced (off draining disks)
	// Schemes counts the stripes repaired by the scheme chosen for them
	// (plan.Scheme's name: push-sur, pull-rep, ...); nil until one is.
	Schemes map[string]int
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
	if cfg.AvoidTarget <= 0 {
		cfg.AvoidTarget = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Repairer{store: store, exec: exec, cfg: cfg, backoff: retry.Policy{Base: time.Second, Max: cfg.MaxBackoff}}
}

// Stats returns the counters so far.
func (r *Repairer) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stats
	st.Schemes = maps.Clone(st.Schemes)
	return st
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
