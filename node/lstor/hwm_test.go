package lstor

import (
	"bytes"
	"context"
	"testing"

	"cairn/internal/vfs"
)

// readCountFS counts reads of the disk's data file.
type readCountFS struct {
	vfs.FS
	reads *int
}

type readCountFile struct {
	file
	reads *int
}

func (r readCountFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := r.FS.OpenReadWrite(name)
	if err != nil || name != "/disk/"+dataFile {
		return f, err
	}
	return readCountFile{f.(file), r.reads}, nil
}

func (f readCountFile) ReadAt(p []byte, off int64) (int, error) {
	*f.reads++
	return f.file.ReadAt(p, off)
}

// TestAppendShortcut: appending at or past a slot's high-water mark skips
// the old-data read (and journals no old data); a write below it reads.
func TestAppendShortcut(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	reads := 0
	s := openTest(t, readCountFS{vfs.NewMem(), &reads})
	m := newModel()
	for i, off := range []int64{0, 1000, 5000, 3 * BlockSize} {
		p := randBytes(r, 1000)
		if i == 1 {
			p = randBytes(r, 4000)
		}
		before := reads
		if err := s.Write(ctx, 1, off, p); err != nil {
			t.Fatal(err)
		}
		copy(m[1][off:], p)
		if reads != before {
			t.Fatalf("append at %d read the disk %d times", off, reads-before)
		}
		if got, want := s.HWM(1), off+int64(len(p)); got != want {
			t.Fatalf("high-water mark %d, want %d", got, want)
		}
	}
	before := reads
	if err := s.Write(ctx, 1, 10, []byte("overwrite")); err != nil {
		t.Fatal(err)
	}
	copy(m[1][10:], "overwrite")
	if reads == before {
		t.Fatal("an overwrite below the high-water mark did not read the old data")
	}
	m.check(t, s, "appends")
	mustVerify(t, s)
}

// TestDeletes: online deletes zero at once and lower the high-water mark
// at the tail; lazy ones wait for Idle, a bounded queue zeroes its oldest
// when full, and a write over a queued range keeps its new data.
func TestDeletes(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	cfg := testConfig(vfs.NewMem())
	cfg.Deletes = DeleteOnline
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := randBytes(r, 3*testCap)
	if err := s.Write(ctx, 0, 0, p); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, 0, 100, int64(len(p))-100); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(p))
	if err := s.ReadAt(0, got, 0); err != nil || !bytes.Equal(got[:100], p[:100]) || !allZero(got[100:]) {
		t.Fatalf("online delete: %v", err)
	}
	if h := s.HWM(0); h != 100 {
		t.Fatalf("high-water mark after deleting the tail: %d, want 100", h)
	}
	mustVerify(t, s)
	s.Close()

	cfg.Deletes, cfg.Backlog = DeleteLazy, 2
	s, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, 2, 0, p); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 1000, 2000} {
		if err := s.Delete(ctx, 2, off, 500); err != nil {
			t.Fatal(err)
		}
	}
	if b := s.Backlog(); b != 2 {
		t.Fatalf("backlog %d, want the bound 2", b)
	}
	if err := s.ReadAt(2, got[:500], 0); err != nil || !allZero(got[:500]) {
		t.Fatal("the oldest lazy delete was not zeroed when the backlog was full")
	}
	if err := s.ReadAt(2, got[:500], 1000); err != nil || !bytes.Equal(got[:500], p[1000:1500]) {
		t.Fatal("a queued lazy delete was zeroed before Idle")
	}
	// A new write over part of a queued range.
	if err := s.Write(ctx, 2, 2100, []byte("live")); err != nil {
		t.Fatal(err)
	}
	if err := s.Idle(ctx); err != nil || s.Backlog() != 0 {
		t.Fatalf("idle: %v, backlog %d", err, s.Backlog())
	}
	if err := s.ReadAt(2, got[:500], 2000); err != nil || !allZero(got[:100]) || string(got[100:104]) != "live" || !allZero(got[104:500]) {
		t.Fatalf("after idle: %q", got[96:108])
	}
	mustVerify(t, s)
}
