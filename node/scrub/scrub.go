package scrub

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"cairn"
	"cairn/node/volume"
)

// Store is the part of the metadata store the scrubber uses; meta.Store
// satisfies it.
//
// The manifest and upload reads tell whether a shard file that records
// its identity is named (Scrubber.reference).
type Store interface {
	PutDamage(ctx context.Context, d cairn.Damage) error
	Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
	ManifestPart(ctx context.Context, bucket, key string, n int) (*cairn.Manifest, error)
	// PartPage reads the one part record of an upload in progress that
	// a part's shard names (after its number − 1, limit 1): an upload
	// may have up to cairn.MaxParts parts.
	PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error)
	// ObjectVersion and ListVersions find the noncurrent versions of a
	// versioned bucket, whose shards are named, not orphans
	// (docs/design/versioning.md).
	ObjectVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	ListVersions(ctx context.Context, bucket, prefix, keyMarker, afterVersion string, limit int) ([]cairn.ObjectVersion, bool, error)
	PutScrubProgress(ctx context.Context, p cairn.ScrubProgress) error
	ScrubProgress(ctx context.Context) ([]cairn.ScrubProgress, error)
	ScrubControl(ctx context.Context) (cairn.ScrubControl, error)
}

// Volume is the part of a volume the scrubber reads; *volume.Volume
// satisfies it.
type Volume interface {
	ID() cairn.DiskID
	VolumeID() string
	List(ctx context.Context, after string, limit int) ([]volume.ShardStat, bool, error)
	NewReader(ctx context.Context, name string, off, n int64) (*volume.Reader, error)
	Delete(ctx context.Context, name string) error
}

var _ Volume = (*volume.Volume)(nil)

// Defaults of Config.
const (
	DefaultRate      = 16 << 20
	DefaultShare     = 0.1
	DefaultInterval  = 7 * 24 * time.Hour
	DefaultSaveEvery = 10 * time.Second
	DefaultMaxDamage = 1000
	// DefaultOrphanGrace is how old an unnamed shard file must be before
	// it is collected: far longer than any write takes between storing
	// its shards and committing the manifest that names them.
	DefaultOrphanGrace = 24 * time.Hour
	// chunk is what one read takes from the token bucket.
	chunk = 256 << 10
	// page is how many names one listing returns.
	page = 256
)

// Config configures a Scrubber. Validate fills the defaults.
type Config struct {
	// Rate is the most bytes per second the scrubber reads (default
	// DefaultRate).
	Rate int64
	// Share is the most of the disk's time the scrubber takes while Busy
	// reports client traffic, in (0, 1] (default DefaultShare); 1 never
	// yields.
	Share float64
	// Busy reports whether the node is serving client requests now (nil:
	// never).
	Busy func() bool
	// Interval is the time from the end of one full pass to the start of
	// the next (default DefaultInterval).
	Interval time.Duration
	// SaveEvery is how often the progress is written and the operator's
	// switch read during a pass, and how often an idle scrubber looks at
	// the switch (default DefaultSaveEvery).
	SaveEvery time.Duration
	// MaxDamage bounds the damage records one pass writes (default
	// DefaultMaxDamage).
	MaxDamage int
	// OrphanGrace is the age (since it was written) after which a shard
	// file no committed manifest or upload names is removed (default
	// DefaultOrphanGrace; negative: orphans are counted, never removed).
	OrphanGrace time.Duration
	// Store receives damage and progress, holds the switch and the
	// manifests (nil: the scrubber keeps its progress in memory, only
	// logs damage, and neither matches identities nor collects orphans).
	Store Store
	// Logger (nil: discarded).
	Logger *slog.Logger
}

// Validate checks c and fills its defaults; errors wrap cairn.ErrInvalid.
func (c *Config) Validate() error {
	switch {
	case c.Rate < 0:
		return fmt.Errorf("scrub: %w: negative rate %d", cairn.ErrInvalid, c.Rate)
	case c.Share < 0 || c.Share > 1:
		return fmt.Errorf("scrub: %w: share %v outside (0, 1]", cairn.ErrInvalid, c.Share)
	case c.Interval < 0 || c.SaveEvery < 0 || c.MaxDamage < 0:
		return fmt.Errorf("scrub: %w: negative interval, save period or damage bound", cairn.ErrInvalid)
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Share == 0 {
		c.Share = DefaultShare
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.SaveEvery == 0 {
		c.SaveEvery = DefaultSaveEvery
	}
	if c.MaxDamage == 0 {
		c.MaxDamage = DefaultMaxDamage
	}
	if c.OrphanGrace == 0 {
		c.OrphanGrace = DefaultOrphanGrace
	}
	if c.Busy == nil {
		c.Busy = func() bool { return false }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Scrubber scrubs one volume. Run drives it; Progress may be called from
// any goroutine.
type Scrubber struct {
	vol Volume
	cfg Config
	log *slog.Logger
	lim *rate.Limiter

	mu   sync.Mutex
	prog cairn.ScrubProgress // guarded by mu

	// Owned by Run's goroutine:
	buf      []byte // one read's worth (chunk), made at the first read
	control  cairn.ScrubControl
	reported int       // damage records written this pass
	saved    time.Time // when the progress was last written
}

// New validates cfg (filling defaults) and returns a scrubber of vol.
func New(vol Volume, cfg Config) (*Scrubber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	burst := max(chunk, int(min(cfg.Rate/10, 64<<20)))
	return &Scrubber{
		vol: vol, cfg: cfg, log: cfg.Logger.With("disk", string(vol.ID())),
		lim:  rate.NewLimiter(rate.Limit(cfg.Rate), burst),
		prog: cairn.ScrubProgress{Disk: vol.ID(), Volume: vol.VolumeID()},
	}, nil
}

// Progress returns the scrubber's progress so far.
func (s *Scrubber) Progress() cairn.ScrubProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prog
}

func (s *Scrubber) update(f func(p *cairn.ScrubProgress)) {
	s.mu.Lock()
	f(&s.prog)
	s.mu.Unlock()
}

// Run scrubs until ctx ends (and returns ctx's error) or the volume is
// closed (nil).
func (s *Scrubber) Run(ctx context.Context) error {
	s.resume(ctx)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.readControl(ctx)
		p := s.Progress()
		switch {
		case s.control.Paused:
			if !p.Paused {
				s.update(func(p *cairn.ScrubProgress) { p.Paused = true })
				s.save(ctx, true)
			}
			if err := sleep(ctx, s.cfg.SaveEvery); err != nil {
				return err
			}
			continue
		case p.Paused:
			s.update(func(p *cairn.ScrubProgress) { p.Paused = false })
		}
		now := time.Now()
		started := s.control.Start != p.Start
		if started || p.PassStarted.IsZero() {
			due := p.LastPass.IsZero() || !now.Before(p.LastPass.Add(s.cfg.Interval)) || started
			if !due {
				if err := sleep(ctx, min(s.cfg.SaveEvery, p.LastPass.Add(s.cfg.Interval).Sub(now))); err != nil {
					return err
				}
				continue
			}
			s.update(func(p *cairn.ScrubProgress) {
				p.Start = s.control.Start
				p.PassStarted, p.Cursor, p.PassShards, p.PassBytes, p.PassDamage, p.PassOrphans = now, "", 0, 0, 0, 0
			})
			s.reported = 0
			s.log.Info("scrub: pass started")
			s.save(ctx, true)
		}
		err := s.pass(ctx)
		switch {
		case errors.Is(err, volume.ErrClosed):
			s.save(context.WithoutCancel(ctx), true)
			return nil
		case ctx.Err() != nil:
			s.save(context.WithoutCancel(ctx), true)
			return ctx.Err()
		case errors.Is(err, errInterrupted):
			continue // the switch changed: look at it
		case err != nil:
			s.log.Warn("scrub: listing failed; retrying", "err", err)
			s.update(func(p *cairn.ScrubProgress) { p.LastError = err.Error() })
			if err := sleep(ctx, s.cfg.SaveEvery); err != nil {
				return err
			}
		}
	}
}

// errInterrupted: the operator's switch changed during a pass.
var errInterrupted = errors.New("scrub interrupted by the switch")

// resume loads the disk's stored progress, unless it is of another volume.
func (s *Scrubber) resume(ctx context.Context) {
	if s.cfg.Store == nil {
		return
	}
	ps, err := s.cfg.Store.ScrubProgress(ctx)
	if err != nil {
		s.log.Warn("scrub: reading the stored progress failed; starting afresh", "err", err)
		return
	}
	for _, p := range ps {
		if p.Disk == s.vol.ID() && p.Volume == s.vol.VolumeID() {
			s.update(func(q *cairn.ScrubProgress) { *q = p })
			if !p.PassStarted.IsZero() {
				s.log.Info("scrub: resuming the pass in progress", "after", p.Cursor, "shards", p.PassShards)
			}
		}
	}
}

// readControl reads the operator's switch (keeping the last one read if
// the store does not answer).
func (s *Scrubber) readControl(ctx context.Context) {
	if s.cfg.Store == nil {
		return
	}
	c, err := s.cfg.Store.ScrubControl(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("scrub: reading the scrub switch failed", "err", err)
		}
		return
	}
	s.control = c
}

// save writes the progress if force or SaveEvery passed since the last
// write.
func (s *Scrubber) save(ctx context.Context, force bool) {
	now := time.Now()
	if !force && now.Sub(s.saved) < s.cfg.SaveEvery {
		return
	}
	s.saved = now
	s.update(func(p *cairn.ScrubProgress) { p.Updated = now })
	if s.cfg.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SaveEvery)
	defer cancel()
	if err := s.cfg.Store.PutScrubProgress(ctx, s.Progress()); err != nil && ctx.Err() == nil {
		s.log.Warn("scrub: saving progress failed", "err", err)
	}
}

// pass checks shards from the cursor on until the pass ends (nil), the
// switch changes (errInterrupted), or an error.
func (s *Scrubber) pass(ctx context.Context) error {
	for {
		shards, more, err := s.vol.List(ctx, s.Progress().Cursor, page)
		if err != nil {
			return err
		}
		for _, sh := range shards {
			n, err := s.check(ctx, sh.Name)
			if err != nil {
				return err
			}
			s.update(func(p *cairn.ScrubProgress) {
				p.Cursor, p.PassShards, p.PassBytes = sh.Name, p.PassShards+1, p.PassBytes+n
			})
			if time.Since(s.saved) >= s.cfg.SaveEvery {
				s.save(ctx, true)
				prev := s.control
				s.readControl(ctx)
				if s.control != prev {
					return errInterrupted
				}
			}
		}
		if !more {
			break
		}
	}
	now := time.Now()
	s.update(func(p *cairn.ScrubProgress) {
		p.LastPass, p.LastShards, p.LastDamage, p.LastOrphans = now, p.PassShards, p.PassDamage, p.PassOrphans
		p.PassStarted, p.Cursor, p.LastError = time.Time{}, "", ""
	})
	p := s.Progress()
	s.log.Info("scrub: pass done", "shards", p.LastShards, "bytes", p.PassBytes, "damaged", p.LastDamage, "orphans", p.LastOrphans)
	s.save(ctx, true)
	return nil
}

// check verifies one shard and reports it if damaged. It returns the
// bytes read; an error only for what stops the pass (ctx, a closed
// volume).
func (s *Scrubber) check(ctx context.Context, name string) (int64, error) {
	n, v, err := s.verify(ctx, name)
	if err == nil && v.ok {
		err = s.match(ctx, name, v)
	}
	switch {
	case err == nil, errors.Is(err, cairn.ErrNotFound): // deleted meanwhile
		return n, nil
	case ctx.Err() != nil:
		return n, ctx.Err()
	case errors.Is(err, volume.ErrClosed):
		return n, err
	case errors.Is(err, cairn.ErrCorrupt):
		s.damaged(ctx, name, err)
		return n, nil
	}
	s.log.Warn("scrub: cannot read a shard; skipped", "shard", name, "err", err)
	s.update(func(p *cairn.ScrubProgress) { p.LastError = err.Error() })
	return n, nil
}

// verified is what verify learnt of a whole, self-consistent shard.
type verified struct {
	id   cairn.ShardIdentity
	ok   bool // the file records id
	size int64
	crc  uint32
	mod  time.Time // when it was written
}

// verify reads the whole shard through the rate limit and the share,
// checking every block (the reader does), then the content CRC against
// the footer, and the identity if the file records one.
func (s *Scrubber) verify(ctx context.Context, name string) (int64, verified, error) {
	r, err := s.vol.NewReader(ctx, name, 0, -1)
	if err != nil {
		return 0, verified{}, err
	}
	defer r.Close()
	n, err := s.readAll(ctx, r)
	if err != nil {
		return n, verified{}, err
	}
	v := verified{size: r.Size(), crc: r.CRC(), mod: r.ModTime()}
	v.id, v.ok, err = r.Identity()
	return n, v, err
}

// readAll reads r to its end through the rate limit and the share, and
// checks the content CRC against the footer.
func (s *Scrubber) readAll(ctx context.Context, r *volume.Reader) (int64, error) {
	r.ReadAhead(chunk)
	if s.buf == nil {
		s.buf = make([]byte, chunk)
	}
	buf := s.buf
	var total int64
	var crc uint32
	for {
		want := int(min(int64(chunk), r.Remaining()))
		if want == 0 {
			break
		}
		if err := s.lim.WaitN(ctx, want); err != nil {
			return total, err
		}
		start := time.Now()
		n, err := io.ReadFull(r, buf[:want])
		crc = crc32.Update(crc, castagnoli, buf[:n])
		total += int64(n)
		if err != nil {
			return total, err
		}
		if s.cfg.Share < 1 && s.cfg.Busy() {
			d := time.Since(start)
			if err := sleep(ctx, time.Duration(float64(d)*(1-s.cfg.Share)/s.cfg.Share)); err != nil {
				return total, err
			}
		}
	}
	if crc != r.CRC() {
		return total, fmt.Errorf("%w: content CRC %08x, footer says %08x", cairn.ErrCorrupt, crc, r.CRC())
	}
	return total, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// match looks up what the committed metadata says of a verified shard
// that records its identity: named with another size or CRC is damage
// (an error wrapping cairn.ErrCorrupt); not named at all is an orphan,
// removed once older than the grace period. A failed lookup skips the
// shard (the next pass looks again).
func (s *Scrubber) match(ctx context.Context, name string, v verified) error {
	if s.cfg.Store == nil {
		return nil
	}
	ref, detail, err := s.reference(ctx, v)
	if err != nil {
		s.log.Warn("scrub: cannot look up the manifest of a shard; skipped", "shard", name, "err", err)
		return nil
	}
	switch ref {
	case cairn.Mismatch:
		return fmt.Errorf("%w: %s", cairn.ErrCorrupt, detail)
	case cairn.Named:
		return nil
	}
	s.update(func(p *cairn.ScrubProgress) { p.PassOrphans++ })
	if s.cfg.OrphanGrace < 0 || time.Since(v.mod) < s.cfg.OrphanGrace {
		return nil
	}
	// Look again right before removing: the window in which a write
	// that started before the grace period commits a manifest naming
	// this file is as short as it can be.
	if ref, _, err = s.reference(ctx, v); err != nil || ref != cairn.Unnamed {
		return nil
	}
	if err := s.vol.Delete(ctx, name); err != nil {
		if errors.Is(err, cairn.ErrNotFound) {
			return nil
		}
		return err
	}
	s.log.Info("scrub: removed an orphan shard", "shard", name, "bucket", v.id.Bucket, "key", v.id.Key,
		"part", v.id.Part, "written", v.mod)
	s.update(func(p *cairn.ScrubProgress) { p.Collected++ })
	return nil
}

// reference finds the layout that should name the shard of v: an upload's
// part (read first: CompleteUpload moves a part from its upload to the
// object atomically, so reading the upload before the object cannot miss
// a part that moves meanwhile), the object's part, or the object.
func (s *Scrubber) reference(ctx context.Context, v verified) (cairn.Reference, string, error) {
	id, disk := v.id, s.vol.ID()
	cctx, cancel := context.WithTimeout(ctx, s.cfg.SaveEvery)
	defer cancel()
	if id.Part > 0 {
		parts, _, err := s.cfg.Store.PartPage(cctx, id.Bucket, id.Upload, id.Part-1, 1)
		if err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return cairn.Unnamed, "", err
		}
		for _, p := range parts {
			if p.Number == id.Part {
				if ref, detail := p.Layout.Refers(p.Version, id, disk, v.size, v.crc); ref != cairn.Unnamed {
					return ref, detail, nil
				}
			}
		}
		m, err := s.cfg.Store.ManifestPart(cctx, id.Bucket, id.Key, id.Part)
		if err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return cairn.Unnamed, "", err
		}
		if err == nil {
			if ref, detail := partRefers(m, id, disk, v); ref != cairn.Unnamed {
				return ref, detail, nil
			}
		}
		return s.noncurrentPart(cctx, id, disk, v)
	}
	m, err := s.cfg.Store.Manifest(cctx, id.Bucket, id.Key)
	if err != nil && !errors.Is(err, cairn.ErrNotFound) {
		return cairn.Unnamed, "", err
	}
	objVersion := id.Version // the object version of the shard
	if id.Object != "" {
		objVersion = id.Object // a coded block's: id.Version is its stripe's
	}
	if err == nil && m.Version == objVersion {
		ref, detail := m.Layout.Refers(m.Version, id, disk, v.size, v.crc)
		return ref, detail, nil
	}
	// A version that is not current may be a noncurrent one.
	if !cairn.ValidVersion(objVersion) {
		return cairn.Unnamed, "", nil
	}
	ov, err := s.cfg.Store.ObjectVersion(cctx, id.Bucket, id.Key, objVersion)
	if errors.Is(err, cairn.ErrNotFound) || err == nil && ov.Manifest == nil {
		return cairn.Unnamed, "", nil
	} else if err != nil {
		return cairn.Unnamed, "", err
	}
	ref, detail := ov.Manifest.Layout.Refers(ov.Manifest.Version, id, disk, v.size, v.crc)
	return ref, detail, nil
}

// partRefers is Refers of the part id.Part of m.
func partRefers(m *cairn.Manifest, id cairn.ShardIdentity, disk cairn.DiskID, v verified) (cairn.Reference, string) {
	for _, p := range m.Parts {
		if p.Number == id.Part {
			return p.Layout.Refers(p.Version, id, disk, v.size, v.crc)
		}
	}
	return cairn.Unnamed, ""
}

// noncurrentPart looks for the part shard of v among the key's
// noncurrent multipart versions (a part's identity names its upload, not
// the object version), a page of versions at a time.
func (s *Scrubber) noncurrentPart(ctx context.Context, id cairn.ShardIdentity, disk cairn.DiskID, v verified) (cairn.Reference, string, error) {
	keyMarker, after := "", ""
	for {
		vs, more, err := s.cfg.Store.ListVersions(ctx, id.Bucket, id.Key, keyMarker, after, 100)
		if errors.Is(err, cairn.ErrNotFound) {
			return cairn.Unnamed, "", nil
		} else if err != nil {
			return cairn.Unnamed, "", err
		}
		for _, ov := range vs {
			keyMarker, after = ov.Key, ov.Version
			if ov.Key != id.Key {
				return cairn.Unnamed, "", nil // past the key's versions
			}
			if ov.Marker || ov.Latest || ov.Info.Parts == 0 {
				continue
			}
			full, err := s.cfg.Store.ObjectVersion(ctx, id.Bucket, id.Key, ov.Version)
			if errors.Is(err, cairn.ErrNotFound) {
				continue
			} else if err != nil {
				return cairn.Unnamed, "", err
			}
			if full.Manifest != nil && full.Manifest.Upload == id.Upload {
				ref, detail := partRefers(full.Manifest, id, disk, v)
				return ref, detail, nil
			}
		}
		if !more || len(vs) == 0 {
			return cairn.Unnamed, "", nil
		}
	}
}

// damaged counts and records a damaged shard (up to MaxDamage records per
// pass).
func (s *Scrubber) damaged(ctx context.Context, name string, cause error) {
	s.log.Warn("scrub: damaged shard", "shard", name, "err", cause)
	detail := cause.Error()
	if len(detail) > cairn.MaxDamageDetail {
		detail = detail[:cairn.MaxDamageDetail]
	}
	report := s.reported < s.cfg.MaxDamage && s.cfg.Store != nil
	s.update(func(p *cairn.ScrubProgress) {
		p.PassDamage++
		p.Found++
		if !report {
			p.Unreported++
		}
	})
	if !report {
		return
	}
	s.reported++
	d := cairn.Damage{Disk: s.vol.ID(), Shard: name, Kind: cairn.DamageCorrupt, Detail: detail,
		Source: cairn.DamageScrub, Found: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.SaveEvery)
	defer cancel()
	if err := s.cfg.Store.PutDamage(cctx, d); err != nil && ctx.Err() == nil {
		s.log.Warn("scrub: recording damage failed; the next pass finds it again", "shard", name, "err", err)
		s.update(func(p *cairn.ScrubProgress) { p.Unreported++ })
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
