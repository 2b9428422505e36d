package etcdmeta

// Usage counters (docs/design/meta.md, "Usage"). Every write that changes
// what the manifests and parts name moves the counters in the same Txn,
// so they never drift. A hot bucket must not serialize its writers on one
// counter key: each counter is split into usageShards keys, and a write
// adds its change to one shard of each counter it touches: the first
// shard, from the store's own starting shard (random per store) on, that
// no other write of this store is using (countercache.go). Writes of one
// process thus never contend with each other, and mostly use a few shards
// whose values the store knows without reading; writes of two processes
// contend only where their shards meet, and a reader adds the shards up.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// usageShards is how many keys each counter is split into.
const usageShards = 32

// maxRounds bounds the rounds of a counted write that keeps meeting
// concurrent writes.
const maxRounds = 100

// errContention: a counted write lost maxRounds rounds to concurrent
// writes. Its outcome is known (nothing was written), but it is no
// sentinel: the caller may retry.
var errContention = errors.New("too many concurrent writes to the same counters")

func (k keys) usage() string        { return k.p + "usage/" }
func (k keys) usageBase() string    { return k.usage() + "base" }
func (k keys) usageBuckets() string { return k.usage() + "buckets/" }
func (k keys) usageCodes() string   { return k.usage() + "codes/" }
func (k keys) usageDisks() string   { return k.usage() + "disks/" }

// usageBucket is the prefix of a bucket's counter shards.
func (k keys) usageBucket(b string) string { return k.usageBuckets() + b + "/" }

// shardKey is shard s of the counter under prefix of name.
func shardKey(prefix, name string, s int) string {
	return fmt.Sprintf("%s%s/%02x", prefix, name, s)
}

// counterName splits a counter shard key under prefix into the counter's
// name (which may contain "/": disk IDs do) and its shard; ok is false
// for other keys.
func counterName(prefix, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	i := strings.LastIndexByte(rest, '/')
	if !ok || i < 1 {
		return "", false
	}
	if _, err := strconv.ParseUint(rest[i+1:], 16, 8); err != nil {
		return "", false
	}
	return rest[:i], true
}

// counterOp is one counter shard's part in a counted write: its key and
// the change to add.
type counterOp struct {
	key  string
	add  func(old []byte) (string, bool, error) // the new value, or false if it is zero (the key goes)
	curr *mvccpb.KeyValue                       // as read; nil: absent
}

// addTo returns add for a counter of type T: the stored JSON value plus d.
func addTo[T interface{ Add(T) T }](d T) func(old []byte) (string, bool, error) {
	return func(old []byte) (string, bool, error) {
		var v T
		if len(old) > 0 {
			if err := json.Unmarshal(old, &v); err != nil {
				return "", false, fmt.Errorf("decoding a usage counter: %w", err)
			}
		}
		var zero T
		v = v.Add(d)
		if any(v) == any(zero) {
			return "", false, nil
		}
		b, err := json.Marshal(v)
		return string(b), true, err
	}
}

// counterOps returns the counter shards d moves in shard s.
func (s *Store) counterOps(d *meta.Delta, shard int) []*counterOp {
	var out []*counterOp
	for b, t := range d.Buckets {
		out = append(out, &counterOp{key: shardKey(s.k.usageBuckets(), b, shard), add: addTo(t)})
	}
	for c, t := range d.Codes {
		out = append(out, &counterOp{key: shardKey(s.k.usageCodes(), c, shard), add: addTo(t)})
	}
	for disk, t := range d.Disks {
		out = append(out, &counterOp{key: shardKey(s.k.usageDisks(), string(disk), shard), add: addTo(t)})
	}
	return out
}

// reads are the current values of a counted write's watched keys and
// prefixes, read at one revision.
type reads struct {
	rev    int64                         // the revision read at
	kv     map[string]*mvccpb.KeyValue   // watched keys that exist
	prefix map[string][]*mvccpb.KeyValue // by prefix
}

// planned is what a counted write does, decided from reads: done (with
// err, nil for success) without writing, or ops with the usage delta.
type planned struct {
	done  bool
	err   error
	ops   []clientv3.Op
	delta *meta.Delta
	// cmps are compares beyond the watched keys': records plan read
	// at reads.rev that the write depends on (versions.go).
	cmps []clientv3.Cmp
}

// counted runs a write that moves usage counters, in rounds: read the
// keys of watch and the prefixes (at one revision), let plan decide the
// write, read the counter shards its delta touches, and commit the write
// with the counters moved, provided the watched keys and the counter
// shards are still as read. A round that finds them changed (a concurrent
// write) starts over: the failed Txn reads them again in its Else branch
// (unless there are prefixes), so a retry costs one round trip. Every
// write to a watched key must change its mod revision; a prefix is only
// read, so plan must watch a key that every write under the prefix
// rewrites. guess (nil: none) is a
// delta whose counters are read with the watched keys, saving a read when
// plan's delta touches no others (a new object's: its own).
func (s *Store) counted(ctx context.Context, op string, watch, prefixes []string, guess *meta.Delta, plan func(r reads) planned) error {
	return s.countedFrom(ctx, op, watch, prefixes, guess, nil, plan)
}

// countedFrom is counted whose first round starts from first (nil: none)
// instead of reading: what the watched keys are expected to hold (the
// bucket record from the bucket cache, an object absent), with first.rev
// 0 (plan's reads at it read the latest revision, which the compares on
// the watched keys make as good). The counter shards come from the
// counter cache where it knows them. If the guess was right the write is
// a single Txn (issue 22); if not, its Else branch reads what the next
// round needs. first may not be given with prefixes.
func (s *Store) countedFrom(ctx context.Context, op string, watch, prefixes []string, guess *meta.Delta, first *reads, plan func(r reads) planned) error {
	r := first
	counters := map[string]*mvccpb.KeyValue{} // counter shards read: absent ones as nil
	shard := s.shardBase
	for range maxRounds {
		shard = s.counterShards.take(shard)
		next, done, err := s.countedRound(ctx, op, shard, watch, prefixes, guess, r, counters, plan)
		s.counterShards.release(shard)
		if done {
			return err
		}
		r = next
	}
	return fmt.Errorf("%s: %w (%d rounds)", op, errContention, maxRounds)
}

// countedRound is one round of countedFrom on counter shard shard, from
// reads r (nil: read them first) and the counter shards in counters. It
// returns done with the write's outcome, or the reads of the next round
// (counters refilled).
func (s *Store) countedRound(ctx context.Context, op string, shard int, watch, prefixes []string, guess *meta.Delta, r *reads,
	counters map[string]*mvccpb.KeyValue, plan func(r reads) planned) (next *reads, done bool, err error) {
	var guessed []*counterOp
	if guess != nil {
		guessed = s.counterOps(guess, shard)
	}
	gets := s.roundGets(watch, prefixes, guessed)
	if r == nil {
		resp, err := s.cli.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return nil, true, s.wrap(op, err)
		}
		r = s.parseReads(resp.Header.Revision, resp.Responses, watch, prefixes, guessed, counters)
	}
	pl := plan(*r)
	if pl.done {
		return nil, true, pl.err
	}
	var cmps []clientv3.Cmp
	for _, k := range watch {
		cmps = append(cmps, unchanged(k, r.kv[k]))
	}
	cmps = append(cmps, pl.cmps...)
	ops := pl.ops
	var cs []*counterOp
	var values []*mvccpb.KeyValue // what each of cs holds after the write (nil: absent)
	if pl.delta != nil && !pl.delta.Prune() {
		cs = s.counterOps(pl.delta, shard)
		s.counterCache.fill(cs, counters)
		if err := s.readCounters(ctx, cs, counters); err != nil {
			return nil, true, s.wrap(op, err)
		}
		for _, c := range cs {
			c.curr = counters[c.key]
			var old []byte
			if c.curr != nil {
				old = c.curr.Value
			}
			v, keep, err := c.add(old)
			if err != nil {
				return nil, true, fmt.Errorf("%s: %s: %w", op, c.key, err)
			}
			cmps = append(cmps, unchanged(c.key, c.curr))
			if keep {
				ops = append(ops, clientv3.OpPut(c.key, v))
				values = append(values, &mvccpb.KeyValue{Key: []byte(c.key), Value: []byte(v)})
			} else {
				ops = append(ops, clientv3.OpDelete(c.key))
				values = append(values, nil)
			}
		}
	}
	// A failed compare reads what the next round needs: the watched keys
	// and the counter shards of this round's delta. Not prefixes (an
	// upload's parts: up to 10,000 records), which the next round reads
	// on its own rather than in a Txn etcd applies in line with others.
	gets = nil
	if len(prefixes) == 0 {
		gets = s.roundGets(watch, nil, cs)
	}
	tresp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Else(gets...).Commit()
	if err != nil {
		return nil, true, s.wrap(op, err)
	}
	if tresp.Succeeded {
		for i, c := range cs {
			if values[i] != nil {
				values[i].ModRevision = tresp.Header.Revision
			}
			s.counterCache.put(c.key, values[i])
		}
		return nil, true, nil
	}
	clear(counters)
	if len(prefixes) > 0 {
		return nil, false, nil
	}
	return s.parseReads(tresp.Header.Revision, tresp.Responses, watch, nil, cs, counters), false, nil
}

// roundGets returns the reads of a counted round: the watched keys, the
// prefixes, then the counter shards of cs.
func (s *Store) roundGets(watch, prefixes []string, cs []*counterOp) []clientv3.Op {
	gets := make([]clientv3.Op, 0, len(watch)+len(prefixes)+len(cs))
	for _, k := range watch {
		gets = append(gets, clientv3.OpGet(k))
	}
	for _, p := range prefixes {
		gets = append(gets, clientv3.OpGet(p, clientv3.WithPrefix()))
	}
	for _, c := range cs {
		gets = append(gets, clientv3.OpGet(c.key))
	}
	return gets
}

// parseReads takes the responses of roundGets(watch, prefixes, cs), read
// at revision rev, apart: the reads, and the counter shards into counters
// (and the counter cache).
func (s *Store) parseReads(rev int64, resps []*etcdserverpb.ResponseOp, watch, prefixes []string, cs []*counterOp, counters map[string]*mvccpb.KeyValue) *reads {
	r := &reads{rev: rev, kv: map[string]*mvccpb.KeyValue{}, prefix: map[string][]*mvccpb.KeyValue{}}
	for i, k := range watch {
		if kvs := resps[i].GetResponseRange().Kvs; len(kvs) > 0 {
			r.kv[k] = kvs[0]
		}
	}
	for i, p := range prefixes {
		r.prefix[p] = resps[len(watch)+i].GetResponseRange().Kvs
	}
	for i, c := range cs {
		counters[c.key] = nil
		if kvs := resps[len(watch)+len(prefixes)+i].GetResponseRange().Kvs; len(kvs) > 0 {
			counters[c.key] = kvs[0]
		}
		s.counterCache.put(c.key, counters[c.key])
	}
	return r
}

// readCounters reads the counter shards of cs not in have yet (one Txn)
// into have (absent ones as nil).
func (s *Store) readCounters(ctx context.Context, cs []*counterOp, have map[string]*mvccpb.KeyValue) error {
	var keys []string
	for _, c := range cs {
		if _, ok := have[c.key]; !ok {
			keys = append(keys, c.key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	gets := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		gets[i] = clientv3.OpGet(k)
	}
	resp, err := s.cli.Txn(ctx).Then(gets...).Commit()
	if err != nil {
		return err
	}
	for i, k := range keys {
		have[k] = nil
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
			have[k] = kvs[0]
		}
		s.counterCache.put(k, have[k])
	}
	return nil
}

// unchanged compares key with what was read: the same mod revision, or
// still absent.
func unchanged(key string, kv *mvccpb.KeyValue) clientv3.Cmp {
	if kv == nil {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)
}

// Usage implements meta.Store: the base (the counts of a store upgraded
// from layout 1) plus every counter shard, read at one revision.
func (s *Store) Usage(ctx context.Context) (cairn.Usage, error) {
	if err := s.live(); err != nil {
		return cairn.Usage{}, err
	}
	var u cairn.Usage
	meta.NewDelta().AddTo(&u) // empty maps
	resp, err := s.cli.Get(ctx, s.k.usage(), clientv3.WithPrefix())
	if err != nil {
		return u, s.wrap("usage", err)
	}
	d := meta.NewDelta()
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		var err error
		switch {
		case key == s.k.usageBase():
			var base cairn.Usage
			if err = json.Unmarshal(kv.Value, &base); err == nil {
				addUsage(d, base)
			}
		case strings.HasPrefix(key, s.k.usageBuckets()):
			err = addCounter(d.Buckets, s.k.usageBuckets(), kv, func(n string) string { return n })
		case strings.HasPrefix(key, s.k.usageCodes()):
			err = addCounter(d.Codes, s.k.usageCodes(), kv, func(n string) string { return n })
		case strings.HasPrefix(key, s.k.usageDisks()):
			err = addCounter(d.Disks, s.k.usageDisks(), kv, func(n string) cairn.DiskID { return cairn.DiskID(n) })
		}
		if err != nil {
			return u, fmt.Errorf("usage: %s: %w", key, err)
		}
	}
	d.AddTo(&u)
	return u, nil
}

// BucketUsage implements meta.Store.
func (s *Store) BucketUsage(ctx context.Context, bucket string) (cairn.Tally, error) {
	op := "usage of bucket " + bucket
	if err := s.live(); err != nil {
		return cairn.Tally{}, err
	}
	if strings.Contains(bucket, "/") {
		return cairn.Tally{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(s.k.bucket(bucket), clientv3.WithCountOnly()),
		clientv3.OpGet(s.k.usageBucket(bucket), clientv3.WithPrefix()),
		clientv3.OpGet(s.k.usageBase()),
	).Commit()
	if err != nil {
		return cairn.Tally{}, s.wrap(op, err)
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return cairn.Tally{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	d := meta.NewDelta()
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if err := addCounter(d.Buckets, s.k.usageBuckets(), kv, func(n string) string { return n }); err != nil {
			return cairn.Tally{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	var t cairn.Tally
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
		var base cairn.Usage
		if err := json.Unmarshal(kvs[0].Value, &base); err != nil {
			return t, fmt.Errorf("%s: usage base: %w", op, err)
		}
		t = base.Buckets[bucket]
	}
	return t.Add(d.Buckets[bucket]), nil
}

// addCounter adds the counter shard kv (under prefix) to m.
func addCounter[K comparable, T interface{ Add(T) T }](m map[K]T, prefix string, kv *mvccpb.KeyValue, key func(string) K) error {
	name, ok := counterName(prefix, string(kv.Key))
	if !ok {
		return nil // not a counter shard
	}
	var v T
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		return err
	}
	m[key(name)] = m[key(name)].Add(v)
	return nil
}

// addUsage adds u to d.
func addUsage(d *meta.Delta, u cairn.Usage) {
	for k, t := range u.Buckets {
		d.Buckets[k] = d.Buckets[k].Add(t)
	}
	for k, t := range u.Codes {
		d.Codes[k] = d.Codes[k].Add(t)
	}
	for k, t := range u.Disks {
		d.Disks[k] = d.Disks[k].Add(t)
	}
}

// countAll counts every manifest and part in the store at one revision,
// a page at a time: the base of a store upgraded from layout 1, which
// kept no counters.
func (s *Store) countAll(ctx context.Context) (cairn.Usage, int64, error) {
	d := meta.NewDelta()
	rev := int64(0)
	for _, prefix := range []string{s.k.p + "objects/", s.k.p + "parts/"} {
		from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
		for {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
			if rev > 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			resp, err := s.cli.Get(ctx, from, opts...)
			if err != nil {
				return cairn.Usage{}, 0, err
			}
			if rev == 0 {
				rev = resp.Header.Revision
			}
			for _, kv := range resp.Kvs {
				if prefix == s.k.p+"parts/" {
					var p cairn.Part
					if err := json.Unmarshal(kv.Value, &p); err != nil {
						return cairn.Usage{}, 0, fmt.Errorf("%s: %w", kv.Key, err)
					}
					d.Parts([]cairn.Part{p}, 1)
					continue
				}
				var r manifestRecord
				if err := json.Unmarshal(kv.Value, &r); err != nil || r.Manifest == nil {
					return cairn.Usage{}, 0, fmt.Errorf("%s: not a manifest record (%v)", kv.Key, err)
				}
				d.Object(r.Manifest, 1)
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	var u cairn.Usage
	d.AddTo(&u)
	return u, rev, nil
}

// upgradeLayout1 brings a store of layout 1 (no usage counters) to
// layout 2 (checkLayout goes on with upgradeLayout2): it counts every manifest and part and stores the counts as the
// usage base together with the new layout version, unless another
// process upgraded the store meanwhile. Writes by processes still running
// a build of layout 1 while it counts are not counted: upgrade every
// process at once (docs/design/meta.md, "Usage").
func (s *Store) upgradeLayout1(ctx context.Context) error {
	base, rev, err := s.countAll(ctx)
	if err != nil {
		return fmt.Errorf("counting usage to upgrade key layout 1: %w", err)
	}
	b, err := json.Marshal(base)
	if err != nil {
		return err
	}
	k := s.k.layout()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(k), "=", "1")).
		Then(clientv3.OpPut(s.k.usageBase(), string(b)), clientv3.OpPut(k, "2")).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return nil // another process upgraded it (checkLayout reads the version again)
	}
	s.log.Info("upgraded the metadata key layout from 1 to 2: usage counted", "revision", rev,
		"buckets", len(base.Buckets), "disks", len(base.Disks))
	return nil
}
