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
