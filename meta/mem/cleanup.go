package mem

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cairn"
	"cairn/meta"
)

// discardLocked queues files a write dropped now (meta.Discarded). s.mu
// must be held.
func (s *Store) discardLocked(reason, bucket, key string, files []cairn.ShardFile) {
	for _, c := range meta.Discarded(s.now(), reason, bucket, key, files, s.suffixLocked) {
		s.cleanups.ReplaceOrInsert(c)
	}
}

// suffixLocked returns a fresh cleanup ID suffix. s.mu must be held.
func (s *Store) suffixLocked() string {
	s.cleanupSeq++
	return fmt.Sprintf("%016x", s.cleanupSeq)
}

func cloneCleanup(c cairn.Cleanup) cairn.Cleanup {
	c.Files = slices.Clone(c.Files)
	return c
}

// PutCleanup implements meta.Store.
func (s *Store) PutCleanup(ctx context.Context, c cairn.Cleanup) error {
	if err := meta.CheckCleanup(c); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	c = cloneCleanup(c)
	c.ID = cairn.CleanupID(c.Since, s.suffixLocked())
	s.cleanups.ReplaceOrInsert(c)
	return nil
}

// Cleanups implements meta.Store.
func (s *Store) Cleanups(ctx context.Context, until time.Time, limit int) ([]cairn.Cleanup, error) {
	if err := meta.CheckCleanupLimit(limit); err != nil {
		return nil, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []cairn.Cleanup
	end := cairn.CleanupPrefix(until.Add(time.Nanosecond))
	s.cleanups.AscendLessThan(cairn.Cleanup{ID: end}, func(c cairn.Cleanup) bool {
		out = append(out, cloneCleanup(c))
		return len(out) < limit
	})
	return out, nil
}

// DeleteCleanup implements meta.Store.
func (s *Store) DeleteCleanup(ctx context.Context, id string) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.cleanups.Delete(cairn.Cleanup{ID: id}); !ok {
		return fmt.Errorf("delete cleanup %s: %w", id, cairn.ErrNotFound)
	}
	return nil
}
