package etcdmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// SetBucketTags implements meta.Store: a compare-and-swap on the bucket
// record, as SetBucketEncryption.
func (s *Store) SetBucketTags(ctx context.Context, name string, tags map[string]string) error {
	if len(tags) == 0 {
		tags = nil
	}
	return s.updateBucket(ctx, "set tags of bucket "+name, name, func(b *cairn.Bucket) { b.Tags = tags })
}

// SetBucketCORS implements meta.Store: a compare-and-swap on the bucket
// record, as SetBucketEncryption.
func (s *Store) SetBucketCORS(ctx context.Context, name string, rules []cairn.CORSRule) error {
	if len(rules) == 0 {
		rules = nil
	}
	return s.updateBucket(ctx, "set CORS of bucket "+name, name, func(b *cairn.Bucket) { b.CORS = rules })
}

// UpdateBucketAccess implements meta.Store: a compare-and-swap on the
// bucket record, as SetBucketEncryption.
func (s *Store) UpdateBucketAccess(ctx context.Context, name string, update func(*cairn.BucketAccess) (*cairn.BucketAccess, error)) error {
	return s.updateBucketErr(ctx, "set access of bucket "+name, name, func(b *cairn.Bucket) error {
		return meta.UpdateAccess(b, update)
	})
}

// updateBucket applies set to the stored bucket record in a
// compare-and-swap on its revision, retried while other writers win
// (ErrConflict after 16 tries).
func (s *Store) updateBucket(ctx context.Context, op, name string, set func(*cairn.Bucket)) error {
	return s.updateBucketErr(ctx, op, name, func(b *cairn.Bucket) error { set(b); return nil })
}

// updateBucketErr is updateBucket with a set that may refuse: its error
// ends the update, nothing written.
func (s *Store) updateBucketErr(ctx context.Context, op, name string, set func(*cairn.Bucket) error) error {
	if err := s.live(); err != nil {
		return err
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	k := s.k.bucket(name)
	defer s.forgetBucket(name)
	for range 16 {
		resp, err := s.cli.Get(ctx, k)
		if err != nil {
			return s.wrap(op, err)
		}
		if len(resp.Kvs) == 0 {
			return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
		}
		var b cairn.Bucket
		if err := json.Unmarshal(resp.Kvs[0].Value, &b); err != nil {
			return fmt.Errorf("%s: %w: %v", op, cairn.ErrCorrupt, err)
		}
		if err := set(&b); err != nil {
			return err
		}
		v, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		t, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", resp.Kvs[0].ModRevision)).
			Then(clientv3.OpPut(k, string(v))).
			Commit()
		if err != nil {
			return s.wrap(op, err)
		}
		if t.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("%s: %w", op, cairn.ErrConflict)
}
