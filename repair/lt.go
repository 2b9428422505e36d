package repair

// Repair of fountain-coded (lt) objects (docs/design/lt.md, "Repair").
// A coded stripe's blocks are not rebuilt in place: the repairer decodes
// the stripe from the blocks that survive (K of them almost always, a
// few more at times), encodes fresh blocks with IDs never handed out
// before, writes them onto disks within the stripe's per-disk and
// per-node bounds (decide.PlanCoded), and swaps them into the manifest for
// the lost ones. One stripe at a time, in three steps against the
// metadata store:
//
//  1. reserve: the stripe's Next (the first block ID not handed out) is
//     raised past the new blocks' IDs by a compare-and-swap, before any
//     block is written — so a block written by an attempt that then
//     failed, queued for deletion, never shares a name with a later one;
//  2. write: each new block is encoded and stored (its node checks the
//     CRC of the bytes it got; the repairer compares it with its own);
//  3. commit: the blocks replaced leave the manifest and the new ones
//     enter it, by a compare-and-swap on the manifest reserve left. An
//     object overwritten or deleted meanwhile makes either swap fail: the
//     new blocks are queued for deletion and nothing is resurrected.
//
// Memory: one stripe per running task. While decoding, the decoder
// holds the blocks it was given (K·block size, plus the few beyond K it
// may need) and codedReads more are being read, and the decoded source
// takes K blocks; the decoder and its blocks are dropped before the
// encoder is made, which holds the L = K+S+H intermediate symbols (a few
// % over K) besides the source, plus one encoded block being written. So
// about 2·K·block size + 9 blocks at any time (≈ 130 MiB for the largest
// stripe, 64 MiB of data, the client's bound), times Config.Parallel
// tasks; BenchmarkLTRepair allocates 4.5–6.4× the stripe's data per
// repair in all (garbage the collector reclaims between the phases).

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/codec"
	"cairn/node/wire"
	"cairn/repair/decide"
)

// ErrUnrecoverable: the blocks of a coded stripe that are left — on
// every disk that is not out, whether or not it answers now — do not
// determine its source blocks. The error wraps cairn.ErrCorrupt too
// (permanent: the task waits Config.MaxBackoff between attempts, in case
// an operator brings a disk back).
var ErrUnrecoverable = errors.New("repair: too few blocks left to decode the stripe")

// codedReads is how many blocks of a stripe a repair reads at once.
const codedReads = 8

// shardGetter is an Executor that reads shard files (*node.Client): an lt
// repair reads the blocks that survive.
type shardGetter interface {
	// GetShard streams n bytes from offset off of a shard file, verified
	// against its block checksums (client.Shards.GetShard).
	GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error)
}

// rateless is what an lt repair needs of a code.
type rateless interface {
	codec.Code
	codec.Rateless
}

// scanCoded is Scan for the coded layout l of part (0: the object) of m,
// whose task would be id: it records damage found in its blocks in the
// queued task, deletes the task if nothing is left to replace, or queues
// one if a stripe has blocks to replace. It returns how many tasks it
// added.
func (r *Repairer) scanCoded(ctx context.Context, m *cairn.Manifest, part int, l *cairn.Layout, id string, have map[string]cairn.RepairTask,
	ds *damageSet, view *decide.View, now time.Time) (int, error) {
	bad := ds.matchCoded(l, id)
	code, _ := r.code(m.LayoutCode()) // an unknown policy: risk 0, and the task's run says why
	n := 0
	if code != nil {
		n = code.Params().N()
	}
	if t, ok := have[id]; ok {
		added := 0
		for _, f := range bad {
			if !slices.Contains(t.BadBlocks, f) {
				t.BadBlocks = append(t.BadBlocks, f)
				added++
			}
		}
		if added > 0 {
			if err := r.store.PutRepairTask(ctx, t); err != nil {
				return 0, err
			}
			have[id] = t
			r.countDamageQueued(added)
		}
		if len(decide.CodedWork(l, n, view, t.BadBlocks)) == 0 {
			if err := r.store.DeleteRepairTask(ctx, id); err != nil && !errors.Is(err, cairn.ErrNotFound) {
				return 0, err
			}
			delete(have, id)
		}
		return 0, nil
	}
	t, ok := decide.CodedTask(m, part, l, code, view, now, bad)
	if !ok {
		return 0, nil
	}
	if err := r.store.PutRepairTask(ctx, t); err != nil {
		return 0, err
	}
	have[id] = t
	r.countDamageQueued(len(bad))
	return 1, nil
}

// matchCoded returns the block files of l with a damage record, and notes
// that they matched task id. (A block is never rewritten in place: once
// replaced, its file is named by no manifest, and settleDamage drops the
// record as healed.)
func (ds *damageSet) matchCoded(l *cairn.Layout, id string) []cairn.ShardFile {
	if len(ds.recs) == 0 {
		return nil
	}
	var bad []cairn.ShardFile
	for _, cs := range l.Coded {
		for _, b := range cs.Blocks {
			f := cairn.ShardFile{Disk: b.Disk, Name: cairn.ShardName(cs.Version, b.ID)}
			if _, ok := ds.recs[f]; ok {
				bad = append(bad, f)
				ds.matched[f] = id
			}
		}
	}
	return bad
}

// runCoded repairs the coded stripes of t's object (or part), one after
// the other, each re-planned against a fresh read of the manifest and the
// cluster map. It ends when no stripe has blocks to replace.
func (r *Repairer) runCoded(ctx context.Context, t *cairn.RepairTask, now time.Time) (result, error) {
	res := result{coded: true}
	for replans := 0; replans < 8; {
		m, err := r.manifest(ctx, t)
		if errors.Is(err, cairn.ErrNotFound) || err == nil && m.Version != t.Version {
			res.dropped = true // overwritten, deleted, or the upload ended
			return res, nil
		}
		if err != nil {
			return res, err
		}
		l := decide.CodedLayout(m, t.Part)
		if l == nil || t.Upload != "" && m.Parts[0].Version != t.Stripe {
			res.dropped = true // the part is gone, or was uploaded again
			return res, nil
		}
		code, err := r.code(m.LayoutCode())
		if err != nil {
			return res, fmt.Errorf("policy of %s/%s: %w", m.Bucket, m.Key, err)
		}
		rc, ok := code.(rateless)
		if !ok {
			return res, fmt.Errorf("%w: %s/%s has coded stripes, but its policy %s is not a fountain code", cairn.ErrCorrupt, m.Bucket, m.Key, m.Policy)
		}
		if err := validStored(m, t.Part, code); err != nil {
			return res, err
		}
		view, err := r.view(ctx, now)
		if err != nil {
			return res, err
		}
		work := decide.CodedWork(l, code.Params().N(), view, t.BadBlocks)
		if len(work) == 0 {
			return res, nil
		}
		again, err := r.repairCoded(ctx, t, m, work[0], rc, view, now, &res)
		if err != nil {
			return res, err
		}
		if again {
			replans++
		}
	}
	return res, fmt.Errorf("repair of %s/%s part %d: gave up after repeated re-plans", t.Bucket, t.Key, t.Part)
}

// repairCoded runs one round on coded stripe s of m's layout for task t:
// plan, decode, reserve, write, commit. again reports that the round
// stopped for a reason another round routes around (the manifest changed,
// a helper or a target was bad): the caller re-reads and re-plans. It adds
// what it stored to res.
func (r *Repairer) repairCoded(ctx context.Context, t *cairn.RepairTask, m *cairn.Manifest, s int, code rateless, view *decide.View,
	now time.Time, res *result) (again bool, err error) {
	l := decide.CodedLayout(m, t.Part)
	cs := &l.Coded[s]
	k, n := code.SourceBlocks(), code.Params().N()
	bs := cmp.Or(cs.BlockSize, l.BlockSize)
	pl, err := decide.PlanCoded(cs, k, n, view, t.BadBlocks)
	if err != nil {
		return false, err
	}
	if len(pl.New) == 0 && pl.Short > 0 {
		return false, fmt.Errorf("stripe %s of %s/%s is %d blocks short; %w within its bounds (%d a disk, %d a node)",
			cs.Version, t.Bucket, t.Key, pl.Short, decide.ErrNoTarget, pl.Bounds.PerDisk, pl.Bounds.PerNode)
	}
	source, failed, err := r.decodeCoded(ctx, code, cs, pl.Helpers, bs, view, t)
	if len(failed) > 0 {
		res.marked += len(failed)
		t.BadBlocks = append(t.BadBlocks, failed...)
		if perr := r.store.PutRepairTask(ctx, *t); perr != nil {
			return false, perr
		}
		r.cfg.Logger.Warn("repair: blocks of a coded stripe are bad; replacing them too", "task", t.ID, "bucket", t.Bucket, "key", t.Key,
			"stripe", cs.Version, "blocks", failed)
		if err == nil {
			return true, nil // decoded anyway; the next round plans without them
		}
	}
	if err != nil {
		return false, err
	}
	if len(pl.New) == 0 && len(pl.Drop) > 0 {
		// Nothing to write, only gone blocks to drop (a stripe with
		// more than n blocks): commit the drop alone.
		next := decide.WithCoded(l, s, pl.Keep, nil, cs.FreshID(n))
		changed, _, err := r.updateLayout(ctx, m, t.Part, next)
		return changed, err
	}

	// 1. Reserve the new blocks' IDs.
	nextID := pl.Next(cs, n)
	reserved := decide.WithCoded(l, s, seq(len(cs.Blocks)), nil, nextID)
	changed, m, err := r.updateLayout(ctx, m, t.Part, reserved)
	if changed || err != nil {
		return changed, err
	}

	// 2. Write them.
	enc, err := code.NewEncoder(source)
	if err != nil {
		return false, err
	}
	var written []cairn.BlockLoc
	dropWritten := func() {
		r.discardBlocks(ctx, t, cs.Version, written)
	}
	buf := make([]byte, bs)
	for _, b := range pl.New {
		if err := enc.EncodeBlocks([]int{b.ID}, [][]byte{buf}); err != nil {
			dropWritten()
			return false, err
		}
		info, err := r.putBlock(ctx, m, t.Part, cs.Version, b, buf)
		if err != nil {
			written = append(written, b) // its node may have stored it
			dropWritten()
			var ne *wire.Error
			if ctx.Err() == nil && errors.As(err, &ne) && ne.Disk == b.Disk &&
				(errors.Is(ne, cairn.ErrNotFound) || errors.Is(ne, cairn.ErrNoSpace) || !cairn.IsPermanent(ne)) {
				r.cfg.Logger.Warn("repair: target failed; re-planning onto another disk", "task", t.ID, "bucket", t.Bucket, "key", t.Key,
					"disk", b.Disk, "avoid", r.cfg.AvoidTarget, "err", err)
				r.avoidTarget(b.Disk, now)
				res.avoided++
				return true, nil
			}
			return false, err
		}
		if crc := crc32.Checksum(buf, castagnoli); info.Size != int64(bs) || info.CRC != crc {
			written = append(written, b)
			dropWritten()
			return false, fmt.Errorf("%w: new block %d of stripe %s on %s is %d bytes, CRC %08x; %d bytes, CRC %08x were sent",
				cairn.ErrCorrupt, b.ID, cs.Version, b.Disk, info.Size, info.CRC, bs, crc)
		}
		b.CRC, b.Ident = info.CRC, info.Ident
		written = append(written, b)
	}

	// 3. Commit.
	l = decide.CodedLayout(m, t.Part)
	changed, _, err = r.updateLayout(ctx, m, t.Part, decide.WithCoded(l, s, pl.Keep, written, nextID))
	if changed {
		dropWritten()
		return true, nil
	}
	if err != nil {
		// The outcome may be unknown: the blocks stay (named, or orphans
		// for the collector).
		return false, err
	}
	res.shards += len(written)
	res.bytes += int64(len(written)) * int64(bs)
	r.cfg.Logger.Info("repair: coded stripe repaired", "task", t.ID, "bucket", t.Bucket, "key", t.Key, "part", t.Part,
		"stripe", cs.Version, "dropped", len(pl.Drop), "new", len(written))
	if pl.Short > 0 {
		return false, fmt.Errorf("stripe %s of %s/%s: wrote %d new blocks, %d short; %w within its bounds (%d a disk, %d a node)",
			cs.Version, t.Bucket, t.Key, len(written), pl.Short, decide.ErrNoTarget, pl.Bounds.PerDisk, pl.Bounds.PerNode)
	}
	return false, nil
}

// seq returns 0..n−1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// decodeCoded reads the blocks helpers (indices into cs.Blocks, in the
// order to read them) of bs bytes, codedReads at a time, checking each
// against its manifest CRC, until they decode, and returns the K source
// blocks. failed are the block files found missing or corrupt. When what
// was read does not decode, the error says why: ErrUnrecoverable (with
// cairn.ErrCorrupt) if the blocks not known bad — on any disk that is not
// out — could not decode it either, else cairn.ErrUnavailable (blocks
// may come back).
func (r *Repairer) decodeCoded(ctx context.Context, code rateless, cs *cairn.CodedStripe, helpers []int, bs int, view *decide.View,
	t *cairn.RepairTask) (source [][]byte, failed []cairn.ShardFile, err error) {
	getter, ok := r.exec.(shardGetter)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the repair executor cannot read blocks (GetShard)", cairn.ErrInvalid)
	}
	dec, err := code.NewDecoder(bs)
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // guards dec, failed, lastErr
	var lastErr error
	var g errgroup.Group // not WithContext: a block that fails is an erasure
	g.SetLimit(codedReads)
	for _, i := range helpers {
		mu.Lock()
		done := dec.Done()
		mu.Unlock()
		if done || rctx.Err() != nil {
			break
		}
		b := cs.Blocks[i]
		g.Go(func() error {
			buf, err := readBlock(rctx, getter, b.Disk, cairn.ShardName(cs.Version, b.ID), bs)
			if err == nil && crc32.Checksum(buf, castagnoli) != b.CRC {
				err = fmt.Errorf("%w: block %d of stripe %s on %s has the wrong CRC", cairn.ErrCorrupt, b.ID, cs.Version, b.Disk)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				if done, _ := dec.Add(b.ID, buf); done {
					cancel()
				}
			case errors.Is(err, cairn.ErrCorrupt) || errors.Is(err, cairn.ErrNotFound):
				// Bad even if the stripe decoded meanwhile.
				failed = append(failed, cairn.ShardFile{Disk: b.Disk, Name: cairn.ShardName(cs.Version, b.ID)})
				lastErr = err
			case rctx.Err() != nil:
			default:
				lastErr = err
			}
			return nil
		})
	}
	_ = g.Wait()
	if ctx.Err() != nil {
		return nil, failed, ctx.Err()
	}
	if !dec.Done() {
		return nil, failed, undecodable(code, cs, view, append(slices.Clone(t.BadBlocks), failed...), t, lastErr)
	}
	source = make([][]byte, code.SourceBlocks())
	if err := dec.Source(source); err != nil {
		return nil, failed, err
	}
	return source, failed, nil
}

// undecodable is the error of a stripe whose blocks read did not decode
// (decodeCoded).
func undecodable(code rateless, cs *cairn.CodedStripe, view *decide.View, bad []cairn.ShardFile, t *cairn.RepairTask, last error) error {
	var maybe []int // blocks not known bad, on disks not out
	for _, b := range cs.Blocks {
		d, known := view.Disks[b.Disk]
		if known && d.State != cairn.DiskOut && !slices.Contains(bad, cairn.ShardFile{Disk: b.Disk, Name: cairn.ShardName(cs.Version, b.ID)}) {
			maybe = append(maybe, b.ID)
		}
	}
	if !code.Decodable(maybe) {
		return fmt.Errorf("%w: %w: stripe %s of %s/%s part %d: %d of its %d blocks are left, which do not determine its %d source blocks",
			ErrUnrecoverable, cairn.ErrCorrupt, cs.Version, t.Bucket, t.Key, t.Part, len(maybe), len(cs.Blocks), code.SourceBlocks())
	}
	err := fmt.Errorf("%w: stripe %s of %s/%s part %d: the blocks that could be read do not decode; with those on disks that may come back (%d in all) it would",
		cairn.ErrUnavailable, cs.Version, t.Bucket, t.Key, t.Part, len(maybe))
	if last != nil {
		err = fmt.Errorf("%w (last error: %w)", err, last)
	}
	return err
}

// readBlock reads the bs bytes of a block file.
func readBlock(ctx context.Context, g shardGetter, disk cairn.DiskID, name string, bs int) ([]byte, error) {
	rc, err := g.GetShard(ctx, disk, name, 0, int64(bs))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, bs)
	if _, err := io.ReadFull(rc, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: block %s on %s is shorter than %d bytes", cairn.ErrCorrupt, name, disk, bs)
		}
		return nil, err
	}
	return buf, nil
}

// putBlock stores new block b of stripe version of part (0: the object)
// of m, its file recording its identity when the executor can.
func (r *Repairer) putBlock(ctx context.Context, m *cairn.Manifest, part int, version string, b cairn.BlockLoc, data []byte) (wire.ShardInfo, error) {
	name := cairn.ShardName(version, b.ID)
	if ip, ok := r.exec.(identifiedPutter); ok {
		if id, err := m.IdentityOf(part, b.ID); err == nil {
			id.Object, id.Version = id.Version, version
			if enc, err := id.Encode(); err == nil {
				return ip.PutShardIdentified(ctx, b.Disk, name, enc, bytes.NewReader(data))
			}
		}
	}
	return r.exec.PutShard(ctx, b.Disk, name, bytes.NewReader(data))
}

// discardBlocks queues blocks of stripe version, written by a round that
// did not commit them, for deletion.
func (r *Repairer) discardBlocks(ctx context.Context, t *cairn.RepairTask, version string, blocks []cairn.BlockLoc) {
	if len(blocks) == 0 {
		return
	}
	files := make([]cairn.ShardFile, len(blocks))
	for i, b := range blocks {
		files[i] = cairn.ShardFile{Disk: b.Disk, Name: cairn.ShardName(version, b.ID)}
	}
	c := cairn.Cleanup{Reason: cairn.CleanupFailed, Bucket: t.Bucket, Key: t.Key, Files: files}
	if err := r.store.PutCleanup(context.WithoutCancel(ctx), c); err != nil {
		r.cfg.Logger.Warn("repair: queueing the blocks of a failed round failed: they are garbage", "task", t.ID, "err", err)
	}
}

// updateLayout replaces the layout of part (0: the object) of m with l by
// a compare-and-swap on m (a part alone, as Repairer.manifest reads it,
// through Store.UpdatePart; a part of an upload in progress through
// Store.UpdateUploadPart). changed reports that m is not current any
// more (changed or deleted): nothing was written. It returns the manifest
// stored.
func (r *Repairer) updateLayout(ctx context.Context, m *cairn.Manifest, part int, l cairn.Layout) (changed bool, next *cairn.Manifest, err error) {
	nm := *m
	if part == 0 {
		nm.Layout = l
	} else {
		nm.Parts = slices.Clone(m.Parts)
		for i := range nm.Parts {
			if nm.Parts[i].Number == part {
				nm.Parts[i].Layout = l
			}
		}
	}
	switch {
	case m.IsOpenPart(): // a part of an upload in progress (OpenPart)
		err = r.store.UpdateUploadPart(ctx, m.Bucket, m.Upload, nm.Parts[0], m.Parts[0])
	case part > 0 && len(m.Parts) == 1:
		err = r.store.UpdatePart(ctx, m.Bucket, m.Key, m.Version, nm.Parts[0], m.Parts[0])
	default:
		err = r.store.UpdateManifest(ctx, &nm, m)
	}
	if errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return false, &nm, nil
}
