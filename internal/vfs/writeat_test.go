package vfs_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"cairn/internal/vfs"
)

func TestWriteAt(t *testing.T) {
	for name, c := range map[string]struct {
		fs  vfs.FS
		dir string
	}{"os": {vfs.Default, t.TempDir()}, "mem": {vfs.NewMem(), "/d"}} {
		t.Run(name, func(t *testing.T) {
			if err := c.fs.MkdirAll(c.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := c.fs.Create(filepath.Join(c.dir, "f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w, ok := f.(vfs.WriterAt)
			if !ok {
				t.Fatalf("%T has no WriteAt", f)
			}
			if _, err := f.Write([]byte("abcdef")); err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteAt([]byte("XY"), 2); err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteAt([]byte("Z"), 8); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 9)
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if want := []byte("abXYef\x00\x00Z"); !bytes.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}
