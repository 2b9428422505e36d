package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"cairn/internal/vfs"
)

// BenchmarkDiskWrite: what the disk decorator costs a 64 KiB write and a
// 64 KiB read (a volume block) on the mem file system, against the bare
// file system.
func BenchmarkDiskWrite(b *testing.B) {
	for _, tc := range []struct {
		name string
		fs   func() vfs.FS
	}{
		{"plain", func() vfs.FS { return vfs.NewMem() }},
		{"counted", func() vfs.FS { return NewDisks(prometheus.NewRegistry()).FS("n1/disk1", vfs.NewMem()) }},
	} {
		b.Run(tc.name+"/64KiB", func(b *testing.B) {
			fsys := tc.fs()
			f, err := fsys.Create("/f")
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 64<<10)
			f.Write(buf) // warm up: the file has a block to read back
			b.SetBytes(2 * int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := f.(vfs.WriterAt).WriteAt(buf, 0); err != nil {
					b.Fatal(err)
				}
				if _, err := f.ReadAt(buf, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
