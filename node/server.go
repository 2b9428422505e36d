package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"cairn"
	"cairn/internal/httpstop"
	"cairn/internal/linkshape"
	"cairn/internal/vfs"
	"cairn/node/lstor"
	"cairn/node/scrub"
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
	// e.g. a mount point whose device failed to mount. Without it, a
	// directory that vanishes while the node runs (rm -rf) is formatted
	// again at the next refresh: a new, empty volume with a new volume ID,
	// which the director treats as a replaced disk (docs/design/disks.md).
	NoFormat bool
	// Lstor, if set, is the directory of the disk's Lstor: the node then
	// also serves the disk's RAIDP slots (Path/raidp.data) with their
	// parity there (docs/design/raidp.md, "In the cluster"). Never Path
	// nor inside it (lstor.ErrSamePath).
	Lstor string
	// LstorFS is the file system of the RAIDP data and the Lstor (nil: the
	// OS); its files must overwrite in place (vfs.WriterAt). cairn node
	// gives it the disk's FS for raidp.data and the Lstor's own throttle
	// under the Lstor's path (vfs.Split): two devices.
	LstorFS vfs.FS
}

// DefaultRAIDPSize and DefaultRAIDPSlots are the RAIDP geometry of a disk
// with an Lstor when Config leaves it zero.
const (
	DefaultRAIDPSize  = 64 << 20
	DefaultRAIDPSlots = 16
)

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
	// TLS, if set, makes the node serve the protocol over TLS only, and
	// requires every client to present a certificate signed by
	// TLS.ClientCAs (ClientAuth must be tls.RequireAndVerifyClientCert:
	// mutual TLS). The node then registers "https://" + its address, so
	// that clients dial it over TLS, and HTTPClient (required) must present
	// this cluster's client certificate to the other nodes
	// (docs/design/node-protocol.md, "Transport security").
	TLS *tls.Config
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
	// Skew and ReplayEntries bound the request signatures' time window and
	// the nonces remembered within it (HandlerConfig; 0: the defaults).
	Skew          time.Duration
	ReplayEntries int
	// RAIDPSize and RAIDPSlots are the superchunk size and the slots of
	// every disk with an Lstor (0: DefaultRAIDPSize, DefaultRAIDPSlots).
	// An existing Lstor formatted with another geometry fails Start.
	RAIDPSize  int64
	RAIDPSlots int
	// Scrub configures the scrubber every disk runs (docs/design/scrub.md):
	// rate, share, pass interval. Its Busy is the handler's and its Store
	// the Registry when that also satisfies scrub.Store (meta.Store does);
	// without one, progress is kept in memory only.
	Scrub scrub.Config
	// NoScrub turns scrubbing off.
	NoScrub bool
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
	if c.RAIDPSize == 0 {
		c.RAIDPSize = DefaultRAIDPSize
	}
	if c.RAIDPSlots == 0 {
		c.RAIDPSlots = DefaultRAIDPSlots
	}
	if c.RAIDPSize < 0 || c.RAIDPSize%lstor.BlockSize != 0 || c.RAIDPSlots < 0 {
		return bad("RAIDP superchunk size %d (want a positive multiple of %d) or %d slots", c.RAIDPSize, lstor.BlockSize, c.RAIDPSlots)
	}
	if c.LinkRate < 0 || c.RepairRate < 0 {
		return bad("negative link or repair rate %d, %d", c.LinkRate, c.RepairRate)
	}
	if c.LinkRate > 0 && c.HTTPClient != nil {
		if _, ok := c.HTTPClient.Transport.(*http.Transport); !ok && c.HTTPClient.Transport != nil {
			return bad("link shaping needs an *http.Transport in HTTPClient, not %T", c.HTTPClient.Transport)
		}
	}
	if c.TLS != nil {
		switch {
		case c.TLS.ClientAuth != tls.RequireAndVerifyClientCert || c.TLS.ClientCAs == nil:
			return bad("TLS needs ClientAuth RequireAndVerifyClientCert and ClientCAs: nodes take only clients with a cluster certificate")
		case len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil:
			return bad("TLS has no certificate")
		case c.HTTPClient == nil:
			return bad("TLS needs an HTTPClient that presents a cluster client certificate to the other nodes")
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
	if err := c.Scrub.Validate(); err != nil {
		return bad("%v", err)
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

	handler *Handler
	ln      net.Listener
	http    *http.Server

	ctx    context.Context // lives from Start to Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	regMu sync.Mutex // serializes disk registrations, so an older one never lands last

	conns httpstop.Tracker // the connections that asked nothing, for Close

	mu      sync.Mutex
	disks   []*servedDisk  // guarded by mu (the slice and each element's fields)
	lstors  []*lstor.Store // the disks' Lstors, opened by Start, closed by Close
	started bool           // guarded by mu
	closed  bool           // guarded by mu
}

// servedDisk is one disk the server serves: its volume and the state of
// the volume's check.
type servedDisk struct {
	cfg      DiskConfig
	vol      *volume.Volume
	check    string // "" until the volume's check ran (again), then cairn.CheckOK or what failed
	checking bool   // a check is running
	gen      int    // counts faults and re-formats: a check started before one is void
	scrub    *scrub.Scrubber
	stopScr  context.CancelFunc // stops scrub (nil: none runs)
	lstor    *lstor.Store       // the disk's Lstor (nil: none); fixed at Start
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
	var vols []*volume.Volume
	lstors := map[cairn.DiskID]*lstor.Store{}
	for _, d := range s.cfg.Disks {
		v, err := s.openVolume(d, !d.NoFormat)
		if err != nil {
			return fmt.Errorf("node %s: %w", s.cfg.Node, err)
		}
		vols = append(vols, v)
		sd := &servedDisk{cfg: d, vol: v}
		s.mu.Lock()
		s.disks = append(s.disks, sd)
		s.mu.Unlock()
		if d.Lstor != "" {
			st, err := lstor.Open(ctx, lstor.Config{FS: d.LstorFS, Disk: d.Path, Lstor: d.Lstor, Size: s.cfg.RAIDPSize, Slots: s.cfg.RAIDPSlots})
			if err != nil {
				return fmt.Errorf("node %s: disk %s: %w", s.cfg.Node, d.ID, err)
			}
			if st.NeedsVerify() {
				s.log.Warn("the disk's Lstor is marked for verification: RAIDP writes to it are refused until `cairn admin raidp verify --resync`",
					"disk", string(d.ID), "lstor", d.Lstor)
			}
			s.mu.Lock()
			s.lstors = append(s.lstors, st)
			sd.lstor = st
			s.mu.Unlock()
			lstors[d.ID] = st
		}
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
		Node: s.cfg.Node, Secret: s.cfg.Secret, Volumes: vols, Lstors: lstors, MaxShardSize: s.cfg.MaxShardSize,
		IdleTimeout: s.cfg.IdleTimeout, HTTPClient: hc, RepairRate: s.cfg.RepairRate, Logger: s.log,
		Skew: s.cfg.Skew, ReplayEntries: s.cfg.ReplayEntries,
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
	if s.cfg.TLS != nil {
		s.ln = tls.NewListener(s.ln, s.cfg.TLS)
	}
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ConnState:         s.conns.ConnState,
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
		if s.cfg.TLS != nil {
			s.cfg.Advertise = "https://" + s.cfg.Advertise
		}
	}
	if r := s.cfg.Registry; r != nil {
		if err := r.PutNode(ctx, cairn.Node{ID: s.cfg.Node, Addr: s.cfg.Advertise, Labels: s.cfg.Labels}); err != nil {
			return fmt.Errorf("node %s: register: %w", s.cfg.Node, err)
		}
		// The lease first: a director that sees a registered disk of a
		// node without a lease marks it suspect.
		if err := s.keepAlive(ctx); err != nil {
			return err
		}
		if err := s.putDisks(ctx, time.Now()); err != nil {
			return err
		}
	}
	s.wg.Add(1)
	go s.refreshLoop()
	s.mu.Lock()
	for _, d := range s.disks {
		s.startCheckLocked(d)
		s.startScrubLocked(d)
	}
	s.mu.Unlock()
	s.log.Info("node started", "addr", s.cfg.Advertise, "disks", len(vols))
	return nil
}

func (s *Server) openVolume(d DiskConfig, create bool) (*volume.Volume, error) {
	return volume.Open(d.Path, volume.Options{
		FS: d.FS, DiskID: d.ID, Create: create, MaxShardSize: s.cfg.MaxShardSize,
		MinFree: s.cfg.MinFree, Logger: s.log,
	})
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

// putDisks registers every disk with its current space, fault, volume ID
// and check; new disks are up.
func (s *Server) putDisks(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	disks := slices.Clone(s.disks)
	s.mu.Unlock()
	for _, d := range disks {
		if err := s.putDisk(ctx, d, now); err != nil {
			return err
		}
	}
	return nil
}

// putDisk registers one disk.
func (s *Server) putDisk(ctx context.Context, d *servedDisk, now time.Time) error {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	s.mu.Lock()
	v, check, st := d.vol, d.check, d.lstor
	s.mu.Unlock()
	u, err := v.Usage()
	if err != nil {
		s.log.Warn("disk usage", "disk", string(v.ID()), "err", err)
	}
	rec := cairn.Disk{ID: v.ID(), Node: s.cfg.Node, Path: v.Dir(), Capacity: u.Capacity, Free: u.Free, FS: u.FS,
		State: cairn.DiskUp, Since: now, Volume: v.VolumeID(), Check: check}
	if d.cfg.Lstor != "" {
		rec.RAIDPSize, rec.RAIDPSlots = s.cfg.RAIDPSize, s.cfg.RAIDPSlots
	}
	if st != nil && st.NeedsVerify() {
		rec.RAIDPFault = "Lstor marked for verification: RAIDP writes refused until `cairn admin raidp verify --resync`"
	}
	if herr := v.Health(); herr != nil {
		rec.Fault = herr.Error()
		s.log.Warn("disk fault reported to the director", "disk", string(v.ID()), "err", herr)
	}
	if err := s.cfg.Registry.PutDisk(ctx, rec); err != nil {
		return fmt.Errorf("node %s: register disk %s: %w", s.cfg.Node, v.ID(), err)
	}
	return nil
}

// tend looks after one disk before it is registered: a volume with a
// fault must be checked again once the fault clears; a volume whose whole
// directory vanished is formatted again (unless NoFormat), as a restart
// would; a volume not checked yet is checked.
func (s *Server) tend(d *servedDisk) {
	s.mu.Lock()
	v := d.vol
	s.mu.Unlock()
	if v.Health() == nil {
		s.mu.Lock()
		s.startCheckLocked(d)
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	d.check = ""
	d.gen++
	s.mu.Unlock()
	if d.cfg.NoFormat || v.Err() != nil {
		return // a broken volume stays broken until the process restarts
	}
	fsys := d.cfg.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	if _, err := fsys.Stat(d.cfg.Path); !errors.Is(err, fs.ErrNotExist) {
		return // half removed, or something else is there: leave it to the operator
	}
	// The old volume's directory is gone: close it (and release its
	// lock) before the new one takes the path.
	_ = v.Close()
	nv, err := s.openVolume(d.cfg, true)
	if err != nil {
		s.log.Warn("disk directory vanished; formatting it again failed", "disk", string(d.cfg.ID), "err", err)
		return
	}
	if _, err := s.handler.SetVolume(nv); err != nil {
		nv.Close()
		s.log.Error("serving a re-formatted volume", "disk", string(d.cfg.ID), "err", err)
		return
	}
	s.mu.Lock()
	d.vol, d.check = nv, ""
	d.gen++
	s.startCheckLocked(d)
	s.startScrubLocked(d)
	s.mu.Unlock()
	s.log.Warn("disk directory vanished: formatted a new, empty volume; the director treats the disk as replaced",
		"disk", string(d.cfg.ID), "path", d.cfg.Path, "volume", nv.VolumeID(), "old_volume", v.VolumeID())
}

// startCheckLocked starts the check of d's volume unless it ran or is
// running: a scan of its identity and every shard's footer (volume.Fsck
// without reading the blocks). The director brings a down disk back only
// once it passed. The result is registered when the check ends. s.mu must
// be held.
func (s *Server) startCheckLocked(d *servedDisk) {
	if d.check != "" || d.checking || s.closed || s.ctx.Err() != nil {
		return
	}
	d.checking = true
	v, gen := d.vol, d.gen
	s.wg.Go(func() {
		rep, err := v.Fsck(s.ctx, volume.FsckOptions{SkipVerify: true})
		result := cairn.CheckOK
		switch {
		case err != nil:
			result = "check failed: " + err.Error()
		case len(rep.Corrupt) > 0:
			result = fmt.Sprintf("check found %d corrupt: %s", len(rep.Corrupt), rep.Corrupt[0])
		}
		if len(rep.Stray) > 0 {
			s.log.Warn("disk check: entries that are not shards", "disk", string(v.ID()), "stray", rep.Stray)
		}
		s.mu.Lock()
		d.checking = false
		current := d.gen == gen && s.ctx.Err() == nil
		if current {
			d.check = result
		}
		s.mu.Unlock()
		if !current {
			return // void: check again at the next refresh
		}
		if result != cairn.CheckOK {
			s.log.Warn("disk check failed", "disk", string(v.ID()), "result", result)
		}
		if s.cfg.Registry != nil {
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RefreshInterval)
			defer cancel()
			if err := s.putDisk(ctx, d, time.Now()); err != nil && s.ctx.Err() == nil {
				s.log.Warn("registering a disk's check", "disk", string(v.ID()), "err", err)
			}
		}
	})
}

// startScrubLocked starts scrubbing d's volume (stopping the scrubber of
// a volume it replaced) unless scrubbing is off. s.mu must be held.
func (s *Server) startScrubLocked(d *servedDisk) {
	if s.cfg.NoScrub || s.closed || s.ctx.Err() != nil {
		return
	}
	if d.stopScr != nil {
		d.stopScr()
	}
	cfg := s.cfg.Scrub
	cfg.Busy = s.handler.Busy
	if st, ok := s.cfg.Registry.(scrub.Store); ok && cfg.Store == nil {
		cfg.Store = st
	}
	cfg.Logger = s.log
	sc, err := scrub.New(d.vol, cfg)
	if err != nil { // Validate accepted the config: cannot happen
		s.log.Error("scrub: not started", "disk", string(d.cfg.ID), "err", err)
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	d.scrub, d.stopScr = sc, cancel
	s.wg.Go(func() {
		if err := sc.Run(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("scrub stopped", "disk", string(d.cfg.ID), "err", err)
		}
	})
}

// ScrubProgress returns each disk's scrub progress (after Start), in
// Config order; a disk not scrubbed has only its ID set.
func (s *Server) ScrubProgress() []cairn.ScrubProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]cairn.ScrubProgress, len(s.disks))
	for i, d := range s.disks {
		out[i].Disk = d.cfg.ID
		if d.scrub != nil {
			out[i] = d.scrub.Progress()
		}
	}
	return out
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
	s.mu.Lock()
	disks := slices.Clone(s.disks)
	s.mu.Unlock()
	for _, d := range disks {
		s.tend(d)
	}
	if s.cfg.Registry != nil {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RefreshInterval)
		if err := s.putDisks(ctx, now); err != nil && s.ctx.Err() == nil {
			s.log.Warn("refreshing disk registration failed", "err", err)
		}
		cancel()
	}
	for _, v := range s.Volumes() {
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

// Volumes returns the open volumes (after Start), in Config order. A
// volume formatted again after its directory vanished replaces the old
// one.
func (s *Server) Volumes() []*volume.Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	vols := make([]*volume.Volume, len(s.disks))
	for i, d := range s.disks {
		vols[i] = d.vol
	}
	return vols
}

// Checks returns each disk's check result (after Start), in Config order:
// "" while it has not run, cairn.CheckOK, or what failed.
func (s *Server) Checks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.disks))
	for i, d := range s.disks {
		out[i] = d.check
	}
	return out
}

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
		err = httpstop.Shutdown(ctx, s.http, &s.conns) // without Go's 5 s wait on silent connections
		cancel()
	}
	s.wg.Wait()
	for _, v := range s.Volumes() {
		_ = v.Close()
	}
	s.mu.Lock()
	lstors := s.lstors
	s.mu.Unlock()
	for _, st := range lstors {
		_ = st.Close()
	}
	return err
}
