package etcdmeta

// The bucket cache (docs/design/meta.md, "Bucket cache"): a gateway reads
// its bucket's record on almost every request (authorization, the
// policy and versioning of a PUT), and each read is an etcd round trip
// that, under a stream of writes, waits for the writes before it to be
// applied. With Options.BucketCache set, the store keeps the records it
// has read and a watch on the bucket keys keeps them current: a change
// made anywhere reaches the cache as soon as etcd delivers its event
// (milliseconds), and a change made through this store is seen by this
// store's next read. A watch that stops proving it is current (no event
// or progress reply for BucketCache) stops the cache from serving, so no
// record is served staler than that bound even on a cut connection.

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxCachedBuckets bounds the cache; it forgets everything when full.
const maxCachedBuckets = 4096

// bucketCache holds bucket records by key, as etcd key-values (value and
// mod revision), for Bucket and for the commits that compare the bucket
// key (their guess, usage.go).
type bucketCache struct {
	maxAge time.Duration

	mu sync.Mutex
	// live: the watch runs and has caught up with floor; guarded by mu.
	live bool
	// alive is when the watch last proved current (an event or a
	// progress reply); entries are served until alive+maxAge. Guarded
	// by mu.
	alive time.Time
	// entries are the records read or delivered since the watch started,
	// by key; guarded by mu.
	entries map[string]*mvccpb.KeyValue
	// changed is, per key without an entry, the revision of the last
	// event the watch delivered (a delete, or a change to a record not
	// cached): a read at an older revision must not be kept. Guarded by
	// mu.
	changed map[string]int64
	// floor: a read at a revision below it is not kept (the watch may
	// have delivered changes after it that entries and changed have
	// forgotten). Guarded by mu.
	floor int64
	// gen changes with every write of a bucket record through this store
	// (forget): a read that began before it is not kept. Guarded by mu.
	gen uint64
}

func newBucketCache(maxAge time.Duration) *bucketCache {
	return &bucketCache{maxAge: maxAge, entries: map[string]*mvccpb.KeyValue{}, changed: map[string]int64{}}
}

// get returns the cached record of key (nil: none; absent keys are not
// cached), and the generation a read that misses must pass to put.
func (c *bucketCache) get(key string) (*mvccpb.KeyValue, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || time.Since(c.alive) > c.maxAge {
		return nil, c.gen
	}
	return c.entries[key], c.gen
}

// put keeps kv, read at revision rev by a read that began at generation
// gen, unless something newer is known.
func (c *bucketCache) put(kv *mvccpb.KeyValue, rev int64, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := string(kv.Key)
	if !c.live || gen != c.gen || rev < c.floor || c.changed[key] > rev {
		return
	}
	if old := c.entries[key]; old != nil && old.ModRevision >= kv.ModRevision {
		return
	}
	c.makeRoomLocked()
	c.entries[key] = kv
}

// forget drops key's record before a write of it through this store
// and makes reads that began before the write not count.
func (c *bucketCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
	c.gen++
}

// makeRoomLocked forgets everything if the cache is full; c.mu must be
// held.
func (c *bucketCache) makeRoomLocked() {
	if len(c.entries)+len(c.changed) < maxCachedBuckets {
		return
	}
	clear(c.entries)
	clear(c.changed)
	c.floor = max(c.floor, c.seenLocked())
}

// seenLocked is the latest revision known delivered: the floor, or any
// entry's or change's; c.mu must be held.
func (c *bucketCache) seenLocked() int64 {
	rev := c.floor
	for _, kv := range c.entries {
		rev = max(rev, kv.ModRevision)
	}
	for _, r := range c.changed {
		rev = max(rev, r)
	}
	return rev
}

// start makes the cache serve again, empty, for a watch that starts
// after revision rev.
func (c *bucketCache) start(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	clear(c.changed)
	c.live, c.floor, c.alive = true, rev, time.Now()
}

// stop empties the cache and stops it serving (the watch ended).
func (c *bucketCache) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	clear(c.changed)
	c.live = false
}

// apply takes in a watch response: its events, or a progress reply.
func (c *bucketCache) apply(wr clientv3.WatchResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alive = time.Now()
	for _, ev := range wr.Events {
		key := string(ev.Kv.Key)
		if old := c.entries[key]; ev.Type == clientv3.EventTypePut && old != nil {
			if ev.Kv.ModRevision > old.ModRevision { // not a change a read has already kept
				c.entries[key] = ev.Kv
			}
			continue
		}
		// A delete, or a record not cached: later reads older than it
		// must not be kept.
		delete(c.entries, key)
		c.makeRoomLocked()
		c.changed[key] = ev.Kv.ModRevision
		if ev.Type == clientv3.EventTypeDelete {
			c.changed[key] = wr.Header.Revision
		}
	}
}

// watchBuckets runs the bucket cache's watch until the store closes,
// starting it again (with an empty cache) whenever it ends.
func (s *Store) watchBuckets() {
	defer s.wg.Done()
	for {
		err := s.watchBucketsOnce()
		s.buckets.stop()
		if s.ctx.Err() != nil {
			return
		}
		s.log.Warn("bucket cache: watch ended; reading buckets from etcd until it is back", "err", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// errWatchClosed: the bucket watch's channel closed without an error.
var errWatchClosed = errors.New("watch closed")

// watchBucketsOnce watches the bucket keys from the current revision on,
// asks for a progress reply every quarter of the bound so that a quiet
// watch still proves it is current, and returns when the watch fails.
func (s *Store) watchBucketsOnce() error {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(s.ctx))
	defer cancel()
	resp, err := s.cli.Get(ctx, s.k.buckets(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	wch := s.cli.Watch(ctx, s.k.buckets(), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	s.buckets.start(resp.Header.Revision)
	tick := time.NewTicker(max(s.buckets.maxAge/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-tick.C:
			if err := s.cli.RequestProgress(ctx); err != nil {
				return err
			}
		case wr, ok := <-wch:
			if !ok {
				return errWatchClosed
			}
			if err := wr.Err(); err != nil {
				return err
			}
			s.buckets.apply(wr)
		}
	}
}

// cachedBucket returns bucket key k's record from the cache if it holds
// it, else reads it (keeping it); kv nil: no such bucket.
func (s *Store) cachedBucket(ctx context.Context, k string) (*mvccpb.KeyValue, error) {
	kv, gen := s.buckets.get(k)
	if kv != nil {
		return kv, nil
	}
	resp, err := s.cli.Get(ctx, k)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	s.buckets.put(resp.Kvs[0], resp.Header.Revision, gen)
	return resp.Kvs[0], nil
}

// forgetBucket drops bucket name's record from the cache, if any: every
// write of a bucket record calls it when the write has ended (deferred),
// so that this store's next read sees the write.
func (s *Store) forgetBucket(name string) {
	if s.buckets != nil {
		s.buckets.forget(s.k.bucket(name))
	}
}
