package raidprun_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"cairn/internal/vfs"
	"cairn/node/lstor"
	"cairn/raidp"
	"cairn/repair/raidprun"
)

var _ raidprun.Disk = (*lstor.Store)(nil)

const (
	n     = 8
	slots = 7
	rows  = 3
	size  = 2 * lstor.BlockSize
	chunk = 40000 // not aligned to parity blocks
)

var errCrashed = errors.New("crashed")

// crashFS counts the writes and syncs of one disk's files; at op crashAt
// it takes a crash clone and fails every later write and sync (the node
// was killed).
type crashFS struct {
	vfs.FS
	mem     *vfs.MemFS
	ops     *int
	crashAt int
	clone   *vfs.MemFS
}

type crashFile struct {
	vfs.File
	fs *crashFS
}

type writerAtFile interface {
	vfs.File
	vfs.WriterAt
}

func (c *crashFS) step() error {
	if c.clone != nil {
		return errCrashed
	}
	if *c.ops == c.crashAt {
		c.clone = c.mem.CrashClone(vfs.CrashCloneCfg{})
		return errCrashed
	}
	*c.ops++
	return nil
}

func (c *crashFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &crashFile{f, c}, nil
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.step(); err != nil {
		return 0, err
	}
	return f.File.(vfs.WriterAt).WriteAt(p, off)
}

func (f *crashFile) Sync() error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Sync()
}

var _ writerAtFile = (*crashFile)(nil)

// group is a RAIDP group of in-memory disks with their Lstors, and what
// every superchunk must hold.
type group struct {
	l      raidp.Layout
	mems   []*vfs.MemFS
	stores []*lstor.Store
	want   map[int][]byte
}

func cfg(fsys vfs.FS) lstor.Config {
	return lstor.Config{FS: fsys, Disk: "/disk", Lstor: "/lstor", Size: size, Slots: slots, Cap: 3 * lstor.BlockSize / 2}
}

func newGroup(t *testing.T, r *rand.Rand) *group {
	t.Helper()
	return newGroupRows(t, r, rows)
}

// newGroupRows is newGroup with superchunks in the given rows.
func newGroupRows(t *testing.T, r *rand.Rand, rows int) *group {
	t.Helper()
	l, err := raidp.New(n, slots, rows)
	if err != nil {
		t.Fatal(err)
	}
	g := &group{l: l, want: make(map[int][]byte)}
	ctx := context.Background()
	for range n {
		m := vfs.NewCrashableMem()
		s, err := lstor.Open(ctx, cfg(m))
		if err != nil {
			t.Fatal(err)
		}
		g.mems, g.stores = append(g.mems, m), append(g.stores, s)
	}
	t.Cleanup(func() {
		for _, s := range g.stores {
			s.Close()
		}
	})
	for _, sc := range l.Superchunks {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		g.want[sc.ID] = b
		for _, p := range sc.Replicas {
			if err := g.stores[p.Disk].Write(ctx, p.Slot, 0, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	return g
}

// copy returns a group holding the same bytes, on copies of the disks
// (cheaper than writing them again).
func (g *group) copy(t *testing.T) *group {
	t.Helper()
	c := &group{l: g.l, want: g.want}
	for _, m := range g.mems {
		cm := m.CrashClone(vfs.CrashCloneCfg{}) // every write was synced
		s, err := lstor.Open(context.Background(), cfg(cm))
		if err != nil {
			t.Fatal(err)
		}
		c.mems, c.stores = append(c.mems, cm), append(c.stores, s)
	}
	t.Cleanup(func() {
		for _, s := range c.stores {
			s.Close()
		}
	})
	return c
}

// fail wipes the disks' directories (their Lstors stay) and reopens them.
func (g *group) fail(t *testing.T, disks ...int) {
	t.Helper()
	for _, d := range disks {
		g.stores[d].Close()
		if err := vfs.RemoveAll(g.mems[d], "/disk"); err != nil {
			t.Fatal(err)
		}
		s, err := lstor.Open(context.Background(), cfg(g.mems[d]))
		if err != nil {
			t.Fatal(err)
		}
		g.stores[d] = s
	}
}

// deadDisk serves only its Lstor: reading or writing the failed disk is a
// plan error.
type deadDisk struct {
	raidprun.Disk
	d int
}

func (x deadDisk) ReadAt(int, []byte, int64) error {
	return fmt.Errorf("read of failed disk %d", x.d)
}

func (x deadDisk) Write(context.Context, int, int64, []byte) error {
	return fmt.Errorf("write to failed disk %d", x.d)
}

func (g *group) disks(failed ...int) map[int]raidprun.Disk {
	m := make(map[int]raidprun.Disk)
	for d, s := range g.stores {
		m[d] = s
		if slices.Contains(failed, d) {
			m[d] = deadDisk{s, d}
		}
	}
	return m
}

// check verifies the group after recovery: the layout's invariants, every
// replica byte-exact, every live disk's Lstor the XOR of its slots.
func (g *group) check(t *testing.T, l raidp.Layout, failed []int, step string) {
	t.Helper()
	if err := l.Check(); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	got := make([]byte, size)
	for _, sc := range l.Superchunks {
		for _, p := range sc.Replicas {
			if slices.Contains(failed, p.Disk) {
				t.Fatalf("%s: superchunk %d still on failed disk %d", step, sc.ID, p.Disk)
			}
			if err := g.stores[p.Disk].ReadAt(p.Slot, got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, g.want[sc.ID]) {
				t.Fatalf("%s: superchunk %d on disk %d slot %d differs", step, sc.ID, p.Disk, p.Slot)
			}
		}
	}
	for d, s := range g.stores {
		if slices.Contains(failed, d) {
			continue
		}
		rep, err := s.Verify(context.Background())
		if err != nil || !rep.OK() {
			t.Fatalf("%s: disk %d: %v %v", step, d, err, rep)
		}
	}
}

func testRand(t *testing.T) *rand.Rand {
	const seed = 17
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// TestEveryPairOfEight: any two of 8 disks fail (every pair); after the
// dual-failure plan runs on the disks, every superchunk is back on two
// disks byte-exact, 1-sharing and 1-mirroring hold, and every Lstor is the
// XOR of its disk's slots. Both Lstors are used for every pair, the second
// alone for a third of them.
func TestEveryPairOfEight(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	tmpl := newGroup(t, r)
	split := 0
	for a := range n {
		for b := a + 1; b < n; b++ {
			for _, ok := range [][2]bool{{true, true}, {false, true}} {
				if !ok[0] && (a+b)%3 != 0 {
					continue // one Lstor alone: a third of the pairs
				}
				g := tmpl.copy(t)
				g.fail(t, a, b)
				p, err := raidp.Dual(g.l, a, b, size, ok, nil)
				if err != nil {
					t.Fatal(err)
				}
				if p.Split() {
					split++
				}
				if err := raidprun.Dual(ctx, p, g.disks(a, b), raidprun.Config{Size: size, Chunk: chunk}); err != nil {
					t.Fatalf("disks %d,%d: %v", a, b, err)
				}
				g.check(t, p.After, []int{a, b}, fmt.Sprintf("disks %d,%d lstors %v", a, b, ok))
			}
		}
	}
	// Split rebuilds (half into each of two targets, then exchanged) ran.
	if split == 0 {
		t.Fatal("no plan split its rebuild over two targets")
	}
	t.Logf("%d plans split their rebuild", split)
}

// TestSingleFailure: one disk fails; the re-mirroring restores two
// byte-exact replicas of each of its superchunks.
func TestSingleFailure(t *testing.T) {
	r := testRand(t)
	tmpl := newGroup(t, r)
	for d := range n {
		g := tmpl.copy(t)
		g.fail(t, d)
		p, err := raidp.Remirror(g.l, []int{d}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := raidprun.Remirror(context.Background(), p, g.disks(d), raidprun.Config{Size: size, Chunk: chunk, Parallel: 2}); err != nil {
			t.Fatal(err)
		}
		g.check(t, p.After, []int{d}, fmt.Sprintf("disk %d", d))
	}
}

// TestCrashDuringRecovery kills one disk's node at a random write or sync
// of a dual-failure recovery (rebuild and re-mirroring), 120 times: after
// it restarts (its journal replayed) every Lstor is the XOR of its slots,
// and running the plan again from the start completes the recovery.
func TestCrashDuringRecovery(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	crashes := 0
	tmpl := newGroup(t, r)
	for iter := range 120 {
		g := tmpl.copy(t)
		a, b := r.IntN(n), r.IntN(n-1)
		if b >= a {
			b++
		}
		g.fail(t, a, b)
		p, err := raidp.Dual(g.l, a, b, size, [2]bool{true, true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The victim: a disk the plan writes to.
		victim := p.Remirror[r.IntN(2)].Transfers[0].To.Disk
		if p.Shared && r.IntN(2) == 0 {
			victim = p.Targets[r.IntN(len(p.Targets))].Disk
		}
		g.stores[victim].Close()
		ops := 0
		cfs := &crashFS{FS: g.mems[victim], mem: g.mems[victim], ops: &ops, crashAt: r.IntN(60)}
		s, err := lstor.Open(ctx, cfg(cfs))
		if err != nil {
			t.Fatal(err)
		}
		g.stores[victim] = s
		step := fmt.Sprintf("iteration %d: disks %d,%d, disk %d killed at op %d", iter, a, b, victim, cfs.crashAt)
		err = raidprun.Dual(ctx, p, g.disks(a, b), raidprun.Config{Size: size, Chunk: chunk})
		if cfs.clone != nil {
			crashes++
			// The run stops with the crash, or with the store the crash
			// left marked (a parallel side's write after it).
			if !errors.Is(err, errCrashed) && !errors.Is(err, lstor.ErrNeedsVerify) {
				t.Fatalf("%s: the run went on after the crash: %v", step, err)
			}
			s.Close()
			g.mems[victim] = cfs.clone
			if g.stores[victim], err = lstor.Open(ctx, cfg(cfs.clone)); err != nil {
				t.Fatalf("%s: restart: %v", step, err)
			}
			for d, st := range g.stores {
				if d == a || d == b {
					continue
				}
				if rep, err := st.Verify(ctx); err != nil || !rep.OK() {
					t.Fatalf("%s: after restart, disk %d: %v %v", step, d, err, rep)
				}
			}
			if err := raidprun.Dual(ctx, p, g.disks(a, b), raidprun.Config{Size: size, Chunk: chunk}); err != nil {
				t.Fatalf("%s: second run: %v", step, err)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		g.check(t, p.After, []int{a, b}, step)
	}
	if crashes < 60 {
		t.Fatalf("only %d of 120 runs crashed: the test does not exercise recovery", crashes)
	}
}

// TestVerify: a group's replicas agree after recovery; a byte changed on
// one replica (bypassing its mirror) is found.
func TestVerify(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	g := newGroup(t, r)
	c := raidprun.Config{Size: size, Chunk: chunk}
	if d, err := raidprun.Verify(ctx, g.l, g.disks(), c); err != nil || len(d) != 0 {
		t.Fatalf("fresh group: %v %v", d, err)
	}
	sc := g.l.Superchunks[5]
	p := sc.Replicas[1]
	if err := g.stores[p.Disk].Write(ctx, p.Slot, size-1, []byte{^g.want[sc.ID][size-1]}); err != nil {
		t.Fatal(err)
	}
	d, err := raidprun.Verify(ctx, g.l, g.disks(), c)
	if err != nil || len(d) != 1 || d[0].Superchunk != sc.ID || d[0].Off != size-1-(size-1)%chunk {
		t.Fatalf("one diverging byte: %+v %v", d, err)
	}
}
