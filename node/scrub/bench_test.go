package scrub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cairn/internal/vfs"
	"cairn/node/scrub"
)

// BenchmarkScrubPass measures a full pass over an in-memory volume with
// no rate limit: the cost of verifying (block CRCs, content CRC) per byte.
func BenchmarkScrubPass(b *testing.B) {
	for _, size := range []int64{64 << 10, 1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("shard=%dKiB", size>>10), func(b *testing.B) {
			mfs := vfs.NewMem()
			n := int((64 << 20) / size)
			f := newFixture(b, mfs, mfs, n, size)
			b.SetBytes(int64(n) * size)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s, err := scrub.New(f.vol, scrub.Config{Rate: 1 << 40, Interval: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { s.Run(ctx); close(done) }()
				for s.Progress().LastPass.IsZero() {
					// real time: a benchmark of the real pass; polled.
					time.Sleep(time.Millisecond)
				}
				cancel()
				<-done
				if p := s.Progress(); p.LastShards != int64(n) || p.LastDamage != 0 {
					b.Fatalf("pass %+v", p)
				}
			}
		})
	}
}
