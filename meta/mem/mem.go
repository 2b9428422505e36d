package mem

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"cairn"
	"cairn/meta"
)

// Store is an in-memory meta.Store. The zero value is not usable; call New.
//
// Locking: mu guards every field below it. Methods that need it held end
// in Locked. No callback runs with mu held.
type Store struct {
	now func() time.Time

	mu       sync.Mutex
	closed   bool
	nodes    map[cairn.NodeID]cairn.Node
	disks    map[cairn.DiskID]cairn.Disk
	pgs      map[int]cairn.PGTable
	buckets  map[string]*bucket
	uploads  map[string]*upload // by bucket + "/" + upload ID
	repairs  map[string]cairn.RepairTask
	progress *cairn.RepairProgress
	damage   map[string]cairn.Damage // by cairn.DamageKey
	scrub    map[cairn.DiskID]cairn.ScrubProgress
	control  cairn.ScrubControl
	cold     map[string][]byte       // the cold tier's records (cold.go)
	lcProg   cairn.LifecycleProgress // PutLifecycleProgress
	users    map[string]cairn.User   // by name
	// usersStamp counts the changes of users (UsersStamp).
	usersStamp   int64
	userDefaults cairn.UserDefaults
	stamp        int64 // last upload stamp handed out
	usage        cairn.Usage
	cleanups     *btree.BTreeG[cairn.Cleanup] // by ID
	// cleanupSeq is the last cleanup ID suffix handed out.
	cleanupSeq int64
	leases     map[string]*lease
	roles      map[string]*role
	stops      []func() bool     // context.AfterFunc stoppers of lease watchers, run by Close
	raidp      map[string][]byte // RAIDP records by name (raidp.go)
}

// bucket is a bucket and its committed manifests, ordered by key.
type bucket struct {
	b       cairn.Bucket
	objects *btree.BTreeG[*cairn.Manifest]
	// versions holds the noncurrent versions and delete markers, nulls
	// the version of each key's noncurrent null version
	// (docs/design/versioning.md).
	versions *btree.BTreeG[verRec]
	nulls    map[string]string
}

// upload is a multipart upload and its parts.
type upload struct {
	u     cairn.Upload
	parts map[int]cairn.Part
	stamp int64
}

var _ meta.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithClock makes the store read time from now instead of time.Now. Lease
// expiry is judged by it, so a test can expire leases by moving a fake clock
// instead of sleeping.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:      time.Now,
		nodes:    make(map[cairn.NodeID]cairn.Node),
		disks:    make(map[cairn.DiskID]cairn.Disk),
		pgs:      make(map[int]cairn.PGTable),
		buckets:  make(map[string]*bucket),
		uploads:  make(map[string]*upload),
		repairs:  make(map[string]cairn.RepairTask),
		damage:   make(map[string]cairn.Damage),
		scrub:    make(map[cairn.DiskID]cairn.ScrubProgress),
		users:    make(map[string]cairn.User),
		cleanups: btree.NewG(8, func(a, b cairn.Cleanup) bool { return a.ID < b.ID }),
		leases:   make(map[string]*lease),
		roles:    make(map[string]*role),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// lockLive locks mu and reports ErrClosed (unlocked again) after Close.
// ctx is checked too, so a cancelled call fails like it would on etcd.
func (s *Store) lockLive(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return meta.ErrClosed
	}
	return nil
}

// PutNode implements meta.Store.
func (s *Store) PutNode(ctx context.Context, n cairn.Node) error {
	if n.ID == "" {
		return fmt.Errorf("put node: %w: empty node ID", cairn.ErrInvalid)
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.nodes[n.ID] = cloneNode(n)
	return nil
}

// Nodes implements meta.Store.
func (s *Store) Nodes(ctx context.Context) ([]cairn.Node, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]cairn.Node, 0, len(s.nodes))
	for _, id := range slices.Sorted(maps.Keys(s.nodes)) {
		out = append(out, cloneNode(s.nodes[id]))
	}
	return out, nil
}

// PutDisk implements meta.Store.
func (s *Store) PutDisk(ctx context.Context, d cairn.Disk) error {
	if d.ID == "" {
		return fmt.Errorf("put disk: %w: empty disk ID", cairn.ErrInvalid)
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if old, ok := s.disks[d.ID]; ok {
		d = cairn.Registered(&old, d)
	} else {
		d = cairn.Registered(nil, d)
	}
	s.disks[d.ID] = d
	return nil
}

// Disks implements meta.Store.
func (s *Store) Disks(ctx context.Context) ([]cairn.Disk, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]cairn.Disk, 0, len(s.disks))
	for _, id := range slices.Sorted(maps.Keys(s.disks)) {
		out = append(out, s.disks[id])
	}
	return out, nil
}

// SetDiskState implements meta.Store.
func (s *Store) SetDiskState(ctx context.Context, id cairn.DiskID, st cairn.DiskState, since time.Time) error {
	if !st.Valid() {
		return fmt.Errorf("set state of disk %s: %w: state %q", id, cairn.ErrInvalid, st)
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	d, ok := s.disks[id]
	if !ok {
		return fmt.Errorf("set state of disk %s: %w", id, cairn.ErrNotFound)
	}
	d.State, d.Since, d.Reason = st, since, ""
	s.disks[id] = d
	return nil
}

// ChangeDisk implements meta.Store.
func (s *Store) ChangeDisk(ctx context.Context, id cairn.DiskID, c cairn.DiskChange) (cairn.Disk, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.Disk{}, err
	}
	defer s.mu.Unlock()
	d, ok := s.disks[id]
	if !ok {
		return cairn.Disk{}, fmt.Errorf("change disk %s: %w", id, cairn.ErrNotFound)
	}
	d, err := c.Apply(d)
	if err != nil {
		return cairn.Disk{}, fmt.Errorf("change disk %s: %w", id, err)
	}
	s.disks[id] = d
	return d, nil
}

// PGTable implements meta.Store.
func (s *Store) PGTable(ctx context.Context, width int) (cairn.PGTable, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.PGTable{}, err
	}
	defer s.mu.Unlock()
	t, ok := s.pgs[width]
	if !ok {
		return cairn.PGTable{}, fmt.Errorf("placement groups of width %d: %w", width, cairn.ErrNotFound)
	}
	return clonePGTable(t), nil
}

// CreatePGTable implements meta.Store.
func (s *Store) CreatePGTable(ctx context.Context, t cairn.PGTable) (cairn.PGTable, error) {
	if t.Width < 1 {
		return cairn.PGTable{}, fmt.Errorf("create placement groups: %w: width %d", cairn.ErrInvalid, t.Width)
	}
	if err := s.lockLive(ctx); err != nil {
		return cairn.PGTable{}, err
	}
	defer s.mu.Unlock()
	if old, ok := s.pgs[t.Width]; ok {
		return clonePGTable(old), nil
	}
	s.pgs[t.Width] = clonePGTable(t)
	return clonePGTable(t), nil
}

// UpdatePGTable implements meta.Store.
func (s *Store) UpdatePGTable(ctx context.Context, t cairn.PGTable) error {
	if t.Width < 1 || t.Epoch < 1 {
		return fmt.Errorf("update placement groups: %w: width %d, epoch %d", cairn.ErrInvalid, t.Width, t.Epoch)
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok := s.pgs[t.Width]
	if !ok {
		return fmt.Errorf("update placement groups of width %d: %w", t.Width, cairn.ErrNotFound)
	}
	if old.Epoch != t.Epoch-1 {
		return fmt.Errorf("update placement groups of width %d: %w: stored epoch %d, not %d", t.Width, cairn.ErrConflict, old.Epoch, t.Epoch-1)
	}
	s.pgs[t.Width] = clonePGTable(t)
	return nil
}

// PGTables implements meta.Store.
func (s *Store) PGTables(ctx context.Context) ([]cairn.PGTable, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []cairn.PGTable
	for _, t := range s.pgs {
		out = append(out, clonePGTable(t))
	}
	slices.SortFunc(out, func(a, b cairn.PGTable) int { return a.Width - b.Width })
	return out, nil
}

// CreateBucket implements meta.Store.
func (s *Store) CreateBucket(ctx context.Context, b cairn.Bucket) error {
	if err := cairn.ValidateBucketName(b.Name); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.buckets[b.Name]; ok {
		return fmt.Errorf("create bucket %s: %w", b.Name, cairn.ErrExists)
	}
	s.buckets[b.Name] = &bucket{
		b: b,
		objects: btree.NewG(16, func(a, b *cairn.Manifest) bool {
			return a.Key < b.Key
		}),
		versions: newVersionTree(),
		nulls:    map[string]string{},
	}
	return nil
}

// SetBucketEncryption implements meta.Store.
func (s *Store) SetBucketEncryption(ctx context.Context, name, scheme string) error {
	if err := meta.CheckBucketEncryption(scheme); err != nil {
		return err
	}
	return s.updateBucket(ctx, "set encryption of bucket "+name, name, func(b *cairn.Bucket) { b.Encryption = scheme })
}

// Bucket implements meta.Store.
func (s *Store) Bucket(ctx context.Context, name string) (cairn.Bucket, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.Bucket{}, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(name)
	if err != nil {
		return cairn.Bucket{}, err
	}
	return b.b, nil
}

func (s *Store) bucketLocked(name string) (*bucket, error) {
	b, ok := s.buckets[name]
	if !ok {
		return nil, fmt.Errorf("bucket %s: %w", name, cairn.ErrNotFound)
	}
	return b, nil
}

// Buckets implements meta.Store.
func (s *Store) Buckets(ctx context.Context) ([]cairn.Bucket, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]cairn.Bucket, 0, len(s.buckets))
	for _, name := range slices.Sorted(maps.Keys(s.buckets)) {
		out = append(out, s.buckets[name].b)
	}
	return out, nil
}

// BucketPage implements meta.Store.
func (s *Store) BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error) {
	if err := meta.CheckPageLimit("buckets", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	var out []cairn.Bucket
	for _, name := range slices.Sorted(maps.Keys(s.buckets)) {
		if name <= after {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, s.buckets[name].b)
	}
	return out, false, nil
}

// DeleteBucket implements meta.Store.
func (s *Store) DeleteBucket(ctx context.Context, name string) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(name)
	if err != nil {
		return fmt.Errorf("delete %w", err)
	}
	if n := b.objects.Len() + b.versions.Len(); n > 0 {
		return fmt.Errorf("delete bucket %s: %w (%d objects and versions)", name, cairn.ErrBucketNotEmpty, n)
	}
	// Its uploads in progress go with it (as DeleteUpload drops them), so
	// that nothing of this owner's is left to the bucket name's next one.
	for k, up := range s.uploads {
		if up.u.Bucket != name {
			continue
		}
		delete(s.uploads, k)
		parts := sortedParts(up)
		d := meta.NewDelta()
		d.Parts(parts, -1)
		d.AddTo(&s.usage)
		s.discardLocked(cairn.CleanupAbort, up.u.Bucket, up.u.Key, cairn.PartFiles(parts))
	}
	delete(s.buckets, name)
	return nil
}

// CommitManifest implements meta.Store.
func (s *Store) CommitManifest(ctx context.Context, m *cairn.Manifest, prevVersion string) error {
	if err := meta.CheckManifest(m); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(m.Bucket)
	if err != nil {
		return fmt.Errorf("commit %s/%s: %w", m.Bucket, m.Key, err)
	}
	cur, ok := b.objects.Get(&cairn.Manifest{Key: m.Key})
	switch {
	case ok && cur.Version == m.Version:
		return nil // already committed: a retried commit
	case ok && cur.Version != prevVersion && prevVersion != meta.AnyVersion:
		return fmt.Errorf("commit %s/%s over version %q: %w (current version %s)",
			m.Bucket, m.Key, prevVersion, cairn.ErrConflict, cur.Version)
	case !ok && prevVersion != "" && prevVersion != meta.AnyVersion:
		return fmt.Errorf("commit %s/%s over version %q: %w (object does not exist)",
			m.Bucket, m.Key, prevVersion, cairn.ErrConflict)
	}
	if !ok {
		cur = nil
	}
	if err := s.checkReplaceLocked(b, m, cur); err != nil {
		return fmt.Errorf("commit %s/%s: %w", m.Bucket, m.Key, err)
	}
	s.replaceCurrentLocked(b, m, cur)
	return nil
}

// Manifest implements meta.Store.
func (s *Store) Manifest(ctx context.Context, bucketName, key string) (*cairn.Manifest, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return nil, fmt.Errorf("object %s/%s: %w", bucketName, key, err)
	}
	m, ok := b.objects.Get(&cairn.Manifest{Key: key})
	if !ok {
		return nil, fmt.Errorf("object %s/%s: %w", bucketName, key, cairn.ErrNotFound)
	}
	return cloneManifest(m), nil
}

// DeleteManifest implements meta.Store.
func (s *Store) DeleteManifest(ctx context.Context, bucketName, key, version string) (*cairn.Manifest, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return nil, fmt.Errorf("delete object %s/%s: %w", bucketName, key, err)
	}
	m, ok := b.objects.Get(&cairn.Manifest{Key: key})
	switch {
	case !ok:
		return nil, fmt.Errorf("delete object %s/%s: %w", bucketName, key, cairn.ErrNotFound)
	case version != "" && m.Version != version:
		return nil, fmt.Errorf("delete object %s/%s version %s: %w (current version %s)",
			bucketName, key, version, cairn.ErrConflict, m.Version)
	}
	if err := m.CheckDelete(s.now(), false); err != nil {
		return nil, fmt.Errorf("delete object %s/%s: %w", bucketName, key, err)
	}
	b.objects.Delete(m)
	d := meta.NewDelta()
	d.Object(m, -1)
	d.AddTo(&s.usage)
	s.discardLocked(cairn.CleanupDelete, bucketName, key, m.Files())
	promoteLocked(b, key) // in a versioned bucket the next version becomes current
	return m, nil         // removed from the tree: no longer shared
}

// ListManifests implements meta.Store.
func (s *Store) ListManifests(ctx context.Context, bucketName, prefix, startAfter string, limit int) ([]*cairn.Manifest, bool, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return nil, false, fmt.Errorf("list %w", err)
	}
	pg := manifestPage{limit: limit}
	s.ascendLocked(b, prefix, startAfter, pg.add)
	return pg.out, pg.more, nil
}

// manifestPage collects a page of manifests as ListManifests pages them
// (as the etcd store's: by count and by the manifests' size; limit < 1:
// no limit).
type manifestPage struct {
	limit, bytes int
	out          []*cairn.Manifest
	more         bool
}

// add adds a copy of m to the page and reports whether it has room for
// more; if m does not fit, more is set.
func (p *manifestPage) add(m *cairn.Manifest) bool {
	if p.limit < 1 {
		p.out = append(p.out, cloneManifest(m))
		return true
	}
	n := 0
	if enc, err := json.Marshal(m); err == nil {
		n = len(enc)
	}
	if len(p.out) == min(p.limit, meta.MaxPage) || len(p.out) > 0 && p.bytes+n > meta.ManifestPageBytes {
		p.more = true
		return false
	}
	p.out = append(p.out, cloneManifest(m))
	p.bytes += n
	return true
}

// ListObjects implements meta.Store.
func (s *Store) ListObjects(ctx context.Context, bucketName, prefix, startAfter string, limit int) ([]cairn.ObjectInfo, bool, error) {
	if err := meta.CheckPageLimit("list bucket "+bucketName, limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return nil, false, fmt.Errorf("list %w", err)
	}
	var (
		out  []cairn.ObjectInfo
		more bool
	)
	s.ascendLocked(b, prefix, startAfter, func(m *cairn.Manifest) bool {
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, m.Info())
		return true
	})
	return out, more, nil
}

// ascendLocked calls f for the manifests of b whose keys start with prefix
// and sort after startAfter, in key order, until f returns false.
func (s *Store) ascendLocked(b *bucket, prefix, startAfter string, f func(*cairn.Manifest) bool) {
	from := prefix
	if startAfter >= prefix {
		from = startAfter + "\x00" // the smallest string greater than startAfter
	}
	b.objects.AscendGreaterOrEqual(&cairn.Manifest{Key: from}, func(m *cairn.Manifest) bool {
		return strings.HasPrefix(m.Key, prefix) && f(m)
	})
}

// Usage implements meta.Store.
func (s *Store) Usage(ctx context.Context) (cairn.Usage, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.Usage{}, err
	}
	defer s.mu.Unlock()
	return cairn.Usage{Buckets: maps.Clone(s.usage.Buckets), Codes: maps.Clone(s.usage.Codes), Disks: maps.Clone(s.usage.Disks)}, nil
}

// BucketUsage implements meta.Store.
func (s *Store) BucketUsage(ctx context.Context, name string) (cairn.Tally, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.Tally{}, err
	}
	defer s.mu.Unlock()
	if _, err := s.bucketLocked(name); err != nil {
		return cairn.Tally{}, fmt.Errorf("usage of %w", err)
	}
	return s.usage.Buckets[name], nil
}

// Close implements meta.Store: it stops lease renewal (the entries expire
// ttl later by the store's clock) and ends every leadership. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	now := s.now()
	for _, l := range s.leases {
		l.stopLocked(now)
	}
	stops := s.stops
	s.stops = nil
	var ended []*leadership
	for _, r := range s.roles {
		if r.leader != nil {
			ended = append(ended, r.leader)
			r.leader = nil
		}
		for _, w := range r.waiters {
			close(w.closed)
		}
		r.waiters = nil
	}
	s.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	for _, l := range ended {
		l.end()
	}
	return nil
}

func cloneNode(n cairn.Node) cairn.Node {
	n.Labels = maps.Clone(n.Labels)
	return n
}

func clonePGTable(t cairn.PGTable) cairn.PGTable {
	t.PGs = slices.Clone(t.PGs)
	for i := range t.PGs {
		t.PGs[i].Disks = slices.Clone(t.PGs[i].Disks)
	}
	return t
}

func cloneManifest(m *cairn.Manifest) *cairn.Manifest {
	c := *m
	c.UserMeta = maps.Clone(m.UserMeta)
	c.Shards = slices.Clone(m.Shards)
	if m.Retention != nil {
		r := *m.Retention
		c.Retention = &r
	}
	if m.Parts != nil {
		c.Parts = make([]cairn.Part, len(m.Parts))
		for i, p := range m.Parts {
			c.Parts[i] = clonePart(p)
		}
	}
	return &c
}

func clonePart(p cairn.Part) cairn.Part {
	p.Shards = slices.Clone(p.Shards)
	return p
}
