package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"cairn"
	"cairn/raidp"
)

// Compaction of a raidp group (docs/design/raidp.md, "Compaction" in "In
// the cluster"): the live objects of mostly dead superchunks are moved
// out, and superchunks left with dead bytes only are zeroed and handed out
// again from their start.

// DefaultRAIDPCompactDead is the default threshold of compaction: a
// superchunk is emptied once at least this share of its size is dead, so
// moving at most the other half reclaims a whole superchunk.
const DefaultRAIDPCompactDead = 0.5

// raidpWalker walks and updates every object version's manifest
// (meta.Store has it): what compaction needs beyond Meta.
type raidpWalker interface {
	BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error)
	ListManifests(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]*cairn.Manifest, bool, error)
	ListVersionManifests(ctx context.Context, bucket, afterKey, afterVersion string, limit int) ([]*cairn.Manifest, bool, error)
	UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error
}

// RAIDPCompacted is what one CompactRAIDP run did.
type RAIDPCompacted struct {
	Candidates []int // superchunks emptied, most dead first
	Reclaimed  []int // superchunks zeroed and handed out again
	Moved      int   // object versions whose spans in a candidate were moved
	MovedBytes int64 // the bytes moved
	Lost       int   // moves whose manifest changed meanwhile (an overwrite or delete won; the copy is dead)
}

// raidpCandidates returns the superchunks of g to empty, most dead first:
// those whose dead bytes are at least minDead of the superchunk size, or
// all of its bytes handed out, except diverted ones. A pure function of
// the group and the allocation record.
func raidpCandidates(g raidp.Group, a RAIDPAlloc, minDead float64) []int {
	var out []int
	for _, s := range g.Layout.Superchunks {
		end, dead := a.End[s.ID], a.Dead[s.ID]
		if end == 0 || slices.Contains(a.diverted(g.Generation), s.ID) {
			continue
		}
		if dead >= end || float64(dead) >= minDead*float64(g.Size) {
			out = append(out, s.ID)
		}
	}
	slices.SortStableFunc(out, func(x, y int) int { return cmp.Compare(a.Dead[y], a.Dead[x]) })
	return out
}

// CompactRAIDP compacts the group: it takes up to limit superchunks whose
// dead share is at least minDead (raidpCandidates), keeps PUTs out of them
// (RAIDPAlloc.Compacting), and moves every object version with a span in
// one of them — the span written anew into other superchunks, then the
// manifest swapped by compare-and-swap (UpdateManifest); a racing
// overwrite or delete wins, and the copy's bytes become dead. The old
// spans are freed as a delete frees them. A candidate whose bytes are then
// all dead is reclaimed: zeroed on both replicas (its high-water marks
// back to 0, so appends there skip the old-data read again), its queued
// dead ranges dropped, its epoch advanced, and its space handed out again
// from 0. A candidate that keeps live bytes (a PUT into it still under
// way, a reservation whose gateway died) is left for a later run.
//
// The director runs it in the same duty as the zeroer. Errors: those of
// the metadata store and the nodes; cairn.ErrInvalid if the client's
// metadata store cannot walk manifests.
func (c *Client) CompactRAIDP(ctx context.Context, minDead float64, limit int) (RAIDPCompacted, error) {
	var st RAIDPCompacted
	rm, rd, err := c.raidp()
	if err != nil {
		return st, nil // no group to compact
	}
	walker, ok := c.direct.(raidpWalker)
	if !ok {
		return st, fmt.Errorf("%w: this client's metadata store cannot walk manifests (raidp compaction)", cairn.ErrInvalid)
	}
	g, err := c.storedGroup(ctx, rm)
	if errors.Is(err, cairn.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	a, err := c.readAlloc(ctx, rm, g.Name)
	if err != nil {
		return st, err
	}
	cands := raidpCandidates(g, a, minDead)
	cands = cands[:min(len(cands), limit)]
	if len(cands) == 0 {
		if len(a.Compacting) > 0 { // left closed by a run that died
			return st, c.setCompacting(ctx, rm, g.Name, nil, true)
		}
		return st, nil
	}
	st.Candidates = cands
	// The run's candidates replace the compacting set: superchunks left
	// closed by a run that died are reopened (harmless beside a run still
	// going: its reclaim zeroes only below the end it saw, and refuses to
	// reopen a superchunk that took new bytes).
	if err := c.setCompacting(ctx, rm, g.Name, cands, true); err != nil {
		return st, err
	}
	defer func() {
		left := slices.DeleteFunc(slices.Clone(cands), func(s int) bool { return slices.Contains(st.Reclaimed, s) })
		if len(left) > 0 {
			if err := c.setCompacting(context.WithoutCancel(ctx), rm, g.Name, left, false); err != nil {
				c.cfg.Logger.Warn("RAIDP superchunks stay closed to PUTs after a compaction", "group", g.Name, "superchunks", left, "err", err)
			}
		}
	}()
	in := map[int]bool{}
	for _, s := range cands {
		in[s] = true
	}
	err = walkManifests(ctx, walker, func(m *cairn.Manifest) error {
		if m.RAIDP == nil || m.RAIDP.Group != g.Name || !slices.ContainsFunc(m.RAIDP.Spans, func(sp cairn.RAIDPSpan) bool { return in[sp.Superchunk] }) {
			return nil
		}
		if err := c.moveSpans(ctx, rm, rd, walker, g, in, m, &st); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// Its candidate keeps live bytes, and is left for a later run.
			c.cfg.Logger.Warn("RAIDP compaction could not move an object", "bucket", m.Bucket, "key", m.Key, "version", m.Version, "err", err)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if a, err = c.readAlloc(ctx, rm, g.Name); err != nil {
		return st, err
	}
	for _, s := range cands {
		if a.Dead[s] < a.End[s] {
			continue // live bytes left
		}
		switch err := c.reclaim(ctx, rm, rd, g, s, a.End[s]); {
		case err == nil:
			st.Reclaimed = append(st.Reclaimed, s)
		case errors.Is(err, errNotNow):
		default:
			return st, err
		}
	}
	return st, nil
}

// walkManifests calls f with every object version's manifest: the current
// ones of each bucket, then its noncurrent ones, page by page.
func walkManifests(ctx context.Context, w raidpWalker, f func(*cairn.Manifest) error) error {
	after := ""
	for {
		bs, more, err := w.BucketPage(ctx, after, 100)
		if err != nil {
			return err
		}
		for _, b := range bs {
			after = b.Name
			for key := ""; ; {
				ms, more, err := w.ListManifests(ctx, b.Name, "", key, 1000)
				if err != nil {
					return err
				}
				for _, m := range ms {
					key = m.Key
					if err := f(m); err != nil {
						return err
					}
				}
				if !more || len(ms) == 0 {
					break
				}
			}
			for key, ver := "", ""; ; {
				ms, more, err := w.ListVersionManifests(ctx, b.Name, key, ver, 1000)
				if err != nil {
					return err
				}
				for _, m := range ms {
					key, ver = m.Key, m.Version
					if err := f(m); err != nil {
						return err
					}
				}
				if !more || len(ms) == 0 {
					break
				}
			}
		}
		if !more || len(bs) == 0 {
			return nil
		}
	}
}

// moveSpans writes m's spans in the superchunks of in anew elsewhere and
// swaps m's manifest for one naming the copies.
func (c *Client) moveSpans(ctx context.Context, rm RAIDPMeta, rd RAIDPDisks, w raidpWalker, g raidp.Group, in map[int]bool, m *cairn.Manifest, st *RAIDPCompacted) error {
	var next, copies, old []cairn.RAIDPSpan
	dead := func(spans []cairn.RAIDPSpan) *cairn.Manifest {
		return &cairn.Manifest{Bucket: m.Bucket, Key: m.Key, Policy: cairn.RAIDPPolicy, RAIDP: &cairn.RAIDPLayout{Group: g.Name, Spans: spans}}
	}
	var base int64
	for _, sp := range m.RAIDP.Spans {
		if !in[sp.Superchunk] {
			// Kept: its replicas as the group has them now, since the
			// manifest takes the group's generation.
			sp.Disks, sp.Slots = raidpReplicas(&g, sp)
			next = append(next, sp)
			base += sp.Length
			continue
		}
		es, err := c.reserve(ctx, rm, g, sp.Length)
		if err != nil {
			c.freeRAIDP(ctx, dead(copies))
			return fmt.Errorf("compacting %s/%s: %w", m.Bucket, m.Key, err)
		}
		ns, err := spansOf(g, es)
		if err != nil {
			c.countDead(rm, g.Name, ns)
			c.freeRAIDP(ctx, dead(copies))
			return err
		}
		rc, err := c.openRAIDP(ctx, m, base, base+sp.Length)
		var written []cairn.RAIDPSpan
		if err == nil {
			written, err = c.writeSpans(ctx, rd, ns, rc, io.Discard, PutOptions{})
			rc.Close()
		}
		if err != nil {
			c.undoSpans(rd, written)
			c.countDead(rm, g.Name, ns)
			c.freeRAIDP(ctx, dead(copies))
			return fmt.Errorf("compacting %s/%s: %w", m.Bucket, m.Key, err)
		}
		copies = append(copies, ns...)
		next = append(next, ns...)
		old = append(old, sp)
		base += sp.Length
	}
	nm := *m
	nm.RAIDP = &cairn.RAIDPLayout{Group: g.Name, Generation: g.Generation, Spans: next}
	err := w.UpdateManifest(ctx, &nm, m)
	switch {
	case err == nil:
		c.freeRAIDP(ctx, dead(old))
		st.Moved++
		for _, sp := range old {
			st.MovedBytes += sp.Length
		}
		return nil
	case errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound):
		// Overwritten, deleted or updated meanwhile: that write won, and
		// the copy is dead.
		c.freeRAIDP(ctx, dead(copies))
		st.Lost++
		return nil
	default:
		// The outcome is unknown: the copy may be committed, so it stays
		// (at worst lost space), and so does the candidate's span.
		return fmt.Errorf("compacting %s/%s: %w", m.Bucket, m.Key, err)
	}
}

// setCompacting makes ids the allocation record's compacting superchunks
// (on), or removes them from it.
func (c *Client) setCompacting(ctx context.Context, rm RAIDPMeta, group string, ids []int, on bool) error {
	return updateAlloc(ctx, rm, group, func(a *RAIDPAlloc) error {
		a.Compacting = slices.DeleteFunc(a.Compacting, func(s int) bool { return slices.Contains(ids, s) })
		if on {
			a.Compacting = slices.Sorted(slices.Values(ids))
		}
		return nil
	})
}

// reclaim zeroes superchunk s of g, whose end bytes are all dead, on both
// replicas, drops its queued dead ranges and hands it out again (end and
// dead bytes 0, epoch + 1). errNotNow if a recovery diverts it, or it
// changed meanwhile.
func (c *Client) reclaim(ctx context.Context, rm RAIDPMeta, rd RAIDPDisks, g raidp.Group, s int, end int64) error {
	// Zeroers that claimed s before it was closed to them finish first.
	if err := c.awaitZeroing(ctx, rm, g.Name, []int{s}); err != nil {
		return err
	}
	z, err := c.newZeroer(ctx, rm, rd, g.Name)
	if err != nil {
		return err
	}
	a, err := c.readAlloc(ctx, rm, g.Name)
	if err != nil {
		return err
	}
	if err := z.zeroAs(ctx, RAIDPDeadRange{Superchunk: s, Length: end, Epoch: a.Epoch[s]}, true); err != nil {
		return err
	}
	err = rm.UpdateRAIDP(ctx, deadKey(g.Name), func(old []byte) ([]byte, error) {
		q, err := decodeDead(g.Name, old)
		if err != nil {
			return nil, err
		}
		q.Ranges = slices.DeleteFunc(q.Ranges, func(r RAIDPDeadRange) bool { return r.Superchunk == s })
		return json.Marshal(q)
	})
	if err != nil {
		return err
	}
	return updateAlloc(ctx, rm, g.Name, func(a *RAIDPAlloc) error {
		if a.End[s] != end || a.Dead[s] < end || slices.Contains(a.diverted(g.Generation), s) {
			return errNotNow
		}
		delete(a.End, s)
		delete(a.Dead, s)
		if a.Epoch == nil {
			a.Epoch = map[int]int{}
		}
		a.Epoch[s]++
		a.Compacting = slices.DeleteFunc(a.Compacting, func(x int) bool { return x == s })
		return nil
	})
}
