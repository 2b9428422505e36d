package lt

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"cairn/codec"
	"cairn/codec/codectest"
	"cairn/codec/internal/gf"
)

var seedFlag = flag.Uint64("lt.seed", 1, "seed for the lt package's randomized tests")

// testRand returns the package's seeded generator, logging the seed.
func testRand(t testing.TB, stream uint64) *rand.Rand {
	t.Helper()
	t.Logf("lt seed %d (rerun with -lt.seed=%d)", *seedFlag, *seedFlag)
	return rand.New(rand.NewPCG(*seedFlag, stream))
}

func mustNew(t testing.TB, k, x int) *Code {
	t.Helper()
	c, err := New(k, x)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func randBlocks(rng *rand.Rand, n, size int) [][]byte {
	b := make([][]byte, n)
	for i := range b {
		b[i] = make([]byte, size)
		for j := range b[i] {
			b[i][j] = byte(rng.Uint32())
		}
	}
	return b
}

func TestConformance(t *testing.T) {
	for _, kx := range [][2]int{{16, 2}, {16, 3}, {32, 2}, {64, 2}} {
		c := mustNew(t, kx[0], kx[1])
		t.Run(c.Policy().String(), func(t *testing.T) {
			// A fountain code claims no erasure pattern beyond "K+few
			// blocks of any kind": Tolerance 0 checks every tried pattern
			// against CanReconstruct instead.
			cfg := codectest.Config{Code: c, Tolerance: 0, RandomPatterns: 24}
			if kx[0] > 32 {
				cfg.RandomPatterns = 12
			}
			codectest.Run(t, cfg)
		})
	}
}

func TestRatelessConformance(t *testing.T) {
	for _, k := range []int{16, 64, 128} {
		c := mustNew(t, k, 3)
		t.Run(c.Policy().String(), func(t *testing.T) {
			codectest.RunRateless(t, codectest.RatelessConfig{Code: c, Systematic: true, Trials: 24, MaxMeanOverhead: 0.03})
		})
	}
}

func FuzzReconstruct(f *testing.F) { codectest.Fuzz(f, mustNew(f, 16, 2)) }

// FuzzDecoder feeds arbitrary block IDs, sizes and payloads to a decoder
// and the stateless check: they may return errors but never panic, and a
// decoder that reports done decodes to something without error.
func FuzzDecoder(f *testing.F) {
	c := mustNew(f, 16, 2)
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, uint8(1))
	f.Add([]byte{255, 255, 255, 0, 0, 200, 17}, uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, sizeSel uint8) {
		size := 64 * (1 + int(sizeSel%3))
		dec, err := c.Decoder(size)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int
		for i := 0; i+1 < len(in); i += 2 {
			id := int(int16(uint16(in[i])<<8 | uint16(in[i+1])))
			if in[i]&0x80 != 0 {
				id = id * 1031 // reach far IDs and negative ones
			}
			blk := make([]byte, size-64*int(in[i+1]%2&(in[i]>>6)))
			for j := range blk {
				blk[j] = in[i] ^ byte(j)
			}
			ids = append(ids, id)
			if _, err := dec.Add(id, blk); err != nil && !errors.Is(err, codec.ErrShardIndex) && !errors.Is(err, codec.ErrShardSize) {
				t.Fatalf("add: undocumented error %v", err)
			}
		}
		_ = c.Decodable(ids)
		_ = c.Deficit(slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id < 0 || id >= MaxID }))
		out := make([][]byte, 16)
		err = dec.Source(out)
		if dec.Done() && err != nil {
			t.Fatalf("done decoder: source: %v", err)
		}
		if !dec.Done() && !errors.Is(err, codec.ErrUndecodable) {
			t.Fatalf("decoder not done: source returned %v", err)
		}
	})
}

func TestNewErrors(t *testing.T) {
	for _, kx := range [][2]int{{15, 3}, {8193, 2}, {0, 2}, {16, 1}, {16, 0}, {8192, 2049}} {
		if _, err := New(kx[0], kx[1]); !errors.Is(err, codec.ErrInvalidParams) {
			t.Errorf("New(%d, %d) = %v, want ErrInvalidParams", kx[0], kx[1], err)
		}
	}
	if _, err := New(8192, 2048); err != nil {
		t.Errorf("New(8192, 2048): %v", err)
	}
}

// Round trips for every size the issue names: encode as a codec.Code,
// decode with the rateless decoder from a random subset of all blocks and
// from repair blocks only (every source block lost).
func TestRoundTrip(t *testing.T) {
	for _, k := range []int{16, 128, 1024, 8192} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			x := 3
			if k == 8192 {
				x = 2
			}
			c := mustNew(t, k, x)
			rng := testRand(t, uint64(k))
			size := 128
			shards := make([][]byte, k*x)
			copy(shards, randBlocks(rng, k, size))
			if err := c.Encode(shards); err != nil {
				t.Fatal(err)
			}
			if ok, err := c.Verify(shards); !ok || err != nil {
				t.Fatalf("verify after encode = %v, %v", ok, err)
			}
			for _, repairOnly := range []bool{false, true} {
				lo := 0
				if repairOnly {
					lo = k
				}
				order := rng.Perm(k*x - lo)
				dec, err := c.Decoder(size)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, i := range order {
					n++
					if done, err := dec.Add(lo+i, shards[lo+i]); err != nil {
						t.Fatal(err)
					} else if done {
						break
					}
				}
				out := make([][]byte, k)
				if err := dec.Source(out); err != nil {
					t.Fatalf("repairOnly=%v: %v", repairOnly, err)
				}
				for i := range out {
					if !bytes.Equal(out[i], shards[i]) {
						t.Fatalf("repairOnly=%v: source block %d differs", repairOnly, i)
					}
				}
				t.Logf("K=%d repairOnly=%v: decoded from %d blocks", k, repairOnly, n)
			}
		})
	}
}

// Reconstruct through codec.Code from random subsets, including all source
// blocks lost, and the stateless check agreeing with the payload decode.
func TestReconstructSubsets(t *testing.T) {
	c := mustNew(t, 128, 3)
	rng := testRand(t, 2)
	size := 64
	orig := make([][]byte, 3*128)
	copy(orig, randBlocks(rng, 128, size))
	if err := c.Encode(orig); err != nil {
		t.Fatal(err)
	}
	for trial := range 40 {
		keep := 126 + trial%6 // around K: some patterns are not decodable
		shards := make([][]byte, len(orig))
		present := make([]bool, len(orig))
		perm := rng.Perm(len(orig))
		if trial%4 == 0 {
			perm = slices.DeleteFunc(perm, func(i int) bool { return i < 128 }) // repair only
		}
		for _, i := range perm[:keep] {
			shards[i] = slices.Clone(orig[i])
			present[i] = true
		}
		can := c.CanReconstruct(present)
		err := c.Reconstruct(shards, nil)
		switch {
		case can && err != nil:
			t.Fatalf("trial %d: CanReconstruct true but %v", trial, err)
		case !can && !errors.Is(err, codec.ErrUndecodable):
			t.Fatalf("trial %d: CanReconstruct false but reconstruct = %v", trial, err)
		case can:
			for i := range orig {
				if !bytes.Equal(shards[i], orig[i]) {
					t.Fatalf("trial %d: shard %d differs", trial, i)
				}
			}
		}
		if keep < 128 && can {
			t.Fatalf("trial %d: decodable from %d < K blocks", trial, keep)
		}
	}
}

// The rank the symbolic solver computes must be the true rank: build the
// whole constraint matrix over GF(2^8) densely and compare, for random sets
// of blocks around K (small K, so dense is cheap).
func TestDeficitIsRank(t *testing.T) {
	rng := testRand(t, 3)
	for _, k := range []int{16, 40, 100} {
		c := mustNew(t, k, 3)
		p := c.p
		dense := func(ids []int) int {
			sp := gf.NewSpan(p.L)
			add := func(cols []int32) {
				v := make([]byte, p.L)
				for _, col := range cols {
					v[col] ^= 1
				}
				sp.Add(v)
			}
			ent, start := p.appendLDPC(nil, nil)
			start = append(start, int32(len(ent)))
			for r := range p.S {
				add(ent[start[r]:start[r+1]])
			}
			for r := range p.H {
				v := make([]byte, p.L)
				for j := 0; j < p.L-p.H; j++ {
					v[j] = p.hdpc[r*p.G+int(p.groupOf[2*j])] ^ p.hdpc[r*p.G+int(p.groupOf[2*j+1])]
				}
				v[p.L-p.H+r] = 1
				sp.Add(v)
			}
			for _, id := range ids {
				add(p.appendRow(nil, id))
			}
			return sp.Rank()
		}
		for trial := range 24 {
			n := k - 12 + trial%16
			ids := rng.Perm(3 * k)[:n]
			if trial%5 == 0 { // many low-degree rows: stress the peeling
				ids = rng.Perm(p.W)[:n]
			}
			rank := dense(ids)
			if def := c.Deficit(ids); def != p.L-rank {
				t.Fatalf("K=%d ids %v: deficit %d, dense rank %d of %d", k, ids, def, rank, p.L)
			}
			// The plan-recording solve agrees (and does not trip over
			// undecodable sets).
			if _, def := c.plan(ids, codec.Data(k), false); def != p.L-rank {
				t.Fatalf("K=%d ids %v: planning deficit %d, dense rank %d of %d", k, ids, def, rank, p.L)
			}
		}
		if r := dense(codec.Data(k)); r != p.L {
			t.Fatalf("K=%d: source rows have rank %d of %d (J=%d)", k, r, p.L, p.J)
		}
	}
}

// The portable XOR path and the SIMD kernels give the same bytes.
func TestKernelsAgree(t *testing.T) {
	c := mustNew(t, 64, 2)
	rng := testRand(t, 4)
	for _, size := range []int{64, 192, 4096 + 64} {
		src := randBlocks(rng, 64, size)
		var want [][]byte
		for _, mode := range []struct{ avx2, avx512 bool }{{false, false}, {true, false}, {useAVX2, useAVX512}} {
			old2, old512 := useAVX2, useAVX512
			useAVX2, useAVX512 = mode.avx2 && old2, mode.avx512 && old512
			shards := make([][]byte, 128)
			copy(shards, src)
			err := c.Encode(shards)
			useAVX2, useAVX512 = old2, old512
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = shards
				continue
			}
			for i := range shards {
				if !bytes.Equal(shards[i], want[i]) {
					t.Fatalf("size %d, kernels %+v: shard %d differs from the portable path", size, mode, i)
				}
			}
		}
	}
}

// The streaming encoder makes the same blocks as Encode, the source blocks
// for IDs below K, and any ID up to 2^24−1.
func TestEncoder(t *testing.T) {
	c := mustNew(t, 128, 2)
	rng := testRand(t, 5)
	shards := make([][]byte, 256)
	copy(shards, randBlocks(rng, 128, 256))
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	enc, err := c.Encoder(shards[:128])
	if err != nil {
		t.Fatal(err)
	}
	ids := append(rng.Perm(256)[:40], MaxID-1, 1<<20)
	dst := randBlocks(rng, len(ids), 256)
	if err := enc.EncodeBlocks(ids, dst); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if id < 256 && !bytes.Equal(dst[i], shards[id]) {
			t.Fatalf("block %d from the encoder differs from Encode's shard", id)
		}
	}
	// Far IDs decode like near ones.
	dec, _ := c.Decoder(256)
	far := make([]int, 140)
	for i := range far {
		far[i] = MaxID - 1 - 977*i
	}
	blocks := randBlocks(rng, len(far), 256)
	if err := enc.EncodeBlocks(far, blocks); err != nil {
		t.Fatal(err)
	}
	for i, id := range far {
		if done, err := dec.Add(id, blocks[i]); err != nil {
			t.Fatal(err)
		} else if done {
			break
		}
	}
	out := make([][]byte, 128)
	if err := dec.Source(out); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if !bytes.Equal(out[i], shards[i]) {
			t.Fatalf("decoding from far IDs: source %d differs", i)
		}
	}
}

// RobuSTore §3.2: after one source block changes, applying the update to
// the old coded blocks gives exactly the re-encoded blocks.
func TestUpdate(t *testing.T) {
	c := mustNew(t, 128, 3)
	rng := testRand(t, 6)
	size := 128
	old := make([][]byte, 384)
	copy(old, randBlocks(rng, 128, size))
	if err := c.Encode(old); err != nil {
		t.Fatal(err)
	}
	src := 37
	newer := make([][]byte, 384)
	for i := range 128 {
		newer[i] = slices.Clone(old[i])
	}
	newer[src] = randBlocks(rng, 1, size)[0]
	if err := c.Encode(newer); err != nil {
		t.Fatal(err)
	}
	u, err := c.PlanUpdate(src, 0, 384)
	if err != nil {
		t.Fatal(err)
	}
	blocks := make([][]byte, len(u.IDs))
	for i, id := range u.IDs {
		blocks[i] = slices.Clone(old[id])
	}
	if err := u.Apply(Delta(nil, old[src], newer[src]), blocks); err != nil {
		t.Fatal(err)
	}
	listed := make(map[int]bool)
	for i, id := range u.IDs {
		listed[id] = true
		if !bytes.Equal(blocks[i], newer[id]) {
			t.Fatalf("updated block %d differs from the re-encoded one", id)
		}
	}
	for id := range 384 {
		if !listed[id] && !bytes.Equal(old[id], newer[id]) {
			t.Fatalf("block %d changed but is not in the update", id)
		}
		if id < 128 && listed[id] != (id == src) {
			t.Fatalf("source block %d listed=%v", id, listed[id])
		}
	}
	t.Logf("a change of source block %d touches %d of %d repair blocks", src, len(u.IDs)-1, 256)
	if _, err := c.PlanUpdate(128, 0, 10); !errors.Is(err, codec.ErrShardIndex) {
		t.Errorf("PlanUpdate(K) = %v, want ErrShardIndex", err)
	}
}

// Seeded statistical test of the reception overhead (issue 4 acceptance):
// K=1024: mean ≤ 1 %, p99 ≤ 2 %; K=128: mean ≤ 3 %, p99 ≤ 10 %. The code
// is far inside both (≈ 0.5 % of trials need one block more than K), so the
// bounds need no margin for sampling error; the design bounds below (≥ 95 %
// at exactly K, never more than 3 extra) catch a regression long before
// the acceptance bounds would.
func TestOverheadDistribution(t *testing.T) {
	ks := []int{128, 1024}
	if testing.Short() {
		ks = ks[:1]
	}
	for _, k := range ks {
		c := mustNew(t, k, 3)
		for _, repairOnly := range []bool{false, true} {
			st := c.Overhead(1000, *seedFlag, repairOnly)
			t.Log(st)
			meanMax, p99Max := 0.03, 0.10
			if k >= 1024 {
				meanMax, p99Max = 0.01, 0.02
			}
			if st.Mean > meanMax || st.P99 > p99Max {
				t.Errorf("K=%d repairOnly=%v: overhead mean %.4f, p99 %.4f exceed the acceptance bounds %.2f, %.2f", k, repairOnly, st.Mean, st.P99, meanMax, p99Max)
			}
			if st.AtK < 0.95 || st.MaxBlocks > 3 || st.Failures > 0 {
				t.Errorf("K=%d repairOnly=%v: %.3f decode at K, max %d extra, %d failures: worse than the design", k, repairOnly, st.AtK, st.MaxBlocks, st.Failures)
			}
		}
	}
}

// The same (K, seed) always gives the same code and different seeds give
// different repair blocks.
func TestSeeds(t *testing.T) {
	a, _ := NewWithSeed(64, 2, 7)
	b, _ := NewWithSeed(64, 2, 7)
	d, _ := NewWithSeed(64, 2, 8)
	rng := testRand(t, 7)
	src := randBlocks(rng, 64, 64)
	enc := func(c *Code) [][]byte {
		s := make([][]byte, 128)
		copy(s, src)
		if err := c.Encode(s); err != nil {
			t.Fatal(err)
		}
		return s[64:]
	}
	ea, eb, ed := enc(a), enc(b), enc(d)
	same := 0
	for i := range ea {
		if !bytes.Equal(ea[i], eb[i]) {
			t.Fatalf("same seed: block %d differs", 64+i)
		}
		if bytes.Equal(ea[i], ed[i]) {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("seeds 7 and 8 agree on %d repair blocks", same)
	}
	if a.Seed() != 7 {
		t.Fatalf("Seed() = %d", a.Seed())
	}
}

func BenchmarkSuite(b *testing.B) { codectest.Bench(b, mustNew(b, 128, 3)) }

// BenchmarkLT measures the figures: lt-1024-3 with 64 KiB blocks
// (and 4 KiB), one goroutine, bytes = K·block of source data per op.
// Encode makes the 2K repair blocks; Decode runs the decoder on the first
// decodable blocks of a random order over all 3K IDs (about a third of
// them source blocks); DecodeRepair uses repair blocks only. Decodes include
// their symbolic solves.
func BenchmarkLT(b *testing.B) {
	sizes := []int{64 << 10, 4 << 10}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, size := range sizes {
		c := mustNew(b, 1024, 3)
		k := 1024
		rng := testRand(b, 9)
		shards := make([][]byte, 3*k)
		copy(shards, randBlocks(rng, k, size))
		if err := c.Encode(shards); err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("lt-1024-3/%dKiB", size>>10)
		b.Run("Encode/"+name, func(b *testing.B) {
			b.SetBytes(int64(k * size))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Encode(shards); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, repairOnly := range []bool{false, true} {
			lo, op := 0, "Decode/"
			if repairOnly {
				lo, op = k, "DecodeRepair/"
			}
			order := rng.Perm(3*k - lo)
			for i := range order {
				order[i] += lo
			}
			n := k
			for c.Deficit(order[:n]) != 0 {
				n++
			}
			order = order[:n]
			out := make([][]byte, k)
			b.Run(op+name, func(b *testing.B) {
				b.SetBytes(int64(k * size))
				b.ReportAllocs()
				for b.Loop() {
					dec, _ := c.Decoder(size)
					for _, id := range order {
						if _, err := dec.Add(id, shards[id]); err != nil {
							b.Fatal(err)
						}
					}
					if err := dec.Source(out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The plans' work per source block (block reads of fused XORs, GF(2^8)
// products) is what the throughput rests on: log it by phase and fail on a
// regression well above today's figures (encode lt-1024-3 ≈ 32 reads and
// 0.9 products per source block, decode ≈ 25 reads).
func TestPlanCost(t *testing.T) {
	k := 1024
	c := mustNew(t, k, 3)
	rng := testRand(t, 8)
	order := rng.Perm(3 * k)
	n := k
	for c.Deficit(order[:n]) != 0 {
		n++
	}
	var lost []int
	for i := range k {
		if !slices.Contains(order[:n], i) {
			lost = append(lost, i)
		}
	}
	dec, def := c.plan(order[:n], lost, false)
	if def != 0 {
		t.Fatal(def)
	}
	for _, tc := range []struct {
		name     string
		pl       *plan
		maxReads float64
	}{{"encode", c.encodePlan(), 36}, {"decode", dec, 29}} {
		names := []string{"pass 1", "residuals", "dense GF(2)", "HDPC", "inactive", "pass 2", "outputs"}
		marks := append(slices.Clone(tc.pl.marks), len(tc.pl.ops))
		lo, line := 0, ""
		for i, m := range marks {
			st := (&plan{ops: tc.pl.ops[lo:m], idx: tc.pl.idx}).stats()
			line += fmt.Sprintf(" %s %.2f", names[i], float64(st.xorReads)/float64(k))
			lo = m
		}
		st := tc.pl.stats()
		reads, muls := float64(st.xorReads)/float64(k), float64(st.mulOps)/float64(k)
		t.Logf("%s lt-1024-3: %.2f block reads and %.2f products per source block (%s); %d scratch slots, chunk %d B",
			tc.name, reads, muls, line[1:], tc.pl.nScratch, tc.pl.chunk(64<<10))
		if reads > tc.maxReads || muls > 1.5 {
			t.Errorf("%s: %.2f reads and %.2f products per source block, above %.0f and 1.5", tc.name, reads, muls, tc.maxReads)
		}
	}
}

// One Code used from several goroutines at once: Encode, Reconstruct with
// cached and fresh patterns, decoders and the stateless check (run with
// -race).
func TestConcurrent(t *testing.T) {
	c := mustNew(t, 64, 3)
	rng := testRand(t, 10)
	orig := make([][]byte, 192)
	copy(orig, randBlocks(rng, 64, 128))
	if err := c.Encode(orig); err != nil {
		t.Fatal(err)
	}
	seeds := make([]uint64, 8)
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	errs := make(chan error, len(seeds))
	var wg sync.WaitGroup
	for g, seed := range seeds {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 10 {
				s := make([][]byte, 192)
				for i := range 64 {
					s[i] = slices.Clone(orig[i])
				}
				if err := c.Encode(s); err != nil {
					errs <- err
					return
				}
				perm := r.Perm(192)
				for _, i := range perm[:64+g%3] { // g%3 patterns repeat: cached plans
					s[i] = nil
				}
				if err := c.Reconstruct(s, nil); err != nil && !errors.Is(err, codec.ErrUndecodable) {
					errs <- err
					return
				} else if err == nil {
					for i := range s {
						if !bytes.Equal(s[i], orig[i]) {
							errs <- fmt.Errorf("goroutine %d: shard %d differs", g, i)
							return
						}
					}
				}
				dec, _ := c.Decoder(128)
				for _, i := range perm[64:] {
					if done, err := dec.Add(i, orig[i]); err != nil {
						errs <- err
						return
					} else if done {
						break
					}
				}
				if !c.Decodable(perm[64:]) || !dec.Done() {
					errs <- fmt.Errorf("goroutine %d: 128 blocks do not decode", g)
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
