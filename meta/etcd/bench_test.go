package etcdmeta_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

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

// BenchmarkListUploads compares what ListMultipartUploads cost before the
// index (Uploads: every upload record of the bucket, sorted) with a page
// of the key-ordered index (UploadKeyPage, 1000 uploads), for a bucket of
// 10,000 uploads with user metadata.
func BenchmarkListUploads(b *testing.B) {
	srv := startSingle(b, b.TempDir())
	s := open(b, srv.Endpoints(), "/bench-uploads/")
	defer s.Close()
	ctx := b.Context()
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "ups", Policy: "rep-1"}); err != nil {
		b.Fatal(err)
	}
	const n = 10000
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			return s.CreateUpload(gctx, cairn.Upload{Bucket: "ups", Key: fmt.Sprintf("dir/%05d", i), ID: fmt.Sprintf("%032x", i), Policy: "rep-1",
				UserMeta: map[string]string{"owner": "someone", "purpose": "a benchmark of listing uploads"}})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Run("Uploads/all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if us, err := s.Uploads(ctx, "ups"); err != nil || len(us) != n {
				b.Fatal(len(us), err)
			}
		}
	})
	b.Run("UploadKeyPage/1000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if us, _, err := s.UploadKeyPage(ctx, "ups", "", "dir/04999", "", 1000); err != nil || len(us) != 1000 {
				b.Fatal(len(us), err)
			}
		}
	})
}
