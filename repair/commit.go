package repair

// Commit: a rebuilt shard enters the manifest only if its size and CRC-32C
// are what the manifest recorded when the object was written, and only by
// a compare-and-swap on the manifest the round read. A task whose object
// was overwritten or deleted is dropped, and the files it rebuilt are
// queued for deletion (docs/design/cleanup.md), as UpdateManifest queues
// the files a repair supersedes.

import (
	"context"
	"errors"
	"fmt"

	"cairn"
	"cairn/node/wire"
	"cairn/repair/decide"
)

// commit checks infos[j], what was stored for shards[j] of st on
// targets[j], against m and moves those shards to their targets in the
// manifest, if m is still the current manifest. changed reports that it
// is not (changed or deleted meanwhile): the round must look again. A
// rebuilt shard that differs from the manifest's is cairn.ErrCorrupt, and
// the manifest is left alone.
func (r *Repairer) commit(ctx context.Context, t *cairn.RepairTask, m *cairn.Manifest, st decide.Stripe, shards []int, targets []cairn.DiskID, infos []wire.ShardInfo) (changed bool, err error) {
	for j, i := range shards {
		want := st.Shards[i]
		if infos[j].Size != want.Size || infos[j].CRC != want.CRC {
			return false, fmt.Errorf("%w: rebuilt shard %d of %s/%s is %d bytes, CRC %08x; the manifest says %d bytes, CRC %08x",
				cairn.ErrCorrupt, i, t.Bucket, t.Key, infos[j].Size, infos[j].CRC, want.Size, want.CRC)
		}
	}
	idents := make([]int, len(shards))
	for j := range shards {
		idents[j] = infos[j].Ident
	}
	next := decide.WithShards(m, t.Part, shards, targets, idents)
	switch {
	case m.IsOpenPart(): // a part of an upload in progress (OpenPart)
		err = r.store.UpdateUploadPart(ctx, m.Bucket, m.Upload, next.Parts[0], m.Parts[0])
	case t.Part > 0 && len(m.Parts) == 1: // a part alone (Repairer.manifest)
		err = r.store.UpdatePart(ctx, m.Bucket, m.Key, m.Version, next.Parts[0], m.Parts[0])
	default:
		err = r.store.UpdateManifest(ctx, next, m)
	}
	if err != nil {
		if errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// deleteTargets queues the rebuilt files of a dropped task for deletion
// (docs/design/cleanup.md; best effort: the orphan collector would find
// them otherwise).
func (r *Repairer) deleteTargets(ctx context.Context, t *cairn.RepairTask) {
	var files []cairn.ShardFile
	for j, i := range t.Lost {
		if j < len(t.Targets) && t.Targets[j] != "" {
			row, ok := t.SpareRows[i]
			if !ok {
				row = i
			}
			files = append(files, cairn.ShardFile{Disk: t.Targets[j], Name: cairn.ShardName(t.Stripe, row)})
		}
	}
	if len(files) == 0 {
		return
	}
	c := cairn.Cleanup{Reason: cairn.CleanupFailed, Bucket: t.Bucket, Key: t.Key, Files: files}
	if err := r.store.PutCleanup(context.WithoutCancel(ctx), c); err != nil {
		r.cfg.Logger.Warn("repair: queueing the files of a dropped task failed: they are garbage", "task", t.ID, "err", err)
	}
}
