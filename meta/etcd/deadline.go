package etcdmeta

// Deadlines (docs/design/meta.md, "Deadlines"): every unary etcd call the
// store makes — its own and those of the election and session helpers of
// go.etcd.io/etcd/client/v3/concurrency — runs under a deadline of
// Options.CallTimeout, so a member that stopped answering (killed, frozen,
// cut off) fails the call with ErrUnavailable instead of hanging it. The
// client's KV and Lease are wrapped once, at Open; streams (watches, lease
// keep-alives) keep the caller's context.

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultCallTimeout is Options.CallTimeout's default.
const DefaultCallTimeout = 5 * time.Second

// timedKV bounds every call of a clientv3.KV by d.
type timedKV struct {
	clientv3.KV
	d time.Duration
}

var _ clientv3.KV = timedKV{}

func (kv timedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, kv.d)
	defer cancel()
	return kv.KV.Put(ctx, key, val, opts...)
}

func (kv timedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, kv.d)
	defer cancel()
	return kv.KV.Get(ctx, key, opts...)
}

func (kv timedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, kv.d)
	defer cancel()
	return kv.KV.Delete(ctx, key, opts...)
}

func (kv timedKV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, kv.d)
	defer cancel()
	return kv.KV.Compact(ctx, rev, opts...)
}

func (kv timedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, kv.d)
	defer cancel()
	return kv.KV.Do(ctx, op)
}

// Txn returns a transaction whose Commit runs under the deadline (it
// starts at Commit, not here).
func (kv timedKV) Txn(ctx context.Context) clientv3.Txn {
	return &timedTxn{ctx: ctx, kv: kv.KV, d: kv.d}
}

// timedTxn collects a transaction and commits it under a deadline. Like
// clientv3's, it is built by one goroutine: If, then Then, then Else.
type timedTxn struct {
	ctx          context.Context
	kv           clientv3.KV
	d            time.Duration
	cmps         []clientv3.Cmp
	thens, elses []clientv3.Op
}

func (t *timedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	return t
}

func (t *timedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.thens = append(t.thens, ops...)
	return t
}

func (t *timedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.elses = append(t.elses, ops...)
	return t
}

func (t *timedTxn) Commit() (*clientv3.TxnResponse, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.d)
	defer cancel()
	return t.kv.Txn(ctx).If(t.cmps...).Then(t.thens...).Else(t.elses...).Commit()
}

// timedLease bounds the unary calls of a clientv3.Lease by d; KeepAlive
// streams under the caller's context.
type timedLease struct {
	clientv3.Lease
	d time.Duration
}

var _ clientv3.Lease = timedLease{}

func (l timedLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, l.d)
	defer cancel()
	return l.Lease.Grant(ctx, ttl)
}

func (l timedLease) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, l.d)
	defer cancel()
	return l.Lease.Revoke(ctx, id)
}

func (l timedLease) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, l.d)
	defer cancel()
	return l.Lease.TimeToLive(ctx, id, opts...)
}

func (l timedLease) Leases(ctx context.Context) (*clientv3.LeaseLeasesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, l.d)
	defer cancel()
	return l.Lease.Leases(ctx)
}

func (l timedLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, l.d)
	defer cancel()
	return l.Lease.KeepAliveOnce(ctx, id)
}
