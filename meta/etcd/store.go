package etcdmeta

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// Options configures Open. The zero value works for a local cluster.
type Options struct {
	// Prefix is prepended to every key; DefaultPrefix if empty. Stores with
	// different prefixes on one cluster are independent.
	Prefix string
	// DialTimeout bounds how long Open waits for the cluster to answer;
	// 5 s if zero.
	DialTimeout time.Duration
	// CallTimeout bounds every unary etcd call (a read, a Txn, a lease
	// grant); a call that gets no answer in time fails with an error
	// wrapping cairn.ErrUnavailable and context.DeadlineExceeded
	// (docs/design/meta.md, "Deadlines"). DefaultCallTimeout if zero.
	CallTimeout time.Duration
	// Now is the clock of the cleanup records' Since (default time.Now).
	Now func() time.Time
	// SessionTTL is the lease TTL of election sessions: how long a crashed
	// leader keeps its role before another campaigner takes over. Rounded up
	// to whole seconds; 10 s if zero.
	SessionTTL time.Duration
	// Logger receives the etcd client's error-level records and the store's
	// own warnings (lease renewal trouble). Nil discards them.
	Logger *slog.Logger
	// TLS, Username and Password authenticate to an external cluster.
	TLS      *tls.Config
	Username string
	Password string
	// ObserveCall, if set, is told of every unary etcd call the store
	// makes when it ends: the call's name (the gRPC method's last element:
	// Range, Txn, Put, LeaseGrant, ...), how long it took and its error
	// (for metrics). It runs on the caller's goroutine and must not block.
	ObserveCall func(op string, took time.Duration, err error)
}

// Store is a meta.Store on etcd. See the package documentation.
type Store struct {
	cli        *clientv3.Client
	k          keys
	log        *slog.Logger
	sessionTTL int // seconds
	// openRev is the store's revision when Open checked the key layout:
	// an election key holding this process's ID created before it is a
	// previous run's (Campaign revokes it).
	openRev int64
	now     func() time.Time

	// ctx lives until Close; background goroutines (lease renewal,
	// leadership watchers) end with it and are counted by wg.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	mu          sync.Mutex               // guards leaderships and wg.Add after Close
	leaderships map[*leadership]struct{} // won and not yet ended

	// testAfterProbe, if set (by tests, before use), runs between
	// DeleteBucket's probe and its Txn: the window the Txn's range compare
	// closes.
	testAfterProbe func()
}

var _ meta.Store = (*Store)(nil)

// Open connects to the etcd cluster at endpoints (e.g.
// "http://127.0.0.1:2379"), checks that it answers within
// Options.DialTimeout, and records or checks the key layout version under
// the prefix.
func Open(ctx context.Context, endpoints []string, opts Options) (*Store, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("open etcd store: %w: no endpoints", cairn.ErrInvalid)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 10 * time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          opts.DialTimeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		TLS:                  opts.TLS,
		Username:             opts.Username,
		Password:             opts.Password,
		Logger:               zapLogger(opts.Logger, nil),
		MaxCallSendMsgSize:   MaxRequestBytes + 64<<10,
		MaxCallRecvMsgSize:   MaxRequestBytes + 64<<10,
		DialOptions:          observeCalls(opts.ObserveCall),
	})
	if err != nil {
		return nil, fmt.Errorf("open etcd store at %v: %w", endpoints, err)
	}
	cli.KV = timedKV{KV: cli.KV, d: opts.CallTimeout}
	cli.Lease = timedLease{Lease: cli.Lease, d: opts.CallTimeout}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Store{
		cli:         cli,
		k:           keys{p: normalizePrefix(opts.Prefix)},
		log:         log,
		sessionTTL:  ttlSeconds(opts.SessionTTL),
		now:         opts.Now,
		ctx:         sctx,
		cancel:      cancel,
		leaderships: make(map[*leadership]struct{}),
	}
	if err := s.checkLayout(ctx, opts.DialTimeout); err != nil {
		cancel()
		_ = cli.Close()
		return nil, fmt.Errorf("open etcd store at %v: %w", endpoints, err)
	}
	return s, nil
}

// checkLayout writes the layout version if the prefix is new, or checks it
// and upgrades an older layout one step at a time (each step sets the
// next version, or finds that another process did). An upgrade runs under
// ctx alone (each of its calls under the call deadline): it reads every
// object or upload.
func (s *Store) checkLayout(ctx context.Context, timeout time.Duration) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	k := s.k.layout()
	resp, err := s.cli.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, layoutVersion)).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return err
	}
	s.openRev = resp.Header.Revision
	if resp.Succeeded {
		return nil
	}
	v := string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
	for range 4 {
		switch v {
		case layoutVersion:
			return nil
		case "1":
			err = s.upgradeLayout1(ctx)
		case "2":
			err = s.upgradeLayout2(ctx)
		case "3":
			err = s.upgradeLayout3(ctx)
		default:
			return fmt.Errorf("key layout %q under %q, this build understands %q", v, s.k.p, layoutVersion)
		}
		if err != nil {
			return err
		}
		gr, err := s.cli.Get(ctx, k)
		if err != nil {
			return err
		}
		if len(gr.Kvs) == 0 {
			return fmt.Errorf("key layout under %q vanished during an upgrade", s.k.p)
		}
		v = string(gr.Kvs[0].Value)
	}
	return fmt.Errorf("key layout %q under %q after every upgrade, want %q", v, s.k.p, layoutVersion)
}

// Client returns the underlying etcd client (for tools and tests; the
// store owns it).
func (s *Store) Client() *clientv3.Client { return s.cli }

// live returns ErrClosed after Close.
func (s *Store) live() error {
	if s.closed.Load() {
		return meta.ErrClosed
	}
	return nil
}

// Close ends every leadership (revoking its session, so another campaigner
// takes over at once), stops lease renewal (entries expire ttl later) and
// closes the client. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return nil
	}
	ls := make([]*leadership, 0, len(s.leaderships))
	for l := range s.leaderships {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		_ = l.Resign(ctx)
		cancel()
	}
	s.cancel()
	s.wg.Wait()
	return s.cli.Close()
}

// wrap adds op to an infrastructure error, reporting ErrClosed instead if
// the store was closed under the call. Every error but a cancellation
// (the caller gave up) also wraps cairn.ErrUnavailable: etcd did not
// answer in time (a deadline, which stays in the chain), had no leader, or
// failed otherwise.
func (s *Store) wrap(op string, err error) error {
	switch {
	case s.closed.Load():
		return fmt.Errorf("%s: %w (%v)", op, meta.ErrClosed, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: metadata store: %w", op, cairn.ErrUnavailable, err)
}

// ---- cluster map ----

// PutNode implements meta.Store.
func (s *Store) PutNode(ctx context.Context, n cairn.Node) error {
	if n.ID == "" {
		return fmt.Errorf("put node: %w: empty node ID", cairn.ErrInvalid)
	}
	if err := s.live(); err != nil {
		return err
	}
	v, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("put node %s: %w", n.ID, err)
	}
	if _, err := s.cli.Put(ctx, s.k.node(n.ID), string(v)); err != nil {
		return s.wrap("put node "+string(n.ID), err)
	}
	return nil
}

// Nodes implements meta.Store.
func (s *Store) Nodes(ctx context.Context) ([]cairn.Node, error) {
	ns, err := list[cairn.Node](ctx, s, "nodes", s.k.nodes())
	slices.SortFunc(ns, func(a, b cairn.Node) int { return cmp.Compare(a.ID, b.ID) })
	return ns, err
}

// PutDisk implements meta.Store.
func (s *Store) PutDisk(ctx context.Context, d cairn.Disk) error {
	if d.ID == "" {
		return fmt.Errorf("put disk: %w: empty disk ID", cairn.ErrInvalid)
	}
	return s.update(ctx, "put disk "+string(d.ID), s.k.disk(d.ID), func(old []byte) (any, error) {
		if old == nil {
			return cairn.Registered(nil, d), nil
		}
		var od cairn.Disk
		if err := json.Unmarshal(old, &od); err != nil {
			return nil, err
		}
		return cairn.Registered(&od, d), nil
	})
}

// Disks implements meta.Store.
func (s *Store) Disks(ctx context.Context) ([]cairn.Disk, error) {
	ds, err := list[cairn.Disk](ctx, s, "disks", s.k.disks())
	slices.SortFunc(ds, func(a, b cairn.Disk) int { return cmp.Compare(a.ID, b.ID) })
	return ds, err
}

// SetDiskState implements meta.Store.
func (s *Store) SetDiskState(ctx context.Context, id cairn.DiskID, st cairn.DiskState, since time.Time) error {
	op := "set state of disk " + string(id)
	if !st.Valid() {
		return fmt.Errorf("%s: %w: state %q", op, cairn.ErrInvalid, st)
	}
	return s.update(ctx, op, s.k.disk(id), func(old []byte) (any, error) {
		if old == nil {
			return nil, cairn.ErrNotFound
		}
		var d cairn.Disk
		if err := json.Unmarshal(old, &d); err != nil {
			return nil, err
		}
		d.State, d.Since, d.Reason = st, since, ""
		return d, nil
	})
}

// ChangeDisk implements meta.Store.
func (s *Store) ChangeDisk(ctx context.Context, id cairn.DiskID, c cairn.DiskChange) (cairn.Disk, error) {
	var out cairn.Disk
	err := s.update(ctx, "change disk "+string(id), s.k.disk(id), func(old []byte) (any, error) {
		if old == nil {
			return nil, cairn.ErrNotFound
		}
		var d cairn.Disk
		if err := json.Unmarshal(old, &d); err != nil {
			return nil, err
		}
		nd, err := c.Apply(d)
		if err != nil {
			return nil, err
		}
		out = nd
		return nd, nil
	})
	return out, err
}

// update is a read-modify-write of one JSON value, retried until its
// compare-and-swap on the key's mod revision succeeds. f gets the current
// value (nil if absent) and returns the new one or an error (returned
// wrapped in op).
func (s *Store) update(ctx context.Context, op, key string, f func(old []byte) (any, error)) error {
	if err := s.live(); err != nil {
		return err
	}
	for {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			return s.wrap(op, err)
		}
		var (
			old  []byte
			cond = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		)
		if len(resp.Kvs) > 0 {
			old = resp.Kvs[0].Value
			cond = clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)
		}
		nv, err := f(old)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		b, err := json.Marshal(nv)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		tr, err := s.cli.Txn(ctx).If(cond).Then(clientv3.OpPut(key, string(b))).Commit()
		if err != nil {
			return s.wrap(op, err)
		}
		if tr.Succeeded {
			return nil
		}
		// Someone else changed the key between our read and write: again.
	}
}

// list decodes every JSON value under prefix, in key order, reading
// pages of meta.MaxPage keys at the first page's revision (one snapshot,
// and no reply grows with the number of keys).
func list[T any](ctx context.Context, s *Store, what, prefix string) ([]T, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	var out []T
	var bad error
	err := s.pages(ctx, prefix, clientv3.GetPrefixRangeEnd(prefix), 0, func(kv *mvccpb.KeyValue) bool {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			bad = fmt.Errorf("list %s: decoding %q: %w", what, kv.Key, err)
			return false
		}
		out = append(out, v)
		return true
	})
	switch {
	case err != nil:
		return nil, s.wrap("list "+what, err)
	case bad != nil:
		return nil, bad
	}
	return out, nil
}

// page reads one page of records, up to limit of the keys in [from,
// end), decoded as T: a paged listing's reply. An empty range (from ≥
// end) is an empty page.
func page[T any](ctx context.Context, s *Store, op, from, end string, limit int) ([]T, bool, error) {
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	if from >= end {
		return nil, false, nil
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	out := make([]T, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var v T
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, false, fmt.Errorf("%s: decoding %q: %w", op, kv.Key, err)
		}
		out = append(out, v)
	}
	return out, resp.More, nil
}

// pages calls f for every key in [from, end), in key order, until it
// returns false, reading pages of meta.MaxPage keys at revision rev (0:
// the first page's). It returns etcd's errors.
func (s *Store) pages(ctx context.Context, from, end string, rev int64, f func(*mvccpb.KeyValue) bool) error {
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(meta.MaxPage)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.cli.Get(ctx, from, opts...)
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			if !f(kv) {
				return nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// ---- placement groups ----

// PGTable implements meta.Store.
func (s *Store) PGTable(ctx context.Context, width int) (cairn.PGTable, error) {
	op := fmt.Sprintf("placement groups of width %d", width)
	if err := s.live(); err != nil {
		return cairn.PGTable{}, err
	}
	return getOne[cairn.PGTable](ctx, s, op, s.k.pgs(width))
}

// CreatePGTable implements meta.Store: one Txn that puts the table if its
// key is absent and otherwise reads the stored one.
func (s *Store) CreatePGTable(ctx context.Context, t cairn.PGTable) (cairn.PGTable, error) {
	op := fmt.Sprintf("create placement groups of width %d", t.Width)
	if t.Width < 1 {
		return cairn.PGTable{}, fmt.Errorf("%s: %w: width must be positive", op, cairn.ErrInvalid)
	}
	if err := s.live(); err != nil {
		return cairn.PGTable{}, err
	}
	b, err := json.Marshal(t)
	if err != nil {
		return cairn.PGTable{}, fmt.Errorf("%s: %w", op, err)
	}
	k := s.k.pgs(t.Width)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(b))).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return cairn.PGTable{}, s.wrap(op, err)
	}
	if resp.Succeeded {
		// Return what a later PGTable decodes, not the caller's slices.
		var out cairn.PGTable
		err := json.Unmarshal(b, &out)
		return out, err
	}
	var out cairn.PGTable
	if err := json.Unmarshal(resp.Responses[0].GetResponseRange().Kvs[0].Value, &out); err != nil {
		return cairn.PGTable{}, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// UpdatePGTable implements meta.Store: a read-modify-write of the table's
// key, retried while another write races it.
func (s *Store) UpdatePGTable(ctx context.Context, t cairn.PGTable) error {
	op := fmt.Sprintf("update placement groups of width %d", t.Width)
	if t.Width < 1 || t.Epoch < 1 {
		return fmt.Errorf("%s: %w: width %d, epoch %d", op, cairn.ErrInvalid, t.Width, t.Epoch)
	}
	return s.update(ctx, op, s.k.pgs(t.Width), func(old []byte) (any, error) {
		if old == nil {
			return nil, cairn.ErrNotFound
		}
		var cur cairn.PGTable
		if err := json.Unmarshal(old, &cur); err != nil {
			return nil, err
		}
		if cur.Epoch != t.Epoch-1 {
			return nil, fmt.Errorf("%w: stored epoch %d, not %d", cairn.ErrConflict, cur.Epoch, t.Epoch-1)
		}
		return t, nil
	})
}

// PGTables implements meta.Store.
func (s *Store) PGTables(ctx context.Context) ([]cairn.PGTable, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	ts, err := list[cairn.PGTable](ctx, s, "placement groups", s.k.p+"pgs/")
	slices.SortFunc(ts, func(a, b cairn.PGTable) int { return cmp.Compare(a.Width, b.Width) })
	return ts, err
}

// ---- buckets ----

// CreateBucket implements meta.Store.
func (s *Store) CreateBucket(ctx context.Context, b cairn.Bucket) error {
	if err := cairn.ValidateBucketName(b.Name); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	if err := s.live(); err != nil {
		return err
	}
	op := "create bucket " + b.Name
	v, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	k := s.k.bucket(b.Name)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(v))).
		Commit()
	if err != nil {
		return s.wrap(op, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s: %w", op, cairn.ErrExists)
	}
	return nil
}

// SetBucketEncryption implements meta.Store: a compare-and-swap on the
// bucket record's revision, retried when a concurrent change wins.
func (s *Store) SetBucketEncryption(ctx context.Context, name, scheme string) error {
	if err := meta.CheckBucketEncryption(scheme); err != nil {
		return err
	}
	return s.updateBucket(ctx, "set encryption of bucket "+name, name, func(b *cairn.Bucket) { b.Encryption = scheme })
}

// Bucket implements meta.Store.
func (s *Store) Bucket(ctx context.Context, name string) (cairn.Bucket, error) {
	op := "bucket " + name
	if err := s.live(); err != nil {
		return cairn.Bucket{}, err
	}
	if strings.Contains(name, "/") {
		return cairn.Bucket{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return getOne[cairn.Bucket](ctx, s, op, s.k.bucket(name))
}

// Buckets implements meta.Store.
func (s *Store) Buckets(ctx context.Context) ([]cairn.Bucket, error) {
	bs, err := list[cairn.Bucket](ctx, s, "buckets", s.k.buckets())
	slices.SortFunc(bs, func(a, b cairn.Bucket) int { return cmp.Compare(a.Name, b.Name) })
	return bs, err
}

// BucketPage implements meta.Store.
func (s *Store) BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error) {
	from := s.k.buckets()
	if after != "" {
		from = s.k.bucket(after) + "\x00"
	}
	return page[cairn.Bucket](ctx, s, "buckets", from, clientv3.GetPrefixRangeEnd(s.k.buckets()), limit)
}

// DeleteBucket implements meta.Store.
//
// Race-freedom against CommitManifest: the delete is one Txn whose compares
// are "the bucket key exists" and "no key exists in [objects/<b>/,
// objects/<b>0)" — a range compare (CreateRevision = 0 over a range holds
// only if the range is empty). CommitManifest's Txn in turn requires the
// bucket key to exist. etcd applies Txns one at a time in revision order,
// so either the commit is applied first (the range is not empty and the
// delete fails with ErrBucketNotEmpty) or the delete is (the bucket key is
// gone and the commit fails with ErrNotFound); no manifest can outlive its
// bucket.
//
// Uploads in progress are deleted first, each by DeleteUpload (its parts'
// files queued for cleanup, the usage counters moved), and the Txn also
// requires uploads/<b>/ to be empty; CreateUpload's Txn requires the
// bucket key, so by the same argument no upload outlives its bucket: one
// created in between fails the Txn, and the loop deletes it and tries
// again. (Parts need no compare: PutPart's Txn requires the upload key.)
//
// etcd evaluates a range compare by reading the whole range while applying
// the Txn, so a plain read first rejects non-empty buckets; the Txn then
// only ever scans the few objects committed in between.
func (s *Store) DeleteBucket(ctx context.Context, name string) error {
	op := "delete bucket " + name
	if err := s.live(); err != nil {
		return err
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	bk, objs, ups, vers := s.k.bucket(name), s.k.objects(name), s.k.uploads(name), s.k.versions(name)
	probe := []clientv3.Op{
		clientv3.OpGet(bk, clientv3.WithCountOnly()),
		clientv3.OpGet(objs, clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
		clientv3.OpGet(ups, clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
		clientv3.OpGet(vers, clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly()),
	}
	resp, err := s.cli.Txn(ctx).Then(probe...).Commit()
	for {
		if err != nil {
			return s.wrap(op, err)
		}
		if err := bucketEmpty(op, resp); err != nil {
			return err
		}
		if resp.Responses[2].GetResponseRange().Count > 0 {
			if err := s.abortUploads(ctx, op, name); err != nil {
				return err
			}
		}
		if s.testAfterProbe != nil {
			s.testAfterProbe()
		}
		resp, err = s.cli.Txn(ctx).
			If(
				clientv3.Compare(clientv3.CreateRevision(bk), ">", 0),
				clientv3.Compare(clientv3.CreateRevision(objs), "=", 0).WithPrefix(),
				clientv3.Compare(clientv3.CreateRevision(ups), "=", 0).WithPrefix(),
				clientv3.Compare(clientv3.CreateRevision(vers), "=", 0).WithPrefix(),
			).
			Then(clientv3.OpDelete(bk)).
			Else(probe...).
			Commit()
		if err == nil && resp.Succeeded {
			return nil
		}
		// Else the probe ran again in the Txn: it says why (or, if an object
		// came and went in between, that we may try again).
	}
}

// abortUploads deletes the uploads in progress of bucket, as DeleteUpload
// does; an upload deleted meanwhile (aborted or completed) is no error.
func (s *Store) abortUploads(ctx context.Context, op, bucket string) error {
	err := meta.EachUpload(ctx, s, bucket, func(u cairn.Upload) error {
		if _, err := s.DeleteUpload(ctx, bucket, u.ID); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// bucketEmpty interprets the first two reads of DeleteBucket's probe.
func bucketEmpty(op string, resp *clientv3.TxnResponse) error {
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	if objs := resp.Responses[1].GetResponseRange(); objs.Count > 0 {
		return fmt.Errorf("%s: %w (%d objects)", op, cairn.ErrBucketNotEmpty, objs.Count)
	}
	if vers := resp.Responses[3].GetResponseRange(); vers.Count > 0 {
		return fmt.Errorf("%s: %w (%d object versions or delete markers)", op, cairn.ErrBucketNotEmpty, vers.Count)
	}
	return nil
}

// ---- manifests ----

// CommitManifest implements meta.Store: it reads the bucket key and the
// object's record, decides from them (the bucket exists, the stored
// version is prevVersion or the object is absent when prevVersion is ""),
// and puts the record with the usage counters moved in one Txn that
// compares both keys with what was read (counted).
func (s *Store) CommitManifest(ctx context.Context, m *cairn.Manifest, prevVersion string) error {
	if err := meta.CheckManifest(m); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	op := fmt.Sprintf("commit %s/%s", m.Bucket, m.Key)
	if strings.Contains(m.Bucket, "/") {
		return fmt.Errorf("%s: bucket: %w", op, cairn.ErrNotFound)
	}
	v, err := encodeObject(m)
	if err != nil {
		return err
	}
	bk, ok, nk := s.k.bucket(m.Bucket), s.k.object(m.Bucket, m.Key), s.k.nullv(m.Bucket, m.Key)
	guess := meta.NewDelta()
	guess.Object(m, 1) // a new object's counters; an overwrite's also the old version's
	return s.counted(ctx, op, m.Version, []string{bk, ok, nk}, nil, guess, func(r reads) planned {
		old, done, err := s.replaced(ctx, op, m, prevVersion, r.kv[bk] != nil, r.kv[ok], r.rev)
		if done || err != nil {
			return planned{done: true, err: err}
		}
		return s.commitPlan(ctx, r, bk, m, v, old, r.kv[ok], nil)
	})
}

// replaced decides a commit of m over prevVersion ("": none) from what
// was read: whether the bucket exists and the object's record (nil:
// none), read at revision rev. It returns the manifest the commit
// replaces (nil: none), its split parts read at rev; or done
// if m itself is already committed (a retried commit: success without a
// write); or the error the commit fails with: ErrNotFound without the
// bucket, ErrConflict unless the stored version is prevVersion.
func (s *Store) replaced(ctx context.Context, op string, m *cairn.Manifest, prevVersion string, bucket bool, rec *mvccpb.KeyValue, rev int64) (old *cairn.Manifest, done bool, err error) {
	switch {
	case !bucket:
		return nil, true, fmt.Errorf("%s: bucket: %w", op, cairn.ErrNotFound)
	case rec == nil && prevVersion != "":
		return nil, true, fmt.Errorf("%s over version %q: %w (object does not exist)", op, prevVersion, cairn.ErrConflict)
	case rec == nil:
		return nil, false, nil
	}
	switch sv := storedVersion(rec.Value); {
	case sv == m.Version:
		return nil, true, nil
	case sv != prevVersion:
		return nil, true, fmt.Errorf("%s over version %q: %w (current version %s)", op, prevVersion, cairn.ErrConflict, sv)
	}
	old, err = s.loadManifest(ctx, m.Bucket, m.Key, rec, rev)
	if err != nil {
		return nil, true, s.wrap(op, err)
	}
	return old, false, nil
}

// getObject reads the object record of bucket/key (the manifest, or its
// head when its parts are split off); op names the call in errors.
func (s *Store) getObject(ctx context.Context, op, bucket, key string) (*clientv3.GetResponse, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	if strings.Contains(bucket, "/") {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	resp, err := s.cli.Get(ctx, s.k.object(bucket, key))
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return resp, nil
}

// Manifest implements meta.Store.
func (s *Store) Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error) {
	op := fmt.Sprintf("object %s/%s", bucket, key)
	resp, err := s.getObject(ctx, op, bucket, key)
	if err != nil {
		return nil, err
	}
	m, err := s.loadManifest(ctx, bucket, key, resp.Kvs[0], resp.Header.Revision)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return m, nil
}

// DeleteManifest implements meta.Store: one Txn comparing the stored
// version (or mere existence when version is ""), deleting with the
// previous value returned.
func (s *Store) DeleteManifest(ctx context.Context, bucket, key, version string) (*cairn.Manifest, error) {
	op := fmt.Sprintf("delete object %s/%s", bucket, key)
	if err := s.live(); err != nil {
		return nil, err
	}
	if strings.Contains(bucket, "/") {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	ok, bk := s.k.object(bucket, key), s.k.bucket(bucket)
	var deleted *cairn.Manifest
	err := s.counted(ctx, op, bucket+"/"+key, []string{ok, bk}, nil, nil, func(r reads) planned {
		rec := r.kv[ok]
		if rec == nil {
			return planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		}
		if sv := storedVersion(rec.Value); version != "" && sv != version {
			return planned{done: true, err: fmt.Errorf("%s version %s: %w (current version %s)", op, version, cairn.ErrConflict, sv)}
		}
		m, err := s.loadManifest(ctx, bucket, key, rec, r.rev)
		if err != nil {
			return planned{done: true, err: s.wrap(op, err)}
		}
		if err := m.CheckDelete(s.now(), false); err != nil {
			return planned{done: true, err: fmt.Errorf("%s: %w", op, err)}
		}
		deleted = m
		d := meta.NewDelta()
		d.Object(m, -1)
		// In a versioned bucket the next version becomes current
		// (docs/design/versioning.md, "Writes").
		var next *mvccpb.KeyValue
		if bucketVersioning(r.kv[bk]) != "" {
			if next, err = s.nextObject(ctx, bucket, key, r.rev); err != nil {
				return planned{done: true, err: s.wrap(op, err)}
			}
		}
		p := planned{ops: s.deleteObject(m), delta: d}
		if next != nil {
			p.ops = nil
			if len(m.Parts) > 0 {
				p.ops = append(p.ops, clientv3.OpDelete(s.k.mparts(bucket, m.Version), clientv3.WithPrefix()))
			}
			if p = s.promote(ctx, op, p, r.rev, bucket, key, next); p.done {
				return p
			}
		}
		return s.withDiscard(p, cairn.CleanupDelete, bucket, key, m.Files())
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// ttlSeconds rounds d up to whole seconds, at least 1.
func ttlSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// errStopped reports whether err comes from the store's own shutdown.
func (s *Store) errStopped(err error) bool {
	return errors.Is(err, context.Canceled) && s.ctx.Err() != nil
}

// getOne reads one JSON value; cairn.ErrNotFound if the key is absent.
func getOne[T any](ctx context.Context, s *Store, op, key string) (T, error) {
	var v T
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return v, s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return v, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		return v, fmt.Errorf("%s: %w", op, err)
	}
	return v, nil
}

// getOrZero is getOne for a record whose absence means its zero value
// (a switch never set); it checks that the store is open.
func getOrZero[T any](ctx context.Context, s *Store, op, key string) (T, error) {
	var zero T
	if err := s.live(); err != nil {
		return zero, err
	}
	v, err := getOne[T](ctx, s, op, key)
	if errors.Is(err, cairn.ErrNotFound) {
		return zero, nil
	}
	return v, err
}
