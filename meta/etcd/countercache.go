package etcdmeta

// What a counted write (usage.go) may know without reading: the counter
// shards' values as this store last read or wrote them, and which shards
// its own writes in flight are using. Both only save round trips: a
// counted write compares every counter shard it moves, so a value that
// another process changed meanwhile fails the compare and is read again
// (in the same Txn's Else branch).

import (
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// maxCachedCounters bounds the counter cache (32 shards of each bucket,
// code and disk counter); it forgets everything when full.
const maxCachedCounters = 1 << 16

// counterCache holds counter shards by key: the value and mod revision
// last seen, nil for a shard seen absent.
type counterCache struct {
	mu sync.Mutex
	m  map[string]*mvccpb.KeyValue // guarded by mu
}

// put records what key holds (kv nil: absent).
func (c *counterCache) put(key string, kv *mvccpb.KeyValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedCounters {
		c.m = make(map[string]*mvccpb.KeyValue)
	}
	c.m[key] = kv
}

// fill adds to have the shards of cs it does not hold that the cache
// knows.
func (c *counterCache) fill(cs []*counterOp, have map[string]*mvccpb.KeyValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, op := range cs {
		if _, ok := have[op.key]; ok {
			continue
		}
		if kv, ok := c.m[op.key]; ok {
			have[op.key] = kv
		}
	}
}

// shardTracker counts this store's counted writes in flight per counter
// shard, so that concurrent writes of one process take different shards
// and do not fail each other's compares.
type shardTracker struct {
	mu   sync.Mutex
	busy [usageShards]int // writes in flight per shard; guarded by mu
}

// take returns the first shard from want on (wrapping around) that no
// write of this store is using, or want if all are, and counts it busy
// until release.
func (t *shardTracker) take(want int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := want
	for i := range usageShards {
		if c := (want + i) % usageShards; t.busy[c] == 0 {
			s = c
			break
		}
	}
	t.busy[s]++
	return s
}

// release ends a take.
func (t *shardTracker) release(s int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.busy[s]--
}
