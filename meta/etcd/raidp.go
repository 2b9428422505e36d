package etcdmeta

import (
	"context"
	"encoding/json"
	"fmt"

	"cairn"
	"cairn/meta"
)

func (k keys) raidp(name string) string { return k.p + "raidp/" + name }

// RAIDP implements meta.Store.
func (s *Store) RAIDP(ctx context.Context, name string) ([]byte, error) {
	if err := meta.ValidRAIDPName(name); err != nil {
		return nil, err
	}
	if err := s.live(); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.k.raidp(name))
	if err != nil {
		return nil, s.wrap("raidp record "+name, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("raidp record %s: %w", name, cairn.ErrNotFound)
	}
	return resp.Kvs[0].Value, nil
}

// UpdateRAIDP implements meta.Store.
func (s *Store) UpdateRAIDP(ctx context.Context, name string, f func(old []byte) ([]byte, error)) error {
	if err := meta.ValidRAIDPName(name); err != nil {
		return err
	}
	return s.update(ctx, "update raidp record "+name, s.k.raidp(name), func(old []byte) (any, error) {
		b, err := f(old)
		if err != nil {
			return nil, err
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("%w: the new value is not JSON", cairn.ErrInvalid)
		}
		return json.RawMessage(b), nil
	})
}
