package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/client/slowdisk"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/retry"
	"cairn/node/wire"
	"cairn/placement"
)

// Meta is the part of the metadata store the data path uses (see
// meta.Store for the contract of each method).
type Meta interface {
	Nodes(ctx context.Context) ([]cairn.Node, error)
	Disks(ctx context.Context) ([]cairn.Disk, error)
	PGTable(ctx context.Context, width int) (cairn.PGTable, error)
	CreatePGTable(ctx context.Context, t cairn.PGTable) (cairn.PGTable, error)
	Bucket(ctx context.Context, name string) (cairn.Bucket, error)
	CommitManifest(ctx context.Context, m *cairn.Manifest, prevVersion string) error
	Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
	DeleteManifest(ctx context.Context, bucket, key, version string) (*cairn.Manifest, error)

	// Multipart uploads.
	CreateUpload(ctx context.Context, u cairn.Upload) error
	Upload(ctx context.Context, bucket, id string) (cairn.Upload, error)
	Uploads(ctx context.Context, bucket string) ([]cairn.Upload, error)
	UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error)
	PutPart(ctx context.Context, bucket, id string, p cairn.Part) (*cairn.Part, error)
	Parts(ctx context.Context, bucket, id string) ([]cairn.Part, int64, error)
	PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error)
	DeleteUpload(ctx context.Context, bucket, id string) ([]cairn.Part, error)
	CompleteUpload(ctx context.Context, m *cairn.Manifest, prevVersion, id string, stamp int64) ([]cairn.Part, error)

	// PutCleanup queues shard files no manifest names for deletion.
	PutCleanup(ctx context.Context, c cairn.Cleanup) error
}

// Shards stores shard files on disks (*node.Client implements it over the
// node protocol; tests use an in-memory fake, clienttest.MemShards).
type Shards interface {
	// PutShard stores the whole content of r as shard file name on disk,
	// durably, and returns its size and CRC-32C (wire.ShardInfo, as the
	// node protocol answers a PUT). The implementation checks
	// that the stored CRC is that of the bytes it read from r (the node
	// client compares the node's reply with its own running CRC), so the
	// data path does not compute it a second time.
	PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error)
	// GetShard streams n bytes (n < 0: to the end) from offset off of a
	// shard file, verified against its block checksums: a read error
	// wrapping cairn.ErrCorrupt means the disk holds bad data.
	GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error)
	// DeleteShard removes a shard file; cairn.ErrNotFound if it is absent.
	DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error
}

// IdentifiedPutter is a Shards that can store a shard file recording
// which object, part and code row it holds (docs/design/volume.md, "Shard
// identity"): ident is a cairn.ShardIdentity.Encode naming the file. The
// reply's Ident is the identity's length as stored (0 if the node
// predates identities), what the manifest records as ShardLoc.Ident. The
// writers use it when their Shards has it (*node.Client and
// clienttest.MemShards do).
type IdentifiedPutter interface {
	PutShardIdentified(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (wire.ShardInfo, error)
}

// Damage reports a shard that could not be read or was corrupt.
type Damage struct {
	Bucket, Key, Version string
	Shard                int
	Disk                 cairn.DiskID
	// Name is the shard's file on Disk (cairn.ShardName of the stripe's
	// version and the shard's row): what a damage record names.
	Name string
	Err  error
}

// Config configures a Client. Zero values take the defaults.
type Config struct {
	// BlockSize is the shard bytes per stripe for objects larger than one
	// stripe (default 1 MiB, rounded up to the code's shard multiple).
	BlockSize int
	// ReadExtra is δ, the shards requested beyond K on reads (default 1;
	// negative means 0), unless the object's policy says otherwise
	// ("rs-4-2/read=all", "rs-4-2/read=k+2"; codec.Policy.Read).
	ReadExtra int
	// WindowBytes is the data bytes a GET fetches per window (default
	// 16 MiB; at least one stripe).
	WindowBytes int64
	// HedgeAfter is the least time a shard request of a GET runs before it
	// may count as a straggler and be hedged with another shard (default
	// 200 ms; a straggler is also 3× slower than the median request).
	HedgeAfter time.Duration
	// StreamWait is the least time a shard stream of a PUT holds the
	// others back before it is replaced by a spare (default 100 ms; it
	// must also hold them back for 3× the median time between blocks).
	StreamWait time.Duration
	// Spares is how many spare disks a PUT may use to replace straggling
	// or failed shard streams with spare parity rows, for codes that can
	// make them (rs; codec.Extensible). Default: the code's M; negative:
	// none. Spares are other writable disks, on nodes the stripe does not
	// use where possible; nothing is written to them unless a stream
	// straggles or fails.
	Spares int
	// SpareWindow is how many data bytes at the start of an object a PUT
	// keeps in memory so that a spare stream can start from the
	// beginning (default 64 MiB; negative: no spares). Past it, a slow
	// stream is waited for and a failed one fails the PUT. With Memory
	// set, a PUT keeps only as much of it as the budget has free when the
	// PUT starts (halving it until it fits, down to none).
	SpareWindow int64
	// Memory, if set, bounds the buffer memory of this client's PUTs and
	// GETs together with every client that shares it (Budget): a PUT
	// holds (K + N·max(4, w))·BlockSize bytes — its first stripe's data
	// and a ring of the encoder's pipeline of 4 stripes, or of w stripes
	// of spare window if more, each stripe's N blocks sized to the object
	// if it is smaller — and
	// a GET (N/K + 2) windows of WindowBytes, or of the range it reads if
	// that is smaller (docs/design/s3.md, "Limits"). A request that
	// cannot get its share within the budget's wait fails with ErrBusy.
	Memory *Budget
	// Logger receives warnings (default: discard).
	Logger *slog.Logger
	// OnDamage, if set, is called for every shard found missing or corrupt.
	OnDamage func(Damage)
	// Rand is the source of version IDs, data keys and nonces (default
	// crypto/rand).
	Rand io.Reader
	// Keys seals and unseals the data keys of SSE-S3 objects (nil: a PUT
	// or GET of one fails with ErrNoKeyService).
	Keys KeyService
	// Jitter draws the random part of the waits between retries of
	// metadata calls (default: seeded from crypto/rand). The client
	// serializes its use; nothing else may use it meanwhile.
	Jitter *mrand.Rand
	// MinPartSize is the least size of every part of a multipart object
	// but the last (default 5 MiB, as S3).
	MinPartSize int64
	// SmallObject is the size up to which a PUT stores an object as
	// replicas that survive as many lost disks as its policy, instead of
	// one shard file per shard of the policy (small.go; default
	// DefaultSmallObject, 16 KiB; negative: never). Parts of multipart
	// uploads are always stored with their policy.
	SmallObject int64
	// Codes, if set, builds the code of a policy string in place of
	// codec/all.New, for every PUT and GET (experiments wrap the codes to
	// time their Encode and Reconstruct calls). It must return a code of
	// that very policy; a code that hides an optional capability of the
	// real one (codec.Extensible) disables what needs it (spare streams).
	// Called at most once per policy; the client keeps the code.
	Codes func(policy string) (codec.Code, error)
	// SlowDisks judges disks by the times of this client's PUT shard
	// streams, each against the other streams of its PUT, and makes new
	// stripes avoid the disks it holds slow while other writable disks
	// are free (client/slowdisk, docs/design/speculative.md, "Slow disks across PUTs"). Default: a
	// tracker of its own with slowdisk's defaults; clients of one gateway
	// may share one.
	SlowDisks *slowdisk.Tracker
	// RAIDPGroup is the RAIDP group raidp objects are written to
	// (default DefaultRAIDPGroup; created from the cluster's disks with an
	// Lstor the first time: NewRAIDPGroup).
	RAIDPGroup string
	// RAIDPDeletes selects how the bytes of a deleted raidp object are
	// zeroed (docs/design/raidp.md, "Deletes" in "In the cluster"):
	// RAIDPLazy (the default, the paper's baseline) queues them for the
	// director's zeroer; RAIDPOnline zeroes both replicas before the
	// delete returns (the update-oriented variant).
	RAIDPDeletes string
	// RAIDPDeadBacklog bounds the group's queue of dead ranges (default
	// DefaultRAIDPDeadBacklog); a lazy delete that finds it full zeroes
	// online.
	RAIDPDeadBacklog int
	// RAIDPRecoveryChunk is the bytes one call of a RAIDP recovery moves
	// (a copy, a rebuilt range, a zero), and so the work a resumed
	// recovery may redo per step in flight; 0 means raidprun.DefaultChunk
	// of the superchunk size (1 MiB, less for superchunks under 8 MiB). At most the
	// node protocol's wire.MaxRAIDPCall.
	RAIDPRecoveryChunk int
	// KeepSlowDisks turns the avoidance off: stripes keep their disks
	// however slow (a slow stream is still replaced by a spare row).
	KeepSlowDisks bool
	// ColdStaging is the warm policy a PUT of a cold policy
	// (CODE/gp=S0:Q) stores the object with until the export job moves it
	// to the cold tier (cold.go; default "rep-3").
	ColdStaging string
}

func (c *Config) validate() {
	if c.SlowDisks == nil && !c.KeepSlowDisks {
		c.SlowDisks, _ = slowdisk.New(slowdisk.Config{}) // the defaults are valid
	}
	if c.BlockSize <= 0 {
		c.BlockSize = 1 << 20
	}
	if c.ReadExtra == 0 {
		c.ReadExtra = 1
	}
	c.ReadExtra = max(c.ReadExtra, 0)
	if c.WindowBytes <= 0 {
		c.WindowBytes = 16 << 20
	}
	if c.HedgeAfter <= 0 {
		c.HedgeAfter = 200 * time.Millisecond
	}
	if c.StreamWait <= 0 {
		c.StreamWait = 100 * time.Millisecond
	}
	if c.SpareWindow == 0 {
		c.SpareWindow = 64 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RAIDPDeadBacklog <= 0 {
		c.RAIDPDeadBacklog = DefaultRAIDPDeadBacklog
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Jitter == nil {
		var seed [32]byte
		_, _ = rand.Read(seed[:]) // never fails (crypto/rand)
		c.Jitter = mrand.New(mrand.NewChaCha8(seed))
	}
	if c.MinPartSize <= 0 {
		c.MinPartSize = 5 << 20
	}
	if c.SmallObject == 0 {
		c.SmallObject = DefaultSmallObject
	}
	if c.Codes == nil {
		c.Codes = all.New
	}
	if c.ColdStaging == "" {
		c.ColdStaging = "rep-3"
	}
}

// Client is safe for concurrent use.
type Client struct {
	meta    Meta // the store with its reads retried (retryMeta, metaReads)
	direct  Meta // the store as given, for commit, which retries itself
	commits retry.Policy
	shards  Shards
	cold    coldGroups // the cold groups read through (cold.go)
	cfg     Config
	stats   stats // what the data path did (Stats)

	mu       sync.Mutex
	tables   map[int]cachedTable           // PG tables by width; guarded by mu
	codes    map[string]codec.Code         // codes by policy; guarded by mu
	small    map[string]codec.Code         // small objects' codes by policy (nil: none); guarded by mu
	arranged map[string][]cairn.DiskID     // shard → disk per policy and PG; guarded by mu
	nodeOf   map[cairn.DiskID]cairn.NodeID // failure domain of each disk; guarded by mu
	disks    []cairn.Disk                  // the cluster's disks as last read; guarded by mu
	disksAt  time.Time                     // when disks was read; guarded by mu
	// readableAt maps disks to whether their state is readable
	// (readableOf(disks)); shared by GETs, never written after it is
	// set. Guarded by mu.
	readableAt map[cairn.DiskID]bool
}

// New returns a client over a metadata store and a shard store.
func New(meta Meta, shards Shards, cfg Config) *Client {
	cfg.validate()
	jitter := mrand.New(retry.LockedSource(cfg.Jitter))
	reads, commitPolicy := metaReads, commits
	reads.Rand, commitPolicy.Rand = jitter, jitter
	return &Client{meta: retryMeta{Meta: meta, p: reads}, direct: meta, commits: commitPolicy, shards: shards, cfg: cfg,
		tables: map[int]cachedTable{}, codes: map[string]codec.Code{}, small: map[string]codec.Code{}, arranged: map[string][]cairn.DiskID{}}
}

func (c *Client) code(policy string) (codec.Code, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cd, ok := c.codes[policy]; ok {
		return cd, nil
	}
	cd, err := c.cfg.Codes(policy)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", cairn.ErrInvalid, err)
	}
	c.codes[policy] = cd
	return cd, nil
}

// tableMaxAge bounds how stale a PG table a PUT uses may be: the
// director recomputes the tables as nodes and disks join or leave
// (director.PlacementDuty).
const tableMaxAge = 5 * time.Second

// cachedTable is a PG table and when it was read.
type cachedTable struct {
	t  cairn.PGTable
	at time.Time
}

// table returns the PG table of a width, read at most tableMaxAge ago,
// creating it from the cluster map the first time any client needs it.
func (c *Client) table(ctx context.Context, width int) (cairn.PGTable, error) {
	c.mu.Lock()
	ct, ok := c.tables[width]
	c.mu.Unlock()
	if ok && time.Since(ct.at) < tableMaxAge {
		return ct.t, nil
	}
	t, err := c.meta.PGTable(ctx, width)
	if err != nil {
		nodes, err := c.meta.Nodes(ctx)
		if err != nil {
			return t, err
		}
		disks, err := c.meta.Disks(ctx)
		if err != nil {
			return t, err
		}
		t, err = placement.Compute(placement.Input{Nodes: nodes, Disks: disks, Width: width})
		if err != nil {
			return t, err
		}
		if t, err = c.meta.CreatePGTable(ctx, t); err != nil {
			return t, err
		}
	}
	c.mu.Lock()
	if ok && ct.t.Epoch != t.Epoch {
		c.arranged = map[string][]cairn.DiskID{} // orders of PGs that may be gone
	}
	c.tables[width] = cachedTable{t: t, at: time.Now()}
	c.mu.Unlock()
	return t, nil
}

// arrange returns the disks of pg in shard order for a code: the PG's own
// order, unless the PG puts several shards in one failure domain (node),
// when placement.Arrange picks the order that survives the most node
// losses for this code (it matters for codes that are not MDS, e.g. LRC).
func (c *Client) arrange(ctx context.Context, policy string, code codec.Code, pg cairn.PG) ([]cairn.DiskID, error) {
	key := fmt.Sprintf("%s/%d/%v", policy, pg.ID, pg.Disks)
	c.mu.Lock()
	got, ok := c.arranged[key]
	nodeOf := c.nodeOf
	c.mu.Unlock()
	if ok {
		return got, nil
	}
	if slices.ContainsFunc(pg.Disks, func(d cairn.DiskID) bool { _, known := nodeOf[d]; return !known }) {
		nodeOf = nil // a disk that joined since the map was read
	}
	if nodeOf == nil {
		disks, err := c.meta.Disks(ctx)
		if err != nil {
			return nil, err
		}
		nodeOf = make(map[cairn.DiskID]cairn.NodeID, len(disks))
		for _, d := range disks {
			nodeOf[d.ID] = d.Node
		}
	}
	got = placement.ArrangePG(pg, nodeOf, code.CanReconstruct)
	c.mu.Lock()
	c.arranged[key], c.nodeOf = got, nodeOf
	c.mu.Unlock()
	return got, nil
}

// disksMaxAge bounds how stale the disk states a PUT avoids may be.
const disksMaxAge = 2 * time.Second

// clusterDisks returns the cluster's disks, read at most disksMaxAge ago.
func (c *Client) clusterDisks(ctx context.Context) ([]cairn.Disk, error) {
	c.mu.Lock()
	ds, at := c.disks, c.disksAt
	c.mu.Unlock()
	if ds != nil && time.Since(at) < disksMaxAge {
		return ds, nil
	}
	ds, err := c.meta.Disks(ctx)
	if err != nil {
		return nil, err
	}
	c.setDisks(ds)
	return ds, nil
}

// setDisks records ds as the cluster's disks, read now.
func (c *Client) setDisks(ds []cairn.Disk) {
	readable := readableOf(ds)
	c.mu.Lock()
	c.disks, c.disksAt, c.readableAt = ds, time.Now(), readable
	c.mu.Unlock()
}

// avoidUnwritable replaces the disks of a stripe that are not up (down,
// failed, suspect, draining) with writable disks outside the stripe,
// preferring nodes the stripe does not use yet, so writes keep working
// while lost disks wait for repair. It replaces the disks Config.SlowDisks
// holds slow too, but only with disks that are not slow, and keeps a slow
// disk that has no such replacement. The manifest records where each shard
// really went. An unwritable disk with no replacement means the cluster
// has fewer writable disks than the stripe is wide: the PUT fails with a
// *placement.TooFewDisksError (cairn.ErrUnavailable), as a PG table
// computed now would.
func (c *Client) avoidUnwritable(ctx context.Context, disks []cairn.DiskID, version string) ([]cairn.DiskID, error) {
	all, err := c.clusterDisks(ctx)
	if err != nil {
		return nil, err
	}
	o := newOutside(all, c.slowNow())
	lost := func(d cairn.DiskID) bool { return !o.byID[d].Writable() }
	if !slices.ContainsFunc(disks, func(d cairn.DiskID) bool { return lost(d) || o.slow(d) }) {
		return disks, nil
	}
	for _, d := range disks {
		o.use(d, !lost(d) && !o.slow(d))
	}
	out := slices.Clone(disks)
	// Lost disks first: they must be replaced, slow ones only may be.
	for i, d := range disks {
		if !lost(d) {
			continue
		}
		best, ok := o.pick(fmt.Sprintf("%s\x00%d", version, i), true)
		if !ok {
			writable := 0
			for _, d := range all {
				if d.Writable() {
					writable++
				}
			}
			return nil, &placement.TooFewDisksError{Need: len(disks), Have: writable}
		}
		out[i] = best
	}
	for i, d := range disks {
		if lost(d) || !o.slow(d) {
			continue
		}
		if best, ok := o.pick(fmt.Sprintf("%s\x00%d", version, i), false); ok {
			out[i] = best
		} else {
			o.use(d, true) // no fast disk free: the slow one keeps its shard
		}
	}
	return out, nil
}

// slowNow returns the test for disks new stripes should avoid now.
func (c *Client) slowNow() func(cairn.DiskID) bool {
	if c.cfg.SlowDisks == nil {
		return func(cairn.DiskID) bool { return false }
	}
	now := time.Now()
	return func(d cairn.DiskID) bool { return c.cfg.SlowDisks.Avoid(now, d) }
}

// spareDisks chooses up to Config.Spares writable disks outside the
// stripe for a PUT's spare streams, on nodes the stripe does not use
// first (each its own, while there are such nodes), and disks held slow
// (Config.SlowDisks) only when no other is left.
func (c *Client) spareDisks(ctx context.Context, code codec.Code, disks []cairn.DiskID, version string) ([]cairn.DiskID, error) {
	want := c.cfg.Spares
	if want == 0 {
		want = code.Params().M
	}
	if _, ok := code.(codec.Extensible); !ok || want < 0 || c.cfg.SpareWindow < 0 {
		return nil, nil
	}
	all, err := c.clusterDisks(ctx)
	if err != nil {
		return nil, err
	}
	o := newOutside(all, c.slowNow())
	for _, d := range disks {
		o.use(d, true)
	}
	var out []cairn.DiskID
	for j := range want {
		// Fast disks first, then slow ones: a slow spare does not help
		// past a straggler, but it does past a failed stream (a dead
		// node), and without it the PUT fails.
		best, ok := o.pick(fmt.Sprintf("%s\x00spare%d", version, j), true)
		if !ok {
			break
		}
		out = append(out, best)
	}
	return out, nil
}

// outside picks writable disks outside a stripe, on nodes the stripe
// does not use first (placement.Spare: the same choice every time for a
// key); every pick joins the stripe.
type outside struct {
	slow  func(cairn.DiskID) bool // disks to pick only when nothing else is free
	all   []cairn.Disk
	byID  map[cairn.DiskID]cairn.Disk
	used  map[cairn.DiskID]bool
	nodes map[cairn.NodeID]bool
}

func newOutside(all []cairn.Disk, slow func(cairn.DiskID) bool) *outside {
	o := &outside{slow: slow, all: all, byID: make(map[cairn.DiskID]cairn.Disk, len(all)), used: map[cairn.DiskID]bool{}, nodes: map[cairn.NodeID]bool{}}
	for _, d := range all {
		o.byID[d.ID] = d
	}
	return o
}

// use marks disk d as the stripe's, and its node too if node.
func (o *outside) use(d cairn.DiskID, node bool) {
	o.used[d] = true
	if node {
		o.nodes[o.byID[d].Node] = true
	}
}

// pick picks a writable disk outside the stripe that is not slow, or, if
// orSlow and there is none, one that is.
func (o *outside) pick(key string, orSlow bool) (cairn.DiskID, bool) {
	free := func(d cairn.Disk) bool { return !o.used[d.ID] && d.Writable() }
	rank := func(d cairn.Disk) int {
		if o.nodes[d.Node] {
			return 1 // a node the stripe already uses
		}
		return 0
	}
	best, ok := placement.Spare(o.all, key, func(d cairn.Disk) bool { return free(d) && !o.slow(d.ID) }, rank)
	if !ok && orSlow {
		best, ok = placement.Spare(o.all, key, free, rank)
	}
	if ok {
		o.use(best, true)
	}
	return best, ok
}

// newVersion returns a new version: time-ordered, newest first
// (cairn.NewVersion), so that a key's versions list in order
// (docs/design/versioning.md).
func (c *Client) newVersion() (string, error) {
	return cairn.NewVersion(time.Now(), c.cfg.Rand)
}

// Stat returns an object's manifest.
func (c *Client) Stat(ctx context.Context, bucket, key string) (*cairn.Manifest, error) {
	return c.meta.Manifest(ctx, bucket, key)
}

// Delete removes an object: its manifest, which queues its shard files
// for deletion after the grace period (docs/design/cleanup.md), so that
// reads already under way finish.
func (c *Client) Delete(ctx context.Context, bucket, key string) error {
	old, err := c.meta.DeleteManifest(ctx, bucket, key, "")
	if err == nil {
		// A raidp object's bytes are zeroed on both replicas, now or
		// queued (Config.RAIDPDeletes), and counted dead for compaction.
		c.freeRAIDP(ctx, old)
	}
	return err
}

// discard queues files a write made that no manifest names — a failed or
// refused write's, a cancelled stream's — for deletion in the background
// (docs/design/cleanup.md), due at once: nobody can be reading them. Best
// effort: files it cannot queue are left to the orphan collector.
func (c *Client) discard(ctx context.Context, bucket, key string, files []cairn.ShardFile) {
	ctx = context.WithoutCancel(ctx)
	if c.direct == nil {
		c.deleteNow(ctx, files)
		return
	}
	for len(files) > 0 {
		n := min(len(files), cairn.MaxCleanupFiles)
		rec := cairn.Cleanup{Reason: cairn.CleanupFailed, Bucket: bucket, Key: key, Files: files[:n:n]}
		if err := c.direct.PutCleanup(ctx, rec); err != nil {
			c.cfg.Logger.Warn("queueing shard files to delete failed: they are garbage", "bucket", bucket, "key", key, "files", n, "err", err)
		}
		files = files[n:]
	}
}

// deleteNow deletes files at once, in parallel, logging failures: what
// discard does for a client without a metadata store (the experiments').
func (c *Client) deleteNow(ctx context.Context, files []cairn.ShardFile) {
	var g errgroup.Group // not WithContext: each delete is on its own
	g.SetLimit(32)
	for _, f := range files {
		g.Go(func() error {
			if err := c.shards.DeleteShard(ctx, f.Disk, f.Name); err != nil && !isNotFound(err) {
				c.cfg.Logger.Warn("deleting a shard file left garbage", "disk", f.Disk, "file", f.Name, "err", err)
			}
			return nil
		})
	}
	_ = g.Wait()
}

func isNotFound(err error) bool { return errors.Is(err, cairn.ErrNotFound) }
