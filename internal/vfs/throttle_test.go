package vfs

import (
	"sync"
	"testing"
	"time"
)

// virtualClock is a clock whose Sleep advances it.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *virtualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *virtualClock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func writeMB(t *testing.T, fsys FS, name string, mb int) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for range mb * 16 {
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestThrottleBandwidthLatencyAndBackground(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ThrottleConfig
		want time.Duration // for writing 2 MiB in 64 KiB writes plus a sync
	}{
		{"bandwidth", ThrottleConfig{Bandwidth: 1 << 20}, 2 * time.Second},
		{"latency", ThrottleConfig{Latency: 10 * time.Millisecond}, 33 * 10 * time.Millisecond},
		// A competing 512 KiB request every second at 1 MiB/s: our 2 s of
		// writing is interleaved with the two that arrive at 1 and 2 s,
		// each taking 0.5 s: 3 s in all (the sync does not queue).
		{"background", ThrottleConfig{Bandwidth: 1 << 20, BackgroundEvery: time.Second, BackgroundBytes: 512 << 10}, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			tc.cfg.Now, tc.cfg.Sleep = clock.Now, clock.Sleep
			fsys := Throttle(NewMem(), tc.cfg)
			start := clock.Now()
			writeMB(t, fsys, "f", 2)
			got := clock.Now().Sub(start)
			if got < tc.want*9/10 || got > tc.want*11/10 {
				t.Fatalf("took %v of virtual time, want about %v", got, tc.want)
			}
			// Reads are throttled too.
			f, err := fsys.Open("f")
			if err != nil {
				t.Fatal(err)
			}
			before := clock.Now()
			if _, err := f.ReadAt(make([]byte, 1<<20), 0); err != nil {
				t.Fatal(err)
			}
			if tc.cfg.Bandwidth > 0 && clock.Now().Sub(before) < 900*time.Millisecond {
				t.Fatalf("reading 1 MiB at 1 MiB/s took %v", clock.Now().Sub(before))
			}
		})
	}
	if (ThrottleConfig{}).Enabled() {
		t.Fatal("an empty config throttles")
	}
}

// Random background load (BackgroundSeed): on average it takes the same
// share of the disk as the periodic one, but one write's time varies from
// run to run with the seed, and a seed replays exactly.
func TestThrottleRandomBackground(t *testing.T) {
	run := func(seed uint64) time.Duration {
		clock := &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		fsys := Throttle(NewMem(), ThrottleConfig{Bandwidth: 1 << 20, BackgroundEvery: 250 * time.Millisecond,
			BackgroundBytes: 128 << 10, BackgroundSeed: seed, Now: clock.Now, Sleep: clock.Sleep})
		start := clock.Now()
		writeMB(t, fsys, "f", 2)
		return clock.Now().Sub(start)
	}
	// Periodic: 2 s of writing plus the 8–11 background requests of 125 ms
	// that arrive meanwhile: about 4 s. Random: the same on average.
	var sum time.Duration
	seen := map[time.Duration]bool{}
	const runs = 40
	for seed := uint64(1); seed <= runs; seed++ {
		d := run(seed)
		sum += d
		seen[d] = true
	}
	mean := sum / runs
	if mean < 3500*time.Millisecond || mean > 4500*time.Millisecond {
		t.Fatalf("mean time %v over %d seeds, want about 4 s", mean, runs)
	}
	if len(seen) < runs/2 {
		t.Fatalf("only %d distinct times over %d seeds: the background is not random", len(seen), runs)
	}
	if a, b := run(17), run(17); a != b {
		t.Fatalf("seed 17 gave %v and %v", a, b)
	}
}

// TestThrottleSeek: one sequential stream pays one seek; two interleaved
// streams pay one per request.
func TestThrottleSeek(t *testing.T) {
	clock := &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := ThrottleConfig{Seek: 10 * time.Millisecond, Now: clock.Now, Sleep: clock.Sleep}
	fsys := Throttle(NewMem(), cfg)
	start := clock.Now()
	writeMB(t, fsys, "seq", 1) // 16 writes in one stream
	if got := clock.Now().Sub(start); got != 10*time.Millisecond {
		t.Fatalf("one stream of 16 writes cost %v, want one seek (10ms)", got)
	}
	a, _ := fsys.Create("a")
	b, _ := fsys.Create("b")
	buf := make([]byte, 4096)
	start = clock.Now()
	for range 8 {
		a.Write(buf)
		b.Write(buf)
	}
	if got := clock.Now().Sub(start); got != 16*10*time.Millisecond {
		t.Fatalf("16 interleaved writes cost %v, want 16 seeks", got)
	}
	// Reads: sequential ReadAt continues the head; a jump seeks.
	rb := make([]byte, 2*CachedRead)
	start = clock.Now()
	a.ReadAt(rb, 0)
	a.ReadAt(rb, int64(len(rb)))
	a.ReadAt(rb, 3*int64(len(rb)))
	if got := clock.Now().Sub(start); got != 20*time.Millisecond {
		t.Fatalf("read, continue, jump cost %v, want two seeks", got)
	}
	// A small read (a footer the page cache holds) is free and does not
	// move the head: the next read continues without a seek.
	big := make([]byte, CachedRead+1)
	a.ReadAt(big, 0)
	start = clock.Now()
	b.ReadAt(rb[:32], 100)
	a.ReadAt(big, int64(len(big)))
	if got := clock.Now().Sub(start); got != 0 {
		t.Fatalf("a cached read between two sequential reads cost %v, want nothing", got)
	}
}

// TestThrottleWriteBehind: writes run ahead of the disk by up to
// WriteBehind bytes; Sync waits for the file's queued writes.
func TestThrottleWriteBehind(t *testing.T) {
	for _, tc := range []struct {
		behind     int64
		afterWrite time.Duration // when the last Write of 2 MiB at 1 MiB/s returns
	}{
		{4 << 20, 0},                         // all of it fits
		{512 << 10, 1500 * time.Millisecond}, // returns with 0.5 s of work queued
	} {
		clock := &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		fsys := Throttle(NewMem(), ThrottleConfig{Bandwidth: 1 << 20, WriteBehind: tc.behind, Now: clock.Now, Sleep: clock.Sleep})
		start := clock.Now()
		f, err := fsys.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for range 32 {
			if _, err := f.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		if got := clock.Now().Sub(start); got != tc.afterWrite {
			t.Errorf("write-behind %d: the writes returned after %v, want %v", tc.behind, got, tc.afterWrite)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if got := clock.Now().Sub(start); got != 2*time.Second {
			t.Errorf("write-behind %d: Sync returned after %v, want 2s (when the disk has it all)", tc.behind, got)
		}
		// Another file's sync does not wait for this file's queue.
		g, _ := fsys.Create("g")
		f.Write(make([]byte, 1<<20))
		before := clock.Now()
		g.Sync()
		if got := clock.Now().Sub(before); got != 0 {
			t.Errorf("write-behind %d: syncing an idle file took %v", tc.behind, got)
		}
	}
}

// TestThrottleWriteAt: a throttled file keeps the in-place writes of the
// file underneath (the Lstor needs them) and they wait their turn on the
// disk like appends: bandwidth, a seek when they do not continue the
// previous request, write-behind until Sync. ReadAt of the overwritten
// bytes costs the disk time too.
func TestThrottleWriteAt(t *testing.T) {
	clock := &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := ThrottleConfig{Bandwidth: 1 << 20, Seek: 10 * time.Millisecond, Now: clock.Now, Sleep: clock.Sleep}
	fsys := Throttle(NewMem(), cfg)
	f, err := fsys.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	w, ok := f.(WriterAt)
	if !ok {
		t.Fatalf("a throttled mem file %T has no WriteAt", f)
	}
	start := clock.Now()
	if _, err := w.WriteAt(make([]byte, 1<<20), 1<<20); err != nil { // a seek (not at the head) and 1 s
		t.Fatal(err)
	}
	if _, err := w.WriteAt(make([]byte, 512<<10), 2<<20); err != nil { // continues: 0.5 s
		t.Fatal(err)
	}
	if got, want := clock.Now().Sub(start), 1500*time.Millisecond+10*time.Millisecond; got != want {
		t.Errorf("two in-place writes took %v, want %v", got, want)
	}
	start = clock.Now()
	if _, err := w.WriteAt([]byte("abc"), 0); err != nil { // back to 0: a seek
		t.Fatal(err)
	}
	if got, want := clock.Now().Sub(start), 10*time.Millisecond+3*time.Second/(1<<20); got != want {
		t.Errorf("a small write elsewhere took %v, want %v", got, want)
	}
	buf := make([]byte, 3)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "abc" {
		t.Fatalf("read back %q, %v", buf, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 2<<20+512<<10 {
		t.Fatalf("size after the in-place writes: %v, %v", fi, err)
	}

	// With write-behind, WriteAt returns at once and Sync waits for it.
	clock2 := &virtualClock{now: clock.Now()}
	cfg = ThrottleConfig{Bandwidth: 1 << 20, WriteBehind: 4 << 20, Now: clock2.Now, Sleep: clock2.Sleep}
	g, err := Throttle(NewMem(), cfg).Create("g")
	if err != nil {
		t.Fatal(err)
	}
	start = clock2.Now()
	if _, err := g.(WriterAt).WriteAt(make([]byte, 2<<20), 4<<20); err != nil {
		t.Fatal(err)
	}
	if got := clock2.Now().Sub(start); got != 0 {
		t.Errorf("a write-behind WriteAt waited %v", got)
	}
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := clock2.Now().Sub(start); got != 2*time.Second {
		t.Errorf("Sync after a 2 MiB WriteAt returned after %v, want 2s", got)
	}

	// A file system whose files cannot be overwritten keeps that: the
	// throttle does not invent WriteAt.
	h, err := Throttle(noWriteAt{NewMem()}, ThrottleConfig{Bandwidth: 1 << 20}).Create("h")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.(WriterAt); ok {
		t.Error("a throttled file over one without WriteAt has WriteAt")
	}
}

// noWriteAt hides the WriteAt of its files.
type noWriteAt struct{ FS }

type appendOnly struct{ File }

func (n noWriteAt) Create(name string) (File, error) {
	f, err := n.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return appendOnly{f}, nil
}
