package etcdmeta

// Scrub records (docs/design/scrub.md): damage at
// <p>damage/<disk id>/<shard> (key order = cairn.DamageKey order), each
// disk's progress at <p>scrub/disks/<disk id>, the operator's switch at
// <p>scrub/control.

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

func (k keys) damages() string { return k.p + "damage/" }
func (k keys) damage(disk cairn.DiskID, sh string) string {
	return k.damages() + cairn.DamageKey(disk, sh)
}
func (k keys) scrubDisks() string               { return k.p + "scrub/disks/" }
func (k keys) scrubDisk(id cairn.DiskID) string { return k.scrubDisks() + string(id) }
func (k keys) scrubControl() string             { return k.p + "scrub/control" }

// put stores v as JSON at key.
func (s *Store) putJSON(ctx context.Context, op, key string, v any) error {
	if err := s.live(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := s.cli.Put(ctx, key, string(b)); err != nil {
		return s.wrap(op, err)
	}
	return nil
}

// PutDamage implements meta.Store.
func (s *Store) PutDamage(ctx context.Context, d cairn.Damage) error {
	if err := d.Check(); err != nil {
		return err
	}
	return s.putJSON(ctx, "put damage "+cairn.DamageKey(d.Disk, d.Shard), s.k.damage(d.Disk, d.Shard), d)
}

// Damages implements meta.Store: one range read of limit+1 keys.
func (s *Store) Damages(ctx context.Context, after string, limit int) ([]cairn.Damage, bool, error) {
	if err := meta.CheckDamageLimit(limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	from := s.k.damages()
	if after != "" {
		from += after + "\x00"
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.k.damages())),
		clientv3.WithLimit(int64(limit)+1))
	if err != nil {
		return nil, false, s.wrap("damages", err)
	}
	more := len(resp.Kvs) > limit
	kvs := resp.Kvs[:min(len(resp.Kvs), limit)]
	out := make([]cairn.Damage, 0, len(kvs))
	for _, kv := range kvs {
		var d cairn.Damage
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			return nil, false, fmt.Errorf("damages: decoding %q: %w", kv.Key, err)
		}
		out = append(out, d)
	}
	return out, more, nil
}

// DeleteDamage implements meta.Store.
func (s *Store) DeleteDamage(ctx context.Context, disk cairn.DiskID, shard string) error {
	if err := s.live(); err != nil {
		return err
	}
	op := "delete damage " + cairn.DamageKey(disk, shard)
	resp, err := s.cli.Delete(ctx, s.k.damage(disk, shard))
	if err != nil {
		return s.wrap(op, err)
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return nil
}

// PutScrubProgress implements meta.Store.
func (s *Store) PutScrubProgress(ctx context.Context, p cairn.ScrubProgress) error {
	if err := meta.CheckScrubProgress(p); err != nil {
		return err
	}
	return s.putJSON(ctx, "put scrub progress of "+string(p.Disk), s.k.scrubDisk(p.Disk), p)
}

// ScrubProgress implements meta.Store.
func (s *Store) ScrubProgress(ctx context.Context) ([]cairn.ScrubProgress, error) {
	return list[cairn.ScrubProgress](ctx, s, "scrub progress", s.k.scrubDisks())
}

// PutScrubControl implements meta.Store.
func (s *Store) PutScrubControl(ctx context.Context, c cairn.ScrubControl) error {
	return s.putJSON(ctx, "put scrub control", s.k.scrubControl(), c)
}

// ScrubControl implements meta.Store.
func (s *Store) ScrubControl(ctx context.Context) (cairn.ScrubControl, error) {
	return getOrZero[cairn.ScrubControl](ctx, s, "scrub control", s.k.scrubControl())
}
