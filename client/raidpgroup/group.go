package raidpgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"cairn/raidp"

	"golang.org/x/sync/errgroup"
)

// Disk is one disk of the group. Write and Zero are durable (with the
// disk's parity updated) when they return nil; ReadAt fills p or fails.
// Implementations are safe for concurrent use.
type Disk interface {
	ReadAt(slot int, p []byte, off int64) error
	Write(ctx context.Context, slot int, off int64, p []byte) error
	Zero(ctx context.Context, slot int, off, n int64) error
}

// ErrExtent: an extent outside the group's superchunks, or a buffer whose
// length is not the extents' total.
var ErrExtent = errors.New("raidpgroup: bad extents")

// Group writes and reads objects in one RAIDP group. Safe for concurrent
// use.
type Group struct {
	size  int64
	disks map[int]Disk

	mu     sync.Mutex // guards the fields below
	layout raidp.Layout
	byID   map[int]raidp.Superchunk
	packer *raidp.Packer
	// divergent are extents whose replicas may differ (see reconcile).
	divergent []raidp.Extent
	opts      Options
	backlog   []raidp.Extent // lazy deletes not zeroed yet, oldest first
}

// Deletes selects how the group zeroes deleted extents: Lazy (the
// paper's baseline, the default) queues them for Idle, Online zeroes them
// at once. Either way both replicas of a range are zeroed together, by the
// group, so they never differ for longer than the two zeroing writes
// (docs/design/raidp.md, "Replicas must agree").
type Deletes int

const (
	Lazy Deletes = iota
	Online
)

// Options tune a group; the zero value is lazy deletes with a backlog of
// 1024 extents.
type Options struct {
	Deletes Deletes
	// Backlog bounds the lazy deletes queued; when full, Delete zeroes the
	// oldest first. 0 means 1024.
	Backlog int
}

// New returns a group over l with superchunks of size bytes and its disks
// by layout index; every superchunk starts empty.
func New(l raidp.Layout, size int64, disks map[int]Disk, opts ...Options) (*Group, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	var ids []int
	for _, s := range l.Superchunks {
		ids = append(ids, s.ID)
		for _, p := range s.Replicas {
			if disks[p.Disk] == nil {
				return nil, fmt.Errorf("%w: superchunk %d is on disk %d, which is not given", ErrExtent, s.ID, p.Disk)
			}
		}
	}
	pk, err := raidp.NewPacker(size, ids)
	if err != nil {
		return nil, err
	}
	g := &Group{size: size, disks: disks, packer: pk}
	if len(opts) > 0 {
		g.opts = opts[0]
	}
	if g.opts.Backlog == 0 {
		g.opts.Backlog = 1024
	}
	if g.opts.Backlog < 0 || g.opts.Deletes != Lazy && g.opts.Deletes != Online {
		return nil, fmt.Errorf("%w: options %+v", ErrExtent, g.opts)
	}
	g.setLayoutLocked(l)
	return g, nil
}

func (g *Group) setLayoutLocked(l raidp.Layout) {
	g.layout = l
	g.byID = make(map[int]raidp.Superchunk)
	for _, s := range l.Superchunks {
		g.byID[s.ID] = s
	}
}

// SetLayout installs the layout after a recovery (the same superchunks,
// some replicas moved); disks names the disks of the new layout (it may
// add receivers; nil keeps the current set).
func (g *Group) SetLayout(l raidp.Layout, disks map[int]Disk) error {
	if err := l.Check(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if disks != nil {
		g.disks = disks
	}
	g.setLayoutLocked(l)
	return nil
}

// Divert stops (on) or resumes writes to a superchunk (while it is rebuilt
// after a dual failure).
func (g *Group) Divert(superchunk int, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.packer.Divert(superchunk, on)
}

// replicas returns the two places of an extent's superchunk.
func (g *Group) replicas(e raidp.Extent) ([2]raidp.Place, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.byID[e.Superchunk]
	if !ok || e.Off < 0 || e.Len <= 0 || e.Off+e.Len > g.size {
		return [2]raidp.Place{}, fmt.Errorf("%w: %+v", ErrExtent, e)
	}
	return s.Replicas, nil
}

func (g *Group) disk(d int) Disk {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.disks[d]
}

// Put stores data and returns its extents. Every extent goes to both
// replicas of its superchunk in parallel; Put returns nil only when all
// are durable, parity included. On error the extents stay allocated and
// are counted dead.
func (g *Group) Put(ctx context.Context, data []byte) ([]raidp.Extent, error) {
	g.mu.Lock()
	es, err := g.packer.Place(int64(len(data)))
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	reps := make([][2]raidp.Place, len(es))
	for i, e := range es {
		if reps[i], err = g.replicas(e); err != nil {
			return nil, err
		}
	}
	eg, ectx := errgroup.WithContext(ctx)
	var off int64
	for i, e := range es {
		part := data[off : off+e.Len]
		off += e.Len
		for _, p := range reps[i] {
			d := g.disk(p.Disk)
			eg.Go(func() error {
				if err := d.Write(ectx, p.Slot, e.Off, part); err != nil {
					return fmt.Errorf("put: superchunk %d on disk %d: %w", e.Superchunk, p.Disk, err)
				}
				return nil
			})
		}
	}
	if err := eg.Wait(); err != nil {
		g.mu.Lock()
		ferr := g.packer.Free(es)
		g.mu.Unlock()
		return nil, errors.Join(err, ferr, g.reconcile(ctx, es))
	}
	return es, nil
}

// reconcile zeroes the extents of a failed Put on both replicas: one
// replica may hold the new bytes and the other not, and replicas that
// differ, even in dead bytes, would make a dual-failure rebuild of a
// superchunk sharing their offsets wrong (Lstor ⊕ mirrors). Extents it
// cannot zero on every replica are kept in Divergent, to be made equal
// before any rebuild.
func (g *Group) reconcile(ctx context.Context, es []raidp.Extent) error {
	return g.zeroBoth(ctx, es)
}

// Divergent returns the extents whose replicas may differ because a
// failed Put could not be undone on every replica (a disk was down).
func (g *Group) Divergent() []raidp.Extent {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.divergent)
}

// Get reads an object's extents into p (len(p) must be their total),
// each from its first replica, or from the second if the first fails.
func (g *Group) Get(ctx context.Context, es []raidp.Extent, p []byte) error {
	var off int64
	for _, e := range es {
		if err := ctx.Err(); err != nil {
			return err
		}
		if off+e.Len > int64(len(p)) {
			return fmt.Errorf("%w: buffer of %d bytes for more", ErrExtent, len(p))
		}
		reps, err := g.replicas(e)
		if err != nil {
			return err
		}
		part := p[off : off+e.Len]
		var errs []error
		for _, r := range reps {
			err := g.disk(r.Disk).ReadAt(r.Slot, part, e.Off)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, fmt.Errorf("disk %d: %w", r.Disk, err))
		}
		if len(errs) > 0 {
			return fmt.Errorf("get: superchunk %d: %w", e.Superchunk, errors.Join(errs...))
		}
		off += e.Len
	}
	if off != int64(len(p)) {
		return fmt.Errorf("%w: extents of %d bytes for a buffer of %d", ErrExtent, off, len(p))
	}
	return nil
}

// Delete declares an object's extents dead: Online zeroes them now on both
// replicas; Lazy queues them for Idle (zeroing the oldest queued extent
// first if the backlog is full).
func (g *Group) Delete(ctx context.Context, es []raidp.Extent) error {
	for _, e := range es {
		if _, err := g.replicas(e); err != nil {
			return err
		}
	}
	g.mu.Lock()
	if err := g.packer.Free(es); err != nil {
		g.mu.Unlock()
		return err
	}
	if g.opts.Deletes == Online {
		g.mu.Unlock()
		return g.zeroBoth(ctx, es)
	}
	var flush []raidp.Extent
	g.backlog = append(g.backlog, es...)
	if over := len(g.backlog) - g.opts.Backlog; over > 0 {
		flush = slices.Clone(g.backlog[:over])
		g.backlog = g.backlog[over:]
	}
	g.mu.Unlock()
	return g.zeroBoth(ctx, flush)
}

// Backlog returns the number of lazily deleted extents not zeroed yet.
func (g *Group) Backlog() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.backlog)
}

// Idle zeroes the queued lazy deletes, oldest first, both replicas of each
// together, until none is left or ctx ends. A rebuild after a dual failure
// needs no Idle first: a queued extent is still intact on every replica.
func (g *Group) Idle(ctx context.Context) error {
	for {
		g.mu.Lock()
		if len(g.backlog) == 0 {
			g.mu.Unlock()
			return nil
		}
		e := g.backlog[0]
		g.backlog = g.backlog[1:]
		g.mu.Unlock()
		if err := g.zeroBoth(ctx, []raidp.Extent{e}); err != nil {
			return err
		}
	}
}

// zeroBoth zeroes extents on both replicas, in parallel per extent; an
// extent that cannot be zeroed on every replica is recorded as divergent.
func (g *Group) zeroBoth(ctx context.Context, es []raidp.Extent) error {
	var errs []error
	for _, e := range es {
		reps, err := g.replicas(e)
		if err != nil {
			return err
		}
		eg, ectx := errgroup.WithContext(ctx)
		for _, p := range reps {
			d := g.disk(p.Disk)
			eg.Go(func() error {
				if err := d.Zero(ectx, p.Slot, e.Off, e.Len); err != nil {
					return fmt.Errorf("zero superchunk %d on disk %d: %w", e.Superchunk, p.Disk, err)
				}
				return nil
			})
		}
		if err := eg.Wait(); err != nil {
			errs = append(errs, err)
			g.mu.Lock()
			g.divergent = append(g.divergent, e)
			g.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// Compactable returns the superchunks whose dead share of their written
// bytes is at least minDead, most dead first (raidp.Packer.Compactable).
func (g *Group) Compactable(minDead float64) []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.packer.Compactable(minDead)
}

// Relocate copies an object to new extents (outside diverted
// superchunks) and returns them. Compaction of a superchunk: Divert it,
// Relocate each live object in it, switch the object's references to the
// new extents, Delete the old ones, then Reclaim the superchunk.
func (g *Group) Relocate(ctx context.Context, es []raidp.Extent) ([]raidp.Extent, error) {
	var n int64
	for _, e := range es {
		n += e.Len
	}
	buf := make([]byte, n)
	if err := g.Get(ctx, es, buf); err != nil {
		return nil, err
	}
	return g.Put(ctx, buf)
}

// Reclaim zeroes a superchunk whose bytes are all dead on both replicas
// (data, parity and high-water mark: appends there skip the old-data read
// again) and opens it for writes again. It refuses a superchunk with live
// bytes (raidp.ErrExtent).
func (g *Group) Reclaim(ctx context.Context, superchunk int) error {
	g.mu.Lock()
	fill, dead := g.packer.Usage(superchunk)
	_, ok := g.byID[superchunk]
	g.mu.Unlock()
	if !ok || fill != dead {
		return fmt.Errorf("%w: superchunk %d has %d live bytes", raidp.ErrExtent, superchunk, fill-dead)
	}
	if fill > 0 {
		if err := g.zeroBoth(ctx, []raidp.Extent{{Superchunk: superchunk, Off: 0, Len: fill}}); err != nil {
			return fmt.Errorf("reclaim: %w", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// Queued lazy deletes in it are zero now; Idle must not zero the
	// objects placed there after the reclaim.
	g.backlog = slices.DeleteFunc(g.backlog, func(e raidp.Extent) bool { return e.Superchunk == superchunk })
	if err := g.packer.Reset(superchunk); err != nil {
		return err
	}
	g.packer.Divert(superchunk, false)
	return nil
}
