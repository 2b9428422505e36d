package client

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/raidp"
)

// Zeroing the bytes raidp deletes free (docs/design/raidp.md, "Deletes" in
// "In the cluster"). A deleted object's spans stay on both replicas, equal,
// until zeroed on both together: lazily by the director's zeroer
// (ZeroDeadRAIDP) from the group's queue of dead ranges, or online by the
// delete itself.

// The delete variants (Config.RAIDPDeletes).
const (
	// RAIDPLazy queues a delete's ranges for the director's zeroer (the
	// paper's baseline): the delete costs one metadata write.
	RAIDPLazy = "lazy"
	// RAIDPOnline zeroes both replicas of a delete's ranges before the
	// delete returns (the update-oriented variant): a journaled write of
	// zeros per range on each replica.
	RAIDPOnline = "online"
)

// DefaultRAIDPDeadBacklog is the default bound of a group's queue of dead
// ranges (Config.RAIDPDeadBacklog): about 100 bytes of JSON each, so a
// full queue is a record of some 400 KB, within etcd's value limit.
const DefaultRAIDPDeadBacklog = 4096

// raidpZeroChunk is the most bytes one zeroing call carries.
const raidpZeroChunk = 4 << 20

// RAIDPDeadRange is a range of a superchunk whose object is gone, queued to
// be zeroed on both replicas. Its replicas are the group's at zeroing time
// (a re-mirror may have moved the superchunk since the delete).
type RAIDPDeadRange struct {
	Superchunk int   `json:"superchunk"`
	Offset     int64 `json:"offset"`
	Length     int64 `json:"length"`
	// Since is when the range died: the zeroer waits a grace period after
	// it, so that reads that opened the object before the delete finish.
	Since time.Time `json:"since"`
	// Epoch is the superchunk's RAIDPAlloc.Epoch when the range died; a
	// range of an older epoch is stale (dropped unzeroed: the reclaim
	// zeroed it).
	Epoch int `json:"epoch,omitempty"`
}

// RAIDPDeadQueue is the record "dead/<group>" (meta key raidp/dead/<group>):
// the group's dead ranges not zeroed yet, oldest first.
type RAIDPDeadQueue struct {
	Ranges []RAIDPDeadRange `json:"ranges"`
}

func deadKey(group string) string { return "dead/" + group }

func decodeDead(group string, b []byte) (RAIDPDeadQueue, error) {
	var q RAIDPDeadQueue
	if b == nil {
		return q, nil
	}
	if err := json.Unmarshal(b, &q); err != nil {
		return q, fmt.Errorf("%w: RAIDP dead ranges of %s: %v", cairn.ErrCorrupt, group, err)
	}
	return q, nil
}

func (c *Client) readAlloc(ctx context.Context, rm RAIDPMeta, group string) (RAIDPAlloc, error) {
	var a RAIDPAlloc
	b, err := rm.RAIDP(ctx, "alloc/"+group)
	if errors.Is(err, cairn.ErrNotFound) {
		return a, nil
	}
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("%w: RAIDP allocation record of %s: %v", cairn.ErrCorrupt, group, err)
	}
	return a, nil
}

// updateAlloc changes the group's allocation record by a compare-and-swap
// (RAIDPMeta.UpdateRAIDP, which retries f on a race): f gets the record as
// stored (zero if there is none, End never nil) and changes it in place;
// an error from f leaves the record as it was and is returned.
func updateAlloc(ctx context.Context, rm RAIDPMeta, group string, f func(*RAIDPAlloc) error) error {
	return rm.UpdateRAIDP(ctx, "alloc/"+group, func(old []byte) ([]byte, error) {
		var a RAIDPAlloc
		if old != nil {
			if err := json.Unmarshal(old, &a); err != nil {
				return nil, fmt.Errorf("%w: RAIDP allocation record of %s: %v", cairn.ErrCorrupt, group, err)
			}
		}
		if a.End == nil {
			a.End = map[int]int64{}
		}
		if err := f(&a); err != nil {
			return nil, err
		}
		return json.Marshal(a)
	})
}

// RAIDPDeadBacklog returns the group's queue of dead ranges (empty if the
// group has none).
func (c *Client) RAIDPDeadBacklog(ctx context.Context) (RAIDPDeadQueue, error) {
	rm, _, err := c.raidp()
	if err != nil {
		return RAIDPDeadQueue{}, err
	}
	name := c.groupName()
	b, err := rm.RAIDP(ctx, deadKey(name))
	if errors.Is(err, cairn.ErrNotFound) {
		return RAIDPDeadQueue{}, nil
	}
	if err != nil {
		return RAIDPDeadQueue{}, err
	}
	return decodeDead(name, b)
}

func (c *Client) groupName() string {
	if c.cfg.RAIDPGroup != "" {
		return c.cfg.RAIDPGroup
	}
	return DefaultRAIDPGroup
}

// RAIDPZeroClaim is a zeroer's claim on a superchunk (RAIDPAlloc.Zeroing):
// until Until, it may be zeroing dead ranges of it.
type RAIDPZeroClaim struct {
	Superchunk int       `json:"superchunk"`
	Until      time.Time `json:"until"`
}

// raidpClaimTTL is how long a zeroer's claim lasts unless renewed: what a
// recovery or compaction waits at most for the claim of a zeroer that died
// (a director killed mid-range). The zeroer renews it before each chunk
// once less than raidpClaimMargin+raidpClaimChunk is left, so a zeroing
// of any length holds it; each chunk's calls end (by their context)
// raidpClaimMargin before the claim does, the margin left for a node
// still applying a call its client gave up on. A chunk (raidpZeroChunk on
// both replicas) thus has at least raidpClaimChunk: a replica's disk
// slower than raidpZeroChunk/raidpClaimChunk fails the range, which stays
// queued.
const (
	raidpClaimTTL    = 30 * time.Second
	raidpClaimMargin = 10 * time.Second
	raidpClaimChunk  = 10 * time.Second
)

// zeroer zeroes ranges of one group on both replicas, as the group and
// cluster map were when it was made.
type zeroer struct {
	c        *Client
	rm       RAIDPMeta
	rd       RAIDPDisks
	g        raidp.Group
	writable map[cairn.DiskID]bool
}

// claim claims r's superchunk for zeroing by a compare-and-swap of the
// allocation record, unless a recovery diverts it or (unless reclaim:
// compaction's own zeroing) compaction empties it (errNotNow), or r is of
// an earlier epoch (errStale). It returns the claim's token and expiry.
func (z *zeroer) claim(ctx context.Context, r RAIDPDeadRange, reclaim bool) (string, time.Time, error) {
	s := r.Superchunk
	var tok [8]byte
	if _, err := io.ReadFull(z.c.cfg.Rand, tok[:]); err != nil {
		return "", time.Time{}, err
	}
	token := hex.EncodeToString(tok[:])
	until := time.Now().Add(raidpClaimTTL)
	err := updateAlloc(ctx, z.rm, z.g.Name, func(a *RAIDPAlloc) error {
		if slices.Contains(a.diverted(z.g.Generation), s) || !reclaim && slices.Contains(a.Compacting, s) {
			return errNotNow
		}
		if a.Epoch[s] != r.Epoch {
			return errStale
		}
		if a.Zeroing == nil {
			a.Zeroing = map[string]RAIDPZeroClaim{}
		}
		for k, c := range a.Zeroing { // claims of zeroers that died
			if !time.Now().Before(c.Until) {
				delete(a.Zeroing, k)
			}
		}
		a.Zeroing[token] = RAIDPZeroClaim{Superchunk: s, Until: until}
		return nil
	})
	return token, until, err
}

// renew extends the claim token for another raidpClaimTTL, unless it is
// gone (expired and dropped: a recovery may be reading the superchunk) or
// a recovery diverts its superchunk now (it waits for this claim, so the
// zeroer stops at the chunk it finished): errNotNow, the range stays
// queued.
func (z *zeroer) renew(ctx context.Context, token string) (time.Time, error) {
	until := time.Now().Add(raidpClaimTTL)
	err := updateAlloc(ctx, z.rm, z.g.Name, func(a *RAIDPAlloc) error {
		cl, ok := a.Zeroing[token]
		if !ok || slices.Contains(a.diverted(z.g.Generation), cl.Superchunk) {
			return errNotNow
		}
		cl.Until = until
		a.Zeroing[token] = cl
		return nil
	})
	return until, err
}

// release drops a claim (best effort: it expires anyway).
func (z *zeroer) release(token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := updateAlloc(ctx, z.rm, z.g.Name, func(a *RAIDPAlloc) error {
		delete(a.Zeroing, token)
		return nil
	})
	if err != nil {
		z.c.cfg.Logger.Warn("releasing a RAIDP zeroing claim failed: it expires", "group", z.g.Name, "err", err)
	}
}

// awaitZeroing waits until no zeroer claims any of the superchunks ids
// (which the caller has diverted, so no new claim on them is granted):
// a recovery must not copy or rebuild from a superchunk while one of its
// ranges is being zeroed, since its replicas may differ for that while.
// The wait ends at the latest when the claims expire.
func (c *Client) awaitZeroing(ctx context.Context, rm RAIDPMeta, group string, ids []int) error {
	for {
		a, err := c.readAlloc(ctx, rm, group)
		if err != nil {
			return err
		}
		var until time.Time
		for _, cl := range a.Zeroing {
			if slices.Contains(ids, cl.Superchunk) && cl.Until.After(until) {
				until = cl.Until
			}
		}
		if !time.Now().Before(until) {
			return nil
		}
		t := time.NewTimer(min(200*time.Millisecond, time.Until(until)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (c *Client) newZeroer(ctx context.Context, rm RAIDPMeta, rd RAIDPDisks, group string) (*zeroer, error) {
	g, err := c.storedGroup(ctx, rm)
	if err != nil {
		return nil, err
	}
	if g.Name != group {
		return nil, fmt.Errorf("%w: RAIDP group %s, this client writes to %s", cairn.ErrInvalid, group, g.Name)
	}
	disks, err := c.meta.Disks(ctx)
	if err != nil {
		return nil, err
	}
	z := &zeroer{c: c, rm: rm, rd: rd, g: g, writable: map[cairn.DiskID]bool{}}
	for _, d := range disks {
		z.writable[d.ID] = d.State.Writable()
	}
	return z, nil
}

// errNotNow: a range cannot be zeroed now (its superchunk is diverted by a
// recovery, or a replica's disk is not writable); it stays queued.
var errNotNow = errors.New("not zeroable now")

// errStale: a range of an epoch before its superchunk's last reclaim.
var errStale = errors.New("stale: the superchunk was reclaimed since")

// zero zeroes r on both replicas of its superchunk, from its end backwards
// in chunks (each chunk reaching a slot's high-water mark lowers it). It
// refuses (errNotNow) a range whose superchunk is diverted: a recovery
// copies or rebuilds it, and the copy (or the dual rebuild, which reads the
// mirrors against the failed disk's Lstor) must see the bytes the failed
// disk had. A failed zero may have zeroed one replica and not the other:
// the range must be zeroed again (it stays queued) before they agree.
// The zeroing runs under a claim on the superchunk (RAIDPAlloc.Zeroing),
// granted only while no recovery diverts it; a recovery that diverts it
// meanwhile waits for the claim (awaitZeroing).
func (z *zeroer) zero(ctx context.Context, r RAIDPDeadRange) error { return z.zeroAs(ctx, r, false) }

// zeroAs is zero; reclaim says it is compaction's zeroing of a whole
// superchunk it empties.
func (z *zeroer) zeroAs(ctx context.Context, r RAIDPDeadRange, reclaim bool) error {
	i := slices.IndexFunc(z.g.Layout.Superchunks, func(s raidp.Superchunk) bool { return s.ID == r.Superchunk })
	if i < 0 {
		return fmt.Errorf("%w: superchunk %d is not in RAIDP group %s", cairn.ErrCorrupt, r.Superchunk, z.g.Name)
	}
	if r.Offset < 0 || r.Length <= 0 || r.Offset+r.Length > z.g.Size {
		return fmt.Errorf("%w: dead range [%d, +%d) of superchunk %d outside its %d bytes", cairn.ErrCorrupt, r.Offset, r.Length, r.Superchunk, z.g.Size)
	}
	s := z.g.Layout.Superchunks[i]
	var disks [2]cairn.DiskID
	var slots [2]int
	for j, p := range s.Replicas {
		disks[j], slots[j] = cairn.DiskID(z.g.Disks[p.Disk].ID), p.Slot
		if !z.writable[disks[j]] || slices.Contains(z.g.Out, p.Disk) {
			return errNotNow
		}
	}
	token, until, err := z.claim(ctx, r, reclaim)
	if err != nil {
		return err
	}
	defer z.release(token)
	for end := r.Offset + r.Length; end > r.Offset; {
		if time.Until(until) < raidpClaimMargin+raidpClaimChunk {
			if until, err = z.renew(ctx, token); err != nil {
				return err
			}
		}
		start := max(r.Offset, end-raidpZeroChunk)
		if err := z.zeroChunk(ctx, until.Add(-raidpClaimMargin), r.Superchunk, disks, slots, start, end); err != nil {
			return err
		}
		end = start
	}
	return nil
}

// zeroChunk zeroes [start, end) on both replicas, its calls ending by
// deadline.
func (z *zeroer) zeroChunk(ctx context.Context, deadline time.Time, sc int, disks [2]cairn.DiskID, slots [2]int, start, end int64) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// Not errgroup.WithContext: a failure on one replica must not cancel
	// the other's zeroing half-way; the range is retried whole.
	var eg errgroup.Group
	for j := range 2 {
		eg.Go(func() error {
			if err := z.rd.ZeroRAIDP(ctx, disks[j], slots[j], start, end-start); err != nil {
				return fmt.Errorf("%w: zeroing superchunk %d [%d, %d) on %s: %w", cairn.ErrUnavailable, sc, start, end, disks[j], err)
			}
			return nil
		})
	}
	return eg.Wait()
}

// freeRAIDP frees the spans of m, a raidp manifest no longer named by the
// store (deleted, overwritten, expired): zeroed on both replicas now
// (RAIDPOnline), or queued for the zeroer (RAIDPLazy; online when the
// queue is full), and counted dead in the allocation record. A range that
// cannot be zeroed online (its superchunk diverted by a recovery, a
// replica's disk down, an error) is queued whatever the bound: it is never
// dropped. The delete has happened already, so failures are logged, not
// returned: the bytes stay (equal on both replicas unless a zero failed
// half-way, which leaves them queued) and compaction reclaims them.
func (c *Client) freeRAIDP(ctx context.Context, m *cairn.Manifest) {
	if m == nil || m.RAIDP == nil || len(m.RAIDP.Spans) == 0 {
		return
	}
	rm, rd, err := c.raidp()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	group := m.RAIDP.Group
	now := time.Now()
	// The spans' superchunks cannot be reclaimed before their bytes are
	// counted dead (below): the epochs read now are theirs.
	a, err := c.readAlloc(ctx, rm, group)
	if err != nil {
		c.cfg.Logger.Warn("freeing a RAIDP object's bytes failed: they stay unzeroed and uncounted", "group", group,
			"bucket", m.Bucket, "key", m.Key, "err", err)
		return
	}
	var ranges []RAIDPDeadRange
	for _, sp := range m.RAIDP.Spans {
		ranges = append(ranges, RAIDPDeadRange{Superchunk: sp.Superchunk, Offset: sp.Offset, Length: sp.Length, Since: now, Epoch: a.Epoch[sp.Superchunk]})
	}
	online := ranges
	if c.cfg.RAIDPDeletes != RAIDPOnline {
		if online, err = c.enqueueDead(ctx, rm, group, ranges, false); err != nil {
			c.cfg.Logger.Warn("queueing a RAIDP object's dead ranges failed: they stay unzeroed (compaction reclaims them)",
				"group", group, "bucket", m.Bucket, "key", m.Key, "err", err)
			online = nil
		}
	}
	if len(online) > 0 {
		var later []RAIDPDeadRange
		z, err := c.newZeroer(ctx, rm, rd, group)
		for _, r := range online {
			if err == nil {
				if zerr := z.zero(ctx, r); zerr == nil || errors.Is(zerr, errStale) {
					continue
				} else if !errors.Is(zerr, errNotNow) {
					c.cfg.Logger.Warn("zeroing a deleted RAIDP range failed: queued", "group", group, "superchunk", r.Superchunk,
						"offset", r.Offset, "length", r.Length, "err", zerr)
				}
			}
			later = append(later, r)
		}
		if len(later) > 0 {
			if _, err := c.enqueueDead(ctx, rm, group, later, true); err != nil {
				c.cfg.Logger.Warn("queueing RAIDP dead ranges failed: they stay unzeroed (compaction reclaims them)", "group", group, "err", err)
			}
		}
	}
	c.countDead(rm, group, m.RAIDP.Spans)
}

// enqueueDead appends ranges to the group's queue by a compare-and-swap,
// at most up to the bound unless force; it returns the ranges that did not
// fit.
func (c *Client) enqueueDead(ctx context.Context, rm RAIDPMeta, group string, ranges []RAIDPDeadRange, force bool) ([]RAIDPDeadRange, error) {
	var left []RAIDPDeadRange
	err := rm.UpdateRAIDP(ctx, deadKey(group), func(old []byte) ([]byte, error) {
		q, err := decodeDead(group, old)
		if err != nil {
			return nil, err
		}
		room := len(ranges)
		if !force {
			room = max(0, min(room, c.cfg.RAIDPDeadBacklog-len(q.Ranges)))
		}
		q.Ranges = append(q.Ranges, ranges[:room]...)
		left = ranges[room:]
		return json.Marshal(q)
	})
	if err != nil {
		return ranges, err
	}
	return left, nil
}

// RAIDPZeroed is what one ZeroDeadRAIDP run did.
type RAIDPZeroed struct {
	Zeroed  int   // ranges zeroed on both replicas and removed from the queue
	Bytes   int64 // their bytes
	Waiting int   // ranges left: in their grace period, diverted, a disk down or a failure
	Stale   int   // ranges dropped: their superchunk was reclaimed since (zeroed whole)
}

// ZeroDeadRAIDP is the lazy zeroer, the director's duty: it zeroes up to
// limit ranges of the group's queue that died at least grace before now,
// each on both replicas together, and removes each from the queue once
// both are durable. Ranges of superchunks a recovery diverts, or with a
// replica on a disk the cluster map holds unwritable, wait. A crash between
// the zeroing and the removal zeroes the range again on the next run:
// harmless, since dead bytes are never handed out again until compaction
// reclaims the superchunk, which first drops its queued ranges (and which
// the director runs in the same duty, never concurrently).
func (c *Client) ZeroDeadRAIDP(ctx context.Context, now time.Time, grace time.Duration, limit int) (RAIDPZeroed, error) {
	var st RAIDPZeroed
	rm, rd, err := c.raidp()
	if err != nil {
		return st, nil // a client without RAIDP support has no group
	}
	group := c.groupName()
	q, err := c.RAIDPDeadBacklog(ctx)
	if err != nil || len(q.Ranges) == 0 {
		return st, err
	}
	z, err := c.newZeroer(ctx, rm, rd, group)
	if err != nil {
		return st, err
	}
	var errs []error
	for _, r := range q.Ranges {
		if st.Zeroed >= limit || ctx.Err() != nil {
			break
		}
		if now.Sub(r.Since) < grace {
			continue
		}
		err := z.zero(ctx, r)
		switch {
		case errors.Is(err, errStale):
			// Zeroed with its whole superchunk by a reclaim.
			if err := c.dequeueDead(ctx, rm, group, r); err != nil {
				return st, err
			}
			st.Stale++
			continue
		case errors.Is(err, errNotNow):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		if err := c.dequeueDead(ctx, rm, group, r); err != nil {
			return st, err
		}
		st.Zeroed++
		st.Bytes += r.Length
	}
	st.Waiting = len(q.Ranges) - st.Zeroed - st.Stale
	if len(errs) > 0 {
		return st, fmt.Errorf("zeroing RAIDP dead ranges of %s: %w", group, errors.Join(errs...))
	}
	return st, ctx.Err()
}

// dequeueDead removes r (one equal entry) from the group's queue.
func (c *Client) dequeueDead(ctx context.Context, rm RAIDPMeta, group string, r RAIDPDeadRange) error {
	return rm.UpdateRAIDP(ctx, deadKey(group), func(old []byte) ([]byte, error) {
		q, err := decodeDead(group, old)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(q.Ranges, func(x RAIDPDeadRange) bool { return x.equal(r) }); i >= 0 {
			q.Ranges = slices.Delete(q.Ranges, i, i+1)
		}
		return json.Marshal(q)
	})
}

func (r RAIDPDeadRange) equal(o RAIDPDeadRange) bool {
	return r.Superchunk == o.Superchunk && r.Offset == o.Offset && r.Length == o.Length && r.Since.Equal(o.Since)
}

// FreeRAIDP frees the bytes of m, a raidp object version its caller has
// just removed from the store directly (S3 DeleteVersion, lifecycle
// expiry): as a delete through the client does (Config.RAIDPDeletes).
// A manifest of another policy, or nil, is ignored.
func (c *Client) FreeRAIDP(ctx context.Context, m *cairn.Manifest) { c.freeRAIDP(ctx, m) }

// RAIDPAllocation returns the group's allocation record (zero if none).
func (c *Client) RAIDPAllocation(ctx context.Context) (RAIDPAlloc, error) {
	rm, _, err := c.raidp()
	if err != nil {
		return RAIDPAlloc{}, err
	}
	return c.readAlloc(ctx, rm, c.groupName())
}
