package volume

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
//
// With CAIRN_BENCH_DEV naming the block device of an ext4 file system
// that holds TMPDIR and nothing else busy (a loop device: see
// docs/benchmarks.md), it also reports what reached the device per shard:
// write requests, cache flushes and journal commits.
func BenchmarkPutSmall(b *testing.B) {
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("16KiB/writers=%d", conc), func(b *testing.B) {
			benchPut(b, 16<<10, conc)
		})
	}
}

func benchPut(b *testing.B, size, writers int) {
	var cnt opCounter
	fsys := errorfs.Wrap(vfs.Default, &cnt)
	v := openTest(b, fsys, b.TempDir())
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
	dev := os.Getenv("CAIRN_BENCH_DEV")
	devBefore := deviceCounters(b, dev)
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
	b.ReportMetric(per(errorfs.OpRename), "rename/op")
	b.ReportMetric(per(errorfs.OpCreate, errorfs.OpOpen, errorfs.OpOpenDir), "open/op")
	if dev != "" {
		after := deviceCounters(b, dev)
		for i, unit := range []string{"devwrite/op", "devflush/op", "commit/op"} {
			b.ReportMetric(float64(after[i]-devBefore[i])/float64(b.N), unit)
		}
	}
}

// deviceCounters returns the write requests and cache flushes a Linux
// block device completed (/sys/block/<dev>/stat, fields 5 and 16) and the
// ext4 journal commits of the file system on it (/proc/fs/jbd2/<dev>-8/info);
// nil for dev "".
func deviceCounters(b *testing.B, dev string) []int64 {
	if dev == "" {
		return nil
	}
	stat, err := os.ReadFile("/sys/block/" + dev + "/stat")
	if err != nil {
		b.Fatalf("CAIRN_BENCH_DEV: %v", err)
	}
	f := strings.Fields(string(stat))
	if len(f) < 16 {
		b.Fatalf("CAIRN_BENCH_DEV: %s/stat has %d fields, want 16 or more (flushes: Linux 5.5)", dev, len(f))
	}
	info, err := os.ReadFile("/proc/fs/jbd2/" + dev + "-8/info")
	if err != nil {
		b.Fatalf("CAIRN_BENCH_DEV: %v (not ext4 with a journal?)", err)
	}
	var out []int64
	for _, s := range []string{f[4], f[15], strings.Fields(string(info))[0]} {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatalf("CAIRN_BENCH_DEV: %v", err)
		}
		out = append(out, n)
	}
	return out
}
