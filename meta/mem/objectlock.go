package mem

import (
	"context"
	"fmt"

	"cairn"
	"cairn/meta"
)

// SetBucketObjectLock implements meta.Store.
func (s *Store) SetBucketObjectLock(ctx context.Context, name string, l cairn.ObjectLock) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(name)
	if err != nil {
		return fmt.Errorf("set object lock of bucket %s: %w", name, err)
	}
	if err := meta.CheckObjectLock(name, l, b.b.Versioning); err != nil {
		return err
	}
	b.b.ObjectLock = &l
	return nil
}

// SetObjectLock implements meta.Store: the version's manifest is
// replaced where it lives (current or noncurrent).
func (s *Store) SetObjectLock(ctx context.Context, bucketName, key, id string, c cairn.LockChange) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("set object lock of version %q of %s/%s", id, bucketName, key)
	return s.onVersion(ctx, op, bucketName, key, id, true, func(b *bucket, cur *cairn.Manifest, r verRec) (cairn.ObjectVersion, error) {
		var v cairn.ObjectVersion
		if cur != nil {
			v = meta.ManifestVersionOf(cur)
		} else {
			v = r.objectVersion()
		}
		m, err := meta.LockVersion(op, b.b.ObjectLock, v, c, s.now())
		if err != nil {
			return cairn.ObjectVersion{}, err
		}
		if cur != nil {
			b.objects.ReplaceOrInsert(m)
		} else {
			r.m = m
			b.versions.ReplaceOrInsert(r)
		}
		out := meta.ManifestVersionOf(cloneManifest(m))
		out.Latest = cur != nil
		return out, nil
	})
}
