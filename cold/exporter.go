package cold

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"cairn"
	"cairn/layout/gp"
	"cairn/meta"
)

// intent is a group's record of the export in flight
// (intents/<group>): written with the batch's allocation before any
// slot is touched, deleted with the outcome (docs/design/cold.md,
// "Persistence"). After a crash, recovery re-encodes every row and small
// page it names from the data slots, keeps the objects whose cold
// manifest committed and releases the slots of the others.
type intent struct {
	Objects []intentObject `json:"objects"`
	Rows    [][2]uint32    `json:"rows"`  // level, slot
	Pages   []int64        `json:"pages"` // small pages
}

// intentObject is one object of an export batch: the staged version it
// replaces and where the batch put it.
type intentObject struct {
	Bucket  string   `json:"bucket"`
	Key     string   `json:"key"`
	Version string   `json:"version"`
	Disk    int      `json:"disk"`
	Size    int64    `json:"size"`
	Front   int64    `json:"front,omitempty"`
	Slots   []uint32 `json:"slots,omitempty"`
}

func (o intentObject) record() gp.Record {
	return gp.Record{Disk: o.Disk, Size: o.Size, Front: o.Front, Slots: o.Slots}
}

const intentPrefix = "intents/"

// Membership records (members/<group>/<version>, an intentObject): one
// per object version whose slots a group holds, written with the batch's
// allocation and deleted with the slots' release. The sweep (Exporter.gc)
// pages through them and releases the slots of versions that no longer
// exist — deleted or overwritten cold objects.
func memberPrefix(group string) string       { return "members/" + group + "/" }
func memberKey(group, version string) string { return memberPrefix(group) + version }
func memberOp(group string, o intentObject) (meta.ColdOp, error) {
	b, err := json.Marshal(o)
	return meta.ColdOp{Key: memberKey(group, o.Version), Value: b}, err
}

func intentKey(group string) string { return intentPrefix + group }

// progressKey holds the export job's ExportProgress.
const progressKey = "export-progress"

// ExportProgress is what the export job has done since the cluster
// began, for `cairn admin status`.
type ExportProgress struct {
	Passes    int64     `json:"passes"`
	Exported  int64     `json:"exported"`  // objects committed to the cold tier
	Bytes     int64     `json:"bytes"`     // their bytes
	Lost      int64     `json:"lost"`      // exported copies dropped: the object changed meanwhile
	Dropped   int64     `json:"dropped"`   // stale queue records removed
	Recovered int64     `json:"recovered"` // intents of interrupted exports resolved
	Released  int64     `json:"released"`  // deleted or overwritten cold objects whose slots were freed
	Blocked   int64     `json:"blocked"`   // objects left staged in the last pass: their group has a disk that is not writable
	Unread    int64     `json:"unread"`    // objects left staged in the last pass: their warm copy could not be read
	Rebuilt   int64     `json:"rebuilt"`   // lost disks of groups rebuilt onto spares
	Staged    int64     `json:"staged"`    // queue records seen in the last pass
	Last      time.Time `json:"last"`      // end of the last pass
	LastError string    `json:"last_error,omitempty"`
}

// ReadProgress returns the export job's progress (its zero value if it
// never ran).
func ReadProgress(ctx context.Context, m StateReader) (ExportProgress, error) {
	var p ExportProgress
	b, err := m.ColdGet(ctx, progressKey)
	if errors.Is(err, cairn.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("%w: export progress: %v", cairn.ErrCorrupt, err)
	}
	return p, nil
}

// Fetch writes bytes [off, off+n) (n < 0: to the end) of the stored bytes
// of a staged object m (its warm copy; the ciphertext of an encrypted one)
// to w.
type Fetch func(ctx context.Context, m *cairn.Manifest, off, n int64, w io.Writer) error

// ExporterConfig configures the export job.
type ExporterConfig struct {
	Meta  Meta
	Nodes Disks
	// Policy is the cold tier's policy; Groups the number of placement
	// groups objects are spread over (by the hash of bucket and key), and
	// GroupDisks returns the K+M disks (on distinct nodes) of group n when
	// it is first used — afterwards the group's state names them.
	Policy     gp.Policy
	Groups     int
	GroupDisks func(ctx context.Context, n int) ([]cairn.DiskID, error)
	// Fetch reads a staged object's warm copy.
	Fetch Fetch
	// MaxBatch bounds the objects of one export (default 16), MaxBatchBytes
	// their bytes (default 64 MiB), read whole before the export writes
	// them. A bigger object goes alone and is read a piece at a time as the
	// export writes it (Group.ExportFrom), a row at a time. MaxObject is
	// the size of an object the job moves (default 16 GiB; bigger ones
	// stay in the warm tier): a bound on one export's time (the group's
	// other batches wait for it) and on its data disk's share, not on
	// memory.
	// MaxChunks bounds the chunks of an object the job moves (default
	// DefaultMaxChunks; more stay warm).
	MaxBatch      int
	MaxBatchBytes int64
	MaxObject     int64
	MaxChunks     int
	// Grace is how long a queue record may wait for its staged manifest
	// to commit before it is dropped as the record of a failed write
	// (default 1 h).
	Grace time.Duration
	Now   func() time.Time
	Log   *slog.Logger
}

// DefaultMaxChunks bounds the chunks of one exported object: its intent
// and membership records list a slot per chunk, and the intent a row per
// chunk too, about 26 bytes each in JSON with 10-digit slot numbers, in
// values of at most meta.MaxColdValue (64 KiB). A policy with a small
// chunk cap keeps big objects warm: 16 GiB at a 4 MiB cap is 4,100
// chunks. (A batch within MaxBatchBytes holds at most 2,048 chunks of
// 32 KiB, the smallest s0 of a clay-4-2-5 policy.)
const DefaultMaxChunks = 2048

// Exporter is the director's export job: it moves staged objects from
// the warm tier into the cold groups' slots. Run one at a time.
type Exporter struct {
	cfg   ExporterConfig
	sweep map[int]string // per group: the membership record the next sweep starts after
}

// NewExporter returns an export job; cfg's zero fields get defaults.
func NewExporter(cfg ExporterConfig) *Exporter {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 16
	}
	cfg.MaxBatch = min(cfg.MaxBatch, 16) // a save holds the batch's queue and intent writes
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 64 << 20
	}
	if cfg.MaxObject <= 0 {
		cfg.MaxObject = 16 << 30
	}
	if cfg.MaxChunks <= 0 {
		cfg.MaxChunks = DefaultMaxChunks
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Groups = max(cfg.Groups, 1)
	return &Exporter{cfg: cfg}
}

// GroupID names group n of a policy: the policy's hash keeps groups of
// another policy apart.
func GroupID(p gp.Policy, n int) string {
	h := sha256.Sum256([]byte(p.String()))
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h[:4]), n)
}

// groupOf returns the group number of an object.
func (e *Exporter) groupOf(bucket, key string) int {
	h := fnv.New64a()
	h.Write([]byte(bucket + "/" + key))
	return int(h.Sum64() % uint64(e.cfg.Groups))
}

// item is a staged object picked for a batch.
type item struct {
	queued meta.ColdRecord
	m      *cairn.Manifest
}

// Run makes one pass: it rebuilds the lost disks of groups onto spares,
// resolves the intents of interrupted exports, sweeps the groups' freed
// objects, then pages through the staging queue and exports its objects in
// batches per group. It returns the pass's counts (also added to the
// stored ExportProgress).
func (e *Exporter) Run(ctx context.Context) (ExportProgress, error) {
	var st ExportProgress
	err := e.run(ctx, &st)
	if perr := e.saveProgress(ctx, st, err); err == nil {
		err = perr
	}
	return st, err
}

func (e *Exporter) run(ctx context.Context, st *ExportProgress) error {
	// A group whose rebuild fails stays blocked; the others go on.
	failed := e.repairGroups(ctx, st)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := e.recoverAll(ctx, st); err != nil {
		return err
	}
	for n := range e.cfg.Groups {
		if err := e.gc(ctx, n, st); err != nil {
			return err
		}
	}
	after := ""
	for { // failed collects the batches that failed: the pass goes on without them
		page, more, err := e.cfg.Meta.ColdPage(ctx, stagedPrefix, after, 64)
		if err != nil {
			return err
		}
		byGroup := map[int][]item{}
		for _, r := range page {
			after = r.Key
			st.Staged++
			it, ok, err := e.pick(ctx, r, st)
			if err != nil {
				return err
			}
			if ok {
				n := e.groupOf(it.m.Bucket, it.m.Key)
				byGroup[n] = append(byGroup[n], it)
			}
		}
		for _, n := range slices.Sorted(maps.Keys(byGroup)) {
			items := byGroup[n]
			limit := e.cfg.MaxBatch
			for len(items) > 0 {
				k, bytes := 0, int64(0)
				for k < len(items) && k < limit && (k == 0 || bytes+items[k].m.Size <= e.cfg.MaxBatchBytes) {
					bytes += items[k].m.Size
					k++
				}
				err := e.exportBatch(ctx, n, items[:k], st)
				if errors.Is(err, errSplit) && k > 1 {
					limit = k / 2 // nothing was written: try half the batch
					continue
				}
				if err != nil {
					// The other groups go on; this batch's objects stay
					// staged (and an intent it left is recovered next pass).
					e.cfg.Log.Warn("cold export: a batch failed", "group", GroupID(e.cfg.Policy, n), "objects", k, "err", err)
					failed = errors.Join(failed, err)
					if ctx.Err() != nil {
						return failed
					}
				}
				items = items[k:]
			}
		}
		if !more || len(page) == 0 {
			return failed
		}
	}
}

// pick decides what to do with a queue record: export its object (ok),
// drop the record (its object is gone, not staged any more, or its write
// never committed within the grace period), or leave it.
func (e *Exporter) pick(ctx context.Context, r meta.ColdRecord, st *ExportProgress) (item, bool, error) {
	bucket, key, s, err := parseStaged(r)
	if err != nil {
		e.cfg.Log.Warn("cold export: dropping a bad queue record", "key", r.Key, "err", err)
		return item{}, false, e.dropQueued(ctx, r, st)
	}
	m, err := e.cfg.Meta.Manifest(ctx, bucket, key)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		m = nil
	case err != nil:
		return item{}, false, err
	}
	if m == nil || m.Version != s.Version || m.Cold != nil || !cairn.IsColdPolicy(m.Policy) {
		// Dropped: a version exported already, or a record older than the
		// grace. Left: a record whose manifest may still commit — a PUT's
		// new version, or Stage's change of the same version to the cold
		// policy (Stage writes the record first: dropping it in between
		// would leave that object staged with no record, never exported).
		// Moved: a record older than the grace that names a version which
		// never committed while the key's current version is staged — two
		// writers of the key raced, and the loser's record replaced the
		// winner's (the record is one per key).
		switch {
		case m != nil && m.Version == s.Version && m.Cold != nil:
			return item{}, false, e.dropQueued(ctx, r, st)
		case e.cfg.Now().Sub(s.Since) <= e.cfg.Grace:
			return item{}, false, nil
		case m != nil && m.Cold == nil && cairn.IsColdPolicy(m.Policy):
			return item{}, false, e.requeue(ctx, r, m)
		}
		return item{}, false, e.dropQueued(ctx, r, st)
	}
	if m.Policy != e.cfg.Policy.String() || m.Size > e.cfg.MaxObject || e.cfg.Policy.Partition(m.Size).NumChunks() > e.cfg.MaxChunks {
		// Another policy's (an old class setting) or too big: it stays warm.
		e.cfg.Log.Info("cold export: object stays in the warm tier", "bucket", bucket, "key", key, "policy", m.Policy, "size", m.Size)
		return item{}, false, e.dropQueued(ctx, r, st)
	}
	return item{queued: r, m: m}, true, nil
}

// requeue points queue record r at m, the key's staged version (the next
// pass exports it), if r is still what was read.
func (e *Exporter) requeue(ctx context.Context, r meta.ColdRecord, m *cairn.Manifest) error {
	op, err := StageOp(m, e.cfg.Now())
	if err != nil {
		return err
	}
	op.Check, op.Prev = true, r.Value
	e.cfg.Log.Warn("cold export: a queue record named a version that never committed; it now names the staged one",
		"bucket", m.Bucket, "key", m.Key, "version", m.Version)
	err = e.cfg.Meta.ColdUpdate(ctx, []meta.ColdOp{op})
	if errors.Is(err, cairn.ErrConflict) {
		return nil // a new staging of the key replaced it
	}
	return err
}

// dropQueued deletes a queue record if it is still what was read (a new
// staging of the key replaced it otherwise, and stays).
func (e *Exporter) dropQueued(ctx context.Context, r meta.ColdRecord, st *ExportProgress) error {
	err := e.cfg.Meta.ColdUpdate(ctx, []meta.ColdOp{{Key: r.Key, Check: true, Prev: r.Value}})
	if errors.Is(err, cairn.ErrConflict) {
		return nil
	}
	if err == nil && st != nil {
		st.Dropped++
	}
	return err
}

// state loads group n, creating it on its disks the first time.
func (e *Exporter) state(ctx context.Context, n int) (*State, error) {
	id := GroupID(e.cfg.Policy, n)
	s, err := LoadState(ctx, e.cfg.Meta, id, e.cfg.Nodes)
	if !errors.Is(err, cairn.ErrNotFound) {
		return s, err
	}
	disks, err := e.cfg.GroupDisks(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("disks of cold group %s: %w", id, err)
	}
	return NewState(id, e.cfg.Policy, disks, e.cfg.Nodes)
}

// healthy reports whether every disk of group s is writable (up, no
// fault reported) in the cluster map. An export or a recovery reads the
// slots of a row that exist and takes a missing one for a never-written
// slot (zeros): on a disk that lost its data that would compute parity
// from zeros in place of lost chunks, so a group with a disk that is not
// healthy is left alone until it is (its objects stay staged, its intent
// pending).
func (e *Exporter) healthy(ctx context.Context, s *State) (bool, error) {
	disks, err := e.cfg.Meta.Disks(ctx)
	if err != nil {
		return false, err
	}
	ok := map[cairn.DiskID]bool{}
	for _, d := range disks {
		ok[d.ID] = d.Writable()
	}
	for _, d := range s.Disks {
		if !ok[d] {
			e.cfg.Log.Warn("cold export: group left alone while a disk is not writable", "group", s.ID, "disk", d)
			return false, nil
		}
	}
	return true, nil
}

// errSplit: a batch's allocation needs more records than one metadata
// transaction holds; nothing was stored, and half the batch may fit.
var errSplit = errors.New("cold: batch too big for one transaction")

// exportBatch exports items (all of group n): it reads their warm
// copies, stores the allocation with an intent, writes the slots and
// parity, commits each object's cold manifest against its staged one,
// and resolves the intent.
func (e *Exporter) exportBatch(ctx context.Context, n int, items []item, st *ExportProgress) error {
	s, err := e.state(ctx, n)
	if err != nil {
		return err
	}
	if ok, err := e.healthy(ctx, s); !ok || err != nil {
		st.Blocked += int64(len(items))
		return err
	}
	// Read the warm copies; an object that cannot be read stays staged
	// (a later pass tries again) and does not hold up the others. An
	// object bigger than a batch is alone: it is read as it is written.
	stream := len(items) == 1 && items[0].m.Size > e.cfg.MaxBatchBytes
	var datas [][]byte
	var ok []item
	for _, it := range items {
		if stream {
			ok = append(ok, it)
			break
		}
		b, err := e.fetch(ctx, it.m, 0, it.m.Size)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			e.cfg.Log.Warn("cold export: a staged object cannot be read; it stays staged", "bucket", it.m.Bucket, "key", it.m.Key, "err", err)
			st.Unread++
			continue
		}
		datas, ok = append(datas, b), append(ok, it)
	}
	if items = ok; len(items) == 0 {
		return nil
	}
	sizes := make([]int64, len(items))
	for i, it := range items {
		sizes[i] = it.m.Size
	}
	var unread atomic.Bool // a streamed object's read failed (pieces are read at once)
	read := func(ctx context.Context, i int, off, n int64) ([]byte, error) {
		if !stream {
			return datas[i][off : off+n], nil
		}
		b, err := e.fetch(ctx, items[i].m, off, n)
		if err != nil && ctx.Err() == nil {
			unread.Store(true)
		}
		return b, err
	}
	var in intent
	var inRaw []byte
	recs, err := s.ExportFrom(ctx, sizes, read, func(recs []gp.Record, updates []gp.RowUpdate) error {
		in = newIntent(s.PG, items, recs, updates)
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		if len(b) > meta.MaxColdValue {
			// One record cannot hold it: half the batch may fit.
			return fmt.Errorf("%w: an intent of %d bytes", ErrTooManyChanges, len(b))
		}
		inRaw = b
		ops := []meta.ColdOp{{Key: intentKey(s.ID), Value: b, Check: true}}
		for _, o := range in.Objects {
			op, err := memberOp(s.ID, o)
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		return s.Save(ctx, e.cfg.Meta, ops...)
	})
	if errors.Is(err, ErrTooManyChanges) {
		// The allocation did not fit one transaction; nothing is stored.
		return fmt.Errorf("%w: cold export into group %s: %w", errSplit, s.ID, err)
	}
	if err != nil && unread.Load() && ctx.Err() == nil {
		// The allocation and intent are stored: undo them now, as the
		// next pass would, so that the group's next batches go on.
		e.cfg.Log.Warn("cold export: a staged object cannot be read; it stays staged", "bucket", items[0].m.Bucket, "key", items[0].m.Key, "err", err)
		st.Unread++
		done, err := e.recoverGroup(ctx, meta.ColdRecord{Key: intentKey(s.ID), Value: inRaw})
		if err != nil {
			return fmt.Errorf("cold export into group %s: undoing the export of an unreadable object: %w", s.ID, err)
		}
		if !done {
			e.cfg.Log.Warn("cold export: the undo waits for the group's disks; a later pass recovers it", "group", s.ID)
		}
		return nil
	}
	if err != nil {
		// The allocation and intent may be stored: the next pass recovers.
		return fmt.Errorf("cold export into group %s: %w", s.ID, err)
	}
	keep := make([]bool, len(items))
	retry := make([]bool, len(items)) // changed but still staged: export again later
	for i, it := range items {
		rec, err := recs[i].AppendBinary(nil, s.PG.Geo)
		if err != nil {
			return err
		}
		err = e.commit(ctx, it.m, &cairn.ColdRef{Group: s.ID, Record: rec})
		switch {
		case err == nil:
			keep[i] = true
			st.Exported++
			st.Bytes += it.m.Size
		case errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound):
			st.Lost++ // overwritten or deleted meanwhile: that write wins
			// The same version updated in place (tags, a repair that moved
			// a warm shard) is still staged: its queue record stays.
			cur, err := e.cfg.Meta.Manifest(ctx, it.m.Bucket, it.m.Key)
			retry[i] = err == nil && cur.Version == it.m.Version && cur.Cold == nil
		default:
			return fmt.Errorf("committing cold %s/%s: %w", it.m.Bucket, it.m.Key, err)
		}
	}
	if err := e.resolve(ctx, s, in, inRaw, keep); err != nil {
		return err
	}
	for i, it := range items {
		if retry[i] {
			continue
		}
		if err := e.dropQueued(ctx, it.queued, nil); err != nil {
			return err
		}
	}
	return nil
}

// fetch returns bytes [off, off+n) of the stored bytes of m.
func (e *Exporter) fetch(ctx context.Context, m *cairn.Manifest, off, n int64) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(n))
	err := e.cfg.Fetch(ctx, m, off, n, &buf)
	if err == nil && int64(buf.Len()) != n {
		err = fmt.Errorf("%w: %d bytes read of [%d, +%d), its manifest says %d in all", cairn.ErrCorrupt, buf.Len(), off, n, m.Size)
	}
	return buf.Bytes(), err
}

// commitTries bounds the commits of one exported object against its
// staged manifest changed in place meanwhile.
const commitTries = 4

// commit replaces staged manifest m by its cold form at ref, by
// compare-and-swap. The same version changed in place meanwhile — a
// repair or a move of a warm shard, new tags: the same stored bytes, which
// the export copied — is committed against its current form instead, so a
// long export on a busy cluster does not wait a pass for each such object.
// cairn.ErrConflict or ErrNotFound when the key was overwritten or deleted
// (that write wins), or it kept changing.
func (e *Exporter) commit(ctx context.Context, m *cairn.Manifest, ref *cairn.ColdRef) error {
	prev := m
	for try := 1; ; try++ {
		cm := *prev
		cm.Layout, cm.Cold = cairn.Layout{}, ref
		cm.Parts = slices.Clone(prev.Parts) // their records stay, their warm layouts go
		for i := range cm.Parts {
			cm.Parts[i].Layout = cairn.Layout{}
		}
		err := e.cfg.Meta.UpdateManifest(ctx, &cm, prev)
		if !errors.Is(err, cairn.ErrConflict) || try == commitTries {
			return err
		}
		cur, cerr := e.cfg.Meta.Manifest(ctx, m.Bucket, m.Key)
		if cerr != nil || cur.Version != m.Version || cur.Cold != nil || cur.Policy != m.Policy ||
			cur.Size != m.Size || cur.ETag != m.ETag || !reflect.DeepEqual(cur.Encryption, m.Encryption) {
			return err
		}
		prev = cur
	}
}

// newIntent records a placed batch.
func newIntent(pg *gp.PG, items []item, recs []gp.Record, updates []gp.RowUpdate) intent {
	in := intent{}
	pages := map[int64]bool{}
	for i, r := range recs {
		in.Objects = append(in.Objects, intentObject{Bucket: items[i].m.Bucket, Key: items[i].m.Key, Version: items[i].m.Version,
			Disk: r.Disk, Size: r.Size, Front: r.Front, Slots: r.Slots})
		if f := pg.Geo.Partition(r.Size).Front; f > 0 {
			for p := r.Front / SmallPage; p*SmallPage < r.Front+f; p++ {
				pages[p] = true
			}
		}
	}
	for _, u := range updates {
		in.Rows = append(in.Rows, [2]uint32{uint32(u.Level), u.Slot})
	}
	in.Pages = slices.Sorted(maps.Keys(pages))
	return in
}

// resolve ends an intent: the slots of the objects not kept go back to
// their buckets and the group's state is saved with the intent deleted,
// by compare-and-swap.
func (e *Exporter) resolve(ctx context.Context, s *State, in intent, raw []byte, keep []bool) error {
	ops := []meta.ColdOp{{Key: intentKey(s.ID), Check: true, Prev: raw}}
	for i, o := range in.Objects {
		if keep[i] {
			continue
		}
		if err := s.PG.Release(o.record()); err != nil {
			return fmt.Errorf("cold group %s: releasing %s/%s: %w", s.ID, o.Bucket, o.Key, err)
		}
		ops = append(ops, meta.ColdOp{Key: memberKey(s.ID, o.Version)})
	}
	return s.Save(ctx, e.cfg.Meta, ops...)
}

// sweepPage is how many membership records one sweep of a group reads.
const sweepPage = 64

// gc sweeps one page of group n's membership records, from where the
// last sweep of the group stopped: the slots of object versions that no
// longer exist, or are no longer this group's cold object, go back to
// their buckets. A group with an export in flight is left alone (its
// batch's versions are not committed yet).
func (e *Exporter) gc(ctx context.Context, n int, st *ExportProgress) error {
	s, err := LoadState(ctx, e.cfg.Meta, GroupID(e.cfg.Policy, n), e.cfg.Nodes)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := e.cfg.Meta.ColdGet(ctx, intentKey(s.ID)); !errors.Is(err, cairn.ErrNotFound) {
		return err // nil: an intent is pending
	}
	if e.sweep == nil {
		e.sweep = map[int]string{}
	}
	page, more, err := e.cfg.Meta.ColdPage(ctx, memberPrefix(s.ID), e.sweep[n], sweepPage)
	if err != nil {
		return err
	}
	e.sweep[n] = ""
	if more && len(page) > 0 {
		e.sweep[n] = page[len(page)-1].Key
	}
	var ops []meta.ColdOp
	for _, r := range page {
		var o intentObject
		if err := json.Unmarshal(r.Value, &o); err != nil {
			return fmt.Errorf("%w: membership record %q: %v", cairn.ErrCorrupt, r.Key, err)
		}
		live, err := e.live(ctx, s, o)
		if err != nil {
			return err
		}
		if live {
			continue
		}
		if err := s.PG.Release(o.record()); err != nil {
			return fmt.Errorf("cold group %s: releasing %s/%s: %w", s.ID, o.Bucket, o.Key, err)
		}
		ops = append(ops, meta.ColdOp{Key: r.Key, Check: true, Prev: r.Value})
		st.Released++
		if len(ops) == 16 { // a save's bound; the rest waits for the next sweep
			e.sweep[n] = r.Key
			break
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return s.Save(ctx, e.cfg.Meta, ops...)
}

// live reports whether object version o is still group s's cold object
// (a current or noncurrent version).
func (e *Exporter) live(ctx context.Context, s *State, o intentObject) (bool, error) {
	_, ok, err := e.committed(ctx, s, o)
	return ok, err
}

// committed returns the committed record (with its pieces' checksums) of
// object version o if it is still group s's cold object where o says.
func (e *Exporter) committed(ctx context.Context, s *State, o intentObject) (gp.Record, bool, error) {
	v, err := e.cfg.Meta.ObjectVersion(ctx, o.Bucket, o.Key, o.Version)
	if errors.Is(err, cairn.ErrNotFound) {
		return gp.Record{}, false, nil
	}
	if err != nil {
		return gp.Record{}, false, err
	}
	m := v.Manifest
	if m == nil || m.Cold == nil || m.Cold.Group != s.ID {
		return gp.Record{}, false, nil
	}
	rec, err := gp.DecodeRecord(m.Cold.Record, s.PG.Geo)
	if err != nil {
		return gp.Record{}, false, fmt.Errorf("cold %s/%s: %w", o.Bucket, o.Key, err)
	}
	ok := rec.Disk == o.Disk && rec.Size == o.Size && rec.Front == o.Front && slices.Equal(rec.Slots, o.Slots)
	return rec, ok, nil
}

// recoverAll resolves the intent of every group that has one.
func (e *Exporter) recoverAll(ctx context.Context, st *ExportProgress) error {
	after := ""
	for {
		page, more, err := e.cfg.Meta.ColdPage(ctx, intentPrefix, after, 16)
		if err != nil {
			return err
		}
		for _, r := range page {
			after = r.Key
			done, err := e.recoverGroup(ctx, r)
			if err != nil {
				return err
			}
			if done {
				st.Recovered++
			}
		}
		if !more || len(page) == 0 {
			return nil
		}
	}
}

// recoverGroup resolves an interrupted export: the rows and small pages
// it named are re-encoded in full from their data slots (whatever the
// crash left in them), so every row decodes again; an object is kept if
// its cold manifest names this group and the intent's slots (the commit
// happened), and released otherwise — it is still staged, or was
// overwritten or deleted, and its queue record brings it back. It reports
// false (and does nothing) while a disk of the group is not healthy.
func (e *Exporter) recoverGroup(ctx context.Context, r meta.ColdRecord) (bool, error) {
	id := r.Key[len(intentPrefix):]
	s, err := LoadState(ctx, e.cfg.Meta, id, e.cfg.Nodes)
	if err != nil {
		return false, err
	}
	var in intent
	if err := json.Unmarshal(r.Value, &in); err != nil {
		return false, fmt.Errorf("%w: intent of cold group %s: %v", cairn.ErrCorrupt, id, err)
	}
	if ok, err := e.healthy(ctx, s); !ok || err != nil {
		return false, err
	}
	e.cfg.Log.Info("cold export: recovering an interrupted export", "group", id, "objects", len(in.Objects), "rows", len(in.Rows))
	// Rows under the exports' bound on rows in memory, MaxRowMemory.
	mem := semaphore.NewWeighted(MaxRowMemory)
	eg, ectx := s.group(ctx)
	for _, row := range in.Rows {
		u := gp.RowUpdate{Level: int(row[0]), Slot: row[1], Mode: gp.Full}
		w := s.rowWeight(u)
		if err := mem.Acquire(ectx, w); err != nil {
			return false, fmt.Errorf("recovering cold group %s: %w", id, waitOr(eg, err))
		}
		eg.Go(func() error {
			defer mem.Release(w)
			return s.updateRow(ectx, u, nil, nil)
		})
	}
	for _, p := range in.Pages {
		eg.Go(func() error { return s.encodeSmallPage(ectx, p) })
	}
	if err := eg.Wait(); err != nil {
		return false, fmt.Errorf("recovering cold group %s: %w", id, err)
	}
	keep := make([]bool, len(in.Objects))
	for i, o := range in.Objects {
		if keep[i], err = e.live(ctx, s, o); err != nil {
			return false, err
		}
	}
	return true, e.resolve(ctx, s, in, r.Value, keep)
}

// saveProgress adds a pass's counts to the stored progress.
func (e *Exporter) saveProgress(ctx context.Context, st ExportProgress, runErr error) error {
	p, err := ReadProgress(ctx, e.cfg.Meta)
	if err != nil {
		return err
	}
	p.Passes++
	p.Exported += st.Exported
	p.Bytes += st.Bytes
	p.Lost += st.Lost
	p.Dropped += st.Dropped
	p.Recovered += st.Recovered
	p.Released += st.Released
	p.Rebuilt += st.Rebuilt
	p.Staged = st.Staged
	p.Blocked, p.Unread = st.Blocked, st.Unread
	p.Last = e.cfg.Now().UTC()
	p.LastError = ""
	if runErr != nil {
		p.LastError = runErr.Error()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return e.cfg.Meta.ColdUpdate(ctx, []meta.ColdOp{{Key: progressKey, Value: b}})
}
