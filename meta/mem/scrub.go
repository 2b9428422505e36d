package mem

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"cairn"
	"cairn/meta"
)

// PutDamage implements meta.Store.
func (s *Store) PutDamage(ctx context.Context, d cairn.Damage) error {
	if err := d.Check(); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.damage[cairn.DamageKey(d.Disk, d.Shard)] = d
	return nil
}

// Damages implements meta.Store.
func (s *Store) Damages(ctx context.Context, after string, limit int) ([]cairn.Damage, bool, error) {
	if err := meta.CheckDamageLimit(limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	var out []cairn.Damage
	for _, k := range slices.Sorted(maps.Keys(s.damage)) {
		if k <= after {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, s.damage[k])
	}
	return out, false, nil
}

// DeleteDamage implements meta.Store.
func (s *Store) DeleteDamage(ctx context.Context, disk cairn.DiskID, shard string) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	k := cairn.DamageKey(disk, shard)
	if _, ok := s.damage[k]; !ok {
		return fmt.Errorf("delete damage %s: %w", k, cairn.ErrNotFound)
	}
	delete(s.damage, k)
	return nil
}

// PutScrubProgress implements meta.Store.
func (s *Store) PutScrubProgress(ctx context.Context, p cairn.ScrubProgress) error {
	if err := meta.CheckScrubProgress(p); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.scrub[p.Disk] = p
	return nil
}

// ScrubProgress implements meta.Store.
func (s *Store) ScrubProgress(ctx context.Context) ([]cairn.ScrubProgress, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]cairn.ScrubProgress, 0, len(s.scrub))
	for _, id := range slices.Sorted(maps.Keys(s.scrub)) {
		out = append(out, s.scrub[id])
	}
	return out, nil
}

// PutScrubControl implements meta.Store.
func (s *Store) PutScrubControl(ctx context.Context, c cairn.ScrubControl) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.control = c
	return nil
}

// ScrubControl implements meta.Store.
func (s *Store) ScrubControl(ctx context.Context) (cairn.ScrubControl, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.ScrubControl{}, err
	}
	defer s.mu.Unlock()
	return s.control, nil
}
