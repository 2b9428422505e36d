package mem

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"cairn"
	"cairn/meta"
)

// SetBucketTags implements meta.Store. The tags are copied: the stored
// map is replaced, never changed, so a Bucket returned earlier keeps the
// tags it had.
func (s *Store) SetBucketTags(ctx context.Context, name string, tags map[string]string) error {
	if len(tags) == 0 {
		tags = nil
	}
	return s.updateBucket(ctx, "set tags of bucket "+name, name, func(b *cairn.Bucket) { b.Tags = maps.Clone(tags) })
}

// SetBucketCORS implements meta.Store (the rules copied, as SetBucketTags).
func (s *Store) SetBucketCORS(ctx context.Context, name string, rules []cairn.CORSRule) error {
	if len(rules) == 0 {
		rules = nil
	}
	return s.updateBucket(ctx, "set CORS of bucket "+name, name, func(b *cairn.Bucket) { b.CORS = cloneCORS(rules) })
}

// UpdateBucketAccess implements meta.Store. update gets a deep copy and
// the stored value is replaced, never changed, as SetBucketTags.
func (s *Store) UpdateBucketAccess(ctx context.Context, name string, update func(*cairn.BucketAccess) (*cairn.BucketAccess, error)) error {
	return s.updateBucketErr(ctx, "set access of bucket "+name, name, func(b *cairn.Bucket) error {
		return meta.UpdateAccess(b, update)
	})
}

func (s *Store) updateBucket(ctx context.Context, op, name string, set func(*cairn.Bucket)) error {
	return s.updateBucketErr(ctx, op, name, func(b *cairn.Bucket) error { set(b); return nil })
}

func (s *Store) updateBucketErr(ctx context.Context, op, name string, set func(*cairn.Bucket) error) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(name)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return set(&b.b)
}

func cloneCORS(rules []cairn.CORSRule) []cairn.CORSRule {
	out := slices.Clone(rules)
	for i, r := range out {
		out[i].AllowedOrigins = slices.Clone(r.AllowedOrigins)
		out[i].AllowedMethods = slices.Clone(r.AllowedMethods)
		out[i].AllowedHeaders = slices.Clone(r.AllowedHeaders)
		out[i].ExposeHeaders = slices.Clone(r.ExposeHeaders)
	}
	return out
}
