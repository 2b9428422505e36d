package etcdmeta

// Object Lock (docs/design/objectlock.md): the bucket's configuration is
// a field of its record; a version's retention and legal hold are fields
// of its manifest record, changed by a compare-and-swap on the whole
// record (as UpdateManifest), so the rules are judged against exactly
// what the transaction replaces.

import (
	"context"
	"errors"
	"fmt"

	"cairn"
	"cairn/meta"
)

// SetBucketObjectLock implements meta.Store: a compare-and-swap on the
// bucket record, whose versioning it checks.
func (s *Store) SetBucketObjectLock(ctx context.Context, name string, l cairn.ObjectLock) error {
	return s.updateBucketErr(ctx, "set object lock of bucket "+name, name, func(b *cairn.Bucket) error {
		if err := meta.CheckObjectLock(name, l, b.Versioning); err != nil {
			return err
		}
		b.ObjectLock = &l
		return nil
	})
}

// lockTries bounds SetObjectLock's compare-and-swap attempts against
// writers that keep changing the version (repair moving its shards).
const lockTries = 16

// SetObjectLock implements meta.Store.
func (s *Store) SetObjectLock(ctx context.Context, bucket, key, id string, c cairn.LockChange) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("set object lock of version %q of %s/%s", id, bucket, key)
	if err := meta.CheckVersionID(op, id, true); err != nil {
		return cairn.ObjectVersion{}, err
	}
	// Object Lock, once enabled, stays: the bucket is read once.
	b, err := s.Bucket(ctx, bucket)
	if err != nil {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
	}
	for range lockTries {
		v, err := s.ObjectVersion(ctx, bucket, key, id)
		if err != nil {
			return cairn.ObjectVersion{}, err
		}
		m, err := meta.LockVersion(op, b.ObjectLock, v, c, s.now())
		if err != nil {
			return cairn.ObjectVersion{}, err
		}
		if err := meta.CheckManifest(m); err != nil {
			return cairn.ObjectVersion{}, err
		}
		err = s.updateManifest(ctx, m, v.Manifest)
		if errors.Is(err, cairn.ErrConflict) {
			continue // changed since it was read: judge the new record
		}
		if err != nil {
			return cairn.ObjectVersion{}, err
		}
		out := meta.ManifestVersionOf(m)
		out.Latest = v.Latest
		return out, nil
	}
	return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, cairn.ErrConflict)
}
