package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"syscall"
	"testing"
	"time"

	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, f vfs.FS, name, data string, sync bool) {
	t.Helper()
	h, err := f.Create(name)
	must(t, err)
	_, err = io.WriteString(h, data)
	must(t, err)
	if sync {
		must(t, h.Sync())
	}
	must(t, h.Close())
}

func syncDir(t *testing.T, f vfs.FS, dir string) {
	t.Helper()
	d, err := f.OpenDir(dir)
	must(t, err)
	must(t, d.Sync())
	must(t, d.Close())
}

func readFile(t *testing.T, f vfs.FS, name string) (string, error) {
	t.Helper()
	h, err := f.Open(name)
	if err != nil {
		return "", err
	}
	defer h.Close()
	fi, err := h.Stat()
	must(t, err)
	b := make([]byte, fi.Size())
	if _, err := h.ReadAt(b, 0); err != nil && err != io.EOF {
		return "", err
	}
	return string(b), nil
}

// TestFSSemantics runs the same checks against the OS and the mem FS.
func TestFSSemantics(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   vfs.FS
		root string
	}{
		{"os", vfs.Default, t.TempDir()},
		{"mem", vfs.NewMem(), "/data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, root := tc.fs, tc.root
			must(t, f.MkdirAll(path.Join(root, "a/b"), 0o755))
			must(t, f.MkdirAll(path.Join(root, "a/b"), 0o755)) // idempotent
			writeFile(t, f, path.Join(root, "a/x"), "hello", true)
			writeFile(t, f, path.Join(root, "a/c"), "", false)
			names, err := f.List(path.Join(root, "a"))
			must(t, err)
			if !slices.Equal(names, []string{"b", "c", "x"}) {
				t.Fatalf("List = %v", names)
			}
			got, err := readFile(t, f, path.Join(root, "a/x"))
			must(t, err)
			if got != "hello" {
				t.Fatalf("read %q", got)
			}
			// ReadAt past the end: io.EOF with the short count.
			h, err := f.Open(path.Join(root, "a/x"))
			must(t, err)
			b := make([]byte, 10)
			n, err := h.ReadAt(b, 3)
			if n != 2 || err != io.EOF || string(b[:2]) != "lo" {
				t.Fatalf("ReadAt = %d, %v", n, err)
			}
			must(t, h.Close())
			// Rename replaces.
			must(t, f.Rename(path.Join(root, "a/c"), path.Join(root, "a/x")))
			if got, _ := readFile(t, f, path.Join(root, "a/x")); got != "" {
				t.Fatalf("after rename: %q", got)
			}
			if _, err := f.Stat(path.Join(root, "a/c")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("old name after rename: %v", err)
			}
			// Remove: non-empty dir fails, missing file is ErrNotExist.
			if err := f.Remove(path.Join(root, "a")); err == nil {
				t.Fatal("removed a non-empty directory")
			}
			if err := f.Remove(path.Join(root, "a/nope")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("remove missing: %v", err)
			}
			must(t, f.Remove(path.Join(root, "a/b")))
			if _, err := f.Create(path.Join(root, "missing/x")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("create in a missing dir: %v", err)
			}
			// OpenReadWrite does not truncate.
			writeFile(t, f, path.Join(root, "rw"), "abcdef", false)
			h, err = f.OpenReadWrite(path.Join(root, "rw"))
			must(t, err)
			_, err = h.Write([]byte("XY"))
			must(t, err)
			must(t, h.Close())
			if got, _ := readFile(t, f, path.Join(root, "rw")); got != "XYcdef" {
				t.Fatalf("OpenReadWrite: %q", got)
			}
			syncDir(t, f, root)
			du, err := f.GetDiskUsage(root)
			must(t, err)
			if du.TotalBytes == 0 || du.AvailBytes > du.TotalBytes || du.FS == "" {
				t.Fatalf("disk usage %+v", du)
			}
			// Paths of one file system name the same one.
			if in, err := f.GetDiskUsage(path.Join(root, "rw")); err != nil || in.FS != du.FS {
				t.Fatalf("disk usage of a file in %s: %+v, %v; of the directory: %+v", root, in, err, du)
			}
		})
	}
}

func TestCrashCloneKeepsOnlySynced(t *testing.T) {
	m := vfs.NewCrashableMem()
	must(t, m.MkdirAll("/d", 0o755))
	writeFile(t, m, "/d/synced", "durable", true)
	writeFile(t, m, "/d/unsynced", "lost", false)
	syncDir(t, m, "/") // makes /d durable
	syncDir(t, m, "/d")
	// After the dir sync: data appended but not synced is lost.
	h, err := m.OpenReadWrite("/d/unsynced")
	must(t, err)
	_, err = h.Write([]byte("LOST"))
	must(t, err)
	must(t, h.Close())
	// A rename without a directory sync is lost.
	must(t, m.Rename("/d/synced", "/d/renamed"))
	// A new directory whose parent is not synced is lost with its files.
	must(t, m.MkdirAll("/e", 0o755))
	writeFile(t, m, "/e/f", "x", true)
	syncDir(t, m, "/e")

	c := m.CrashClone(vfs.CrashCloneCfg{})
	if got, err := readFile(t, c, "/d/synced"); err != nil || got != "durable" {
		t.Fatalf("synced file: %q, %v", got, err)
	}
	if _, err := c.Stat("/d/renamed"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced rename survived: %v", err)
	}
	if got, err := readFile(t, c, "/d/unsynced"); err != nil || got != "" {
		t.Fatalf("unsynced data: %q, %v", got, err)
	}
	if _, err := c.Stat("/e"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unsynced mkdir survived: %v", err)
	}
	// The original is unchanged.
	if got, _ := readFile(t, m, "/d/renamed"); got != "durable" {
		t.Fatalf("original changed: %q", got)
	}
	// Syncing the directory makes the rename durable.
	syncDir(t, m, "/d")
	c = m.CrashClone(vfs.CrashCloneCfg{})
	if got, err := readFile(t, c, "/d/renamed"); err != nil || got != "durable" {
		t.Fatalf("synced rename: %q, %v", got, err)
	}
	if _, err := c.Stat("/d/synced"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old name survived a synced rename: %v", err)
	}
}

func TestCrashCloneUnsyncedPrefix(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	m := vfs.NewCrashableMem()
	h, err := m.Create("/f")
	must(t, err)
	_, err = h.Write([]byte("0123"))
	must(t, err)
	must(t, h.Sync())
	_, err = h.Write([]byte("456789"))
	must(t, err)
	syncDir(t, m, "/")
	for range 50 {
		c := m.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
		got, err := readFile(t, c, "/f")
		must(t, err)
		if !bytes.HasPrefix([]byte("0123456789"), []byte(got)) || len(got) < 4 {
			t.Fatalf("crash kept %q", got)
		}
	}
}

func TestMemCapacity(t *testing.T) {
	m := vfs.NewMem()
	m.SetCapacity(10)
	h, err := m.Create("/f")
	must(t, err)
	_, err = h.Write(make([]byte, 8))
	must(t, err)
	if _, err := h.Write(make([]byte, 3)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past capacity: %v", err)
	}
	du, _ := m.GetDiskUsage("/")
	if du.TotalBytes != 10 || du.AvailBytes != 2 || du.UsedBytes != 8 {
		t.Fatalf("usage %+v", du)
	}
	must(t, h.Close())
	must(t, m.Remove("/f"))
	du, _ = m.GetDiskUsage("/")
	if du.AvailBytes != 10 {
		t.Fatalf("usage after remove %+v", du)
	}
}

func TestMemModTimeClock(t *testing.T) {
	m := vfs.NewMem()
	now := time.Unix(1000, 0)
	m.SetClock(func() time.Time { return now })
	writeFile(t, m, "/f", "x", false)
	fi, err := m.Stat("/f")
	must(t, err)
	if !fi.ModTime().Equal(now) || fi.Size() != 1 || fi.IsDir() {
		t.Fatalf("stat %v %v", fi.ModTime(), fi.Size())
	}
}

func TestErrorFS(t *testing.T) {
	m := vfs.NewMem()
	inj := errorfs.NewFailNth(errorfs.OnKinds(errorfs.OpFileSync), 1, syscall.EIO)
	log := &errorfs.Log{}
	e := errorfs.Wrap(m, errorfs.InjectorFunc(func(op errorfs.Op) error {
		_ = log.MaybeError(op)
		return inj.MaybeError(op)
	}))
	h, err := e.Create("/f")
	must(t, err)
	_, err = h.Write([]byte("x"))
	must(t, err)
	must(t, h.Sync()) // 0th sync passes
	if err := h.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("1st sync: %v", err)
	}
	must(t, h.Sync()) // fails once only
	must(t, h.Close())
	if op, ok := inj.Fired(); !ok || op.Kind != errorfs.OpFileSync || op.Path != "/f" {
		t.Fatalf("Fired = %v %v", op, ok)
	}
	d, err := e.OpenDir("/")
	must(t, err)
	must(t, d.Sync())
	must(t, d.Close())
	if n := log.Count(errorfs.OnKinds(errorfs.OpDirSync)); n != 1 {
		t.Fatalf("dir syncs logged: %d", n)
	}
	e.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpRename {
			return syscall.ENOSPC
		}
		return nil
	}))
	if err := e.Rename("/f", "/g"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("rename: %v", err)
	}
	if _, err := m.Stat("/f"); err != nil {
		t.Fatal("failed rename moved the file")
	}
}

func TestRemoveAll(t *testing.T) {
	for name, fsys := range map[string]vfs.FS{"mem": vfs.NewMem(), "os": vfs.Default} {
		t.Run(name, func(t *testing.T) {
			dir := "/x"
			if name == "os" {
				dir = t.TempDir() + "/x"
			}
			if err := fsys.MkdirAll(dir+"/a/b", 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{dir + "/f", dir + "/a/g", dir + "/a/b/h"} {
				w, err := fsys.Create(f)
				if err != nil {
					t.Fatal(err)
				}
				w.Close()
			}
			if err := vfs.RemoveAll(fsys, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := fsys.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("after RemoveAll: %v", err)
			}
			if err := vfs.RemoveAll(fsys, dir); err != nil {
				t.Fatalf("RemoveAll of nothing: %v", err)
			}
		})
	}
}
