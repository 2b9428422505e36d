package volume

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

// opCounter counts the file-system operations of a volume by kind.
type opCounter struct{ n [32]atomic.Int64 }

// MaybeError implements errorfs.Injector; it never fails.
func (c *opCounter) MaybeError(op errorfs.Op) error {
	if int(op.Kind) < len(c.n) {
		c.n[op.Kind].Add(1)
	}
	return nil
}

func (c *opCounter) get(k errorfs.OpKind) int64 { return c.n[k].Load() }

// BenchmarkPutSmall stores 16 KiB shards (an rs-4-4 64 KiB object's
// shard) with an identity on the OS file system, from 1 and 8 concurrent
// writers, and reports per shard the operations that make it durable:
// file fsyncs, directory fsyncs, renames and opens (create, open-dir).
// Each shard has its own name, spread over the fan-out directories as
// object versions are.
func BenchmarkPutSmall(b *testing.B) {
	for _, conc := range []int{1, 8} {
		for _, mode := range []string{"each", "group"} {
			b.Run(fmt.Sprintf("16KiB/writers=%d/sync=%s", conc, mode), func(b *testing.B) {
				benchPut(b, 16<<10, conc, mode == "each")
			})
		}
	}
}

func benchPut(b *testing.B, size, writers int, syncEach bool) {
	var cnt opCounter
	fsys := errorfs.Wrap(vfs.Default, &cnt)
	dir := b.TempDir()
	v, err := Open(dir, Options{FS: fsys, DiskID: testDisk, Create: true, SyncEach: syncEach})
	if err != nil {
		b.Fatal(err)
	}
	registerFsck(b, v, fsys)
	if v.GroupCommit() == syncEach {
		b.Fatalf("group commit %v with SyncEach %v", v.GroupCommit(), syncEach)
	}
	data := bytes.Repeat([]byte{0x5a}, size)
	ctx := context.Background()
	var next atomic.Int64
	put := func() error {
		i := uint64(next.Add(1))
		// Versions are random: spread the names over the fan-out directories.
		name := cairn.ShardName(fmt.Sprintf("%016x%016x", i*0x9e3779b97f4a7c15, i), int(i%8))
		_, err := v.PutIdentified(ctx, name, identFor(b, name), bytes.NewReader(data))
		return err
	}
	for i := range 256 { // warm up: every fan-out directory exists
		if err := v.ensureFanout(fmt.Sprintf("%02x", i)); err != nil {
			b.Fatal(err)
		}
	}
	for range 64 {
		if err := put(); err != nil {
			b.Fatal(err)
		}
	}
	before := make([]int64, len(cnt.n))
	for k := range cnt.n {
		before[k] = cnt.n[k].Load()
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := put(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	per := func(kinds ...errorfs.OpKind) float64 {
		var n int64
		for _, k := range kinds {
			n += cnt.get(k) - before[k]
		}
		return float64(n) / float64(b.N)
	}
	b.ReportMetric(per(errorfs.OpFileSync), "fsync/op")
	b.ReportMetric(per(errorfs.OpDirSync), "dirsync/op")
	b.ReportMetric(per(errorfs.OpSyncFS), "syncfs/op")
	b.ReportMetric(per(errorfs.OpRename), "rename/op")
	b.ReportMetric(per(errorfs.OpCreate, errorfs.OpOpen, errorfs.OpOpenDir), "open/op")
}
