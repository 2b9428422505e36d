package raidprun

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"

	"cairn/raidp"

	"golang.org/x/sync/errgroup"
)

// Disk is one disk of a RAIDP group as the executor uses it. ReadAt and
// Parity fill all of p or fail; Write is durable, with the disk's parity
// updated, when it returns nil. Implementations are safe for concurrent
// use. *lstor.Store satisfies it.
type Disk interface {
	ReadAt(slot int, p []byte, off int64) error
	Parity(p []byte, off int64) error
	Write(ctx context.Context, slot int, off int64, p []byte) error
}

// Config sizes a run.
type Config struct {
	// Size is the superchunk size (bytes); required.
	Size int64
	// Chunk is the bytes moved per step; 0 means DefaultChunk(Size).
	Chunk int
	// Parallel bounds the transfers (or rebuild sides) run at once; 0
	// means all.
	Parallel int
}

// RecoveryParallel is the transfers (or rebuild sides, or a stored
// plan's steps) a cluster's recovery runs at once (client.RecoverRAIDP):
// a re-mirroring's transfers have distinct receivers (the matching gives
// none two) and distinct senders (1-sharing), so they do not contend for
// a disk, and running them all at once is what the matching buys — at 4
// at a time, a naive plan that gave a receiver two superchunks seldom ran
// them together, and measured as fast. A group of N disks re-mirrors at
// most N−1 superchunks per step; 16 covers groups of 17 disks in one
// wave. Memory: pipelineBuffers chunks per transfer, 64 MiB at 1 MiB
// chunks.
const RecoveryParallel = 16

// DefaultChunk is the chunk a run of superchunks of size bytes moves per
// call: 1 MiB, or an eighth of the superchunk if that is smaller (at
// least 64 KiB). A transfer's time is its pipeline's (a chunk's reads,
// then its write, while others move) plus one chunk's trip through every
// stage; with fewer than about eight chunks that trip is a large share —
// a 4 MiB superchunk rebuilt from two sides in 1 MiB chunks moved two
// chunks per side and took 0.77-0.81 s, in 512 KiB chunks 0.54 s — while
// above 1 MiB a chunk only adds latency, and below it every call a disk
// that alternates two slots serves costs a seek (at 8 MiB superchunks,
// 512 KiB chunks rebuilt in 1.35 s against 1.20 s).
func DefaultChunk(size int64) int {
	return int(min(1<<20, max(64<<10, size/8)))
}

// ErrConfig: a size or chunk out of range, or a disk the plan names
// missing.
var ErrConfig = errors.New("raidprun: bad configuration")

func (c *Config) validate() error {
	if c.Chunk == 0 {
		c.Chunk = DefaultChunk(c.Size)
	}
	if c.Size <= 0 || c.Chunk < 0 || c.Parallel < 0 {
		return fmt.Errorf("%w: size %d, chunk %d, parallel %d", ErrConfig, c.Size, c.Chunk, c.Parallel)
	}
	return nil
}

func disk(disks map[int]Disk, d int) (Disk, error) {
	if x, ok := disks[d]; ok && x != nil {
		return x, nil
	}
	return nil, fmt.Errorf("%w: the plan needs disk %d", ErrConfig, d)
}

// Remirror runs a re-mirroring step: every transfer copies its superchunk
// from its sender's slot to its receiver's slot, transfers in parallel.
func Remirror(ctx context.Context, p raidp.Remirroring, disks map[int]Disk, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	if cfg.Parallel > 0 {
		g.SetLimit(cfg.Parallel)
	}
	for _, t := range p.Transfers {
		from, err := disk(disks, t.From.Disk)
		if err != nil {
			return err
		}
		to, err := disk(disks, t.To.Disk)
		if err != nil {
			return err
		}
		g.Go(func() error { return copySuperchunk(ctx, t, from, to, cfg) })
	}
	return g.Wait()
}

// Rebuild rebuilds the superchunk a dual failure lost into the plan's
// targets: each side XORs its Lstor's parity range with the same range of
// every mirror it names and writes it to its target, sides in parallel.
// It does nothing if the failed disks shared no superchunk. A split
// rebuild (p.Split) leaves each target with its half: Swap completes them.
func Rebuild(ctx context.Context, p raidp.DualPlan, disks map[int]Disk, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if !p.Shared {
		return nil
	}
	if len(p.Targets) != len(p.Sides) {
		return fmt.Errorf("%w: %d targets for %d rebuild sides", ErrConfig, len(p.Targets), len(p.Sides))
	}
	g, ctx := errgroup.WithContext(ctx)
	if cfg.Parallel > 0 {
		g.SetLimit(cfg.Parallel)
	}
	for i, side := range p.Sides {
		lst, mirrors, err := sideDisks(disks, side)
		if err != nil {
			return err
		}
		target, err := disk(disks, p.Targets[i].Disk)
		if err != nil {
			return err
		}
		g.Go(func() error { return rebuildSide(ctx, p.Lost, side, lst, mirrors, p.Targets[i], target, cfg) })
	}
	return g.Wait()
}

// Dual runs a whole dual-failure plan: the rebuild, the exchange of a
// split rebuild's halves, then the two re-mirroring steps in order.
func Dual(ctx context.Context, p raidp.DualPlan, disks map[int]Disk, cfg Config) error {
	if err := Rebuild(ctx, p, disks, cfg); err != nil {
		return err
	}
	if err := Remirror(ctx, raidp.Remirroring{Transfers: p.Swap}, disks, cfg); err != nil {
		return fmt.Errorf("exchanging the rebuilt halves: %w", err)
	}
	for i, step := range p.Remirror {
		if err := Remirror(ctx, step, disks, cfg); err != nil {
			return fmt.Errorf("re-mirroring step %d: %w", i+1, err)
		}
	}
	return nil
}

// copySuperchunk copies t's superchunk (or its range t.Off, t.Len), chunk
// by chunk, the read of a chunk overlapping the write of the one before
// (pipeline).
func copySuperchunk(ctx context.Context, t raidp.Transfer, from, to Disk, cfg Config) error {
	off, n := int64(0), cfg.Size
	if t.Len > 0 {
		off, n = t.Off, t.Len
	}
	if off < 0 || off+n > cfg.Size {
		return fmt.Errorf("%w: a copy of superchunk %d's bytes [%d, %d) of %d", ErrConfig, t.Superchunk, off, off+n, cfg.Size)
	}
	return pipeline(ctx, off, n, cfg.Chunk,
		func(p []byte, off int64) error {
			if err := from.ReadAt(t.From.Slot, p, off); err != nil {
				return fmt.Errorf("re-mirror superchunk %d: read disk %d: %w", t.Superchunk, t.From.Disk, err)
			}
			return nil
		},
		func(ctx context.Context, p []byte, off int64) error {
			if err := to.Write(ctx, t.To.Slot, off, p); err != nil {
				return fmt.Errorf("re-mirror superchunk %d: write disk %d: %w", t.Superchunk, t.To.Disk, err)
			}
			return nil
		})
}

// rebuildSide rebuilds the range of side into at (on disk target): the
// Lstor's parity XORed with the same range of every mirror. A chunk's
// reads (the Lstor and every mirror, each on another node) run at once,
// and overlap the reads and writes of other chunks (pipeline); the mirror
// buffers of a fill under way are its own, taken from pipelineWidth sets
// reused chunk after chunk.
func rebuildSide(ctx context.Context, lost int, side raidp.Side, lst Disk, mirrors []Disk, at raidp.Place, target Disk, cfg Config) error {
	sets := make(chan [][]byte, pipelineWidth)
	for range pipelineWidth {
		sets <- make([][]byte, len(mirrors)) // each buffer allocated on first use
	}
	return pipeline(ctx, side.Off, side.Len, cfg.Chunk,
		func(a []byte, off int64) error {
			bufs := <-sets // pipeline runs at most pipelineWidth fills at once
			defer func() { sets <- bufs }()
			for i := range bufs {
				if bufs[i] == nil {
					bufs[i] = make([]byte, cfg.Chunk)
				}
			}
			var g errgroup.Group
			g.Go(func() error {
				if err := lst.Parity(a, off); err != nil {
					return fmt.Errorf("rebuild superchunk %d: Lstor of disk %d: %w", lost, side.Lstor, err)
				}
				return nil
			})
			for i, r := range side.Reads {
				g.Go(func() error {
					if err := mirrors[i].ReadAt(r.Slot, bufs[i][:len(a)], off); err != nil {
						return fmt.Errorf("rebuild superchunk %d: read disk %d: %w", lost, r.Disk, err)
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				return err
			}
			for i := range mirrors {
				subtle.XORBytes(a, a, bufs[i][:len(a)])
			}
			return nil
		},
		func(ctx context.Context, a []byte, off int64) error {
			if err := target.Write(ctx, at.Slot, off, a); err != nil {
				return fmt.Errorf("rebuild superchunk %d: write disk %d: %w", lost, at.Disk, err)
			}
			return nil
		})
}

// pipelineWidth is the chunks one pipeline fills at once, and drains at
// once: a chunk's read answers only once the sender has read it off its
// disk, and a write only once the receiver has it durable, so one chunk
// in flight per stage leaves each link idle while the disk works; two
// keep it busy.
const pipelineWidth = 2

// pipelineBuffers is the chunk buffers one pipeline holds: pipelineWidth
// being filled while as many are drained.
const pipelineBuffers = 2 * pipelineWidth

// pipeline moves the n bytes from off in chunks of chunk bytes: fill reads
// a chunk into p (all of p), drain writes it. Up to pipelineWidth chunks
// are filled at once while up to pipelineWidth filled ones are drained, so
// a transfer runs at the pace of its slowest stage with each stage's
// round trips overlapped. Fills and drains start in chunk order (a chunk's
// waits until the one before has started): the first chunks are not held
// up behind later ones, and a receiver that appends gets its chunks in
// order, as far as its network lets them arrive. fill may be
// called concurrently with itself, and drain with itself.
//
// Memory: at most pipelineBuffers chunk buffers (plus what the fills keep
// of their own). Goroutines: one per chunk in flight, at most
// pipelineBuffers, all ended before pipeline returns. The first error
// ends the rest (drain's context is cancelled, a fill under way finishes
// its chunk, chunks not started are not) and is returned.
func pipeline(ctx context.Context, off, n int64, chunk int, fill func(p []byte, off int64) error, drain func(ctx context.Context, p []byte, off int64) error) error {
	g, ctx := errgroup.WithContext(ctx)
	bufs := make(chan []byte, pipelineBuffers)
	for range pipelineBuffers {
		bufs <- nil // allocated on first use: a short transfer needs fewer
	}
	fills := make(chan struct{}, pipelineWidth)
	drains := make(chan struct{}, pipelineWidth)
	// acquire takes a slot of sem, or fails once ctx is done.
	acquire := func(sem chan struct{}) error {
		select {
		case sem <- struct{}{}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Fills and drains start in chunk order: each chunk waits until the
	// previous one has started its fill (prevFill) or its drain (prev).
	prevFill, prev := make(chan struct{}), make(chan struct{})
	close(prevFill)
	close(prev)
	var stopped error
	for o := off; o < off+n; o += int64(chunk) {
		var p []byte
		select {
		case p = <-bufs:
		case <-ctx.Done():
			stopped = ctx.Err()
		}
		if stopped != nil {
			break
		}
		if p == nil {
			p = make([]byte, chunk)
		}
		fillTurn, filling := prevFill, make(chan struct{})
		turn, started := prev, make(chan struct{})
		prevFill, prev = filling, started
		g.Go(func() error {
			defer func() { bufs <- p }()
			q := p[:min(int64(chunk), off+n-o)]
			select {
			case <-fillTurn:
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := acquire(fills); err != nil {
				return err
			}
			close(filling)
			err := fill(q, o)
			<-fills
			if err != nil {
				return err
			}
			select {
			case <-turn:
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := acquire(drains); err != nil {
				return err
			}
			defer func() { <-drains }()
			close(started)
			return drain(ctx, q, o)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return stopped
}

// sideDisks returns the disks a rebuild side reads: its Lstor's and its
// mirrors, in the order of side.Reads.
func sideDisks(disks map[int]Disk, side raidp.Side) (Disk, []Disk, error) {
	lst, err := disk(disks, side.Lstor)
	if err != nil {
		return nil, nil, err
	}
	mirrors := make([]Disk, len(side.Reads))
	for i, r := range side.Reads {
		if mirrors[i], err = disk(disks, r.Disk); err != nil {
			return nil, nil, err
		}
	}
	return lst, mirrors, nil
}
