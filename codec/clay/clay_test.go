package clay

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"cairn/codec"
	"cairn/codec/codectest"
	"cairn/codec/rs"
)

func mustNew(t testing.TB, k, m, d int) *Code {
	t.Helper()
	c, err := New(k, m, d)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// conformance lists the parameter sets run through codectest. Stripes of
// at most 12 shards get every erasure pattern; wider ones seeded-random
// patterns.
var conformance = []struct {
	k, m, d int
	short   bool // also run under -short
}{
	{4, 2, 5, true},    // q=2, no shortening: exhaustive
	{6, 3, 8, true},    // q=3: exhaustive
	{3, 3, 4, true},    // q=2, d < k+m−1 (aloof nodes), exhaustive
	{5, 3, 6, true},    // q=2, ν=0, d < k+m−1: exhaustive
	{4, 3, 5, false},   // q=2, ν=1 (shortened), exhaustive
	{5, 4, 7, false},   // q=3, ν=0, one aloof: exhaustive
	{7, 4, 9, false},   // q=3, ν=1, aloof: exhaustive
	{8, 4, 11, false},  // q=4, ν=0: exhaustive
	{10, 4, 13, true},  // q=4, ν=2: random patterns
	{12, 4, 15, true},  // q=4, ν=0, α=256: random patterns
	{10, 4, 12, false}, // q=3, ν=1, α=243, aloof: random patterns
	{2, 6, 5, false},   // q=4, two parity nodes share a y-section with data: exhaustive
	{4, 6, 7, false},   // q=4, ν=2, likewise: exhaustive
}

func TestConformance(t *testing.T) {
	for _, p := range conformance {
		if testing.Short() && !p.short {
			continue
		}
		c := mustNew(t, p.k, p.m, p.d)
		t.Run(c.Policy().String(), func(t *testing.T) {
			codectest.Run(t, codectest.Config{Code: c, Tolerance: p.m})
		})
	}
}

// Batching must not change a single byte: the reference is one plane per
// kernel call on gathered uncoupled symbols; batches of several sizes, and
// the encoder's direct path (large sub-chunks, whole runs or sub-runs),
// give the same stripes, as do sub-chunks large enough to be cut into
// strips (stripBytes). (2,6,5) and (4,6,7) have a y-section holding both
// data and two parity nodes, whose coupled parity pairs span runs.
func TestBatchingInvariant(t *testing.T) {
	rng := codectest.Rand(t)
	for _, p := range [][3]int{{4, 2, 5}, {10, 4, 12}, {5, 4, 7}, {2, 6, 5}, {4, 6, 7}, {8, 4, 11}} {
		ref := mustNew(t, p[0], p[1], p[2])
		ref.batchBytes = 0
		ref.encPlan.direct = nil
		for _, sc := range []int{8, 1024, 4096, 2*stripBytes + 1000} {
			if (testing.Short() && sc > 1024) || (sc > 4096 && ref.g.alpha > 16) {
				continue
			}
			size := ref.g.alpha * sc
			orig := codectest.Stripe(t, ref, rng, size)
			for _, bb := range []int{0, 24, 8 * 5, 4096, defaultBatchBytes, 1 << 20} {
				c := mustNew(t, p[0], p[1], p[2])
				c.batchBytes = bb
				shards := clone(orig)
				for i := c.g.k; i < len(shards); i++ {
					shards[i] = nil
				}
				if err := c.Encode(shards); err != nil {
					t.Fatal(err)
				}
				assertStripe(t, fmt.Sprintf("%s sc %d batch %d encode", c.Policy(), sc, bb), shards, orig)
				lost := rng.Perm(len(orig))[:c.g.m]
				for _, i := range lost {
					shards[i] = nil
				}
				if err := c.Reconstruct(shards, nil); err != nil {
					t.Fatal(err)
				}
				assertStripe(t, fmt.Sprintf("%s sc %d batch %d lost %v", c.Policy(), sc, bb, lost), shards, orig)
			}
		}
	}
}

func clone(shards [][]byte) [][]byte {
	out := make([][]byte, len(shards))
	for i, s := range shards {
		out[i] = bytes.Clone(s)
	}
	return out
}

func assertStripe(t testing.TB, what string, got, want [][]byte) {
	t.Helper()
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: shard %d differs", what, i)
		}
	}
}

func errorsIsInvalid(err error) bool { return errors.Is(err, codec.ErrInvalidParams) }

// Any coupling of which two of four values give the other two will do
// (docs/codes.md#clay-coupling); the paper's symmetric form passes the
// exhaustive suite too.
func TestSymmetricForm(t *testing.T) {
	for _, p := range [][3]int{{4, 2, 5}, {6, 3, 8}, {4, 3, 5}} {
		c := mustNew(t, p[0], p[1], p[2])
		c.tf = symmetricForm // before first use: kernels fold the form in lazily
		t.Run(c.Policy().String(), func(t *testing.T) {
			codectest.Run(t, codectest.Config{Code: c, Tolerance: p[1]})
		})
	}
}

func FuzzReconstruct(f *testing.F) { codectest.Fuzz(f, mustNew(f, 4, 3, 5)) }

func BenchmarkClay(b *testing.B) {
	for _, p := range [][3]int{{10, 4, 13}, {8, 4, 11}} {
		codectest.Bench(b, mustNew(b, p[0], p[1], p[2]))
	}
}

func sizeName(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkSubChunkRepair rebuilds shard 0 from its helpers' planned runs
// (gathered once, as helpers would send them). Bytes are repaired bytes;
// read/byte is the repair's read amplification d·β/α.
func BenchmarkSubChunkRepair(b *testing.B) {
	sizes := []int{1 << 20, 4 << 20}
	if testing.Short() {
		sizes = []int{256 << 10}
	}
	for _, p := range [][3]int{{10, 4, 13}, {8, 4, 11}, {12, 4, 15}} {
		c := mustNew(b, p[0], p[1], p[2])
		for _, size := range sizes {
			b.Run(fmt.Sprintf("%s/%s", c.Policy(), sizeName(size)), func(b *testing.B) {
				shards := codectest.Stripe(b, c, codectest.Rand(b), size)
				plan, err := c.SubChunkPlan(0, others(len(shards), 0), size)
				if err != nil {
					b.Fatal(err)
				}
				reads := make([][]byte, len(plan.Helpers))
				for i, h := range plan.Helpers {
					reads[i] = h.Gather(nil, shards[h.Shard])
				}
				out := make([]byte, size)
				if err := plan.Repair(reads, out); err != nil || !bytes.Equal(out, shards[0]) {
					b.Fatalf("warm-up repair: %v", err)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := plan.Repair(reads, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(plan.ReadBytes())/float64(size), "read/byte")
			})
		}
	}
}

// BenchmarkBatching measures what batching same-pattern planes into one
// kernel call buys (docs/codes.md#clay-sub-chunk-size): planes=1 is one
// klauspost call per plane, batched the default (≈16 KiB per node per call).
// Small shards have small sub-chunks (64 KiB / α=256 = 256 bytes), where
// per-call costs dominate.
func BenchmarkBatching(b *testing.B) {
	sizes := []int{64 << 10, 256 << 10}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, size := range sizes {
		for _, mode := range []struct {
			name  string
			bytes int
		}{{"planes=1", 0}, {"batched", defaultBatchBytes}} {
			c := mustNew(b, 10, 4, 13)
			c.batchBytes = mode.bytes
			name := fmt.Sprintf("%s/%s/%s", c.Policy(), sizeName(size), mode.name)
			b.Run("Decode4/"+name, func(b *testing.B) {
				shards := codectest.Stripe(b, c, codectest.Rand(b), size)
				b.SetBytes(int64(c.g.k * size))
				b.ReportAllocs()
				for b.Loop() {
					for _, i := range []int{0, 3, 6, 9} {
						shards[i] = shards[i][:0]
					}
					if err := c.Reconstruct(shards, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Encode/"+name, func(b *testing.B) {
				shards := codectest.Stripe(b, c, codectest.Rand(b), size)
				b.SetBytes(int64(c.g.k * size))
				b.ReportAllocs()
				for b.Loop() {
					if err := c.Encode(shards); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkVsRS runs rs-10-4 and clay-10-4-13 encode side by side at 1 MiB
// shards (data bytes per second), for the encode ratio.
func BenchmarkVsRS(b *testing.B) {
	size := 1 << 20
	if testing.Short() {
		size = 256 << 10
	}
	r, err := rs.New(10, 4)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []codec.Code{r, mustNew(b, 10, 4, 13)} {
		b.Run(fmt.Sprintf("Encode/%s/%s", c.Policy(), sizeName(size)), func(b *testing.B) {
			shards := codectest.Stripe(b, c, codectest.Rand(b), size)
			b.SetBytes(int64(10 * size))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Encode(shards); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The encoder's direct kernels are built on first use by whichever
// goroutine gets there first; concurrent encodes of a fresh code must
// agree (and be race-free under -race).
func TestConcurrentEncode(t *testing.T) {
	rng := codectest.Rand(t)
	ref := mustNew(t, 10, 4, 13)
	size := ref.g.alpha * 4096 / 4 // sc = 1 KiB: runs of 4 planes take the direct path
	orig := codectest.Stripe(t, ref, rng, size)
	c := mustNew(t, 10, 4, 13)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			shards := clone(orig)
			for i := 10; i < 14; i++ {
				shards[i] = nil
			}
			if err := c.Encode(shards); err != nil {
				errs <- err
				return
			}
			for i := range orig {
				if !bytes.Equal(shards[i], orig[i]) {
					errs <- fmt.Errorf("shard %d differs", i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
