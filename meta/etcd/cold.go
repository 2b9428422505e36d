package etcdmeta

// The cold tier's records (docs/design/cold.md, "Persistence") at
// <p>cold/<key>: opaque bytes the cold tier encodes.

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

func (k keys) cold(key string) string { return k.p + "cold/" + key }

// ColdGet implements meta.Store.
func (s *Store) ColdGet(ctx context.Context, key string) ([]byte, error) {
	if err := meta.CheckColdKey(key); err != nil {
		return nil, err
	}
	if err := s.live(); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("cold record %q", key)
	resp, err := s.cli.Get(ctx, s.k.cold(key))
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return resp.Kvs[0].Value, nil
}

// ColdPage implements meta.Store: one range read of limit keys.
func (s *Store) ColdPage(ctx context.Context, prefix, after string, limit int) ([]meta.ColdRecord, bool, error) {
	op := fmt.Sprintf("cold records %q", prefix)
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	base := s.k.cold("")
	from, end := base+prefix, clientv3.GetPrefixRangeEnd(base+prefix)
	if after >= prefix {
		from = base + after + "\x00"
	}
	if !strings.HasPrefix(after, prefix) && after > prefix {
		return nil, false, nil // after sorts past every key of prefix
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	out := make([]meta.ColdRecord, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, meta.ColdRecord{Key: strings.TrimPrefix(string(kv.Key), base), Value: kv.Value})
	}
	return out, resp.More, nil
}

// ColdUpdate implements meta.Store: one transaction.
func (s *Store) ColdUpdate(ctx context.Context, ops []meta.ColdOp) error {
	if err := meta.CheckColdOps(ops); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	op := fmt.Sprintf("cold update of %q", ops[0].Key)
	var cmps []clientv3.Cmp
	var puts []clientv3.Op
	for _, o := range ops {
		k := s.k.cold(o.Key)
		if o.Check {
			if o.Prev == nil {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
			} else {
				cmps = append(cmps, clientv3.Compare(clientv3.Value(k), "=", string(o.Prev)))
			}
		}
		if o.Value == nil {
			puts = append(puts, clientv3.OpDelete(k))
		} else {
			puts = append(puts, clientv3.OpPut(k, string(o.Value)))
		}
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
	if err != nil {
		return s.wrap(op, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s: %w", op, cairn.ErrConflict)
	}
	return nil
}
