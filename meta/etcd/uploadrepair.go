package etcdmeta

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// UpdateUploadPart implements meta.Store: it watches the upload record
// and the part's record, and puts the part, rewrites the record with its
// own value (its mod revision is the upload's stamp: a CompleteUpload
// that read the parts before conflicts) and moves the usage counters in
// one Txn, as PutPart does.
func (s *Store) UpdateUploadPart(ctx context.Context, bucket, id string, p, prev cairn.Part) error {
	op := fmt.Sprintf("update part %d of upload %s/%s", p.Number, bucket, id)
	if err := meta.CheckPartUpdate(op, p, prev); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	if badName(bucket, id) {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	pv, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	prv, err := json.Marshal(prev)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	uk, pk := s.k.upload(bucket, id), s.k.part(bucket, id, p.Number)
	d := meta.NewDelta()
	d.Parts([]cairn.Part{p}, 1)
	d.Parts([]cairn.Part{prev}, -1)
	return s.counted(ctx, op, []string{uk, pk}, nil, d, func(r reads) planned {
		switch {
		case r.kv[uk] == nil:
			return planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		case r.kv[pk] == nil:
			return planned{done: true, err: fmt.Errorf("%s: %w (no such part)", op, cairn.ErrNotFound)}
		}
		// The record is PutPart's (or this method's) encoding of a
		// cairn.Part, as the stored parts of objects are UpdatePart's.
		switch cur := string(r.kv[pk].Value); {
		case cur == string(pv):
			return planned{done: true} // this very update is stored: a retried update
		case cur != string(prv):
			return planned{done: true, err: fmt.Errorf("%s: %w (the part changed)", op, cairn.ErrConflict)}
		}
		files := meta.PartSuperseded(prev, p)
		pl := planned{ops: []clientv3.Op{clientv3.OpPut(pk, string(pv)), clientv3.OpPut(uk, "", clientv3.WithIgnoreValue())}, delta: d}
		return s.withDiscard(pl, cairn.CleanupRepair, bucket, upKey(r.kv[uk]), files)
	})
}
