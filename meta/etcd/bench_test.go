package etcdmeta_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"cairn"
)

// BenchmarkCommitOneBucket commits new objects to one bucket from
// parallel writers (GOMAXPROCS × 4): every commit moves the same bucket's
// usage counter, the contention the counter shards are for.
func BenchmarkCommitOneBucket(b *testing.B) {
	srv := startSingle(b, b.TempDir())
	s := open(b, srv.Endpoints(), "/bench/")
	defer s.Close()
	if err := s.CreateBucket(b.Context(), cairn.Bucket{Name: "hot", Policy: "rep-1"}); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			m := &cairn.Manifest{Bucket: "hot", Key: fmt.Sprintf("k%d", i), Version: fmt.Sprintf("%032x", i), Size: 8, Policy: "rep-1", Layout: oneCopy}
			if err := s.CommitManifest(b.Context(), m, ""); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
