package vfs

import (
	"io/fs"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// ThrottleConfig makes a file system behave like a slower or busier disk:
// the heterogeneous disks of the RobuSTore experiments (0.52–53 MB/s with
// competing background requests). The disk is modelled as one server that
// handles requests in arrival order: a request of n bytes occupies it for
// Latency + n/Bandwidth, after whatever it is already busy with.
type ThrottleConfig struct {
	// Bandwidth is bytes per second for reads and writes (0: unlimited).
	Bandwidth int64
	// Latency is added to every write, read and sync (a sync does not
	// queue: writes are on the disk when Write returns).
	Latency time.Duration
	// Seek is added to every read or write that does not continue the
	// previous one on this disk (another file, or another offset): a
	// spinning disk, where interleaved streams cost head movement and one
	// sequential stream does not (0: none). With a Seek, reads of at most
	// CachedRead bytes are free and leave the head where it was: small
	// metadata (a shard's footer) that a real node's page cache serves.
	Seek time.Duration
	// WriteBehind lets writes run ahead of the disk by up to this many
	// bytes, as they do into a page cache: a Write queues its request and
	// returns once at most WriteBehind bytes' worth of queued work is left
	// on the disk, and Sync waits until the file's last write is done
	// (0: write-through — every Write waits for its own request).
	WriteBehind int64
	// Background load: every BackgroundEvery a competing request of
	// BackgroundBytes arrives and occupies the disk (0: none).
	BackgroundEvery time.Duration
	BackgroundBytes int64
	// BackgroundSeed, if not 0, makes the background requests arrive at
	// random, as a Poisson process with BackgroundEvery as the mean
	// interval (exponential gaps drawn from this seed): a disk shared with
	// other work, whose speed varies from one moment to the next.
	BackgroundSeed uint64
	// Now and Sleep are the clock (default time.Now and time.Sleep); tests
	// use a virtual one.
	Now   func() time.Time
	Sleep func(time.Duration)
}

// CachedRead is the largest read a seeking throttle treats as a page-cache
// hit.
const CachedRead = 4 << 10

// Enabled reports whether c slows anything down.
func (c ThrottleConfig) Enabled() bool {
	return c.Bandwidth > 0 || c.Latency > 0 || c.Seek > 0 || (c.BackgroundEvery > 0 && c.BackgroundBytes > 0)
}

// Throttle returns fs slowed down per cfg: file Write, ReadAt, Sync and
// (where fsys's files have it, vfs.WriterAt) WriteAt wait for their turn on
// the modelled disk. Metadata operations (create,
// rename, list) are not slowed. Waits happen outside any lock, so
// concurrent requests queue like requests on a real disk.
func Throttle(fsys FS, cfg ThrottleConfig) FS {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = time.Sleep
	}
	t := &throttle{cfg: cfg, origin: cfg.Now()}
	if cfg.BackgroundSeed != 0 {
		t.bgRand = rand.New(rand.NewPCG(cfg.BackgroundSeed, 0x6267))
	}
	t.bgNext = t.origin.Add(t.bgGapLocked()) // t is not shared yet
	return &throttledFS{FS: fsys, t: t}
}

// bgGapLocked returns the time to the next background request:
// BackgroundEvery, or an exponential gap with that mean. t.mu must be
// held (bgRand).
func (t *throttle) bgGapLocked() time.Duration {
	if t.bgRand == nil {
		return t.cfg.BackgroundEvery
	}
	return time.Duration(t.bgRand.ExpFloat64() * float64(t.cfg.BackgroundEvery))
}

type throttle struct {
	cfg    ThrottleConfig
	origin time.Time // background requests arrive at origin + k·Every

	mu        sync.Mutex
	busyUntil time.Time      // guarded by mu
	bgNext    time.Time      // when the next background request arrives; guarded by mu
	bgRand    *rand.Rand     // gaps between random background requests; guarded by mu
	head      *throttledFile // the file the last request was on; guarded by mu
	headOff   int64          // where the last request ended; guarded by mu
}

func (t *throttle) cost(n int64) time.Duration {
	d := t.cfg.Latency
	if t.cfg.Bandwidth > 0 {
		d += time.Duration(float64(n) / float64(t.cfg.Bandwidth) * float64(time.Second))
	}
	return d
}

// wait blocks until a request of n bytes of f at off arriving now would be
// done.
func (t *throttle) wait(f *throttledFile, off, n int64) {
	if !t.cfg.Enabled() {
		return
	}
	now := t.cfg.Now()
	if d := t.queue(now, f, off, n).Sub(now); d > 0 {
		t.cfg.Sleep(d)
	}
}

// queue puts a request of n bytes of f at off, arriving at now, on the
// disk and returns when it will be done.
func (t *throttle) queue(now time.Time, f *throttledFile, off, n int64) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cfg.BackgroundEvery > 0 && t.cfg.BackgroundBytes > 0 {
		for !t.bgNext.After(now) {
			t.busyUntil = later(t.busyUntil, t.bgNext).Add(t.cost(t.cfg.BackgroundBytes))
			t.bgNext = t.bgNext.Add(t.bgGapLocked())
		}
	}
	end := later(t.busyUntil, now).Add(t.cost(n))
	if t.cfg.Seek > 0 {
		if t.head != f || t.headOff != off {
			end = end.Add(t.cfg.Seek)
		}
		t.head, t.headOff = f, off+n
	}
	t.busyUntil = end
	return end
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

type throttledFS struct {
	FS
	t *throttle
}

func (f *throttledFS) wrap(file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	tf := &throttledFile{File: file, t: f.t}
	if w, ok := file.(WriterAt); ok {
		return &throttledWriterAt{throttledFile: tf, w: w}, nil
	}
	return tf, nil
}

func (f *throttledFS) Create(name string) (File, error) { return f.wrap(f.FS.Create(name)) }
func (f *throttledFS) Open(name string) (File, error)   { return f.wrap(f.FS.Open(name)) }
func (f *throttledFS) OpenReadWrite(name string) (File, error) {
	return f.wrap(f.FS.OpenReadWrite(name))
}
func (f *throttledFS) OpenDir(name string) (File, error) { return f.wrap(f.FS.OpenDir(name)) }

type throttledFile struct {
	File
	t       *throttle
	written atomic.Int64 // the offset of the next Write (files are written sequentially)

	mu   sync.Mutex
	done time.Time // when this file's last queued write is on the disk; guarded by mu
}

func (f *throttledFile) Write(p []byte) (int, error) {
	n := int64(len(p))
	f.waitWrite(f.written.Add(n)-n, n)
	return f.File.Write(p)
}

// waitWrite puts a write of n bytes at off on the disk and waits for it:
// until it is done, or with WriteBehind until at most WriteBehind bytes'
// worth of work is left queued.
func (f *throttledFile) waitWrite(off, n int64) {
	if f.t.cfg.WriteBehind <= 0 || !f.t.cfg.Enabled() {
		f.t.wait(f, off, n)
		return
	}
	now := f.t.cfg.Now()
	end := f.t.queue(now, f, off, n)
	f.mu.Lock()
	f.done = later(f.done, end)
	f.mu.Unlock()
	// Return once no more than WriteBehind bytes' worth of work is queued.
	slack := f.t.cost(f.t.cfg.WriteBehind) - f.t.cfg.Latency
	if d := end.Sub(now) - slack; d > 0 {
		f.t.cfg.Sleep(d)
	}
}

// throttledWriterAt is a throttled file that can be overwritten in place
// (the Lstor's and raidp.data's files): WriteAt queues like Write, at its
// own offset, so an in-place write away from the head pays a seek.
type throttledWriterAt struct {
	*throttledFile
	w WriterAt
}

func (f *throttledWriterAt) WriteAt(p []byte, off int64) (int, error) {
	f.waitWrite(off, int64(len(p)))
	return f.w.WriteAt(p, off)
}

func (f *throttledFile) ReadAt(p []byte, off int64) (int, error) {
	if f.t.cfg.Seek > 0 && len(p) <= CachedRead {
		return f.File.ReadAt(p, off)
	}
	f.t.wait(f, off, int64(len(p)))
	return f.File.ReadAt(p, off)
}

// Sync waits until the file's queued writes are on the disk (with
// WriteBehind; without, each Write already waited for its own), then costs
// Latency. It does not queue behind other files' requests.
func (f *throttledFile) Sync() error {
	f.mu.Lock()
	done := f.done
	f.mu.Unlock()
	now := f.t.cfg.Now()
	if d := done.Sub(now) + f.t.cfg.Latency; d > 0 {
		f.t.cfg.Sleep(d)
	}
	return f.File.Sync()
}

func (f *throttledFile) Stat() (fs.FileInfo, error) { return f.File.Stat() }
