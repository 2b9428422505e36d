package etcdmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// Uploads: the record lives at <p>uploads/<bucket>/<id>, each part at
// <p>parts/<bucket>/<id>/<n>, its index record by key at
// <p>upkeys/<bucket>/... (upkeys.go), put and deleted with the record. Every PutPart also rewrites the record with
// its own value (WithIgnoreValue), so the record's ModRevision is the
// upload's stamp: CompleteUpload compares it to know no part changed since
// the caller read them.

func badName(bucket, id string) bool {
	return strings.Contains(bucket, "/") || id == "" || strings.Contains(id, "/")
}

// CreateUpload implements meta.Store.
func (s *Store) CreateUpload(ctx context.Context, u cairn.Upload) error {
	if err := meta.CheckUpload(u); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	op := fmt.Sprintf("create upload %s/%s", u.Bucket, u.ID)
	if strings.Contains(u.Bucket, "/") {
		return fmt.Errorf("%s: bucket: %w", op, cairn.ErrNotFound)
	}
	v, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	bk, uk := s.k.bucket(u.Bucket), s.k.upload(u.Bucket, u.ID)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(bk), ">", 0), clientv3.Compare(clientv3.CreateRevision(uk), "=", 0)).
		Then(clientv3.OpPut(uk, string(v)), clientv3.OpPut(s.k.upkey(u), encodeUpkey(u))).
		Else(clientv3.OpGet(bk, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return s.wrap(op, err)
	}
	if resp.Succeeded {
		return nil
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return fmt.Errorf("%s: bucket: %w", op, cairn.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", op, cairn.ErrExists)
}

// Upload implements meta.Store.
func (s *Store) Upload(ctx context.Context, bucket, id string) (cairn.Upload, error) {
	op := fmt.Sprintf("upload %s/%s", bucket, id)
	if err := s.live(); err != nil {
		return cairn.Upload{}, err
	}
	if badName(bucket, id) {
		return cairn.Upload{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return getOne[cairn.Upload](ctx, s, op, s.k.upload(bucket, id))
}

// Uploads implements meta.Store.
func (s *Store) Uploads(ctx context.Context, bucket string) ([]cairn.Upload, error) {
	prefix := s.k.p + "uploads/"
	if bucket != "" {
		if strings.Contains(bucket, "/") {
			return nil, nil
		}
		prefix = s.k.uploads(bucket)
	}
	us, err := list[cairn.Upload](ctx, s, "uploads", prefix)
	slices.SortFunc(us, meta.CompareUploads)
	return us, err
}

// UploadPage implements meta.Store: the records' keys,
// <p>uploads/<bucket>/<id>, are in the byte order of the uploads'
// positions.
func (s *Store) UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error) {
	all := s.k.p + "uploads/"
	lo := all
	if bucket != "" {
		if strings.Contains(bucket, "/") {
			return nil, false, meta.CheckPageLimit("uploads", limit)
		}
		lo = s.k.uploads(bucket)
	}
	from := lo
	if after != "" {
		from = max(lo, all+after+"\x00")
	}
	return page[cairn.Upload](ctx, s, "uploads", from, clientv3.GetPrefixRangeEnd(lo), limit)
}

// UpdateUploadEncryption implements meta.Store: it reads the record and
// puts it back with e in a Txn that compares the record's mod revision
// with what was read (the put changes it: the stamp). A PutPart in between
// changes the revision too, so a lost Txn reads again, a bounded number of
// times.
func (s *Store) UpdateUploadEncryption(ctx context.Context, bucket, id string, e, prev *cairn.Encryption) error {
	if err := meta.CheckUploadEncryption(e, prev); err != nil {
		return err
	}
	op := fmt.Sprintf("update encryption of upload %s/%s", bucket, id)
	if err := s.live(); err != nil {
		return err
	}
	if badName(bucket, id) {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	uk := s.k.upload(bucket, id)
	want, err := json.Marshal(prev)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	next, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	for range 16 {
		resp, err := s.cli.Get(ctx, uk)
		if err != nil {
			return s.wrap(op, err)
		}
		if len(resp.Kvs) == 0 {
			return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
		}
		var u cairn.Upload
		if err := json.Unmarshal(resp.Kvs[0].Value, &u); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		cur, err := json.Marshal(u.Encryption)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if string(cur) == string(next) {
			return nil // this very update is stored: a retried update
		}
		if string(cur) != string(want) {
			return fmt.Errorf("%s: %w (the record changed)", op, cairn.ErrConflict)
		}
		u.Encryption = e
		v, err := json.Marshal(u)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		tr, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(uk), "=", resp.Kvs[0].ModRevision)).
			Then(clientv3.OpPut(uk, string(v))).
			Commit()
		if err != nil {
			return s.wrap(op, err)
		}
		if tr.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("%s: %w (too many concurrent parts)", op, cairn.ErrConflict)
}

func decodeParts(op string, kvs []*mvccpb.KeyValue) ([]cairn.Part, error) {
	out := make([]cairn.Part, 0, len(kvs))
	for _, kv := range kvs {
		var p cairn.Part
		if err := json.Unmarshal(kv.Value, &p); err != nil {
			return nil, fmt.Errorf("%s: decoding %q: %w", op, kv.Key, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// PutPart implements meta.Store: it reads the upload record and the part
// key, and puts the part, rewrites the record (its mod revision is the
// stamp) and moves the usage counters in one Txn that compares both keys
// with what was read (counted).
func (s *Store) PutPart(ctx context.Context, bucket, id string, p cairn.Part) (*cairn.Part, error) {
	if err := meta.CheckPart(p); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("put part %d of upload %s/%s", p.Number, bucket, id)
	if err := s.live(); err != nil {
		return nil, err
	}
	if badName(bucket, id) {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	v, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	uk, pk := s.k.upload(bucket, id), s.k.part(bucket, id, p.Number)
	var prev *cairn.Part
	guess := meta.NewDelta()
	guess.Parts([]cairn.Part{p}, 1)
	err = s.counted(ctx, op, []string{uk, pk}, nil, guess, func(r reads) planned {
		if r.kv[uk] == nil {
			return planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		}
		d := meta.NewDelta()
		d.Parts([]cairn.Part{p}, 1)
		prev = nil
		if old := r.kv[pk]; old != nil {
			ps, err := decodeParts(op, []*mvccpb.KeyValue{old})
			if err != nil {
				return planned{done: true, err: err}
			}
			prev = &ps[0]
			d.Parts(ps, -1)
		}
		pl := planned{ops: []clientv3.Op{clientv3.OpPut(pk, string(v)), clientv3.OpPut(uk, "", clientv3.WithIgnoreValue())}, delta: d}
		if prev == nil {
			return pl
		}
		return s.withDiscard(pl, cairn.CleanupPart, bucket, upKey(r.kv[uk]), prev.Files())
	})
	if err != nil {
		return nil, err
	}
	return prev, nil
}

// Parts implements meta.Store.
func (s *Store) Parts(ctx context.Context, bucket, id string) ([]cairn.Part, int64, error) {
	op := fmt.Sprintf("parts of upload %s/%s", bucket, id)
	if err := s.live(); err != nil {
		return nil, 0, err
	}
	if badName(bucket, id) {
		return nil, 0, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	resp, err := s.cli.Get(ctx, s.k.upload(bucket, id))
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	// The parts, a page at a time at the record's revision: up to
	// cairn.MaxParts of them.
	var kvs []*mvccpb.KeyValue
	pp := s.k.parts(bucket, id)
	err = s.pages(ctx, pp, clientv3.GetPrefixRangeEnd(pp), resp.Header.Revision, func(kv *mvccpb.KeyValue) bool {
		kvs = append(kvs, kv)
		return true
	})
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	ps, err := decodeParts(op, kvs)
	return ps, resp.Kvs[0].ModRevision, err
}

// PartPage implements meta.Store: the upload's record, then a range of
// its parts' records at the same revision.
func (s *Store) PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error) {
	op := fmt.Sprintf("parts of upload %s/%s", bucket, id)
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	if badName(bucket, id) {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	resp, err := s.cli.Get(ctx, s.k.upload(bucket, id))
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	pp := s.k.parts(bucket, id)
	from := pp
	if after > 0 {
		from = s.k.part(bucket, id, after) + "\x00"
	}
	pr, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(pp)), clientv3.WithLimit(int64(limit)),
		clientv3.WithRev(resp.Header.Revision))
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	ps, err := decodeParts(op, pr.Kvs)
	return ps, pr.More, err
}

// DeleteUpload implements meta.Store: it reads the upload record and its
// parts, and deletes them and moves the usage counters in one Txn that
// compares the record with what was read (every PutPart rewrites it, so
// the parts are as read too).
func (s *Store) DeleteUpload(ctx context.Context, bucket, id string) ([]cairn.Part, error) {
	op := fmt.Sprintf("delete upload %s/%s", bucket, id)
	if err := s.live(); err != nil {
		return nil, err
	}
	if badName(bucket, id) {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	uk, pp := s.k.upload(bucket, id), s.k.parts(bucket, id)
	var parts []cairn.Part
	err := s.counted(ctx, op, []string{uk}, []string{pp}, nil, func(r reads) planned {
		if r.kv[uk] == nil {
			return planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		}
		var err error
		if parts, err = decodeParts(op, r.prefix[pp]); err != nil {
			return planned{done: true, err: err}
		}
		ik, err := s.upkeyOf(op, r.kv[uk])
		if err != nil {
			return planned{done: true, err: err}
		}
		d := meta.NewDelta()
		d.Parts(parts, -1)
		return s.withDiscard(planned{ops: []clientv3.Op{clientv3.OpDelete(uk), clientv3.OpDelete(ik), clientv3.OpDelete(pp, clientv3.WithPrefix())}, delta: d},
			cairn.CleanupAbort, bucket, upKey(r.kv[uk]), cairn.PartFiles(parts))
	})
	if err != nil {
		return nil, err
	}
	return parts, nil
}

// CompleteUpload implements meta.Store: it reads the bucket key, the
// object's record, the upload record and its parts, decides from them
// (the bucket and the upload exist, the upload's stamp is stamp, the
// object's version is prevVersion), and puts the manifest, deletes the
// upload with its parts and moves the usage counters in one Txn that
// compares the three keys with what was read.
func (s *Store) CompleteUpload(ctx context.Context, m *cairn.Manifest, prevVersion, id string, stamp int64) ([]cairn.Part, error) {
	if err := meta.CheckManifest(m); err != nil {
		return nil, err
	}
	if err := s.live(); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("complete upload %s/%s of %s", m.Bucket, id, m.Key)
	if badName(m.Bucket, id) {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	v, err := encodeObject(m)
	if err != nil {
		return nil, err
	}
	bk, ok, uk, pp := s.k.bucket(m.Bucket), s.k.object(m.Bucket, m.Key), s.k.upload(m.Bucket, id), s.k.parts(m.Bucket, id)
	nk := s.k.nullv(m.Bucket, m.Key)
	conflict := fmt.Errorf("%s over version %q: %w (parts or object changed)", op, prevVersion, cairn.ErrConflict)
	var parts []cairn.Part
	guess := meta.NewDelta()
	guess.Object(m, 1)
	err = s.counted(ctx, op, []string{bk, ok, uk, nk}, []string{pp}, guess, func(r reads) planned {
		switch {
		case r.kv[bk] == nil || r.kv[uk] == nil:
			return planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		case r.kv[uk].ModRevision != stamp:
			return planned{done: true, err: conflict}
		}
		old, done, err := s.replaced(ctx, op, m, prevVersion, true, r.kv[ok], r.rev)
		if done || err != nil {
			return planned{done: true, err: conflict}
		}
		if parts, err = decodeParts(op, r.prefix[pp]); err != nil {
			return planned{done: true, err: err}
		}
		ik, err := s.upkeyOf(op, r.kv[uk])
		if err != nil {
			return planned{done: true, err: err}
		}
		pl := s.commitPlan(ctx, r, bk, m, v, old, r.kv[ok], []clientv3.Op{clientv3.OpDelete(uk), clientv3.OpDelete(ik), clientv3.OpDelete(pp, clientv3.WithPrefix())})
		if pl.done {
			return pl
		}
		pl.delta.Parts(parts, -1)
		return s.withDiscard(pl, cairn.CleanupUnchosen, m.Bucket, m.Key, meta.Unchosen(parts, m))
	})
	if err != nil {
		return nil, err
	}
	return parts, nil
}

// upKey returns the object key of an upload record as read (for cleanup
// records; "" if it cannot be decoded).
func upKey(rec *mvccpb.KeyValue) string {
	var u cairn.Upload
	if rec == nil || json.Unmarshal(rec.Value, &u) != nil {
		return ""
	}
	return u.Key
}
