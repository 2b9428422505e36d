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
	// Chunk is the bytes moved per step; 0 means 1 MiB.
	Chunk int
	// Parallel bounds the transfers (or rebuild sides) run at once; 0
	// means all.
	Parallel int
}

// ErrConfig: a size or chunk out of range, or a disk the plan names
// missing.
var ErrConfig = errors.New("raidprun: bad configuration")

func (c *Config) validate() error {
	if c.Chunk == 0 {
		c.Chunk = 1 << 20
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
// and overlap the write of the chunk before (pipeline); its mirror buffers
// are the filling goroutine's own, reused chunk after chunk.
func rebuildSide(ctx context.Context, lost int, side raidp.Side, lst Disk, mirrors []Disk, at raidp.Place, target Disk, cfg Config) error {
	bufs := make([][]byte, len(mirrors))
	for i := range bufs {
		bufs[i] = make([]byte, cfg.Chunk)
	}
	return pipeline(ctx, side.Off, side.Len, cfg.Chunk,
		func(a []byte, off int64) error {
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

// pipelineDepth is the chunk buffers one pipeline holds: one being
// filled, one waiting, one being drained.
const pipelineDepth = 3

// pipeline moves the n bytes from off in chunks of chunk bytes, in order:
// fill reads a chunk into p (all of p), drain writes it. One goroutine
// fills while another drains the chunk before, so a transfer runs at the
// pace of the slower side rather than of the two added. Memory: at most
// pipelineDepth chunk buffers (plus what fill keeps of its own). Both
// goroutines are the pipeline's and end before it returns; the first
// error ends both (drain's context is cancelled, a fill under way
// finishes its chunk) and is returned.
func pipeline(ctx context.Context, off, n int64, chunk int, fill func(p []byte, off int64) error, drain func(ctx context.Context, p []byte, off int64) error) error {
	type filled struct {
		p   []byte
		off int64
	}
	free := make(chan []byte, pipelineDepth)
	for range pipelineDepth {
		free <- make([]byte, chunk)
	}
	full := make(chan filled, pipelineDepth-2)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(full)
		for o := off; o < off+n; o += int64(chunk) {
			var p []byte
			select {
			case p = <-free:
			case <-ctx.Done():
				return ctx.Err()
			}
			p = p[:min(int64(chunk), off+n-o)]
			if err := fill(p, o); err != nil {
				return err
			}
			select {
			case full <- filled{p, o}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error {
		for c := range full {
			if err := drain(ctx, c.p, c.off); err != nil {
				return err
			}
			free <- c.p[:cap(c.p)]
		}
		return nil
	})
	return g.Wait()
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
