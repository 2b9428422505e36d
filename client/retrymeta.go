package client

import (
	"context"
	"time"

	"cairn"
	"cairn/internal/retry"
)

// metaReads bounds the retries of a metadata read that failed transiently
// (cairn.IsPermanent is false): an etcd leader election takes a second or
// two, which waits of 0.1, 0.2, 0.4, 0.8, 1.6 and 2 s (each jittered
// down to as little as half) ride out; a store that stays away fails the
// read after 2.5 to 5.1 s.
var metaReads = retry.Policy{Attempts: 7, Base: 100 * time.Millisecond, Max: 2 * time.Second}

// commits bounds Put's compare-and-swap of the manifest: a concurrent
// writer that wins makes the next attempt re-read, and an infrastructure
// error (an unknown outcome, which meta.Store lets a client retry as is)
// is retried as well.
var commits = retry.Policy{Attempts: 16, Base: 10 * time.Millisecond, Max: time.Second}

// retryMeta is Meta with its reads retried under a policy (metaReads).
// Writes pass through: a caller that may repeat a write retries it
// itself, knowing whether it is safe (commit).
type retryMeta struct {
	Meta
	p retry.Policy
}

var _ Meta = retryMeta{}

// get calls fn under p.
func get[T any](ctx context.Context, p retry.Policy, fn func(context.Context) (T, error)) (T, error) {
	var v T
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

func (m retryMeta) Nodes(ctx context.Context) ([]cairn.Node, error) {
	return get(ctx, m.p, m.Meta.Nodes)
}

func (m retryMeta) Disks(ctx context.Context) ([]cairn.Disk, error) {
	return get(ctx, m.p, m.Meta.Disks)
}

func (m retryMeta) PGTable(ctx context.Context, width int) (cairn.PGTable, error) {
	return get(ctx, m.p, func(ctx context.Context) (cairn.PGTable, error) { return m.Meta.PGTable(ctx, width) })
}

func (m retryMeta) Bucket(ctx context.Context, name string) (cairn.Bucket, error) {
	return get(ctx, m.p, func(ctx context.Context) (cairn.Bucket, error) { return m.Meta.Bucket(ctx, name) })
}

func (m retryMeta) Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error) {
	return get(ctx, m.p, func(ctx context.Context) (*cairn.Manifest, error) { return m.Meta.Manifest(ctx, bucket, key) })
}

func (m retryMeta) Upload(ctx context.Context, bucket, id string) (cairn.Upload, error) {
	return get(ctx, m.p, func(ctx context.Context) (cairn.Upload, error) { return m.Meta.Upload(ctx, bucket, id) })
}

func (m retryMeta) Uploads(ctx context.Context, bucket string) ([]cairn.Upload, error) {
	return get(ctx, m.p, func(ctx context.Context) ([]cairn.Upload, error) { return m.Meta.Uploads(ctx, bucket) })
}

// page is a page read (ts and whether more follow), retried as get is.
type page[T any] struct {
	items []T
	more  bool
}

func (m retryMeta) UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error) {
	p, err := get(ctx, m.p, func(ctx context.Context) (page[cairn.Upload], error) {
		us, more, err := m.Meta.UploadPage(ctx, bucket, after, limit)
		return page[cairn.Upload]{us, more}, err
	})
	return p.items, p.more, err
}

func (m retryMeta) PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error) {
	p, err := get(ctx, m.p, func(ctx context.Context) (page[cairn.Part], error) {
		ps, more, err := m.Meta.PartPage(ctx, bucket, id, after, limit)
		return page[cairn.Part]{ps, more}, err
	})
	return p.items, p.more, err
}

func (m retryMeta) Parts(ctx context.Context, bucket, id string) ([]cairn.Part, int64, error) {
	var stamp int64
	parts, err := get(ctx, m.p, func(ctx context.Context) ([]cairn.Part, error) {
		var (
			ps  []cairn.Part
			err error
		)
		ps, stamp, err = m.Meta.Parts(ctx, bucket, id)
		return ps, err
	})
	return parts, stamp, err
}
