package etcdmeta

// Cleanup records (docs/design/cleanup.md) live at <p>cleanup/<id>; an ID
// starts with the record's Since in 19 decimal digits of nanoseconds
// (cairn.CleanupID), so key order is queue order and the records due by a
// time are one range read. The writes that drop shard files put their
// records in their own Txn (discard).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

func (k keys) cleanups() string         { return k.p + "cleanup/" }
func (k keys) cleanup(id string) string { return k.cleanups() + id }

// randomSuffix is a cleanup ID suffix: 16 random hex digits.
func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// discard returns the puts that queue files a write drops now
// (meta.Discarded), for the write's own Txn.
func (s *Store) discard(reason, bucket, key string, files []cairn.ShardFile) ([]clientv3.Op, error) {
	var ops []clientv3.Op
	for _, c := range meta.Discarded(s.now(), reason, bucket, key, files, randomSuffix) {
		v, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encoding cleanup record: %w", err)
		}
		ops = append(ops, clientv3.OpPut(s.k.cleanup(c.ID), string(v)))
	}
	return ops, nil
}

// PutCleanup implements meta.Store.
func (s *Store) PutCleanup(ctx context.Context, c cairn.Cleanup) error {
	if err := meta.CheckCleanup(c); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	c.ID = cairn.CleanupID(c.Since, randomSuffix())
	v, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("queue cleanup: %w", err)
	}
	if _, err := s.cli.Put(ctx, s.k.cleanup(c.ID), string(v)); err != nil {
		return s.wrap("queue cleanup", err)
	}
	return nil
}

// Cleanups implements meta.Store: one range read from the first record to
// the first ID after until.
func (s *Store) Cleanups(ctx context.Context, until time.Time, limit int) ([]cairn.Cleanup, error) {
	if err := meta.CheckCleanupLimit(limit); err != nil {
		return nil, err
	}
	if err := s.live(); err != nil {
		return nil, err
	}
	end := s.k.cleanup(cairn.CleanupPrefix(until.Add(time.Nanosecond)))
	resp, err := s.cli.Get(ctx, s.k.cleanups(), clientv3.WithRange(end), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, s.wrap("cleanups", err)
	}
	out := make([]cairn.Cleanup, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var c cairn.Cleanup
		if err := json.Unmarshal(kv.Value, &c); err != nil {
			return nil, fmt.Errorf("cleanups: decoding %q: %w", kv.Key, err)
		}
		c.ID = strings.TrimPrefix(string(kv.Key), s.k.cleanups())
		out = append(out, c)
	}
	return out, nil
}

// DeleteCleanup implements meta.Store.
func (s *Store) DeleteCleanup(ctx context.Context, id string) error {
	op := "delete cleanup " + id
	if err := s.live(); err != nil {
		return err
	}
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	resp, err := s.cli.Delete(ctx, s.k.cleanup(id))
	if err != nil {
		return s.wrap(op, err)
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return nil
}

// withDiscard adds to p the puts that queue files (discard): a counted
// write's plan that drops them.
func (s *Store) withDiscard(p planned, reason, bucket, key string, files []cairn.ShardFile) planned {
	ops, err := s.discard(reason, bucket, key, files)
	if err != nil {
		return planned{done: true, err: err}
	}
	p.ops = append(p.ops, ops...)
	return p
}
