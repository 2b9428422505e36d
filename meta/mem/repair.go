package mem

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"cairn"
	"cairn/meta"
)

// UpdateManifest implements meta.Store. The stored manifest must equal
// prev field for field (compared as JSON, as the etcd store compares its
// records).
func (s *Store) UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error {
	if err := meta.CheckUpdate(m, prev); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(m.Bucket)
	if err != nil {
		return fmt.Errorf("update %s/%s: %w", m.Bucket, m.Key, err)
	}
	cur, store, ok := manifestAtLocked(b, m.Key, m.Version)
	if !ok {
		return fmt.Errorf("update %s/%s: %w", m.Bucket, m.Key, cairn.ErrNotFound)
	}
	a, err1 := json.Marshal(cur)
	p, err2 := json.Marshal(prev)
	n, err3 := json.Marshal(m)
	if err1 == nil && err3 == nil && string(a) == string(n) {
		return nil // this very update is stored: a retried update
	}
	if err1 != nil || err2 != nil || string(a) != string(p) {
		return fmt.Errorf("update %s/%s: %w (the manifest changed: version %s)", m.Bucket, m.Key, cairn.ErrConflict, cur.Version)
	}
	d := meta.NewDelta()
	d.Object(m, 1)
	d.Object(cur, -1)
	d.AddTo(&s.usage)
	s.discardLocked(cairn.CleanupRepair, m.Bucket, m.Key, cairn.Superseded(cur, m))
	store(cloneManifest(m))
	return nil
}

// manifestAtLocked finds the object version of key whose version is
// version: the current one, else a noncurrent one; or, if neither, the
// current one (whose version differs). store puts a new manifest of that
// version where it was found.
func manifestAtLocked(b *bucket, key, version string) (cur *cairn.Manifest, store func(*cairn.Manifest), ok bool) {
	cur, ok = b.objects.Get(&cairn.Manifest{Key: key})
	if !ok || cur.Version != version {
		if r, found := b.versions.Get(verRec{key: key, version: version}); found && r.m != nil {
			return r.m, func(m *cairn.Manifest) { r.m = m; b.versions.ReplaceOrInsert(r) }, true
		}
	}
	return cur, func(m *cairn.Manifest) { b.objects.ReplaceOrInsert(m) }, ok
}

// PutRepairTask implements meta.Store.
func (s *Store) PutRepairTask(ctx context.Context, t cairn.RepairTask) error {
	if err := meta.CheckRepairTask(t); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.repairs[t.ID] = cloneTask(t)
	return nil
}

// RepairTaskPage implements meta.Store.
func (s *Store) RepairTaskPage(ctx context.Context, after string, limit int) ([]cairn.RepairTask, bool, error) {
	if err := meta.CheckPageLimit("repair tasks", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.repairs))
	for id := range s.repairs {
		if id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	more := len(ids) > limit
	ids = ids[:min(len(ids), limit)]
	out := make([]cairn.RepairTask, len(ids))
	for i, id := range ids {
		out[i] = cloneTask(s.repairs[id])
	}
	return out, more, nil
}

// DeleteRepairTask implements meta.Store.
func (s *Store) DeleteRepairTask(ctx context.Context, id string) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.repairs[id]; !ok {
		return fmt.Errorf("repair task %s: %w", id, cairn.ErrNotFound)
	}
	delete(s.repairs, id)
	return nil
}

func cloneTask(t cairn.RepairTask) cairn.RepairTask {
	t.Lost = slices.Clone(t.Lost)
	t.Targets = slices.Clone(t.Targets)
	t.Bad = slices.Clone(t.Bad)
	t.InPlace = slices.Clone(t.InPlace)
	return t
}

// PutRepairProgress implements meta.Store.
func (s *Store) PutRepairProgress(ctx context.Context, p cairn.RepairProgress) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.progress = &p
	return nil
}

// RepairProgress implements meta.Store.
func (s *Store) RepairProgress(ctx context.Context) (cairn.RepairProgress, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.RepairProgress{}, err
	}
	defer s.mu.Unlock()
	if s.progress == nil {
		return cairn.RepairProgress{}, fmt.Errorf("repair progress: %w", cairn.ErrNotFound)
	}
	return *s.progress, nil
}

// ManifestPart implements meta.Store.
func (s *Store) ManifestPart(ctx context.Context, bucketName, key string, n int) (*cairn.Manifest, error) {
	m, err := s.Manifest(ctx, bucketName, key)
	if err != nil {
		return nil, err
	}
	return meta.OnlyPart(fmt.Sprintf("part %d of object %s/%s", n, bucketName, key), m, n)
}

// UpdatePart implements meta.Store. The stored part must equal prev
// field for field (compared as JSON, as the etcd store compares its
// records).
func (s *Store) UpdatePart(ctx context.Context, bucketName, key, version string, p, prev cairn.Part) error {
	op := fmt.Sprintf("update part %d of %s/%s", p.Number, bucketName, key)
	if err := meta.CheckPartUpdate(op, p, prev); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	b, err := s.bucketLocked(bucketName)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	cur, store, ok := manifestAtLocked(b, key, version)
	if !ok {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	if cur.Version != version {
		return fmt.Errorf("%s: %w (version %s is current, not %s)", op, cairn.ErrConflict, cur.Version, version)
	}
	i := slices.IndexFunc(cur.Parts, func(q cairn.Part) bool { return q.Number == p.Number })
	if i < 0 {
		return fmt.Errorf("%s: %w (no such part)", op, cairn.ErrNotFound)
	}
	if stored, err := meta.SwapPart(op, cur.Parts[i], p, prev); stored || err != nil {
		return err // stored: this very update, retried
	}
	d := meta.NewDelta()
	d.Parts([]cairn.Part{p}, 1)
	d.Parts([]cairn.Part{cur.Parts[i]}, -1)
	d.AddTo(&s.usage)
	s.discardLocked(cairn.CleanupRepair, bucketName, key, cairn.Superseded(cur.PartManifest(cur.Parts[i]), cur.PartManifest(p)))
	next := cloneManifest(cur)
	next.Parts[i] = clonePart(p)
	store(next)
	return nil
}

// RepairQueuePage implements meta.Store.
func (s *Store) RepairQueuePage(ctx context.Context, after *cairn.RepairTask, limit int) ([]cairn.RepairTask, bool, error) {
	if err := meta.CheckPageLimit("repair queue", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	var out []cairn.RepairTask
	for _, t := range s.repairs {
		if after == nil || meta.CompareRepairTasks(t, *after) > 0 {
			out = append(out, cloneTask(t))
		}
	}
	meta.SortRepairTasks(out)
	more := len(out) > limit
	return out[:min(len(out), limit)], more, nil
}
