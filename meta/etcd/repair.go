package etcdmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// UpdateManifest implements meta.Store: the stored manifest (its head
// and split parts, read at one revision) must encode as prev does; the
// records are replaced, and the usage counters moved, in one Txn that
// compares the head with what was read (counted; every write of a part
// record rewrites the head, so the parts are as read too).
func (s *Store) UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error {
	if err := meta.CheckUpdate(m, prev); err != nil {
		return err
	}
	return s.updateManifest(ctx, m, prev)
}

// updateManifest is UpdateManifest of a checked m: a compare-and-swap on
// prev's whole record, wherever the version lives.
func (s *Store) updateManifest(ctx context.Context, m, prev *cairn.Manifest) error {
	if err := s.live(); err != nil {
		return err
	}
	op := fmt.Sprintf("update %s/%s", m.Bucket, m.Key)
	if strings.Contains(m.Bucket, "/") {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	e, err := encodeObject(m)
	if err != nil {
		return err
	}
	mj, err := json.Marshal(m)
	if err != nil {
		return err
	}
	pj, err := json.Marshal(prev)
	if err != nil {
		return err
	}
	ok, vk := s.k.object(m.Bucket, m.Key), s.k.version(m.Bucket, m.Key, m.Version)
	d := meta.NewDelta()
	d.Object(m, 1)
	d.Object(prev, -1)
	return s.counted(ctx, op, []string{ok, vk}, nil, d, func(r reads) planned {
		rec := r.kv[ok]
		if nc := r.kv[vk]; nc != nil && (rec == nil || storedVersion(rec.Value) != m.Version) {
			return s.updateNoncurrent(ctx, op, r.rev, nc, m, e, mj, pj, prev, d)
		}
		if rec == nil {
			return planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		}
		cur, pl := s.storedAs(ctx, op, m, rec, r.rev, mj, pj)
		if pl.done {
			return pl
		}
		return s.withDiscard(planned{ops: s.replaceObject(m, e, cur), delta: d},
			cairn.CleanupRepair, m.Bucket, m.Key, cairn.Superseded(prev, m))
	})
}

// PutRepairProgress implements meta.Store.
func (s *Store) PutRepairProgress(ctx context.Context, p cairn.RepairProgress) error {
	if err := s.live(); err != nil {
		return err
	}
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if _, err := s.cli.Put(ctx, s.k.repairProgress(), string(v)); err != nil {
		return s.wrap("put repair progress", err)
	}
	return nil
}

// RepairProgress implements meta.Store.
func (s *Store) RepairProgress(ctx context.Context) (cairn.RepairProgress, error) {
	if err := s.live(); err != nil {
		return cairn.RepairProgress{}, err
	}
	return getOne[cairn.RepairProgress](ctx, s, "repair progress", s.k.repairProgress())
}

// updateNoncurrent is UpdateManifest of a noncurrent version whose record
// rec was read at rev (docs/design/versioning.md): the record is
// rewritten where it is, with its split parts.
func (s *Store) updateNoncurrent(ctx context.Context, op string, rev int64, rec *mvccpb.KeyValue, m *cairn.Manifest, e encoded, mj, pj []byte, prev *cairn.Manifest, d *meta.Delta) planned {
	cur, pl := s.storedAs(ctx, op, m, rec, rev, mj, pj)
	if pl.done {
		return pl
	}
	ops := []clientv3.Op{clientv3.OpPut(string(rec.Key), e.head)}
	for _, p := range m.Parts {
		ops = append(ops, clientv3.OpPut(s.k.mpart(m.Bucket, m.Version, p.Number), e.parts[p.Number]))
	}
	for _, p := range cur.Parts {
		if _, ok := e.parts[p.Number]; !ok {
			ops = append(ops, clientv3.OpDelete(s.k.mpart(m.Bucket, m.Version, p.Number)))
		}
	}
	return s.withDiscard(planned{ops: ops, delta: d}, cairn.CleanupRepair, m.Bucket, m.Key, cairn.Superseded(prev, m))
}

// storedAs loads the stored record rec of m's version (read at rev) for
// UpdateManifest and compares it with m and prev (their JSON mj, pj): a
// plan that is done if that decides the update without a write (a
// retried update, or ErrConflict).
func (s *Store) storedAs(ctx context.Context, op string, m *cairn.Manifest, rec *mvccpb.KeyValue, rev int64, mj, pj []byte) (*cairn.Manifest, planned) {
	cur, err := s.loadManifest(ctx, m.Bucket, m.Key, rec, rev)
	if err != nil {
		return nil, planned{done: true, err: s.wrap(op, err)}
	}
	cj, err := json.Marshal(cur)
	switch {
	case err != nil:
		return nil, planned{done: true, err: err}
	case string(cj) == string(mj):
		return nil, planned{done: true} // this very update is stored: a retried update
	case string(cj) != string(pj):
		return nil, planned{done: true, err: fmt.Errorf("%s: %w (the manifest changed: version %s)", op, cairn.ErrConflict, cur.Version)}
	}
	return cur, planned{}
}
