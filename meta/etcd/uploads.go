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
// <p>parts/<bucket>/<id>/<n>. Every PutPart also rewrites the record with
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
		Then(clientv3.OpPut(uk, string(v))).
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

// PutPart implements meta.Store.
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
	uk := s.k.upload(bucket, id)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(uk), ">", 0)).
		Then(clientv3.OpPut(s.k.part(bucket, id, p.Number), string(v), clientv3.WithPrevKV()),
			clientv3.OpPut(uk, "", clientv3.WithIgnoreValue())).
		Commit()
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	if prev := resp.Responses[0].GetResponsePut().PrevKv; prev != nil {
		ps, err := decodeParts(op, []*mvccpb.KeyValue{prev})
		if err != nil {
			return nil, err
		}
		return &ps[0], nil
	}
	return nil, nil
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
	resp, err := s.cli.Txn(ctx).
		Then(clientv3.OpGet(s.k.upload(bucket, id)), clientv3.OpGet(s.k.parts(bucket, id), clientv3.WithPrefix())).
		Commit()
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	rec := resp.Responses[0].GetResponseRange().Kvs
	if len(rec) == 0 {
		return nil, 0, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	ps, err := decodeParts(op, resp.Responses[1].GetResponseRange().Kvs)
	return ps, rec[0].ModRevision, err
}

// DeleteUpload implements meta.Store.
func (s *Store) DeleteUpload(ctx context.Context, bucket, id string) ([]cairn.Part, error) {
	op := fmt.Sprintf("delete upload %s/%s", bucket, id)
	if err := s.live(); err != nil {
		return nil, err
	}
	if badName(bucket, id) {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	uk := s.k.upload(bucket, id)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(uk), ">", 0)).
		Then(clientv3.OpDelete(uk), clientv3.OpDelete(s.k.parts(bucket, id), clientv3.WithPrefix(), clientv3.WithPrevKV())).
		Commit()
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return decodeParts(op, resp.Responses[1].GetResponseDeleteRange().PrevKvs)
}

// CompleteUpload implements meta.Store.
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
	v, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	bk, ok, uk := s.k.bucket(m.Bucket), s.k.object(m.Bucket, m.Key), s.k.upload(m.Bucket, id)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(bk), ">", 0),
		clientv3.Compare(clientv3.ModRevision(uk), "=", stamp),
	}
	if prevVersion == "" {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(ok), "=", 0))
	} else {
		cmps = append(cmps, versionIs(ok, prevVersion)...)
	}
	resp, err := s.cli.Txn(ctx).
		If(cmps...).
		Then(clientv3.OpPut(ok, v), clientv3.OpDelete(uk),
			clientv3.OpDelete(s.k.parts(m.Bucket, id), clientv3.WithPrefix(), clientv3.WithPrevKV())).
		Else(clientv3.OpGet(bk, clientv3.WithCountOnly()), clientv3.OpGet(uk, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if resp.Succeeded {
		return decodeParts(op, resp.Responses[2].GetResponseDeleteRange().PrevKvs)
	}
	if resp.Responses[0].GetResponseRange().Count == 0 || resp.Responses[1].GetResponseRange().Count == 0 {
		return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return nil, fmt.Errorf("%s over version %q: %w (parts or object changed)", op, prevVersion, cairn.ErrConflict)
}
