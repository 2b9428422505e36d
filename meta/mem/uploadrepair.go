package mem

import (
	"context"
	"fmt"

	"cairn"
	"cairn/meta"
)

// UpdateUploadPart implements meta.Store.
func (s *Store) UpdateUploadPart(ctx context.Context, bucket, id string, p, prev cairn.Part) error {
	op := fmt.Sprintf("update part %d of upload %s/%s", p.Number, bucket, id)
	if err := meta.CheckPartUpdate(op, p, prev); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	up, err := s.uploadLocked(bucket, id)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	cur, ok := up.parts[p.Number]
	if !ok {
		return fmt.Errorf("%s: %w (no such part)", op, cairn.ErrNotFound)
	}
	if stored, err := meta.SwapPart(op, cur, p, prev); stored || err != nil {
		return err // stored: this very update, retried
	}
	d := meta.NewDelta()
	d.Parts([]cairn.Part{p}, 1)
	d.Parts([]cairn.Part{cur}, -1)
	d.AddTo(&s.usage)
	s.discardLocked(cairn.CleanupRepair, up.u.Bucket, up.u.Key, meta.PartSuperseded(cur, p))
	up.parts[p.Number] = clonePart(p)
	s.stamp++
	up.stamp = s.stamp
	return nil
}
