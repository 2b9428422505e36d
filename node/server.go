package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"cairn"
	"cairn/internal/linkshape"
	"cairn/internal/vfs"
	"cairn/node/volume"
)

// Registry is the part of the metadata store (meta.Store) a node uses: it
// registers itself and its disks and keeps a liveness lease. Declared here,
// by its consumer; meta.Store satisfies it.
type Registry interface {
	// PutNode registers or updates the node.
	PutNode(ctx context.Context, n cairn.Node) error
	// PutDisk registers or updates a disk (capacity, free space, path); it
	// keeps an existing disk's state.
	PutDisk(ctx context.Context, d cairn.Disk) error
	// KeepAlive announces holder alive for ttl and returns once it is;
	// renewal runs in the background until ctx ends.
	KeepAlive(ctx context.Context, holder string, ttl time.Duration) error
}

// DiskConfig is one disk a node serves.
type DiskConfig struct {
	ID   cairn.DiskID
	Path string // the volume directory; created and formatted if missing or empty
	FS   vfs.FS // nil: the OS
	// NoFormat refuses to format a missing or empty directory (Start
	// fails with volume.ErrNotVolume): for disks that must already exist,
	// e.g. a mount point whose device failed to mount.
	NoFormat bool
}

// Config configures a Server. Validate fills the defaults.
type Config struct {
	Node   cairn.NodeID // required
	Secret string       // cluster secret; required
	Disks  []DiskConfig // at least one
	Labels cairn.Labels // failure-domain labels registered with the node

	// Listen is the address to listen on (default "127.0.0.1:0").
	Listen string
	// Advertise is the address registered for other processes to reach
	// this node (default: the listener's address).
	Advertise string
	// Registry, if set, gets the node and its disks and the node's lease.
	Registry Registry
	// LeaseTTL is the liveness lease's time to live (default 10s).
	LeaseTTL time.Duration
	// RefreshInterval is how often disk space is re-registered and stale
	// temporary files are swept (default 30s); it also bounds each
	// re-registration.
	RefreshInterval time.Duration
	// RefreshTicks, if set, drives the refresh instead of a RefreshInterval
	// ticker: one refresh per value received, at that time. For tests that
	// step the loop: it receives only between refreshes, and not at all
	// after Close.
	RefreshTicks <-chan time.Time
	// TmpMaxAge: temporary files untouched for longer are removed by the
	// sweep (default 1h).
	TmpMaxAge time.Duration
	// MaxShardSize bounds one shard (default volume.DefaultMaxShardSize).
	MaxShardSize int64
	// MinFree is the free space below which PUTs fail with ErrNoSpace
	// (default 0: only a real ENOSPC).
	MinFree int64
	// IdleTimeout ends a transfer that makes no progress (default 1m).
	IdleTimeout time.Duration
	// HTTPClient makes the node's requests to other nodes (repair: push
	// forwarding, PUTs to remote targets, pull fetches); nil: a default
	// pooled client (see HandlerConfig.HTTPClient). With LinkRate, its
	// Transport must be nil or an *http.Transport (a shaped copy is used).
	HTTPClient *http.Client
	// LinkRate, in bytes per second, shapes the node's network link for
	// repair experiments: all bytes the node receives, and separately all
	// bytes it sends, over every connection — accepted by its listener or
	// made by its own HTTP client — share one token bucket per direction.
	// 0: unlimited.
	LinkRate int64
	// RepairRate caps the repair data the node computes per second
	// (HandlerConfig.RepairRate; 0: unlimited).
	RepairRate int64
	// Logger (nil: discarded).
	Logger *slog.Logger
}

// Validate checks c and fills its defaults. Errors wrap cairn.ErrInvalid.
func (c *Config) Validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("node config: %w: %s", cairn.ErrInvalid, fmt.Sprintf(f, a...))
	}
	switch {
	case c.Node == "":
		return bad("no node ID")
	case c.Secret == "":
		return bad("no cluster secret")
	case len(c.Disks) == 0:
		return bad("no disks")
	}
	seen := map[cairn.DiskID]bool{}
	for _, d := range c.Disks {
		if d.ID == "" || d.Path == "" {
			return bad("disk %q at %q: need an ID and a path", d.ID, d.Path)
		}
		if seen[d.ID] {
			return bad("disk %s listed twice", d.ID)
		}
		seen[d.ID] = true
	}
	if c.LinkRate < 0 || c.RepairRate < 0 {
		return bad("negative link or repair rate %d, %d", c.LinkRate, c.RepairRate)
	}
	if c.LinkRate > 0 && c.HTTPClient != nil {
		if _, ok := c.HTTPClient.Transport.(*http.Transport); !ok && c.HTTPClient.Transport != nil {
			return bad("link shaping needs an *http.Transport in HTTPClient, not %T", c.HTTPClient.Transport)
		}
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = 30 * time.Second
	}
	if c.TmpMaxAge <= 0 {
		c.TmpMaxAge = time.Hour
	}
	if c.MaxShardSize <= 0 {
		c.MaxShardSize = volume.DefaultMaxShardSize
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Server is a storage node: it owns its volumes, serves the node protocol
// on a listener, and keeps its registration and lease in the Registry.
//
// Lifecycle: NewServer, Start (opens the disks, listens, registers, starts
// the goroutines), Close (stops them and waits). Every goroutine is started
// by Start and stopped by Close through cancel + wait.
type Server struct {
	cfg Config
	log *slog.Logger

	vols    []*volume.Volume
	handler *Handler
	ln      net.Listener
	http    *http.Server

	ctx    context.Context // lives from Start to Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	started bool // guarded by mu
	closed  bool // guarded by mu
}

// NewServer validates cfg (filling defaults) and returns an unstarted
// server.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, log: cfg.Logger.With("node", string(cfg.Node))}, nil
}

// Start opens (formatting new) volumes, listens, serves, and registers the
// node and its disks, then keeps the lease and refreshes disk space until
// Close. ctx bounds Start itself, not the server's life. On error
// everything started is stopped again.
func (s *Server) Start(ctx context.Context) (err error) {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("node: Start called twice or after Close")
	}
	s.started = true
	s.mu.Unlock()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	for _, d := range s.cfg.Disks {
		v, err := volume.Open(d.Path, volume.Options{
			FS: d.FS, DiskID: d.ID, Create: !d.NoFormat, MaxShardSize: s.cfg.MaxShardSize,
			MinFree: s.cfg.MinFree, Logger: s.log,
		})
		if err != nil {
			return fmt.Errorf("node %s: %w", s.cfg.Node, err)
		}
		s.vols = append(s.vols, v)
	}
	hc := s.cfg.HTTPClient
	var link *linkshape.Link
	if s.cfg.LinkRate > 0 {
		if hc == nil {
			hc = defaultHTTPClient()
		}
		link = linkshape.New(s.cfg.LinkRate, linkshape.WallClock{})
		hc = link.Client(hc)
	}
	s.handler, err = NewHandler(HandlerConfig{
		Node: s.cfg.Node, Secret: s.cfg.Secret, Volumes: s.vols, MaxShardSize: s.cfg.MaxShardSize,
		IdleTimeout: s.cfg.IdleTimeout, HTTPClient: hc, RepairRate: s.cfg.RepairRate, Logger: s.log,
	})
	if err != nil {
		return err
	}
	s.ln, err = net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("node %s: listen: %w", s.cfg.Node, err)
	}
	if link != nil {
		s.ln = link.Listener(s.ln)
	}
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("node: serve stopped", "err", err)
		}
	}()
	if s.cfg.Advertise == "" {
		s.cfg.Advertise = s.ln.Addr().String()
	}
	if r := s.cfg.Registry; r != nil {
		if err := r.PutNode(ctx, cairn.Node{ID: s.cfg.Node, Addr: s.cfg.Advertise, Labels: s.cfg.Labels}); err != nil {
			return fmt.Errorf("node %s: register: %w", s.cfg.Node, err)
		}
		if err := s.putDisks(ctx, time.Now()); err != nil {
			return err
		}
		if err := s.keepAlive(ctx); err != nil {
			return err
		}
	}
	s.wg.Add(1)
	go s.refreshLoop()
	s.log.Info("node started", "addr", s.cfg.Advertise, "disks", len(s.vols))
	return nil
}

// keepAlive starts the lease under the server's life context, waiting for
// the announcement at most until ctx (Start's) ends.
func (s *Server) keepAlive(ctx context.Context) error {
	done := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		done <- s.cfg.Registry.KeepAlive(s.ctx, string(s.cfg.Node), s.cfg.LeaseTTL)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("node %s: liveness lease: %w", s.cfg.Node, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node %s: liveness lease: %w", s.cfg.Node, ctx.Err())
	}
}

// putDisks registers every disk with its current space; new disks are up.
func (s *Server) putDisks(ctx context.Context, now time.Time) error {
	for _, v := range s.vols {
		u, err := v.Usage()
		if err != nil {
			s.log.Warn("disk usage", "disk", string(v.ID()), "err", err)
		}
		d := cairn.Disk{ID: v.ID(), Node: s.cfg.Node, Path: v.Dir(), Capacity: u.Capacity, Free: u.Free, FS: u.FS,
			State: cairn.DiskUp, Since: now}
		if herr := v.Health(); herr != nil {
			d.Fault = herr.Error()
			s.log.Warn("disk fault reported to the director", "disk", string(v.ID()), "err", herr)
		}
		if err := s.cfg.Registry.PutDisk(ctx, d); err != nil {
			return fmt.Errorf("node %s: register disk %s: %w", s.cfg.Node, v.ID(), err)
		}
	}
	return nil
}

// refreshLoop re-registers disk space and sweeps stale temporary files
// every RefreshInterval (or RefreshTicks) until Close.
func (s *Server) refreshLoop() {
	defer s.wg.Done()
	ticks := s.cfg.RefreshTicks
	if ticks == nil {
		t := time.NewTicker(s.cfg.RefreshInterval)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-ticks:
			s.refresh(now)
		}
	}
}

func (s *Server) refresh(now time.Time) {
	if s.cfg.Registry != nil {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RefreshInterval)
		if err := s.putDisks(ctx, now); err != nil && s.ctx.Err() == nil {
			s.log.Warn("refreshing disk registration failed", "err", err)
		}
		cancel()
	}
	for _, v := range s.vols {
		removed, err := v.SweepTmp(now.Add(-s.cfg.TmpMaxAge))
		if err != nil {
			s.log.Warn("sweeping temporary files failed", "disk", string(v.ID()), "err", err)
		}
		if len(removed) > 0 {
			s.log.Info("removed stale temporary files", "disk", string(v.ID()), "count", len(removed))
		}
	}
}

// Addr returns the advertised address (after Start).
func (s *Server) Addr() string { return s.cfg.Advertise }

// Handler returns the node protocol handler (after Start).
func (s *Server) Handler() *Handler { return s.handler }

// Volumes returns the open volumes (after Start), in Config order.
func (s *Server) Volumes() []*volume.Volume { return s.vols }

// Close stops serving (in-flight requests are cancelled: their context is
// the server's), stops the lease renewal and the refresh loop, waits for
// every goroutine, and closes the volumes. The lease entry then expires
// after LeaseTTL, as if the process had died. Idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if !started {
		return nil
	}
	s.cancel()
	var err error
	if s.http == nil && s.ln != nil {
		err = s.ln.Close()
	}
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err = s.http.Shutdown(ctx); err != nil {
			err = s.http.Close()
		}
		cancel()
	}
	s.wg.Wait()
	for _, v := range s.vols {
		_ = v.Close()
	}
	return err
}
