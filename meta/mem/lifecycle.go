package mem

import (
	"context"
	"maps"
	"slices"

	"cairn"
)

// SetBucketLifecycle implements meta.Store (the rules copied, as
// SetBucketCORS).
func (s *Store) SetBucketLifecycle(ctx context.Context, name string, rules []cairn.LifecycleRule) error {
	if len(rules) == 0 {
		rules = nil
	}
	return s.updateBucket(ctx, "set lifecycle of bucket "+name, name, func(b *cairn.Bucket) { b.Lifecycle = cloneLifecycle(rules) })
}

func cloneLifecycle(rules []cairn.LifecycleRule) []cairn.LifecycleRule {
	out := slices.Clone(rules)
	for i, r := range out {
		out[i].Filter.Tags = maps.Clone(r.Filter.Tags)
		if r.Expiration != nil {
			e := *r.Expiration
			out[i].Expiration = &e
		}
		if r.NoncurrentExpiration != nil {
			e := *r.NoncurrentExpiration
			out[i].NoncurrentExpiration = &e
		}
		out[i].Transitions = slices.Clone(r.Transitions)
		out[i].NoncurrentTransitions = slices.Clone(r.NoncurrentTransitions)
	}
	return out
}

// PutLifecycleProgress implements meta.Store.
func (s *Store) PutLifecycleProgress(ctx context.Context, p cairn.LifecycleProgress) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.lcProg = p
	return nil
}

// LifecycleProgress implements meta.Store.
func (s *Store) LifecycleProgress(ctx context.Context) (cairn.LifecycleProgress, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.LifecycleProgress{}, err
	}
	defer s.mu.Unlock()
	return s.lcProg, nil
}
