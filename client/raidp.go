package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/raidp"
)

// The raidp policy's data path (docs/design/raidp.md, "In the cluster"):
// an object is packed into the superchunks of a RAIDP group, each span
// written to both replicas in parallel by nodes that update their disk's
// Lstor parity, and read from either.

// RAIDPMeta is the part of the metadata store the raidp policy needs:
// the group and allocation records (meta.Store has it). A Meta without it
// cannot store raidp objects.
type RAIDPMeta interface {
	RAIDP(ctx context.Context, name string) ([]byte, error)
	UpdateRAIDP(ctx context.Context, name string, f func(old []byte) ([]byte, error)) error
}

// RAIDPDisks reaches the RAIDP slots of disks (*node.Client has it). A
// Shards without it cannot store raidp objects.
type RAIDPDisks interface {
	// WriteRAIDP writes p at off of slot on disk, durably with the disk's
	// Lstor parity updated, when it returns nil.
	WriteRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off int64, p []byte) error
	// ReadRAIDP fills p from off of slot on disk.
	ReadRAIDP(ctx context.Context, disk cairn.DiskID, slot int, p []byte, off int64) error
	// ZeroRAIDP zeroes n bytes at off of slot on disk (data and parity).
	ZeroRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off, n int64) error
	// ReadLstor fills p from off of disk's Lstor parity (recovery).
	ReadLstor(ctx context.Context, disk cairn.DiskID, p []byte, off int64) error
}

// DefaultRAIDPGroup is the group raidp objects go to (Config.RAIDPGroup).
const DefaultRAIDPGroup = "warm"

// raidpChunk is the most bytes one RAIDP write call carries: a few
// checksum blocks, so each node call is one journal record of that size.
const raidpChunk = 4 * cairn.RAIDPBlock

// raidpMaxBuffered bounds a raidp PUT of unknown size, which must be read
// whole before its superchunk space is allocated.
const raidpMaxBuffered = 64 << 20

// RAIDPAlloc is the allocation record of a group ("alloc/<group>"): how
// far each superchunk is filled (append-only: its bytes below End belong
// to objects, live or dead, and are never handed out again), and how many
// of those bytes belong to deleted objects (for compaction).
type RAIDPAlloc struct {
	End  map[int]int64 `json:"end"`
	Dead map[int]int64 `json:"dead,omitempty"`
	// Divert lists the superchunks no PUT may write to: those of the
	// disks a recovery is running for (RecoverRAIDP).
	Divert []int `json:"divert,omitempty"`
	// Zeroing holds the claims of zeroers (raidpdead.go) on superchunks
	// whose dead ranges they are zeroing, by a random token: a recovery
	// that diverts a superchunk waits until no claim on it is left or
	// unexpired before it copies or rebuilds from it.
	Zeroing map[string]RAIDPZeroClaim `json:"zeroing,omitempty"`
	// Compacting lists the superchunks compaction is emptying
	// (raidpcompact.go): no PUT appends to them, so the live objects it
	// moves out land elsewhere.
	Compacting []int `json:"compacting,omitempty"`
	// Epoch counts per superchunk the times compaction reclaimed it: a
	// dead range queued in an earlier epoch is gone with the reclaim's
	// zeroing, and must not be zeroed into the superchunk's new objects.
	Epoch map[int]int `json:"epoch,omitempty"`
	// DivertGeneration is the group generation the recovery that set
	// Divert planned from (0: unknown, from before it was recorded). Once
	// the group is past it the recovery was stored, so Divert is stale —
	// its recovery died between storing the group and clearing it — and
	// PUTs ignore it.
	DivertGeneration uint64 `json:"divert_generation,omitempty"`
	// Open lists the superchunks PUTs append to now, on pairwise distinct
	// disks (at most half the group's disks), and Next the index in it
	// where the next reservation starts (allocate).
	Open []int `json:"open,omitempty"`
	Next int   `json:"next,omitempty"`
}

// diverted returns the superchunks a's Divert holds out of writes for a
// group at generation gen: none once Divert is stale (DivertGeneration).
func (a RAIDPAlloc) diverted(gen uint64) []int {
	if a.DivertGeneration != 0 && a.DivertGeneration < gen {
		return nil
	}
	return a.Divert
}

func (c *Client) raidp() (RAIDPMeta, RAIDPDisks, error) {
	m, ok := c.direct.(RAIDPMeta)
	d, ok2 := c.shards.(RAIDPDisks)
	if !ok || !ok2 {
		return nil, nil, fmt.Errorf("%w: policy %s: this client's metadata store or disks have no RAIDP support", cairn.ErrInvalid, cairn.RAIDPPolicy)
	}
	return m, d, nil
}

// RAIDPGroup returns the group raidp objects are written to, creating it
// from the cluster's disks with an Lstor the first time (every client
// creating it at once agree: the first record written wins).
func (c *Client) RAIDPGroup(ctx context.Context) (raidp.Group, error) {
	rm, _, err := c.raidp()
	if err != nil {
		return raidp.Group{}, err
	}
	name := cmp.Or(c.cfg.RAIDPGroup, DefaultRAIDPGroup)
	g, err := c.storedGroup(ctx, rm)
	if !errors.Is(err, cairn.ErrNotFound) {
		return g, err
	}
	disks, err := c.meta.Disks(ctx)
	if err != nil {
		return raidp.Group{}, err
	}
	if g, err = NewRAIDPGroup(name, disks); err != nil {
		return raidp.Group{}, err
	}
	nb, err := json.Marshal(g)
	if err != nil {
		return raidp.Group{}, err
	}
	var b []byte
	err = rm.UpdateRAIDP(ctx, "groups/"+name, func(old []byte) ([]byte, error) {
		if old != nil {
			b = old // another client made it first: keep that one
			return old, nil
		}
		b = nb
		return nb, nil
	})
	if err != nil {
		return raidp.Group{}, err
	}
	return decodeGroup(b)
}

// storedGroup reads the group record (cairn.ErrNotFound: none yet).
func (c *Client) storedGroup(ctx context.Context, rm RAIDPMeta) (raidp.Group, error) {
	b, err := rm.RAIDP(ctx, "groups/"+cmp.Or(c.cfg.RAIDPGroup, DefaultRAIDPGroup))
	if err != nil {
		return raidp.Group{}, err
	}
	return decodeGroup(b)
}

func decodeGroup(b []byte) (raidp.Group, error) {
	g, err := raidp.DecodeGroup(b)
	if err != nil {
		return raidp.Group{}, fmt.Errorf("%w: stored RAIDP group: %w", cairn.ErrCorrupt, err)
	}
	return g, nil
}

// NewRAIDPGroup lays out a group over the writable disks that have an
// Lstor, of their most common geometry: one disk per node (the failure
// domain) when at least 3 nodes have such disks, else every such disk,
// each its own domain (a one-node cluster, where a disk is all a domain
// can be). Rows leave room to recover from two lost disks: the N·rows/2
// superchunks must fit twice in the slots of N−2 disks and, by 1-sharing,
// number at most (N−2)(N−3)/2 (the paper, §3.3): rows ≤ slots·(N−2)/N and
// rows ≤ (N−2)(N−3)/N, at least 1 (a group too small for that survives
// one loss).
func NewRAIDPGroup(name string, disks []cairn.Disk) (raidp.Group, error) {
	type geo struct {
		size  int64
		slots int
	}
	count := map[geo]int{}
	for _, d := range disks {
		if d.RAIDPSize > 0 && d.State.Writable() {
			count[geo{d.RAIDPSize, d.RAIDPSlots}]++
		}
	}
	if len(count) == 0 {
		return raidp.Group{}, fmt.Errorf("%w: no writable disk has an Lstor (cairn node --disk PATH,lstor=LPATH)", cairn.ErrUnavailable)
	}
	best := slices.MaxFunc(slices.Collect(maps.Keys(count)), func(a, b geo) int {
		return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a.size, b.size), cmp.Compare(a.slots, b.slots))
	})
	var cand []cairn.Disk
	nodes := map[cairn.NodeID]bool{}
	for _, d := range disks {
		if d.RAIDPSize == best.size && d.RAIDPSlots == best.slots && d.State.Writable() {
			cand = append(cand, d)
			nodes[d.Node] = true
		}
	}
	slices.SortFunc(cand, func(a, b cairn.Disk) int { return cmp.Compare(a.ID, b.ID) })
	var gd []raidp.GroupDisk
	if len(nodes) >= 3 {
		seen := map[cairn.NodeID]bool{}
		for _, d := range cand {
			if !seen[d.Node] {
				seen[d.Node] = true
				gd = append(gd, raidp.GroupDisk{ID: string(d.ID), Domain: string(d.Node)})
			}
		}
	} else {
		for _, d := range cand {
			gd = append(gd, raidp.GroupDisk{ID: string(d.ID), Domain: string(d.ID)})
		}
	}
	gd = gd[:min(len(gd), raidp.MaxDisks)]
	if len(gd) < 3 {
		return raidp.Group{}, fmt.Errorf("%w: a RAIDP group needs 3 disks with an Lstor, the cluster has %d", cairn.ErrUnavailable, len(gd))
	}
	n := len(gd)
	rows := max(1, min(best.slots*(n-2)/n, (n-2)*(n-3)/n))
	return raidp.NewGroup(name, gd, best.size, best.slots, rows)
}

// allocate reserves n bytes in g's superchunks in the allocation record
// a, returning the extents and the new record. ErrNoSpace when the group
// has fewer than n free bytes where it may write.
//
// Each superchunk is filled append-only. The record keeps a set of open
// superchunks (RAIDPAlloc.Open) on pairwise distinct disks — a matching
// of the group's disk pairs, at most N/2 — and successive reservations
// start at successive open superchunks (RAIDPAlloc.Next), so concurrent
// PUTs land on different disk pairs, each disk appending to one
// superchunk at a time, rather than all on the one pair of the lowest
// superchunk with free space. The open set keeps the superchunks still
// writable and is topped up with writable superchunks on disks it does
// not use, those already partly filled first (so the group fills a few
// superchunks at a time), then in ID order. A reservation larger than its
// first superchunk's free space continues in the next open ones, then in
// any writable superchunk, in ID order.
//
// Not writable: full, diverted by a recovery, closed by compaction, or
// with a replica on an avoided disk (layout index): a disk the cluster
// map holds unwritable would fail the PUT.
func allocate(g raidp.Group, a RAIDPAlloc, n int64, avoid map[int]bool) ([]raidp.Extent, RAIDPAlloc, error) {
	next := a
	next.End = maps.Clone(a.End)
	if next.End == nil {
		next.End = map[int]int64{}
	}
	divert := a.diverted(g.Generation) // stale once a recovery stored after it was set
	byID := make(map[int]raidp.Superchunk, len(g.Layout.Superchunks))
	for _, s := range g.Layout.Superchunks {
		byID[s.ID] = s
	}
	writable := func(id int) bool {
		s, ok := byID[id]
		return ok && g.Size-next.End[id] > 0 && !slices.Contains(divert, id) && !slices.Contains(a.Compacting, id) &&
			!avoid[s.Replicas[0].Disk] && !avoid[s.Replicas[1].Disk]
	}
	// The open set: the old one's writable superchunks, topped up.
	open := slices.DeleteFunc(slices.Clone(a.Open), func(id int) bool { return !writable(id) })
	busy := map[int]bool{}
	for _, id := range open {
		busy[byID[id].Replicas[0].Disk], busy[byID[id].Replicas[1].Disk] = true, true
	}
	var fresh []int // writable, not open: partly filled first, then ID order
	for _, s := range g.Layout.Superchunks {
		if writable(s.ID) && !slices.Contains(open, s.ID) {
			fresh = append(fresh, s.ID)
		}
	}
	slices.SortStableFunc(fresh, func(x, y int) int { return cmp.Compare(boolInt(next.End[y] > 0), boolInt(next.End[x] > 0)) })
	for _, id := range fresh {
		d0, d1 := byID[id].Replicas[0].Disk, byID[id].Replicas[1].Disk
		if !busy[d0] && !busy[d1] {
			open = append(open, id)
			busy[d0], busy[d1] = true, true
		}
	}
	// The order this reservation tries: the open set from Next on, then
	// every other writable superchunk.
	var order []int
	if len(open) > 0 {
		i := a.Next % len(open)
		order = append(slices.Clone(open[i:]), open[:i]...)
		next.Next = (i + 1) % len(open)
	}
	for _, s := range g.Layout.Superchunks {
		if !slices.Contains(open, s.ID) {
			order = append(order, s.ID)
		}
	}
	var out []raidp.Extent
	for _, id := range order {
		if n == 0 {
			break
		}
		if !writable(id) {
			continue
		}
		end := next.End[id]
		k := min(g.Size-end, n)
		out = append(out, raidp.Extent{Superchunk: id, Off: end, Len: k})
		next.End[id] = end + k
		n -= k
	}
	if n > 0 {
		return nil, a, fmt.Errorf("%w: RAIDP group %s has not enough free space (%d bytes more needed)", cairn.ErrNoSpace, g.Name, n)
	}
	next.Open = slices.DeleteFunc(open, func(id int) bool { return !writable(id) })
	return out, next, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reserve allocates n bytes of g by a compare-and-swap of its allocation
// record.
func (c *Client) reserve(ctx context.Context, rm RAIDPMeta, g raidp.Group, n int64) ([]raidp.Extent, error) {
	disks, err := c.meta.Disks(ctx)
	if err != nil {
		return nil, err
	}
	writable := map[cairn.DiskID]bool{}
	for _, d := range disks {
		writable[d.ID] = d.State.Writable() && d.RAIDPFault == "" // a marked Lstor refuses writes
	}
	avoid := map[int]bool{}
	for i, d := range g.Disks {
		if !writable[cairn.DiskID(d.ID)] {
			avoid[i] = true
		}
	}
	var out []raidp.Extent
	err = updateAlloc(ctx, rm, g.Name, func(a *RAIDPAlloc) error {
		es, next, err := allocate(g, *a, n, avoid)
		if err != nil {
			return err
		}
		out, *a = es, next
		return nil
	})
	return out, err
}

// spansOf turns extents into manifest spans with both replicas of g.
func spansOf(g raidp.Group, es []raidp.Extent) ([]cairn.RAIDPSpan, error) {
	byID := map[int]raidp.Superchunk{}
	for _, s := range g.Layout.Superchunks {
		byID[s.ID] = s
	}
	var out []cairn.RAIDPSpan
	for _, e := range es {
		s, ok := byID[e.Superchunk]
		if !ok {
			return nil, fmt.Errorf("%w: superchunk %d is not in group %s", cairn.ErrCorrupt, e.Superchunk, g.Name)
		}
		sp := cairn.RAIDPSpan{Superchunk: e.Superchunk, Offset: e.Off, Length: e.Len,
			CRCs: make([]uint32, (e.Len+cairn.RAIDPBlock-1)/cairn.RAIDPBlock)}
		for i, p := range s.Replicas {
			sp.Disks[i], sp.Slots[i] = cairn.DiskID(g.Disks[p.Disk].ID), p.Slot
		}
		out = append(out, sp)
	}
	return out, nil
}

// putRAIDP stores an object of the raidp policy: Put's path for it.
func (c *Client) putRAIDP(ctx context.Context, bucket, key string, b cairn.Bucket, r io.Reader, opts PutOptions) (*cairn.Manifest, error) {
	if opts.SSE != nil || b.Encryption == cairn.SSES3 {
		return nil, fmt.Errorf("%w: policy %s does not encrypt objects yet (the request or bucket %s asks for encryption)", cairn.ErrInvalid, cairn.RAIDPPolicy, bucket)
	}
	rm, rd, err := c.raidp()
	if err != nil {
		return nil, err
	}
	if err := c.checkCurrent(ctx, bucket, key, opts.If); err != nil {
		return nil, err
	}
	if _, err := lockOf(b, opts, time.Time{}); err != nil {
		return nil, err
	}
	size := opts.Size
	if size < 0 {
		// The space is reserved before the first byte is written: read
		// the body whole (bounded) to learn its size.
		body, err := io.ReadAll(io.LimitReader(r, raidpMaxBuffered+1))
		if err != nil {
			return nil, fmt.Errorf("%w: reading the body: %w", cairn.ErrInvalid, err)
		}
		if len(body) > raidpMaxBuffered {
			return nil, fmt.Errorf("%w: a %s object of unknown size may have at most %d bytes", cairn.ErrInvalid, cairn.RAIDPPolicy, raidpMaxBuffered)
		}
		size, r = int64(len(body)), bytes.NewReader(body)
	}
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		return nil, err
	}
	var spans []cairn.RAIDPSpan
	if size > 0 {
		es, err := c.reserve(ctx, rm, g, size)
		if err != nil {
			return nil, err
		}
		if spans, err = spansOf(g, es); err != nil {
			return nil, err
		}
	}
	version, err := c.newVersion()
	if err != nil {
		return nil, err
	}
	md := md5.New()
	written, err := c.writeSpans(ctx, rd, spans, r, md, opts)
	if err == nil {
		// The body must end exactly here.
		if n, _ := io.ReadFull(r, make([]byte, 1)); n > 0 {
			err = fmt.Errorf("%w: the body is longer than its declared %d bytes", cairn.ErrInvalid, size)
		}
	}
	if err != nil {
		c.undoSpans(rd, written)
		c.countDead(rm, g.Name, spans)
		return nil, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	m := &cairn.Manifest{
		Bucket: bucket, Key: key, Version: version, Size: size,
		ETag: hex.EncodeToString(md.Sum(nil)), ContentType: opts.ContentType,
		UserMeta: maps.Clone(opts.UserMeta), Created: now().UTC(),
		Policy: cairn.RAIDPPolicy, Tags: maps.Clone(opts.Tags),
		Versioned: b.Versioning == cairn.VersioningEnabled, LegalHold: opts.LegalHold,
		RAIDP: &cairn.RAIDPLayout{Group: g.Name, Generation: g.Generation, Spans: spans},
	}
	if m.Retention, err = lockOf(b, opts, m.Created); err != nil {
		c.countDead(rm, g.Name, spans)
		return nil, err
	}
	if opts.Checksum != nil {
		m.Checksum = opts.Checksum()
	}
	if err := c.commit(ctx, m, opts.If); err != nil {
		if sentinel(err) {
			// Certainly not committed: the spans are dead bytes. They stay
			// as written on both replicas (equal, so the parity is right);
			// compaction reclaims them.
			c.countDead(rm, g.Name, spans)
		}
		return nil, err
	}
	return m, nil
}

// writeSpans writes the body into spans, each chunk to both replicas in
// parallel, acknowledged only when both are durable with their parity.
// It fills the spans' CRCs and returns the chunks written to at least
// one replica (for undoSpans).
func (c *Client) writeSpans(ctx context.Context, rd RAIDPDisks, spans []cairn.RAIDPSpan, r io.Reader, md io.Writer, opts PutOptions) ([]cairn.RAIDPSpan, error) {
	var touched []cairn.RAIDPSpan
	buf := make([]byte, raidpChunk)
	var done int64
	for i := range spans {
		sp := &spans[i]
		for o := int64(0); o < sp.Length; o += raidpChunk {
			n := min(raidpChunk, sp.Length-o)
			p := buf[:n]
			if k, eof, err := fill(r, p); err != nil || eof && int64(k) < n {
				if err == nil {
					err = fmt.Errorf("the body ended after %d bytes", done+int64(k))
				}
				return touched, fmt.Errorf("%w: %w", cairn.ErrInvalid, err)
			}
			md.Write(p)
			for b := int64(0); b < n; b += cairn.RAIDPBlock {
				sp.CRCs[(o+b)/cairn.RAIDPBlock] = crc32.Checksum(p[b:min(n, b+cairn.RAIDPBlock)], castagnoli)
			}
			touched = append(touched, cairn.RAIDPSpan{Superchunk: sp.Superchunk, Offset: sp.Offset + o, Length: n, Disks: sp.Disks, Slots: sp.Slots})
			// Not errgroup.WithContext: a failed replica must not cancel
			// the other's write, whose node might still apply it after
			// undoSpans zeroed the chunk (the replicas would differ).
			var eg errgroup.Group
			for j := range 2 {
				eg.Go(func() error {
					if err := rd.WriteRAIDP(ctx, sp.Disks[j], sp.Slots[j], sp.Offset+o, p); err != nil {
						return fmt.Errorf("%w: RAIDP write to %s: %w", cairn.ErrUnavailable, sp.Disks[j], err)
					}
					return nil
				})
			}
			if err := eg.Wait(); err != nil {
				return touched, err
			}
			done += n
			if opts.Progress != nil {
				opts.Progress(done)
			}
		}
	}
	return touched, nil
}

// undoSpans zeroes chunks a failed PUT wrote, on both replicas, so the
// replicas agree again (docs/design/raidp.md, "Replicas must agree"). A
// chunk that cannot be zeroed on both is logged: its replicas may differ
// until a verify finds it.
func (c *Client) undoSpans(rd RAIDPDisks, spans []cairn.RAIDPSpan) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, sp := range spans {
		for j := range 2 {
			if err := rd.ZeroRAIDP(ctx, sp.Disks[j], sp.Slots[j], sp.Offset, sp.Length); err != nil {
				c.cfg.Logger.Warn("RAIDP replicas may differ: zeroing a failed write's chunk failed", "superchunk", sp.Superchunk,
					"offset", sp.Offset, "length", sp.Length, "disk", string(sp.Disks[j]), "err", err)
			}
		}
	}
}

// countDead adds the spans' bytes to their superchunks' dead bytes in
// the allocation record (best effort: the count guides compaction only).
func (c *Client) countDead(rm RAIDPMeta, group string, spans []cairn.RAIDPSpan) {
	if len(spans) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := updateAlloc(ctx, rm, group, func(a *RAIDPAlloc) error {
		if a.Dead == nil {
			a.Dead = map[int]int64{}
		}
		for _, sp := range spans {
			a.Dead[sp.Superchunk] += sp.Length
		}
		return nil
	})
	if err != nil {
		c.cfg.Logger.Warn("counting a RAIDP object's dead bytes failed", "group", group, "err", err)
	}
}

// raidpReplicas returns where span i of m is now: the manifest's disks,
// or the group's if it moved the superchunk since (a re-mirror).
func raidpReplicas(g *raidp.Group, sp cairn.RAIDPSpan) ([2]cairn.DiskID, [2]int) {
	if g == nil {
		return sp.Disks, sp.Slots
	}
	for _, s := range g.Layout.Superchunks {
		if s.ID == sp.Superchunk {
			var d [2]cairn.DiskID
			var sl [2]int
			for i, p := range s.Replicas {
				d[i], sl[i] = cairn.DiskID(g.Disks[p.Disk].ID), p.Slot
			}
			return d, sl
		}
	}
	return sp.Disks, sp.Slots
}

// raidpReader reads bytes [off, end) of a raidp object, one checksum
// block at a time, each from the first replica that gives it intact.
type raidpReader struct {
	c        *Client
	ctx      context.Context
	cancel   context.CancelFunc
	rd       RAIDPDisks
	m        *cairn.Manifest
	group    *raidp.Group // read once a replica failed and the group is newer
	off, end int64
	buf      []byte // bytes read and not yet returned
	span     int    // the span holding off
	base     int64  // object offset of span
}

func (c *Client) openRAIDP(ctx context.Context, m *cairn.Manifest, off, end int64) (io.ReadCloser, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: stored manifest: %w", cairn.ErrCorrupt, err)
	}
	_, rd, err := c.raidp()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	return &raidpReader{c: c, ctx: ctx, cancel: cancel, rd: rd, m: m, off: off, end: end}, nil
}

func (r *raidpReader) Close() error {
	r.cancel()
	return nil
}

func (r *raidpReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if r.off >= r.end {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// fill reads the checksum block holding r.off and keeps its part from
// r.off to the block's end (or r.end).
func (r *raidpReader) fill() error {
	spans := r.m.RAIDP.Spans
	for r.off >= r.base+spans[r.span].Length {
		r.base += spans[r.span].Length
		r.span++
	}
	sp := spans[r.span]
	in := r.off - r.base
	b := in / cairn.RAIDPBlock
	bOff := b * cairn.RAIDPBlock
	blk := make([]byte, min(cairn.RAIDPBlock, sp.Length-bOff))
	if err := r.readBlock(sp, bOff, blk); err != nil {
		return err
	}
	lo, hi := in-bOff, min(int64(len(blk)), r.end-r.base-bOff)
	r.buf = blk[lo:hi]
	r.off += hi - lo
	return nil
}

// readBlock reads one checksum block of sp from either replica, checking
// its CRC; after both fail it tries the group's current replicas (a
// re-mirror may have moved the superchunk).
func (r *raidpReader) readBlock(sp cairn.RAIDPSpan, bOff int64, blk []byte) error {
	want := sp.CRCs[bOff/cairn.RAIDPBlock]
	var errs []error
	try := func(disks [2]cairn.DiskID, slots [2]int) bool {
		for j := range 2 {
			err := r.rd.ReadRAIDP(r.ctx, disks[j], slots[j], blk, sp.Offset+bOff)
			if err == nil && crc32.Checksum(blk, castagnoli) == want {
				return true
			}
			if err == nil {
				err = fmt.Errorf("%w: superchunk %d at %d on %s: CRC mismatch", cairn.ErrCorrupt, sp.Superchunk, sp.Offset+bOff, disks[j])
			}
			errs = append(errs, err)
		}
		return false
	}
	if try(sp.Disks, sp.Slots) {
		return nil
	}
	if r.group == nil {
		g, err := r.c.RAIDPGroup(r.ctx)
		if err == nil && g.Name == r.m.RAIDP.Group && g.Generation != r.m.RAIDP.Generation {
			r.group = &g
		}
	}
	if r.group != nil {
		if d, s := raidpReplicas(r.group, sp); d != sp.Disks || s != sp.Slots {
			if try(d, s) {
				return nil
			}
		}
	}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s/%s: no replica of superchunk %d could be read: %w", cairn.ErrUnavailable, r.m.Bucket, r.m.Key, sp.Superchunk, errors.Join(errs...))
}
