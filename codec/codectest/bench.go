package codectest

import (
	"fmt"
	"testing"

	"cairn/codec"
)

// Bench benchmarks a code's encode, reconstruct with one and with M data
// shards lost, and (for linear codes) the repair of one shard, for shard
// sizes 4 KiB, 64 KiB and 1 MiB (only 64 KiB with -short). Sub-benchmarks
// are named op/policy/size; bytes are data bytes per stripe (K·shard) for
// encode and reconstruct, and rebuilt bytes for repair.
func Bench(b *testing.B, c codec.Code) {
	sizes := []int{4 << 10, 64 << 10, 1 << 20}
	if testing.Short() {
		sizes = []int{64 << 10}
	}
	p := c.Params()
	for _, size := range sizes {
		size = (size + p.ShardMultiple - 1) / p.ShardMultiple * p.ShardMultiple
		name := fmt.Sprintf("%s/%s", c.Policy(), sizeName(size))
		b.Run("Encode/"+name, func(b *testing.B) {
			shards := Stripe(b, c, Rand(b), size)
			b.SetBytes(int64(p.K * size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := c.Encode(shards); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, lost := range []int{1, min(p.M, p.K)} {
			b.Run(fmt.Sprintf("Reconstruct%d/%s", lost, name), func(b *testing.B) {
				shards := Stripe(b, c, Rand(b), size)
				present := presentMask(shards)
				for i := range lost {
					present[i] = false
				}
				if !c.CanReconstruct(present) {
					b.Skip("pattern not decodable")
				}
				b.SetBytes(int64(p.K * size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					for i := range lost {
						shards[i] = shards[i][:0]
					}
					if err := c.Reconstruct(shards, codec.Data(p.K)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if lr, ok := c.(codec.LinearRepairer); ok {
			b.Run("Repair/"+name, func(b *testing.B) {
				shards := Stripe(b, c, Rand(b), size)
				avail := make([]int, 0, p.N()-1)
				for i := 1; i < p.N(); i++ {
					avail = append(avail, i)
				}
				plan, err := lr.RepairPlan([]int{0}, avail)
				if err != nil {
					b.Fatal(err)
				}
				in := make([][]byte, len(plan.Helpers))
				for i, h := range plan.Helpers {
					in[i] = shards[h]
				}
				out := [][]byte{make([]byte, size)}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := plan.Repair(in, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func sizeName(n int) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
