package lstor

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"cairn/internal/vfs"
)

// BenchmarkWrite times 1 MiB writes on the OS file system: a plain
// write+fsync of a file (what one replica of rep-2 costs a disk), appends
// at the high-water mark (the zero-region shortcut), and overwrites (the
// full read-modify-write); and deletes of 1 MiB, lazy (queued) against
// online (zeroed at once). The Lstor sits on the same file system here,
// so its syncs cost like the disk's.
func BenchmarkWrite(b *testing.B) {
	const size, n = 64 << 20, 1 << 20
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	open := func(b *testing.B, mode DeleteMode) *Store {
		dir := b.TempDir()
		s, err := Open(context.Background(), Config{FS: vfs.Default, Disk: filepath.Join(dir, "disk"), Lstor: filepath.Join(dir, "lstor"),
			Size: size, Slots: 1 << 10, Deletes: mode})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	ctx := context.Background()
	b.Run(fmt.Sprintf("plain/%dKiB", n>>10), func(b *testing.B) {
		f, err := vfs.Default.Create(filepath.Join(b.TempDir(), "f"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(n)
		for b.Loop() {
			if _, err := f.Write(p); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("append/%dKiB", n>>10), func(b *testing.B) {
		s := open(b, DeleteLazy)
		b.SetBytes(n)
		i := 0
		for b.Loop() {
			if err := s.Write(ctx, i/(size/n), int64(i%(size/n))*n, p); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run(fmt.Sprintf("overwrite/%dKiB", n>>10), func(b *testing.B) {
		s := open(b, DeleteLazy)
		for off := int64(0); off < 8*n; off += n {
			if err := s.Write(ctx, 0, off, p); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(n)
		i := 0
		for b.Loop() {
			if err := s.Write(ctx, 0, int64(i%8)*n, p); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	for _, mode := range []struct {
		name string
		m    DeleteMode
	}{{"lazy", DeleteLazy}, {"online", DeleteOnline}} {
		b.Run(fmt.Sprintf("delete-%s/%dKiB", mode.name, n>>10), func(b *testing.B) {
			s := open(b, mode.m)
			for off := int64(0); off < 16*n; off += n {
				if err := s.Write(ctx, 0, off, p); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(n)
			i := 0
			for b.Loop() {
				// Delete a written MiB (below the high-water mark), then
				// write it again so the next round has something to delete.
				off := int64(i%15) * n
				if err := s.Delete(ctx, 0, off, n); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Write(ctx, 0, off, p); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				i++
			}
		})
	}
}
