package vfs_test

import (
	"errors"
	"io/fs"
	"testing"

	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

// TestSyncFSMakesEverythingDurable: after SyncFS on any directory handle,
// a crash keeps every unsynced file, append, rename and new directory of
// the whole MemFS; what is written after it is lost again.
func TestSyncFSMakesEverythingDurable(t *testing.T) {
	m := vfs.NewCrashableMem()
	must(t, m.MkdirAll("/a/b", 0o755))
	must(t, m.MkdirAll("/c", 0o755))
	writeFile(t, m, "/a/b/f", "data", false)
	writeFile(t, m, "/c/g", "old", false)
	must(t, m.Rename("/c/g", "/c/h"))
	d, err := m.OpenDir("/c")
	must(t, err)
	must(t, vfs.SyncFS(d))
	writeFile(t, m, "/a/late", "lost", false)
	c := m.CrashClone(vfs.CrashCloneCfg{})
	for name, want := range map[string]string{"/a/b/f": "data", "/c/h": "old"} {
		if got, err := readFile(t, c, name); err != nil || got != want {
			t.Fatalf("%s after syncfs and a crash: %q, %v", name, got, err)
		}
	}
	for _, name := range []string{"/c/g", "/a/late"} {
		if _, err := c.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s survived: %v", name, err)
		}
	}
	must(t, d.Close())
	if err := vfs.SyncFS(d); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("syncfs on a closed handle: %v", err)
	}
}

// TestSyncFSThroughDecorators: errorfs sees (and can fail) a SyncFS as
// its own operation and passes it on; a throttled disk passes it on; a
// handle with no way to sync its file system says so.
func TestSyncFSThroughDecorators(t *testing.T) {
	m := vfs.NewCrashableMem()
	var log errorfs.Log
	e := errorfs.Wrap(vfs.Throttle(m, vfs.ThrottleConfig{}), &log)
	writeFile(t, e, "/f", "x", false)
	d, err := e.OpenDir("/")
	must(t, err)
	must(t, vfs.SyncFS(d))
	if n := log.Count(func(op errorfs.Op) bool { return op.Kind == errorfs.OpSyncFS }); n != 1 {
		t.Fatalf("errorfs saw %d syncfs ops", n)
	}
	if got, err := readFile(t, m.CrashClone(vfs.CrashCloneCfg{}), "/f"); err != nil || got != "x" {
		t.Fatalf("after syncfs through decorators: %q, %v", got, err)
	}
	e.SetInjector(errorfs.NewFailNth(errorfs.OnKinds(errorfs.OpSyncFS), 0, nil))
	if err := vfs.SyncFS(d); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("injected syncfs failure: %v", err)
	}
	if err := vfs.SyncFS(opaqueFile{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("syncfs on a handle without it: %v", err)
	}
}

// opaqueFile is a File that cannot sync its file system.
type opaqueFile struct{ vfs.File }

// TestSyncFSOS runs syncfs on a real directory where the OS supports it.
func TestSyncFSOS(t *testing.T) {
	d, err := vfs.Default.OpenDir(t.TempDir())
	must(t, err)
	defer d.Close()
	if err := vfs.SyncFS(d); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatal(err)
	}
}
