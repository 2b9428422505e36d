package mem

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cairn"
	"cairn/meta"
)

func cloneUpload(u cairn.Upload) cairn.Upload {
	u.UserMeta = maps.Clone(u.UserMeta)
	return u
}

// CreateUpload implements meta.Store.
func (s *Store) CreateUpload(ctx context.Context, u cairn.Upload) error {
	if err := meta.CheckUpload(u); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, err := s.bucketLocked(u.Bucket); err != nil {
		return fmt.Errorf("create upload: %w", err)
	}
	k := u.Bucket + "/" + u.ID
	if _, ok := s.uploads[k]; ok {
		return fmt.Errorf("create upload %s: %w", k, cairn.ErrExists)
	}
	s.stamp++
	s.uploads[k] = &upload{u: cloneUpload(u), parts: map[int]cairn.Part{}, stamp: s.stamp}
	return nil
}

func (s *Store) uploadLocked(bucket, id string) (*upload, error) {
	up, ok := s.uploads[bucket+"/"+id]
	if !ok {
		return nil, fmt.Errorf("upload %s/%s: %w", bucket, id, cairn.ErrNotFound)
	}
	return up, nil
}

// Upload implements meta.Store.
func (s *Store) Upload(ctx context.Context, bucket, id string) (cairn.Upload, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.Upload{}, err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(bucket, id)
	if err != nil {
		return cairn.Upload{}, err
	}
	return cloneUpload(up.u), nil
}

// Uploads implements meta.Store.
func (s *Store) Uploads(ctx context.Context, bucket string) ([]cairn.Upload, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []cairn.Upload
	for _, up := range s.uploads {
		if bucket == "" || up.u.Bucket == bucket {
			out = append(out, cloneUpload(up.u))
		}
	}
	slices.SortFunc(out, meta.CompareUploads)
	return out, nil
}

// UploadPage implements meta.Store.
func (s *Store) UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error) {
	if err := meta.CheckPageLimit("uploads", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	var keys []string // meta.UploadPosition, as the map's keys are
	for k, up := range s.uploads {
		if k > after && (bucket == "" || up.u.Bucket == bucket) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	more := len(keys) > limit
	out := make([]cairn.Upload, 0, min(len(keys), limit))
	for _, k := range keys[:min(len(keys), limit)] {
		out = append(out, cloneUpload(s.uploads[k].u))
	}
	return out, more, nil
}

// UploadKeyPage implements meta.Store: it sorts the bucket's uploads
// (the etcd store reads its key-ordered index instead).
func (s *Store) UploadKeyPage(ctx context.Context, bucket, prefix, keyMarker, idMarker string, limit int) ([]cairn.Upload, bool, error) {
	if err := meta.CheckPageLimit("uploads by key", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	if _, err := s.bucketLocked(bucket); err != nil {
		return nil, false, fmt.Errorf("uploads by key: %w", err)
	}
	if keyMarker == "" {
		idMarker = "" // S3 ignores upload-id-marker without key-marker
	}
	var after *cairn.Upload // the position of upload idMarker
	if up, ok := s.uploads[bucket+"/"+idMarker]; ok && idMarker != "" && up.u.Key == keyMarker {
		after = &up.u
	}
	var out []cairn.Upload
	for _, up := range s.uploads {
		u := up.u
		switch {
		case u.Bucket != bucket || !strings.HasPrefix(u.Key, prefix):
			continue
		case after != nil && meta.CompareUploads(u, *after) <= 0,
			after == nil && idMarker != "" && u.Key < keyMarker,
			idMarker == "" && u.Key <= keyMarker:
			continue
		}
		out = append(out, meta.UploadSummary(u))
	}
	slices.SortFunc(out, meta.CompareUploads)
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// UpdateUploadEncryption implements meta.Store.
func (s *Store) UpdateUploadEncryption(ctx context.Context, bucket, id string, e, prev *cairn.Encryption) error {
	if err := meta.CheckUploadEncryption(e, prev); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(bucket, id)
	if err != nil {
		return fmt.Errorf("update encryption of %w", err)
	}
	cur, err1 := json.Marshal(up.u.Encryption)
	want, err2 := json.Marshal(prev)
	next, err3 := json.Marshal(e)
	if err1 == nil && err3 == nil && string(cur) == string(next) {
		return nil // this very update is stored: a retried update
	}
	if err1 != nil || err2 != nil || string(cur) != string(want) {
		return fmt.Errorf("update encryption of upload %s/%s: %w (the record changed)", bucket, id, cairn.ErrConflict)
	}
	ne := *e
	ne.SealedKey, ne.KeySalt, ne.KeyHMAC = slices.Clone(e.SealedKey), slices.Clone(e.KeySalt), slices.Clone(e.KeyHMAC)
	up.u.Encryption = &ne
	s.stamp++
	up.stamp = s.stamp
	return nil
}

// PutPart implements meta.Store.
func (s *Store) PutPart(ctx context.Context, bucket, id string, p cairn.Part) (*cairn.Part, error) {
	if err := meta.CheckPart(p); err != nil {
		return nil, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(bucket, id)
	if err != nil {
		return nil, fmt.Errorf("put part: %w", err)
	}
	d := meta.NewDelta()
	d.Parts([]cairn.Part{p}, 1)
	var prev *cairn.Part
	if old, ok := up.parts[p.Number]; ok {
		prev = &old
		d.Parts([]cairn.Part{old}, -1)
		s.discardLocked(cairn.CleanupPart, up.u.Bucket, up.u.Key, old.Files())
	}
	d.AddTo(&s.usage)
	up.parts[p.Number] = clonePart(p)
	s.stamp++
	up.stamp = s.stamp
	return prev, nil
}

func sortedParts(up *upload) []cairn.Part {
	out := make([]cairn.Part, 0, len(up.parts))
	for _, n := range slices.Sorted(maps.Keys(up.parts)) {
		out = append(out, clonePart(up.parts[n]))
	}
	return out
}

// Parts implements meta.Store.
func (s *Store) Parts(ctx context.Context, bucket, id string) ([]cairn.Part, int64, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(bucket, id)
	if err != nil {
		return nil, 0, err
	}
	return sortedParts(up), up.stamp, nil
}

// PartPage implements meta.Store.
func (s *Store) PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error) {
	if err := meta.CheckPageLimit("parts", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(bucket, id)
	if err != nil {
		return nil, false, err
	}
	var out []cairn.Part
	for _, n := range slices.Sorted(maps.Keys(up.parts)) {
		if n <= after {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, clonePart(up.parts[n]))
	}
	return out, false, nil
}

// DeleteUpload implements meta.Store.
func (s *Store) DeleteUpload(ctx context.Context, bucket, id string) ([]cairn.Part, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(bucket, id)
	if err != nil {
		return nil, fmt.Errorf("delete %w", err)
	}
	delete(s.uploads, bucket+"/"+id)
	parts := sortedParts(up)
	d := meta.NewDelta()
	d.Parts(parts, -1)
	d.AddTo(&s.usage)
	s.discardLocked(cairn.CleanupAbort, up.u.Bucket, up.u.Key, cairn.PartFiles(parts))
	return parts, nil
}

// CompleteUpload implements meta.Store.
func (s *Store) CompleteUpload(ctx context.Context, m *cairn.Manifest, prevVersion, id string, stamp int64) ([]cairn.Part, error) {
	if err := meta.CheckManifest(m); err != nil {
		return nil, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(m.Bucket, id)
	if err != nil {
		return nil, fmt.Errorf("complete %w", err)
	}
	if up.stamp != stamp {
		return nil, fmt.Errorf("complete upload %s/%s: %w (parts changed)", m.Bucket, id, cairn.ErrConflict)
	}
	b, err := s.bucketLocked(m.Bucket)
	if err != nil {
		return nil, fmt.Errorf("complete %s/%s: %w", m.Bucket, m.Key, err)
	}
	cur, ok := b.objects.Get(&cairn.Manifest{Key: m.Key})
	switch {
	case ok && cur.Version == m.Version:
	case ok && cur.Version != prevVersion, !ok && prevVersion != "":
		return nil, fmt.Errorf("complete %s/%s over version %q: %w", m.Bucket, m.Key, prevVersion, cairn.ErrConflict)
	}
	parts := sortedParts(up)
	if !ok {
		cur = nil
	}
	if err := s.checkReplaceLocked(b, m, cur); err != nil {
		return nil, fmt.Errorf("complete %s/%s: %w", m.Bucket, m.Key, err)
	}
	d := meta.NewDelta()
	d.Parts(parts, -1)
	d.AddTo(&s.usage)
	s.discardLocked(cairn.CleanupUnchosen, m.Bucket, m.Key, meta.Unchosen(parts, m))
	s.replaceCurrentLocked(b, m, cur)
	delete(s.uploads, m.Bucket+"/"+id)
	return parts, nil
}
