package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"cairn"
	"cairn/internal/retry"
)

// Store is the part of the metadata store the worker uses; meta.Store
// satisfies it (see there for each contract).
type Store interface {
	Cleanups(ctx context.Context, until time.Time, limit int) ([]cairn.Cleanup, error)
	PutCleanup(ctx context.Context, c cairn.Cleanup) error
	DeleteCleanup(ctx context.Context, id string) error
}

// Deleter deletes shard files; *node.Client satisfies it. DeleteShard
// returns an error wrapping cairn.ErrNotFound if the file (or its disk,
// in the cluster map) is not there: nothing is left to delete.
type Deleter interface {
	DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error
}

// Defaults of Config.
const (
	// DefaultGrace is longer than any GET the gateway's timeouts let run
	// without moving data: a read that started before an overwrite or a
	// delete has this long to finish.
	DefaultGrace       = 15 * time.Minute
	DefaultRate        = 200 // files per second
	DefaultParallel    = 16
	DefaultPage        = 100
	DefaultMaxAttempts = 48
)

// DefaultBackoff is the wait before a record that left files behind is
// tried again: 30 s, doubling to at most an hour.
var DefaultBackoff = retry.Policy{Base: 30 * time.Second, Max: time.Hour}

// fileRetries retries one delete after a transient error (a node
// restarting) before the record is re-queued.
var fileRetries = retry.Policy{Attempts: 2, Base: time.Second}

// Config configures a Worker. Zero values take the defaults.
type Config struct {
	// Grace is how long dropped files stay before they are deleted
	// (DefaultGrace; negative: none, delete as soon as they are queued).
	Grace time.Duration
	// Rate caps the deletes per second over all records (DefaultRate).
	Rate float64
	// Parallel is how many deletes run at once (DefaultParallel).
	Parallel int
	// Page is how many records are read at a time (DefaultPage).
	Page int
	// Backoff gives the wait after a record's failed attempt i
	// (DefaultBackoff; its Attempts is unused).
	Backoff retry.Policy
	// MaxAttempts drops a record after this many failed attempts
	// (DefaultMaxAttempts): its files are left to the orphan collector.
	MaxAttempts int
	Logger      *slog.Logger
}

func (c *Config) validate() {
	switch {
	case c.Grace == 0:
		c.Grace = DefaultGrace
	case c.Grace < 0:
		c.Grace = 0
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Parallel <= 0 {
		c.Parallel = DefaultParallel
	}
	if c.Page <= 0 {
		c.Page = DefaultPage
	}
	if c.Backoff.Base <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Stats counts what Run did.
type Stats struct {
	Deleted  int // files deleted (or found gone)
	Done     int // records finished
	Requeued int // records with files left, queued again
	Dropped  int // records given up after MaxAttempts
}

// Worker deletes queued files. Run is safe to call from one goroutine at
// a time (the director's duty).
type Worker struct {
	store Store
	del   Deleter
	cfg   Config
	limit *rate.Limiter
}

// New returns a worker over a store and a deleter.
func New(store Store, del Deleter, cfg Config) *Worker {
	cfg.validate()
	return &Worker{store: store, del: del, cfg: cfg, limit: rate.NewLimiter(rate.Limit(cfg.Rate), max(1, int(cfg.Rate)))}
}

// Grace returns the grace period the worker keeps.
func (w *Worker) Grace() time.Duration { return w.cfg.Grace }

// Run works the records due at now (Since at or before now − Grace), a
// page at a time, oldest first, until none is left, ctx ends (the records
// of the page in progress stay as they were) or a metadata call fails
// (its error is returned).
func (w *Worker) Run(ctx context.Context, now time.Time) (Stats, error) {
	var st Stats
	until := now.Add(-w.cfg.Grace)
	for {
		page, err := w.store.Cleanups(ctx, until, w.cfg.Page)
		if err != nil || len(page) == 0 {
			return st, err
		}
		errs, err := w.deleteFiles(ctx, page)
		if err != nil {
			return st, err
		}
		for i, c := range page {
			if err := w.settle(ctx, now, c, errs[i], &st); err != nil {
				return st, err
			}
		}
	}
}

// deleteFiles deletes the files of a page's records, paced and in
// parallel; errs[i][j] is the outcome of page[i].Files[j] (nil: gone).
// It stops early, with an error, when ctx ends or when the pace could not
// be kept before ctx's deadline (rate.Limiter refuses such a wait at once,
// before ctx.Err is set); the page's records then stay queued as they are.
func (w *Worker) deleteFiles(ctx context.Context, page []cairn.Cleanup) ([][]error, error) {
	errs := make([][]error, len(page))
	var g errgroup.Group // not WithContext: one failed delete stops no other
	g.SetLimit(w.cfg.Parallel)
	for i, c := range page {
		errs[i] = make([]error, len(c.Files))
		for j, f := range c.Files {
			if err := w.limit.Wait(ctx); err != nil {
				_ = g.Wait()
				return nil, fmt.Errorf("cleanup stopped: %w", err)
			}
			g.Go(func() error {
				errs[i][j] = retry.Do(ctx, fileRetries, func(ctx context.Context) error {
					err := w.del.DeleteShard(ctx, f.Disk, f.Name)
					if errors.Is(err, cairn.ErrNotFound) {
						return nil
					}
					return err
				})
				return nil
			})
		}
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return errs, nil
}

// settle removes a record whose files are all gone, or queues its files
// left again after a backoff, or drops it after MaxAttempts.
func (w *Worker) settle(ctx context.Context, now time.Time, c cairn.Cleanup, errs []error, st *Stats) error {
	var left []cairn.ShardFile
	var last error
	for j, err := range errs {
		if err != nil {
			left, last = append(left, c.Files[j]), err
		}
	}
	st.Deleted += len(c.Files) - len(left)
	switch {
	case len(left) == 0:
		st.Done++
	case c.Attempts+1 >= w.cfg.MaxAttempts:
		st.Dropped++
		w.cfg.Logger.Warn("cleanup: giving up on shard files; the orphan collector will find them",
			"reason", c.Reason, "bucket", c.Bucket, "key", c.Key, "files", len(left), "attempts", c.Attempts+1, "err", last)
	default:
		st.Requeued++
		next := c
		next.Files, next.Attempts, next.LastError = left, c.Attempts+1, last.Error()
		// Due again after the backoff: Since + Grace = now + backoff.
		next.Since = now.Add(w.cfg.Backoff.Delay(c.Attempts) - w.cfg.Grace)
		if err := w.store.PutCleanup(ctx, next); err != nil {
			return fmt.Errorf("re-queueing cleanup %s: %w", c.ID, err)
		}
		w.cfg.Logger.Info("cleanup: shard files left; will retry", "reason", c.Reason, "bucket", c.Bucket, "key", c.Key,
			"files", len(left), "attempt", next.Attempts, "err", last)
	}
	// A re-queued record is in the queue twice until this delete: a crash
	// in between deletes its files twice, which is harmless.
	if err := w.store.DeleteCleanup(ctx, c.ID); err != nil && !errors.Is(err, cairn.ErrNotFound) {
		return fmt.Errorf("dequeueing cleanup %s: %w", c.ID, err)
	}
	return nil
}
