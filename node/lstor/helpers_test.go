package lstor

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"cairn/internal/vfs"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: from the clock)")

func testRand(t *testing.T) *rand.Rand {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return rand.New(rand.NewPCG(s, 0))
}

const (
	testSize  = 4 * BlockSize
	testSlots = 3
	testCap   = BlockSize + 1000 // records that straddle parity blocks
)

func testConfig(fsys vfs.FS) Config {
	return Config{FS: fsys, Disk: "/disk", Lstor: "/lstor/disk", Size: testSize, Slots: testSlots, Cap: testCap}
}

func openTest(t *testing.T, fsys vfs.FS) *Store {
	t.Helper()
	s, err := Open(context.Background(), testConfig(fsys))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
		fsck(t, fsys)
	})
	return s
}

// fsck reopens the store (replaying its journal) and verifies it.
func fsck(t *testing.T, fsys vfs.FS) {
	t.Helper()
	s, err := Open(context.Background(), testConfig(fsys))
	if err != nil {
		t.Fatalf("fsck: open: %v", err)
	}
	defer s.Close()
	mustVerify(t, s)
}

// mustVerify is the fsck of every test: the Lstor equals the XOR of the
// disk's slots.
func mustVerify(t *testing.T, s *Store) {
	t.Helper()
	rep, err := s.Verify(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v: %v", err, rep)
	}
}

// model is what the slots must hold.
type model [testSlots][]byte

func newModel() *model {
	var m model
	for i := range m {
		m[i] = make([]byte, testSize)
	}
	return &m
}

func (m *model) check(t *testing.T, s *Store, step string) {
	t.Helper()
	for slot := range m {
		got := make([]byte, testSize)
		if err := s.ReadAt(slot, got, 0); err != nil {
			t.Fatalf("%s: read slot %d: %v", step, slot, err)
		}
		if !bytes.Equal(got, m[slot]) {
			t.Fatalf("%s: slot %d differs from the acknowledged writes", step, slot)
		}
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// hookFS calls hook before every write and sync of a file (the crash
// points) and passes WriteAt through, which errorfs does not.
type hookFS struct {
	vfs.FS
	hook func(op string)
}

type hookFile struct {
	file
	fs *hookFS
}

func (h *hookFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	if w, ok := f.(file); ok {
		return &hookFile{w, h}, nil
	}
	return f, nil
}

func (h *hookFS) Create(name string) (vfs.File, error) {
	h.call("create " + name)
	return h.wrap(h.FS.Create(name))
}
func (h *hookFS) OpenReadWrite(name string) (vfs.File, error) {
	return h.wrap(h.FS.OpenReadWrite(name))
}
func (h *hookFS) Remove(name string) error { h.call("remove " + name); return h.FS.Remove(name) }

func (h *hookFS) call(op string) {
	if h.hook != nil {
		h.hook(op)
	}
}

func (f *hookFile) Write(p []byte) (int, error) { f.fs.call("write"); return f.file.Write(p) }
func (f *hookFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.call("writeat")
	return f.file.WriteAt(p, off)
}
func (f *hookFile) Sync() error { f.fs.call("sync"); return f.file.Sync() }
