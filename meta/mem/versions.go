package mem

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/google/btree"

	"cairn"
	"cairn/meta"
)

// verRec is a record of a bucket's versions keyspace
// (docs/design/versioning.md): a noncurrent object version (m) or a
// delete marker (marker), by key and internal version.
type verRec struct {
	key, version string
	m            *cairn.Manifest
	marker       *cairn.DeleteMarker
}

func newVersionTree() *btree.BTreeG[verRec] {
	return btree.NewG(16, func(a, b verRec) bool {
		if a.key != b.key {
			return a.key < b.key
		}
		return a.version < b.version
	})
}

func (r verRec) objectVersion() cairn.ObjectVersion {
	if r.marker != nil {
		return meta.MarkerVersionOf(r.key, *r.marker)
	}
	return meta.ManifestVersionOf(cloneManifest(r.m))
}

func (r verRec) versioned() bool {
	if r.marker != nil {
		return r.marker.Versioned
	}
	return r.m.Versioned
}

// firstVersionLocked returns the first record of key's versions.
func firstVersionLocked(b *bucket, key string) (verRec, bool) {
	var out verRec
	var ok bool
	b.versions.AscendGreaterOrEqual(verRec{key: key}, func(r verRec) bool {
		out, ok = r, r.key == key
		return false
	})
	return out, ok
}

// removeVersionLocked removes a record of the versions keyspace, with its
// null pointer; an object's files are queued and its counters go.
func (s *Store) removeVersionLocked(b *bucket, r verRec) {
	b.versions.Delete(r)
	if !r.versioned() {
		delete(b.nulls, r.key)
	}
	if r.m != nil {
		d := meta.NewDelta()
		d.Object(r.m, -1)
		d.AddTo(&s.usage)
		s.discardLocked(cairn.CleanupDelete, b.b.Name, r.key, r.m.Files())
	}
}

// removeNullLocked removes key's noncurrent null version, if any.
func (s *Store) removeNullLocked(b *bucket, key string) {
	if v, ok := b.nulls[key]; ok {
		if r, ok := b.versions.Get(verRec{key: key, version: v}); ok {
			s.removeVersionLocked(b, r)
		}
	}
}

// noncurrentLocked adds r to the versions keyspace.
func noncurrentLocked(b *bucket, r verRec) {
	b.versions.ReplaceOrInsert(r)
	if !r.versioned() {
		b.nulls[r.key] = r.version
	}
}

// replaceCurrentLocked makes m the current version of its key over cur
// (nil: none) as CommitManifest and CompleteUpload do, and counts m in
// (docs/design/versioning.md, "Writes").
func (s *Store) replaceCurrentLocked(b *bucket, m, cur *cairn.Manifest) {
	d := meta.NewDelta()
	d.Object(m, 1)
	if b.b.Versioning != "" && !m.Versioned {
		s.removeNullLocked(b, m.Key)
	}
	switch {
	case cur == nil:
	case keepsReplaced(b, m, cur):
		noncurrentLocked(b, verRec{key: cur.Key, version: cur.Version, m: cur})
	default:
		d.Object(cur, -1)
		s.discardLocked(cairn.CleanupOverwrite, m.Bucket, m.Key, cairn.Superseded(cur, m))
	}
	d.AddTo(&s.usage)
	b.objects.ReplaceOrInsert(cloneManifest(m))
}

// keepsReplaced reports whether the commit of m over the current version
// cur keeps cur as a noncurrent version (else cur is replaced for good).
func keepsReplaced(b *bucket, m, cur *cairn.Manifest) bool {
	return b.b.Versioning != "" && (cur.Versioned || m.Versioned) && cur.Version != m.Version
}

// checkReplaceLocked refuses (cairn.ErrLocked) a commit of m over cur
// (nil: none) that would remove a locked version for good: the key's
// noncurrent null version, or cur, replaced by a null version.
func (s *Store) checkReplaceLocked(b *bucket, m, cur *cairn.Manifest) error {
	if b.b.Versioning != "" && !m.Versioned {
		if err := s.checkNullLocked(b, m.Key); err != nil {
			return err
		}
	}
	if cur != nil && !keepsReplaced(b, m, cur) && cur.Version != m.Version {
		return cur.CheckDelete(s.now(), false)
	}
	return nil
}

// checkNullLocked refuses (cairn.ErrLocked) the removal of key's
// noncurrent null version if its Object Lock forbids it.
func (s *Store) checkNullLocked(b *bucket, key string) error {
	if v, ok := b.nulls[key]; ok {
		if r, ok := b.versions.Get(verRec{key: key, version: v}); ok && r.m != nil {
			return r.m.CheckDelete(s.now(), false)
		}
	}
	return nil
}

// SetBucketVersioning implements meta.Store.
func (s *Store) SetBucketVersioning(ctx context.Context, name, status string) error {
	if err := meta.CheckVersioning(status); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(name)
	if err != nil {
		return fmt.Errorf("set versioning of bucket %s: %w", name, err)
	}
	if err := meta.CheckVersioningChange(b.b, status); err != nil {
		return err
	}
	b.b.Versioning = status
	return nil
}

// versionLocked finds version id ("" latest, null, or internal) of key:
// the current object (cur) or a record of the versions keyspace.
func versionLocked(b *bucket, key, id string) (cur *cairn.Manifest, r verRec, ok bool) {
	c, hasCur := b.objects.Get(&cairn.Manifest{Key: key})
	switch {
	case id == "" && hasCur:
		return c, verRec{}, true
	case id == "":
		r, ok := firstVersionLocked(b, key)
		if ok && r.marker == nil {
			return nil, verRec{}, false // cannot be: an object that is latest is current
		}
		return nil, r, ok
	case hasCur && (c.Version == id || id == cairn.NullVersionID && !c.Versioned):
		return c, verRec{}, true
	case id == cairn.NullVersionID:
		v, ok := b.nulls[key]
		if !ok {
			return nil, verRec{}, false
		}
		id = v
	}
	r, ok = b.versions.Get(verRec{key: key, version: id})
	return nil, r, ok
}

// ObjectVersion implements meta.Store.
func (s *Store) ObjectVersion(ctx context.Context, bucketName, key, id string) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("version %q of %s/%s", id, bucketName, key)
	if err := meta.CheckVersionID(op, id, true); err != nil {
		return cairn.ObjectVersion{}, err
	}
	if err := s.lockLive(ctx); err != nil {
		return cairn.ObjectVersion{}, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
	}
	cur, r, ok := versionLocked(b, key, id)
	switch {
	case !ok:
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	case cur != nil:
		v := meta.ManifestVersionOf(cloneManifest(cur))
		v.Latest = true
		return v, nil
	}
	v := r.objectVersion()
	if _, hasCur := b.objects.Get(&cairn.Manifest{Key: key}); !hasCur {
		first, _ := firstVersionLocked(b, key)
		v.Latest = first.version == r.version
	}
	return v, nil
}

// PutDeleteMarker implements meta.Store.
func (s *Store) PutDeleteMarker(ctx context.Context, bucketName, key string, d cairn.DeleteMarker) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("delete marker for %s/%s", bucketName, key)
	if err := meta.CheckMarker(key, d); err != nil {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := s.lockLive(ctx); err != nil {
		return cairn.ObjectVersion{}, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
	}
	if b.b.Versioning == "" {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w: bucket was never versioned", op, cairn.ErrInvalid)
	}
	cur, hasCur := b.objects.Get(&cairn.Manifest{Key: key})
	if !d.Versioned {
		if err := s.checkNullLocked(b, key); err != nil {
			return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
		}
		if hasCur && !cur.Versioned {
			if err := cur.CheckDelete(s.now(), false); err != nil {
				return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
			}
		}
		s.removeNullLocked(b, key)
	}
	if hasCur {
		b.objects.Delete(cur)
		if cur.Versioned || d.Versioned {
			noncurrentLocked(b, verRec{key: key, version: cur.Version, m: cur})
		} else {
			dl := meta.NewDelta()
			dl.Object(cur, -1)
			dl.AddTo(&s.usage)
			s.discardLocked(cairn.CleanupDelete, bucketName, key, cur.Files())
		}
	}
	first := ""
	if r, ok := firstVersionLocked(b, key); ok {
		first = r.version
	}
	d.Version = meta.MarkerVersion(d.Version, first)
	noncurrentLocked(b, verRec{key: key, version: d.Version, marker: &d})
	v := meta.MarkerVersionOf(key, d)
	v.Latest = true
	return v, nil
}

// DeleteVersion implements meta.Store.
func (s *Store) DeleteVersion(ctx context.Context, bucketName, key, id string) (cairn.ObjectVersion, error) {
	return s.deleteVersion(ctx, bucketName, key, id, false)
}

// DeleteVersionBypass implements meta.Store.
func (s *Store) DeleteVersionBypass(ctx context.Context, bucketName, key, id string) (cairn.ObjectVersion, error) {
	return s.deleteVersion(ctx, bucketName, key, id, true)
}

// onVersion runs f with mu held on version id of key (versionLocked:
// the current object cur, or the record r), once the id (latest: ""
// allowed) and the bucket are checked and the version found; op names the
// call in errors.
func (s *Store) onVersion(ctx context.Context, op, bucketName, key, id string, latest bool,
	f func(b *bucket, cur *cairn.Manifest, r verRec) (cairn.ObjectVersion, error)) (cairn.ObjectVersion, error) {
	if err := meta.CheckVersionID(op, id, latest); err != nil {
		return cairn.ObjectVersion{}, err
	}
	if err := s.lockLive(ctx); err != nil {
		return cairn.ObjectVersion{}, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
	}
	cur, r, ok := versionLocked(b, key, id)
	if !ok {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return f(b, cur, r)
}

// deleteVersion is DeleteVersion, bypassing governance if bypass.
func (s *Store) deleteVersion(ctx context.Context, bucketName, key, id string, bypass bool) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("delete version %q of %s/%s", id, bucketName, key)
	return s.onVersion(ctx, op, bucketName, key, id, false, func(b *bucket, cur *cairn.Manifest, r verRec) (cairn.ObjectVersion, error) {
		if m := cmp.Or(cur, r.m); m != nil {
			if err := m.CheckDelete(s.now(), bypass); err != nil {
				return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
			}
		}
		return s.removeLocked(b, key, cur, r), nil
	})
}

// removeLocked removes version cur (the current object) or r of key for
// good, as DeleteVersion does, and returns it.
func (s *Store) removeLocked(b *bucket, key string, cur *cairn.Manifest, r verRec) cairn.ObjectVersion {
	var v cairn.ObjectVersion
	if cur != nil {
		b.objects.Delete(cur)
		d := meta.NewDelta()
		d.Object(cur, -1)
		d.AddTo(&s.usage)
		s.discardLocked(cairn.CleanupDelete, b.b.Name, key, cur.Files())
		v = meta.ManifestVersionOf(cur)
		v.Latest = true
	} else {
		_, hasCur := b.objects.Get(&cairn.Manifest{Key: key})
		first, _ := firstVersionLocked(b, key)
		v = r.objectVersion()
		v.Latest = !hasCur && first.version == r.version
		s.removeVersionLocked(b, r)
	}
	if v.Latest {
		promoteLocked(b, key)
	}
	return v
}

// promoteLocked makes the first version of key current if it is an
// object: what follows when the latest version goes.
func promoteLocked(b *bucket, key string) {
	if next, ok := firstVersionLocked(b, key); ok && next.m != nil {
		b.versions.Delete(next)
		if !next.m.Versioned {
			delete(b.nulls, key)
		}
		b.objects.ReplaceOrInsert(next.m)
	}
}

// ListVersions implements meta.Store.
func (s *Store) ListVersions(ctx context.Context, bucketName, prefix, keyMarker, afterVersion string, limit int) ([]cairn.ObjectVersion, bool, error) {
	if err := meta.CheckPageLimit("list versions of bucket "+bucketName, limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return nil, false, fmt.Errorf("list versions of %w", err)
	}
	curAtMarker := ""
	if c, ok := b.objects.Get(&cairn.Manifest{Key: keyMarker}); ok {
		curAtMarker = c.Version
	}
	from := max(prefix, keyMarker)
	// Each tree's versions after the position, up to limit+1, merged key
	// by key: a key's current object first, then its versions records.
	var (
		curs []cairn.ObjectVersion
		recs []cairn.ObjectVersion
	)
	b.objects.AscendGreaterOrEqual(&cairn.Manifest{Key: from}, func(m *cairn.Manifest) bool {
		if !strings.HasPrefix(m.Key, prefix) {
			return m.Key < prefix
		}
		if meta.VersionsAfter(m.Key, m.Version, true, keyMarker, afterVersion, curAtMarker) {
			v := meta.InfoVersion(m.Info())
			v.Latest = true
			curs = append(curs, v)
		}
		return len(curs) <= limit
	})
	b.versions.AscendGreaterOrEqual(verRec{key: from}, func(r verRec) bool {
		if !strings.HasPrefix(r.key, prefix) {
			return r.key < prefix
		}
		if meta.VersionsAfter(r.key, r.version, false, keyMarker, afterVersion, curAtMarker) {
			v := r.objectVersion()
			v.Manifest = nil
			if _, hasCur := b.objects.Get(&cairn.Manifest{Key: r.key}); !hasCur {
				first, _ := firstVersionLocked(b, r.key)
				v.Latest = first.version == r.version
			}
			recs = append(recs, v)
		}
		return len(recs) <= limit
	})
	var out []cairn.ObjectVersion
	for i, j := 0, 0; i < len(curs) || j < len(recs); {
		if len(out) == limit {
			return out, true, nil
		}
		if j == len(recs) || i < len(curs) && curs[i].Key <= recs[j].Key {
			out = append(out, curs[i])
			i++
		} else {
			out = append(out, recs[j])
			j++
		}
	}
	return out, false, nil
}

// ListVersionManifests implements meta.Store.
func (s *Store) ListVersionManifests(ctx context.Context, bucketName, afterKey, afterVersion string, limit int) ([]*cairn.Manifest, bool, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return nil, false, fmt.Errorf("list versions of %w", err)
	}
	pg := manifestPage{limit: limit}
	b.versions.AscendGreaterOrEqual(verRec{key: afterKey, version: afterVersion}, func(r verRec) bool {
		if r.key == afterKey && r.version <= afterVersion || r.m == nil {
			return true
		}
		return pg.add(r.m)
	})
	return pg.out, pg.more, nil
}
