package raidpgroup_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"cairn/client/raidpgroup"
	"cairn/internal/vfs"
	"cairn/node/lstor"
	"cairn/raidp"
	"cairn/repair/raidprun"
)

var (
	_ raidpgroup.Disk = (*lstor.Store)(nil)
	_ raidprun.Disk   = (*lstor.Store)(nil)
)

const (
	n     = 8
	slots = 7
	rows  = 3
	size  = 2 * lstor.BlockSize
)

var errCrashed = errors.New("crashed")

// power is a power switch for a whole group: every write and sync of
// every disk counts as one step; at step crashAt every disk's file system
// is cloned as a crash would leave it, and every later step fails.
type power struct {
	mu      sync.Mutex
	steps   int
	crashAt int // −1: never
	rng     *rand.Rand
	mems    []*vfs.MemFS
	clones  []*vfs.MemFS
}

func (pw *power) step() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.clones != nil {
		return errCrashed
	}
	if pw.steps == pw.crashAt {
		for _, m := range pw.mems {
			pw.clones = append(pw.clones, m.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pw.rng.IntN(101), RNG: pw.rng}))
		}
		return errCrashed
	}
	pw.steps++
	return nil
}

type powerFS struct {
	vfs.FS
	pw *power
}

type powerFile struct {
	vfs.File
	pw *power
}

func (p powerFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return powerFile{f, p.pw}, nil
}

func (f powerFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.pw.step(); err != nil {
		return 0, err
	}
	return f.File.(vfs.WriterAt).WriteAt(b, off)
}

func (f powerFile) Sync() error {
	if err := f.pw.step(); err != nil {
		return err
	}
	return f.File.Sync()
}

func cfg(fsys vfs.FS) lstor.Config {
	return lstor.Config{FS: fsys, Disk: "/disk", Lstor: "/lstor", Size: size, Slots: slots, Cap: lstor.BlockSize}
}

type cluster struct {
	l      raidp.Layout
	mems   []*vfs.MemFS
	stores []*lstor.Store
	g      *raidpgroup.Group
}

func (c *cluster) disks() map[int]raidpgroup.Disk {
	m := make(map[int]raidpgroup.Disk)
	for i, s := range c.stores {
		m[i] = s
	}
	return m
}

func (c *cluster) close() {
	for _, s := range c.stores {
		s.Close()
	}
}

func newCluster(t *testing.T, mems []*vfs.MemFS, wrap func(vfs.FS) vfs.FS, mode raidpgroup.Deletes) *cluster {
	t.Helper()
	l, err := raidp.New(n, slots, rows)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{l: l, mems: mems}
	for _, m := range mems {
		s, err := lstor.Open(context.Background(), cfg(wrap(m)))
		if err != nil {
			t.Fatal(err)
		}
		c.stores = append(c.stores, s)
	}
	if c.g, err = raidpgroup.New(l, size, c.disks(), raidpgroup.Options{Deletes: mode}); err != nil {
		t.Fatal(err)
	}
	return c
}

func newMems() []*vfs.MemFS {
	var m []*vfs.MemFS
	for range n {
		m = append(m, vfs.NewCrashableMem())
	}
	return m
}

func id(f vfs.FS) vfs.FS { return f }

// checkStores verifies every disk's Lstor and that every superchunk's
// replicas agree.
func (c *cluster) checkStores(t *testing.T, l raidp.Layout, skip []int, step string) {
	t.Helper()
	disks := make(map[int]raidprun.Disk)
	for d, s := range c.stores {
		disks[d] = s
		if contains(skip, d) {
			continue
		}
		if rep, err := s.Verify(context.Background()); err != nil || !rep.OK() {
			t.Fatalf("%s: disk %d: %v %v", step, d, err, rep)
		}
	}
	div, err := raidprun.Verify(context.Background(), l, disks, raidprun.Config{Size: size})
	if err != nil || len(div) > 0 {
		t.Fatalf("%s: replicas differ: %v %v", step, div, err)
	}
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

type object struct {
	data []byte
	ext  []raidp.Extent
}

func testRand(t *testing.T) *rand.Rand {
	const seed = 17
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed))
}

func randBytes(r *rand.Rand, k int) []byte {
	b := make([]byte, k)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func (c *cluster) mustRead(t *testing.T, o object, step string) {
	t.Helper()
	got := make([]byte, len(o.data))
	if err := c.g.Get(context.Background(), o.ext, got); err != nil || !bytes.Equal(got, o.data) {
		t.Fatalf("%s: object %v reads back wrong: %v", step, o.ext, err)
	}
}

// TestPutGetDelete: objects (some spanning superchunks) read back,
// deletes free space for compaction, and after every step each Lstor is
// the XOR of its disk and the replicas agree.
func TestPutGetDelete(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	for _, mode := range []raidpgroup.Deletes{raidpgroup.Lazy, raidpgroup.Online} {
		c := newCluster(t, newMems(), id, mode)
		var objs []object
		for i := range 40 {
			o := object{data: randBytes(r, 1+r.IntN(size/2))}
			var err error
			if o.ext, err = c.g.Put(ctx, o.data); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, o)
			if i%3 == 2 {
				k := r.IntN(len(objs))
				if err := c.g.Delete(ctx, objs[k].ext); err != nil {
					t.Fatal(err)
				}
				objs = append(objs[:k], objs[k+1:]...)
			}
		}
		spans := 0
		for _, o := range objs {
			c.mustRead(t, o, "after puts")
			if len(o.ext) > 1 {
				spans++
			}
		}
		if spans == 0 {
			t.Fatal("no object spans two superchunks: the test misses that case")
		}
		if mode == raidpgroup.Lazy && c.g.Backlog() == 0 {
			t.Fatal("lazy deletes left no backlog")
		}
		// The replicas agree before Idle too: queued ranges are intact on both.
		c.checkStores(t, c.l, nil, fmt.Sprint("mode ", mode, " before idle"))
		if err := c.g.Idle(ctx); err != nil || c.g.Backlog() != 0 {
			t.Fatalf("idle: %v, backlog %d", err, c.g.Backlog())
		}
		c.checkStores(t, c.l, nil, fmt.Sprint("mode ", mode))
		for _, o := range objs {
			c.mustRead(t, o, "after idle")
		}
		c.close()
	}
}

// TestPowerLoss cuts the power of the whole group at a random write or
// sync during puts and deletes, 120 times: after every disk restarts (its
// journal replayed) each Lstor is the XOR of its disk, and every
// acknowledged object reads back byte-exact from both replicas.
func TestPowerLoss(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	crashes := 0
	for iter := range 120 {
		mems := newMems()
		pw := &power{crashAt: -1, rng: r, mems: mems}
		mode := raidpgroup.Deletes(iter % 2)
		c := newCluster(t, mems, func(f vfs.FS) vfs.FS { return powerFS{f, pw} }, mode)
		pw.crashAt = pw.steps + r.IntN(400) // after the disks are formatted
		var acked []object
		for pw.clones == nil {
			if len(acked) > 2 && r.IntN(4) == 0 {
				k := r.IntN(len(acked))
				if err := c.g.Delete(ctx, acked[k].ext); err != nil {
					// The crash hit it: the object may be dead or alive.
					acked = append(acked[:k], acked[k+1:]...)
					break
				}
				acked = append(acked[:k], acked[k+1:]...)
				continue
			}
			o := object{data: randBytes(r, 1+r.IntN(size/3))}
			var err error
			if o.ext, err = c.g.Put(ctx, o.data); err != nil {
				break // the crash (not acknowledged), or raidp.ErrFull
			}
			acked = append(acked, o)
		}
		c.close()
		if pw.clones == nil {
			continue // filled the group before the crash point
		}
		crashes++
		step := fmt.Sprintf("iteration %d, power cut at step %d", iter, pw.crashAt)
		after := &cluster{l: c.l, mems: pw.clones}
		for _, m := range pw.clones {
			s, err := lstor.Open(ctx, cfg(m))
			if err != nil {
				t.Fatalf("%s: restart: %v", step, err)
			}
			after.stores = append(after.stores, s)
		}
		for d, s := range after.stores {
			if rep, err := s.Verify(ctx); err != nil || !rep.OK() {
				t.Fatalf("%s: disk %d: %v %v", step, d, err, rep)
			}
		}
		for _, o := range acked {
			for _, e := range o.ext {
				sc := c.l.Superchunks[e.Superchunk]
				var base int64
				for _, x := range o.ext {
					if x == e {
						break
					}
					base += x.Len
				}
				for _, p := range sc.Replicas {
					got := make([]byte, e.Len)
					if err := after.stores[p.Disk].ReadAt(p.Slot, got, e.Off); err != nil || !bytes.Equal(got, o.data[base:base+e.Len]) {
						t.Fatalf("%s: acknowledged object lost on disk %d: %v", step, p.Disk, err)
					}
				}
			}
		}
		after.close()
	}
	if crashes < 60 {
		t.Fatalf("only %d of 120 runs crashed", crashes)
	}
}

// TestObjectsSurviveDualFailure: objects written, two disks fail (several
// pairs), the dual-failure plan runs, and every object reads back through
// the new layout; writes are diverted from the lost superchunk meanwhile,
// and lazy deletes queued before the failure are zeroed after it.
func TestObjectsSurviveDualFailure(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	for _, pair := range [][2]int{{0, 1}, {2, 5}, {3, 7}, {6, 4}} {
		mems := newMems()
		c := newCluster(t, mems, id, raidpgroup.Lazy)
		var objs []object
		for range 30 {
			o := object{data: randBytes(r, 1+r.IntN(size/2))}
			var err error
			if o.ext, err = c.g.Put(ctx, o.data); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, o)
		}
		// Some deletes are still queued when the disks fail: both replicas
		// of each queued range are intact, so the rebuild is right.
		for range 5 {
			k := r.IntN(len(objs))
			if err := c.g.Delete(ctx, objs[k].ext); err != nil {
				t.Fatal(err)
			}
			objs = append(objs[:k], objs[k+1:]...)
		}
		a, b := pair[0], pair[1]
		for _, d := range []int{a, b} {
			c.stores[d].Close()
			if err := vfs.RemoveAll(mems[d], "/disk"); err != nil {
				t.Fatal(err)
			}
			s, err := lstor.Open(ctx, cfg(mems[d]))
			if err != nil {
				t.Fatal(err)
			}
			c.stores[d] = s
		}
		p, err := raidp.Dual(c.l, a, b, size, [2]bool{true, true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Shared {
			c.g.Divert(p.Lost, true)
		}
		disks := make(map[int]raidprun.Disk)
		for d, s := range c.stores {
			disks[d] = s
		}
		if err := raidprun.Dual(ctx, p, disks, raidprun.Config{Size: size}); err != nil {
			t.Fatal(err)
		}
		if err := c.g.SetLayout(p.After, nil); err != nil {
			t.Fatal(err)
		}
		c.g.Divert(p.Lost, false)
		for _, o := range objs {
			c.mustRead(t, o, fmt.Sprintf("disks %d,%d", a, b))
		}
		c.checkStores(t, p.After, []int{a, b}, fmt.Sprintf("disks %d,%d", a, b))
		if err := c.g.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			c.mustRead(t, o, "after idle")
		}
		c.checkStores(t, p.After, []int{a, b}, fmt.Sprintf("disks %d,%d after idle", a, b))
		// New writes land on the recovered layout.
		o := object{data: randBytes(r, 1000)}
		if o.ext, err = c.g.Put(ctx, o.data); err != nil {
			t.Fatal(err)
		}
		c.mustRead(t, o, "after recovery")
		c.close()
	}
}

// TestCompaction: a mostly-dead superchunk is diverted, its live objects
// relocated, its old extents deleted, and it is reclaimed: zeroed on both
// replicas (high-water mark back to 0) and open again; every object reads
// back and every Lstor is the XOR of its disk.
func TestCompaction(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	c := newCluster(t, newMems(), id, raidpgroup.Lazy)
	defer c.close()
	var objs []object
	for range 12 {
		o := object{data: randBytes(r, size/4-100)}
		var err error
		if o.ext, err = c.g.Put(ctx, o.data); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	// Superchunk 0 holds the first four objects; three die.
	for _, o := range objs[:3] {
		if err := c.g.Delete(ctx, o.ext); err != nil {
			t.Fatal(err)
		}
	}
	objs = objs[3:]
	got := c.g.Compactable(0.5)
	if len(got) == 0 || got[0] != 0 {
		t.Fatalf("compactable: %v, want superchunk 0 first", got)
	}
	if err := c.g.Reclaim(ctx, 0); !errors.Is(err, raidp.ErrExtent) {
		t.Fatalf("reclaim with a live object: %v, want ErrExtent", err)
	}
	c.g.Divert(0, true)
	for i, o := range objs {
		if o.ext[0].Superchunk != 0 {
			continue
		}
		ne, err := c.g.Relocate(ctx, o.ext)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ne {
			if e.Superchunk == 0 {
				t.Fatalf("relocated into the diverted superchunk: %v", ne)
			}
		}
		if err := c.g.Delete(ctx, o.ext); err != nil {
			t.Fatal(err)
		}
		objs[i].ext = ne
	}
	if err := c.g.Reclaim(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.l.Superchunks[0].Replicas {
		if h := c.stores[p.Disk].HWM(p.Slot); h != 0 {
			t.Fatalf("disk %d slot %d: high-water mark %d after reclaim, want 0", p.Disk, p.Slot, h)
		}
	}
	if err := c.g.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	o := object{data: randBytes(r, 100)}
	var err error
	if o.ext, err = c.g.Put(ctx, o.data); err != nil || o.ext[0].Superchunk != 0 {
		t.Fatalf("put after reclaim: %v, %v (want superchunk 0 reused)", o.ext, err)
	}
	objs = append(objs, o)
	for _, o := range objs {
		c.mustRead(t, o, "after compaction")
	}
	c.checkStores(t, c.l, nil, "after compaction")
}

// failingDisk fails writes (and, if zero, zeroing too) while on.
type failingDisk struct {
	*lstor.Store
	on, zero bool
}

func (f *failingDisk) Write(ctx context.Context, slot int, off int64, p []byte) error {
	if f.on {
		return errors.New("injected write failure")
	}
	return f.Store.Write(ctx, slot, off, p)
}

func (f *failingDisk) Zero(ctx context.Context, slot int, off, n int64) error {
	if f.on && f.zero {
		return errors.New("injected zero failure")
	}
	return f.Store.Zero(ctx, slot, off, n)
}

// TestFailedPutReconciles: a Put that reaches one replica but not the
// other is undone on both (zeroed), so the replicas agree again — the
// precondition of a dual-failure rebuild; when even that fails, the
// extents are reported as divergent.
func TestFailedPutReconciles(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	c := newCluster(t, newMems(), id, raidpgroup.Lazy)
	defer c.close()
	o := object{data: randBytes(r, 5000)}
	var err error
	if o.ext, err = c.g.Put(ctx, o.data); err != nil {
		t.Fatal(err)
	}
	// The next object goes to superchunk 0 too: fail one of its disks.
	bad := &failingDisk{Store: c.stores[c.l.Superchunks[0].Replicas[1].Disk], on: true}
	disks := c.disks()
	disks[c.l.Superchunks[0].Replicas[1].Disk] = bad
	if err := c.g.SetLayout(c.l, disks); err != nil {
		t.Fatal(err)
	}
	if _, err := c.g.Put(ctx, randBytes(r, 3000)); err == nil {
		t.Fatal("put with a failing replica succeeded")
	}
	if d := c.g.Divergent(); len(d) != 0 {
		t.Fatalf("divergent after a reconciled put: %v", d)
	}
	c.checkStores(t, c.l, nil, "after a failed put")
	c.mustRead(t, o, "after a failed put")
	bad.zero = true
	if _, err := c.g.Put(ctx, randBytes(r, 3000)); err == nil {
		t.Fatal("put with a failing replica succeeded")
	}
	if d := c.g.Divergent(); len(d) != 1 || d[0].Superchunk != 0 {
		t.Fatalf("divergent after an unreconciled put: %v", d)
	}
}
