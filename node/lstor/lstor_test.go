package lstor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"cairn/internal/vfs"
)

// TestWriteRead: random writes (unaligned, spanning records and parity
// blocks) read back, and after each the Lstor is the XOR of the slots.
func TestWriteRead(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	mem := vfs.NewMem()
	s := openTest(t, mem)
	m := newModel()
	for i := range 30 {
		slot := r.IntN(testSlots)
		off := r.Int64N(testSize)
		n := r.Int64N(min(testSize-off, 3*testCap) + 1)
		p := randBytes(r, int(n))
		if err := s.Write(ctx, slot, off, p); err != nil {
			t.Fatal(err)
		}
		copy(m[slot][off:], p)
		m.check(t, s, fmt.Sprint("write ", i))
		if i%7 == 0 {
			mustVerify(t, s)
		}
	}
	// The parity reads back as the XOR of the slots.
	par := make([]byte, 100)
	if err := s.Parity(par, BlockSize-50); err != nil {
		t.Fatal(err)
	}
	for i := range par {
		var want byte
		for slot := range m {
			want ^= m[slot][BlockSize-50+i]
		}
		if par[i] != want {
			t.Fatalf("parity byte %d: %#x, want %#x", i, par[i], want)
		}
	}
	// Reopen: same contents, nothing to replay.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, mem)
	m.check(t, s2, "reopen")
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	for _, c := range []struct {
		disk, lstor string
		want        error
	}{
		{"/d", "/d", ErrSamePath},
		{"/d", "/d/", ErrSamePath},
		{"/d", "/d/lstor", ErrSamePath},
		{"/d/x", "/d", ErrSamePath},
		{"", "/l", ErrConfig},
	} {
		cfg := testConfig(mem)
		cfg.Disk, cfg.Lstor = c.disk, c.lstor
		if _, err := Open(ctx, cfg); !errors.Is(err, c.want) {
			t.Errorf("disk %q, Lstor %q: %v, want %v", c.disk, c.lstor, err, c.want)
		}
	}
	if err := CheckPaths("/data/disk1", "/data/lstor/disk1"); err != nil {
		t.Errorf("sibling paths refused: %v", err)
	}
	if err := CheckPaths("/data/disk1", "/data/disk10"); err != nil {
		t.Errorf("prefix-named sibling refused: %v", err)
	}
	for _, mod := range []func(*Config){
		func(c *Config) { c.Size = BlockSize + 1 },
		func(c *Config) { c.Size = 0 },
		func(c *Config) { c.Slots = 0 },
		func(c *Config) { c.Cap = -1 },
	} {
		cfg := testConfig(mem)
		mod(&cfg)
		if _, err := Open(ctx, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
	s := openTest(t, mem)
	if err := s.Write(ctx, testSlots, 0, []byte{1}); !errors.Is(err, ErrRange) {
		t.Errorf("slot out of range: %v", err)
	}
	if err := s.Write(ctx, 0, testSize-1, []byte{1, 2}); !errors.Is(err, ErrRange) {
		t.Errorf("past the superchunk: %v", err)
	}
	// Another geometry on the same Lstor is refused.
	s.Close()
	cfg := testConfig(mem)
	cfg.Slots++
	if _, err := Open(ctx, cfg); !errors.Is(err, ErrMismatch) {
		t.Errorf("other geometry: %v, want ErrMismatch", err)
	}
}

// TestCorruptParityBlock: a damaged parity block is found by Verify and
// refused by a write that needs it; Resync repairs it from the disk.
func TestCorruptParityBlock(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	s := openTest(t, mem)
	if err := s.Write(ctx, 1, 10, bytes.Repeat([]byte{7}, 3*BlockSize)); err != nil {
		t.Fatal(err)
	}
	flip(t, mem, "/lstor/disk/LSTOR", HeaderSize+BlockSize+5)
	rep, err := s.Verify(ctx)
	if err != nil || len(rep.Corrupt) != 1 || rep.Corrupt[0] != 1 {
		t.Fatalf("verify: %v %v, want block 1 corrupt", err, rep)
	}
	if err := s.Write(ctx, 0, BlockSize, []byte{1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("write over a corrupt parity block: %v, want ErrCorrupt", err)
	}
	if err := s.Resync(ctx); err != nil {
		t.Fatal(err)
	}
}

// flip inverts one byte of a file.
func flip(t *testing.T, fsys vfs.FS, name string, off int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.(vfs.WriterAt).WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptHeader(t *testing.T) {
	mem := vfs.NewMem()
	s, err := Open(context.Background(), testConfig(mem))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	flip(t, mem, filepath.Join("/lstor/disk", lstorFile), 17)
	if _, err := Open(context.Background(), testConfig(mem)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a damaged header: %v, want ErrCorrupt", err)
	}
}

// TestReplacedDisk: the disk's directory is wiped while its Lstor survives
// (the Lstor lives on its own path): the old parity stays readable (for a
// dual-failure rebuild), the store is marked for verification, and a
// resync makes it consistent with the new, empty disk.
func TestReplacedDisk(t *testing.T) {
	ctx := context.Background()
	s := reopenWithout(t, 0, 0, []byte{0xaa, 0xbb}, "/disk")
	par := make([]byte, 2)
	if err := s.Parity(par, 0); err != nil || !bytes.Equal(par, []byte{0xaa, 0xbb}) {
		t.Fatalf("old parity %x, %v", par, err)
	}
	if err := s.Resync(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestParseDiskSpec(t *testing.T) {
	tests := []struct {
		spec, disk, lstor string
		want              error
	}{
		{"/data/disk1", "/data/disk1", "", nil},
		{"/data/disk1,lstor=/nvme/lstor1", "/data/disk1", "/nvme/lstor1", nil},
		{"/data/disk1,lstor=/data/disk1", "", "", ErrSamePath},
		{"/data/disk1,lstor=/data/disk1/lstor", "", "", ErrSamePath},
		{"/data/disk1,lstor=/data/disk1/../disk1", "", "", ErrSamePath},
		{"/data/disk1,lstor=", "", "", ErrConfig},
		{"/data/disk1,parity=/x", "", "", ErrConfig},
		{"/data/disk1,lstor=/a,lstor=/b", "", "", ErrConfig},
		{",lstor=/a", "", "", ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			d, l, err := ParseDiskSpec(tc.spec)
			if !errors.Is(err, tc.want) || d != tc.disk || l != tc.lstor {
				t.Fatalf("got %q, %q, %v; want %q, %q, %v", d, l, err, tc.disk, tc.lstor, tc.want)
			}
		})
	}
}

// TestLocked: a store open by one holder cannot be opened by another (a
// verify must not race a node's writes).
func TestLocked(t *testing.T) {
	mem := vfs.NewMem()
	openTest(t, mem)
	if _, err := Open(context.Background(), testConfig(mem)); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second open: %v, want vfs.ErrLocked", err)
	}
}

func TestMustExist(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	cfg.MustExist = true
	if _, err := Open(context.Background(), cfg); !errors.Is(err, ErrNotFormatted) {
		t.Fatalf("open of a missing Lstor: %v, want ErrNotFormatted", err)
	}
}

// TestLostLstor: the Lstor alone is lost; a new one beside the old disk is
// marked for verification (its zero parity and high-water marks describe
// nothing) and a resync rebuilds it from the disk.
func TestLostLstor(t *testing.T) {
	ctx := context.Background()
	s := reopenWithout(t, 1, 7, []byte("data"), "/lstor/disk")
	if err := s.Write(ctx, 1, 100, []byte("x")); !errors.Is(err, ErrNeedsVerify) {
		t.Fatalf("write before the rebuild: %v, want ErrNeedsVerify", err)
	}
	if err := s.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if h := s.HWM(1); h != 11 {
		t.Fatalf("high-water mark after the rebuild: %d, want 11", h)
	}
}

// reopenWithout writes p into a new store, removes dir (the disk's or the
// Lstor's), reopens the store and checks it is marked for verification.
func reopenWithout(t *testing.T, slot int, off int64, p []byte, dir string) *Store {
	t.Helper()
	ctx := context.Background()
	mem := vfs.NewMem()
	s, err := Open(ctx, testConfig(mem))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, slot, off, p); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := vfs.RemoveAll(mem, dir); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, mem)
	if !s.NeedsVerify() {
		t.Fatalf("a store reopened without %s is not marked for verification", dir)
	}
	return s
}
