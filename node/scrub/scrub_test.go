package scrub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/meta/mem"
	"cairn/node/scrub"
	"cairn/node/volume"
)

const disk cairn.DiskID = "node1/disk1"

// fixture is a volume on a MemFS (optionally throttled) with n shards.
type fixture struct {
	fs    vfs.FS
	mem   *vfs.MemFS
	vol   *volume.Volume
	names []string
	size  int64 // content bytes per shard
}

func newFixture(t testing.TB, fsys vfs.FS, mfs *vfs.MemFS, n int, size int64) *fixture {
	t.Helper()
	v, err := volume.Open("/vol", volume.Options{FS: fsys, DiskID: disk, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{fs: fsys, mem: mfs, vol: v, size: size}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		name := cairn.ShardName(fmt.Sprintf("%032x", rng.Uint64()), i%6)
		body := make([]byte, size)
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		if _, err := v.Put(context.Background(), name, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	t.Cleanup(func() {
		// The damage the test made must be gone (rewritten) by now.
		rep, err := v.Fsck(context.Background(), volume.FsckOptions{})
		if err != nil || !rep.OK() {
			t.Errorf("fsck at the end: %v\n%s", err, rep.Problems())
		}
		v.Close()
	})
	return f
}

func (f *fixture) file(name string) string {
	return path.Join("/vol", volume.ShardsDir, name[:2], name)
}

// damage rewrites a shard file through edit (which may flip bytes or
// truncate).
func (f *fixture) damage(t *testing.T, name string, edit func([]byte) []byte) {
	t.Helper()
	r, err := f.fs.Open(f.file(name))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.Stat()
	b := make([]byte, st.Size())
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	r.Close()
	w, err := f.fs.Create(f.file(name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(edit(b)); err != nil {
		t.Fatal(err)
	}
	w.Close()
}

// heal rewrites a damaged shard with good content (as repair would).
func (f *fixture) heal(t *testing.T, name string) {
	t.Helper()
	if _, err := f.vol.Put(context.Background(), name, bytes.NewReader(make([]byte, f.size))); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, v scrub.Volume, cfg scrub.Config) (*scrub.Scrubber, func()) {
	t.Helper()
	s, err := scrub.New(v, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return s, func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	}
}

// TestScrubFindsDamage: a pass reports exactly the shards whose block,
// footer or length was damaged (one record each), records its progress,
// and the pass after the interval finds nothing once they were healed.
func TestScrubFindsDamage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mfs := vfs.NewMem()
		f := newFixture(t, mfs, mfs, 30, 3*volume.BlockSize+100)
		bad := map[string]string{
			f.names[3]:  "block",
			f.names[10]: "footer",
			f.names[17]: "truncated",
			f.names[29]: "last block",
		}
		for name, how := range bad {
			f.damage(t, name, func(b []byte) []byte {
				switch how {
				case "block":
					b[volume.BlockSize+10] ^= 0x40
				case "footer":
					b[len(b)-20] ^= 1
				case "truncated":
					b = b[:len(b)-1000]
				case "last block":
					b[3*(volume.BlockSize+4)+50] ^= 0xff
				}
				return b
			})
		}
		store := mem.New()
		s, stop := start(t, f.vol, scrub.Config{Rate: 1 << 30, Store: store, Interval: time.Hour})
		defer stop()
		time.Sleep(time.Minute)
		p := s.Progress()
		if p.LastPass.IsZero() || p.LastShards != 30 || p.LastDamage != 4 || p.Found != 4 || p.Unreported != 0 {
			t.Fatalf("after the first pass: %+v", p)
		}
		ds, _, err := store.Damages(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range ds {
			if d.Disk != disk || d.Kind != cairn.DamageCorrupt || d.Source != cairn.DamageScrub || d.Detail == "" {
				t.Errorf("damage record %+v", d)
			}
			got = append(got, d.Shard)
		}
		want := slices.Sorted(func(yield func(string) bool) {
			for n := range bad {
				if !yield(n) {
					return
				}
			}
		})
		if !slices.Equal(got, want) {
			t.Fatalf("damage reported for %v, want %v", got, want)
		}
		ps, _ := store.ScrubProgress(context.Background())
		if len(ps) != 1 || ps[0].LastDamage != 4 || ps[0].Volume != f.vol.VolumeID() {
			t.Fatalf("stored progress %+v", ps)
		}
		for name := range bad {
			f.heal(t, name)
			if err := store.DeleteDamage(context.Background(), disk, name); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Hour)
		p = s.Progress()
		if p.LastShards != 30 || p.LastDamage != 0 || p.Found != 4 {
			t.Fatalf("after the second pass: %+v", p)
		}
		if ds, _, _ := store.Damages(context.Background(), "", 100); len(ds) != 0 {
			t.Fatalf("the second pass reported %+v", ds)
		}
	})
}

// TestScrubRate: a pass reads at the configured rate.
func TestScrubRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mfs := vfs.NewMem()
		const n, size = 16, 1 << 20
		f := newFixture(t, mfs, mfs, n, size)
		const rate = 2 << 20
		begin := time.Now()
		s, stop := start(t, f.vol, scrub.Config{Rate: rate, Interval: time.Hour})
		defer stop()
		for s.Progress().LastPass.IsZero() {
			time.Sleep(10 * time.Millisecond)
		}
		took := s.Progress().LastPass.Sub(begin)
		want := time.Duration(float64(n*size-256<<10) / rate * float64(time.Second)) // less the burst
		if took < want-50*time.Millisecond || took > want+100*time.Millisecond {
			t.Fatalf("a pass over %d bytes at %d B/s took %v, want about %v", n*size, rate, took, want)
		}
	})
}

// TestScrubShare: while the node is busy, scrub takes its share of the
// disk's time: a pass over a disk that reads at 8 MiB/s takes 1/share as
// long as when the node is idle.
func TestScrubShare(t *testing.T) {
	for _, busy := range []bool{false, true} {
		t.Run(fmt.Sprintf("busy=%v", busy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mfs := vfs.NewMem()
				slow := vfs.Throttle(mfs, vfs.ThrottleConfig{Bandwidth: 8 << 20})
				const n, size = 8, 1 << 20
				f := newFixture(t, slow, mfs, n, size)
				var b atomic.Bool
				b.Store(busy)
				begin := time.Now()
				s, stop := start(t, f.vol, scrub.Config{Rate: 1 << 30, Share: 0.25, Busy: b.Load, Interval: time.Hour})
				defer stop()
				for s.Progress().LastPass.IsZero() {
					time.Sleep(10 * time.Millisecond)
				}
				took := s.Progress().LastPass.Sub(begin)
				want := time.Second // 8 MiB at 8 MiB/s
				if busy {
					want *= 4
				}
				if took < want*9/10 || took > want*11/10 {
					t.Fatalf("busy=%v: the pass took %v, want about %v", busy, took, want)
				}
			})
		})
	}
}

// TestScrubResumeAndPause: a scrubber stopped mid-pass resumes from its
// stored cursor; a paused scrub checks nothing until started again, and
// "start" begins a new pass at once.
func TestScrubResumeAndPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mfs := vfs.NewMem()
		const n, size = 20, 1 << 20
		f := newFixture(t, mfs, mfs, n, size)
		store := mem.New()
		cfg := scrub.Config{Rate: 1 << 20, Store: store, Interval: 24 * time.Hour, SaveEvery: time.Second}
		s, stop := start(t, f.vol, cfg)
		time.Sleep(5500 * time.Millisecond) // about 5 shards of 20, plus the burst
		stop()
		mid := s.Progress()
		if mid.PassShards < 3 || mid.PassShards > 8 || mid.Cursor != f.names[mid.PassShards-1] {
			t.Fatalf("stopped mid-pass at %+v", mid)
		}
		s2, stop2 := start(t, f.vol, cfg)
		defer stop2()
		time.Sleep(100 * time.Millisecond)
		if p := s2.Progress(); p.PassShards < mid.PassShards || p.PassStarted != mid.PassStarted {
			t.Fatalf("the restarted scrubber did not resume: %+v, was %+v", p, mid)
		}
		for s2.Progress().LastPass.IsZero() {
			time.Sleep(100 * time.Millisecond)
		}
		if p := s2.Progress(); p.LastShards != n {
			t.Fatalf("the resumed pass counted %d shards, want %d", p.LastShards, n)
		}
		// Pause, then start: nothing while paused, a new pass at once after.
		if err := store.PutScrubControl(context.Background(), cairn.ScrubControl{Paused: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if p := s2.Progress(); !p.Paused {
			t.Fatalf("not paused: %+v", p)
		}
		last := s2.Progress().LastPass
		if err := store.PutScrubControl(context.Background(), cairn.ScrubControl{Start: 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		p := s2.Progress()
		if p.Paused || p.PassStarted.IsZero() || p.Start != 1 || p.PassShards == 0 {
			t.Fatalf("after start: %+v", p)
		}
		time.Sleep(time.Minute)
		if p := s2.Progress(); !p.LastPass.After(last) || p.LastShards != n {
			t.Fatalf("the started pass did not finish: %+v", p)
		}
	})
}

// TestScrubDamageBound: a pass writes at most MaxDamage records and counts
// the rest.
func TestScrubDamageBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mfs := vfs.NewMem()
		f := newFixture(t, mfs, mfs, 10, 1000)
		for _, name := range f.names {
			f.damage(t, name, func(b []byte) []byte { b[0] ^= 1; return b })
		}
		store := mem.New()
		s, stop := start(t, f.vol, scrub.Config{Rate: 1 << 30, Store: store, MaxDamage: 3, Interval: time.Hour})
		defer stop()
		time.Sleep(time.Minute)
		if p := s.Progress(); p.LastDamage != 10 || p.Unreported != 7 {
			t.Fatalf("progress %+v", p)
		}
		if ds, _, _ := store.Damages(context.Background(), "", 100); len(ds) != 3 {
			t.Fatalf("%d damage records, want 3", len(ds))
		}
		for _, name := range f.names {
			f.heal(t, name)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []scrub.Config{{Rate: -1}, {Share: 1.5}, {Share: -0.1}, {Interval: -time.Second}} {
		if err := c.Validate(); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", c, err)
		}
	}
}
