package etcdmeta

import (
	"context"

	"cairn"
)

// SetBucketLifecycle implements meta.Store: a compare-and-swap on the
// bucket record, as SetBucketCORS.
func (s *Store) SetBucketLifecycle(ctx context.Context, name string, rules []cairn.LifecycleRule) error {
	if len(rules) == 0 {
		rules = nil
	}
	return s.updateBucket(ctx, "set lifecycle of bucket "+name, name, func(b *cairn.Bucket) { b.Lifecycle = rules })
}

func (k keys) lifecycleProgress() string { return k.p + "lifecycle-progress" }

// PutLifecycleProgress implements meta.Store.
func (s *Store) PutLifecycleProgress(ctx context.Context, p cairn.LifecycleProgress) error {
	return s.putJSON(ctx, "put lifecycle progress", s.k.lifecycleProgress(), p)
}

// LifecycleProgress implements meta.Store.
func (s *Store) LifecycleProgress(ctx context.Context) (cairn.LifecycleProgress, error) {
	return getOrZero[cairn.LifecycleProgress](ctx, s, "lifecycle progress", s.k.lifecycleProgress())
}
