package mem

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"cairn"
	"cairn/meta"
)

// RAIDP implements meta.Store.
func (s *Store) RAIDP(ctx context.Context, name string) ([]byte, error) {
	if err := meta.ValidRAIDPName(name); err != nil {
		return nil, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	b, ok := s.raidp[name]
	if !ok {
		return nil, fmt.Errorf("raidp record %s: %w", name, cairn.ErrNotFound)
	}
	return slices.Clone(b), nil
}

// UpdateRAIDP implements meta.Store. f runs under the store's lock: it
// sees no concurrent change, so it runs once.
func (s *Store) UpdateRAIDP(ctx context.Context, name string, f func(old []byte) ([]byte, error)) error {
	if err := meta.ValidRAIDPName(name); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok := s.raidp[name]
	if ok {
		old = slices.Clone(old)
	}
	b, err := f(old)
	if err != nil {
		return fmt.Errorf("update raidp record %s: %w", name, err)
	}
	if !json.Valid(b) {
		return fmt.Errorf("update raidp record %s: %w: the new value is not JSON", name, cairn.ErrInvalid)
	}
	if s.raidp == nil {
		s.raidp = map[string][]byte{}
	}
	s.raidp[name] = slices.Clone(b)
	return nil
}
