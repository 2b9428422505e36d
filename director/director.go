package director

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"cairn"
	"cairn/meta"
)

// Store is the part of the metadata store the director uses.
type Store interface {
	Disks(ctx context.Context) ([]cairn.Disk, error)
	Alive(ctx context.Context) ([]string, error)
	ChangeDisk(ctx context.Context, id cairn.DiskID, c cairn.DiskChange) (cairn.Disk, error)
	Campaign(ctx context.Context, role, id string) (meta.Leadership, error)
}

// Role is the election name the director campaigns under.
const Role = "director"

// Config configures a Director. Zero values take defaults.
type Config struct {
	ID       string        // this candidate's name (node or process ID); required
	Interval time.Duration // how often the leader checks liveness (default 2 s)
	Grace    time.Duration // suspect → down after this long (default 30 s)
	// LeaseGrace is how long a director that has just started leading
	// waits before it takes a node's missing liveness lease as a failure
	// (Input.LeaseFrom): when a cluster starts or restarts, the first
	// node up leads at once, before the others have taken their leases.
	// Default 10 s, the nodes' lease TTL.
	LeaseGrace time.Duration
	// Now reads the clock for Detect and the duties (default time.Now).
	// The loop's ticker is always the time package's, so a test drives
	// both on one virtual clock by running the director in a
	// testing/synctest bubble.
	Now    func() time.Time
	Logger *slog.Logger
	// OnTransition, if set, is called after each applied transition.
	OnTransition func(Transition)
	// Census, if set, returns the last census of shards per disk (the
	// repair scan's), which tells Detect when a replaced or draining disk
	// holds no shard any more. Without it such disks never leave down or
	// draining by themselves.
	Census func() Census
	// Duties are more periodic jobs only the leader runs (e.g. sweeping
	// abandoned multipart uploads).
	Duties []Duty
}

// Duty is a periodic job of the leader: Run is called with the time at
// most every Every (checked each Interval), first right after winning.
// Its ctx ends when leadership does.
//
// A Background duty runs in its own goroutine, so a long run (a repair
// round) does not hold up failure detection; it never overlaps itself:
// the next run is due Every after the previous one started, and waits for
// it to finish.
type Duty struct {
	Name       string
	Every      time.Duration
	Background bool
	Run        func(ctx context.Context, now time.Time) error
}

// Director campaigns for leadership and, while leader, applies Detect.
type Director struct {
	cfg    Config
	store  Store
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start starts campaigning in the background. Close stops it.
func Start(store Store, cfg Config) *Director {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.LeaseGrace <= 0 {
		cfg.LeaseGrace = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Director{cfg: cfg, store: store, cancel: cancel}
	d.wg.Go(func() { d.run(ctx) })
	return d
}

// Close stops the director and waits for it.
func (d *Director) Close() {
	d.cancel()
	d.wg.Wait()
}

func (d *Director) run(ctx context.Context) {
	for ctx.Err() == nil {
		lead, err := d.store.Campaign(ctx, Role, d.cfg.ID)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, meta.ErrClosed) {
				d.cfg.Logger.Warn("director: campaign failed; retrying", "err", err)
				sleep(ctx, d.cfg.Interval)
			}
			if errors.Is(err, meta.ErrClosed) {
				return
			}
			continue
		}
		d.cfg.Logger.Info("director: leading", "node", d.cfg.ID)
		d.lead(ctx, lead)
		_ = lead.Resign(context.WithoutCancel(ctx))
	}
}

func (d *Director) lead(ctx context.Context, lead meta.Leadership) {
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel() // ends the duties of this term
	go func() {
		select {
		case <-lead.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	last := make([]time.Time, len(d.cfg.Duties)) // zero: due at once
	running := make([]chan struct{}, len(d.cfg.Duties))
	leaseFrom := d.cfg.Now().Add(d.cfg.LeaseGrace)
	for {
		d.step(ctx, leaseFrom)
		for i, duty := range d.cfg.Duties {
			now := d.cfg.Now()
			if !last[i].IsZero() && now.Sub(last[i]) < duty.Every {
				continue
			}
			if running[i] != nil {
				select {
				case <-running[i]:
				default:
					continue // the previous run is still going
				}
			}
			last[i] = now
			if duty.Background {
				done := make(chan struct{})
				running[i] = done
				bg.Go(func() {
					defer close(done)
					d.runDuty(ctx, duty, now)
				})
				continue
			}
			d.runDuty(ctx, duty, now)
		}
		select {
		case <-ctx.Done():
			if isClosed(lead.Done()) {
				d.cfg.Logger.Warn("director: lost leadership")
			}
			return
		case <-t.C:
		}
	}
}

func (d *Director) runDuty(ctx context.Context, duty Duty, now time.Time) {
	if err := duty.Run(ctx, now); err != nil && ctx.Err() == nil {
		d.cfg.Logger.Warn("director: duty failed", "duty", duty.Name, "err", err)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// step runs one detection round; missing leases count from leaseFrom.
func (d *Director) step(ctx context.Context, leaseFrom time.Time) {
	disks, err := d.store.Disks(ctx)
	if err != nil {
		d.cfg.Logger.Warn("director: reading disks", "err", err)
		return
	}
	holders, err := d.store.Alive(ctx)
	if err != nil {
		d.cfg.Logger.Warn("director: reading liveness", "err", err)
		return
	}
	alive := make(map[string]bool, len(holders))
	for _, h := range holders {
		alive[h] = true
	}
	now := d.cfg.Now()
	in := Input{Disks: disks, Alive: alive, Now: now, Grace: d.cfg.Grace, LeaseFrom: leaseFrom}
	if d.cfg.Census != nil {
		in.Census = d.cfg.Census()
	}
	for _, tr := range Detect(in) {
		if _, err := d.store.ChangeDisk(ctx, tr.Disk, tr.Change(now)); err != nil {
			// ErrConflict: the operator changed the disk meanwhile; the
			// next round decides again.
			d.cfg.Logger.Warn("director: marking disk", "disk", tr.Disk, "to", tr.To, "err", err)
			continue
		}
		d.cfg.Logger.Warn("director: disk state changed", "disk", tr.Disk, "from", tr.From, "to", tr.To, "why", tr.Why)
		if d.cfg.OnTransition != nil {
			d.cfg.OnTransition(tr)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
