package volume

import (
	"context"
	"slices"
	"sync"

	"cairn/internal/vfs"
)

// Group commit bounds (docs/design/volume.md, "Group commit").
const (
	// GroupCommitMaxWrites bounds the writes one sync of the file system
	// makes durable; more wait for the next.
	GroupCommitMaxWrites = 128
	// GroupCommitMaxBytes bounds the file bytes one sync makes durable (a
	// write larger than this has a sync of its own), so one sync does not
	// wait for an unbounded amount of writeback.
	GroupCommitMaxBytes = 64 << 20
	// groupCommitMaxPending bounds the batches waiting for their sync;
	// a writer that finds them all full waits for room.
	groupCommitMaxPending = 4
)

// committer is a volume's group commit: writers that need what they wrote
// (a temporary file's data, a rename) to be durable join the pending
// batch and wait; one goroutine syncs the whole file system
// (vfs.SyncFS) once per batch, so writes arriving while a sync is in
// flight share the next one. A writer is answered only after a sync that
// began after it joined has returned: with nil if it succeeded. A failed
// sync fails its batch, every batch after it and every later join: the
// kernel may have dropped pages it could not write, and a later sync
// would not say so (the volume is broken, see Volume.syncFailed).
//
// Locking: mu is taken by writers and by run; fail (the volume's) is
// called without mu held.
type committer struct {
	d    vfs.File          // the volume's directory: the handle synced
	fail func(error) error // makes the volume broken; returns the error to report
	kick chan struct{}     // capacity 1: a batch is pending
	stop chan struct{}     // closed by close
	wg   sync.WaitGroup    // run

	mu      sync.Mutex
	pending []*batch      // guarded by mu: batches not yet being synced, oldest first
	space   chan struct{} // guarded by mu: closed (and replaced) when a batch leaves pending
	err     error         // guarded by mu: the first failed sync's error; sticky
}

// batch is the writes one sync makes durable.
type batch struct {
	writes int           // guarded by committer.mu
	bytes  int64         // guarded by committer.mu
	done   chan struct{} // closed once the sync returned
	err    error         // the sync's error; written before done is closed
}

func (b *batch) fits(n int64) bool {
	return b.writes < GroupCommitMaxWrites && (b.writes == 0 || b.bytes+n <= GroupCommitMaxBytes)
}

// startCommitter starts the group commit of the directory handle d (owned
// by the committer from now on: close closes it).
func startCommitter(d vfs.File, fail func(error) error) *committer {
	c := &committer{d: d, fail: fail, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		space: make(chan struct{})}
	c.wg.Add(1)
	go c.run()
	return c
}

// sync returns once everything the caller wrote before calling it is
// durable: nil after a successful sync of the file system that began
// after the call. n is the bytes the caller wrote that the sync must
// write back (0 for a rename). Errors: the failed sync's (then and from
// now on), ctx's error, ErrClosed.
func (c *committer) sync(ctx context.Context, n int64) error {
	var b *batch
	for b == nil {
		c.mu.Lock()
		if err := c.err; err != nil {
			c.mu.Unlock()
			return err
		}
		if k := len(c.pending); k > 0 && c.pending[k-1].fits(n) {
			b = c.pending[k-1]
		} else if k < groupCommitMaxPending {
			b = &batch{done: make(chan struct{})}
			c.pending = append(c.pending, b)
		}
		space := c.space
		if b != nil {
			b.writes++
			b.bytes += n
		}
		c.mu.Unlock()
		if b != nil {
			break
		}
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stop:
			return ErrClosed
		}
	}
	select {
	case c.kick <- struct{}{}:
	default: // run has a kick pending already
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stop:
		select {
		case <-b.done:
			return b.err
		default:
			return ErrClosed
		}
	}
}

// run syncs the pending batches one after the other until close.
func (c *committer) run() {
	defer c.wg.Done()
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		for {
			c.mu.Lock()
			if len(c.pending) == 0 {
				c.mu.Unlock()
				break
			}
			b := c.pending[0]
			c.pending = slices.Delete(c.pending, 0, 1)
			close(c.space)
			c.space = make(chan struct{})
			err := c.err
			c.mu.Unlock()
			if err == nil {
				if err = vfs.SyncFS(c.d); err != nil {
					err = c.fail(err)
					c.mu.Lock()
					if c.err == nil {
						c.err = err
					}
					err = c.err
					c.mu.Unlock()
				}
			}
			b.err = err
			close(b.done)
		}
	}
}

// close stops run (after the sync in flight, if any) and closes the
// directory handle. Writers still waiting get ErrClosed.
func (c *committer) close() error {
	close(c.stop)
	c.wg.Wait()
	return c.d.Close()
}
