package mem

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cairn"
	"cairn/meta"
)

// ColdGet implements meta.Store.
func (s *Store) ColdGet(ctx context.Context, key string) ([]byte, error) {
	if err := meta.CheckColdKey(key); err != nil {
		return nil, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	v, ok := s.cold[key]
	if !ok {
		return nil, fmt.Errorf("cold record %q: %w", key, cairn.ErrNotFound)
	}
	return bytes.Clone(v), nil
}

// ColdPage implements meta.Store: it sorts the keys, which is fine for
// the tests and simulations this store serves.
func (s *Store) ColdPage(ctx context.Context, prefix, after string, limit int) ([]meta.ColdRecord, bool, error) {
	if err := meta.CheckPageLimit("cold records", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	var out []meta.ColdRecord
	for _, k := range slices.Sorted(maps.Keys(s.cold)) {
		if !strings.HasPrefix(k, prefix) || k <= after {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, meta.ColdRecord{Key: k, Value: bytes.Clone(s.cold[k])})
	}
	return out, false, nil
}

// ColdUpdate implements meta.Store.
func (s *Store) ColdUpdate(ctx context.Context, ops []meta.ColdOp) error {
	if err := meta.CheckColdOps(ops); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for _, o := range ops {
		if !o.Check {
			continue
		}
		v, ok := s.cold[o.Key]
		if ok != (o.Prev != nil) || !bytes.Equal(v, o.Prev) {
			return fmt.Errorf("cold update of %q: %w", o.Key, cairn.ErrConflict)
		}
	}
	if s.cold == nil {
		s.cold = map[string][]byte{}
	}
	for _, o := range ops {
		if o.Value == nil {
			delete(s.cold, o.Key)
			continue
		}
		s.cold[o.Key] = bytes.Clone(o.Value)
	}
	return nil
}
