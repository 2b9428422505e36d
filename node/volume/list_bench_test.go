package volume

import (
	"context"
	"testing"

	"cairn/internal/vfs"
)

// BenchmarkList lists a volume of 2000 small shards on the OS file
// system: with identities a listing reads each file's footer (format 2
// sizes do not follow from stat alone).
func BenchmarkList(b *testing.B) {
	v := openTest(b, vfs.Default, b.TempDir())
	for i := range 2000 {
		mustPut(b, v, shardName(i, i%6), []byte("shard"))
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		after := ""
		for {
			page, more, err := v.List(ctx, after, MaxListLimit)
			if err != nil {
				b.Fatal(err)
			}
			n += len(page)
			if !more {
				break
			}
			after = page[len(page)-1].Name
		}
		if n != 2000 {
			b.Fatalf("listed %d", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/shard")
}
