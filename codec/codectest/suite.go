package codectest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sync/errgroup"

	"cairn/codec"
)

var seedFlag = flag.Uint64("codectest.seed", 1, "seed for codectest's random patterns and data")

// exhaustiveMax is the widest stripe whose erasure patterns are all tried.
const exhaustiveMax = 12

// Config describes the code under test and what it claims.
type Config struct {
	// Code is the code under test.
	Code codec.Code
	// Tolerance is the number of erasures of which every pattern must
	// decode: M for MDS codes, r+1 for LRC(k, l, r). Patterns with more
	// erasures (up to M) are checked against CanReconstruct.
	Tolerance int
	// RandomPatterns is the number of random patterns tried per erasure
	// count when the stripe is wider than 12 shards (default 64).
	RandomPatterns int
	// Exhaustive tries every erasure pattern whatever the stripe width.
	Exhaustive bool
	// ShardSize is the shard length for pattern tests (default: the
	// smallest multiple of ShardMultiple that is ≥ 48 bytes).
	ShardSize int
}

func (cfg *Config) fill() {
	if cfg.RandomPatterns == 0 {
		cfg.RandomPatterns = 64
	}
	if cfg.ShardSize == 0 {
		m := max(cfg.Code.Params().ShardMultiple, 1)
		cfg.ShardSize = (48 + m - 1) / m * m
	}
}

// Rand returns the suite's seeded generator, logging the seed.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	t.Logf("codectest seed %d (rerun with -codectest.seed=%d)", *seedFlag, *seedFlag)
	return rand.New(rand.NewPCG(*seedFlag, 0x636f646563))
}

// Run runs the conformance suite.
func Run(t *testing.T, cfg Config) {
	cfg.fill()
	c := cfg.Code
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, c) })
	t.Run("Erasures", func(t *testing.T) { testErasures(t, cfg) })
	t.Run("Verify", func(t *testing.T) { testVerify(t, cfg) })
	t.Run("Malformed", func(t *testing.T) { testMalformed(t, cfg) })
	if cfg.Tolerance == 0 {
		return // nothing can be lost: the rest of the suite needs erasures
	}
	t.Run("Want", func(t *testing.T) { testWant(t, cfg) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, cfg) })
	if _, ok := c.(codec.LinearRepairer); ok {
		t.Run("LinearRepair", func(t *testing.T) { testLinearRepair(t, cfg) })
	}
}

// Stripe returns an encoded stripe of random data with shards of the given
// size.
func Stripe(t testing.TB, c codec.Code, rng *rand.Rand, size int) [][]byte {
	t.Helper()
	p := c.Params()
	shards := make([][]byte, p.N())
	for i := range p.K {
		shards[i] = make([]byte, size)
		fill(rng, shards[i])
	}
	if err := c.Encode(shards); err != nil {
		t.Fatalf("%s: encode: %v", c.Policy(), err)
	}
	return shards
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

func clone(shards [][]byte) [][]byte {
	out := make([][]byte, len(shards))
	for i, s := range shards {
		out[i] = slices.Clone(s)
	}
	return out
}

func testRoundTrip(t *testing.T, c codec.Code) {
	rng := Rand(t)
	p := c.Params()
	sizes := []int{0, 1, p.K - 1, p.K + 1, 1000*p.K + 7, 1<<20 + 3}
	for _, size := range sizes {
		if size < 0 {
			continue
		}
		data := make([]byte, size)
		fill(rng, data)
		shards := codec.Split(p, data)
		if err := c.Encode(shards); err != nil {
			t.Fatalf("size %d: encode: %v", size, err)
		}
		if ok, err := c.Verify(shards); err != nil || !ok {
			t.Fatalf("size %d: verify after encode = %v, %v", size, ok, err)
		}
		// Lose as many data shards as the code has parity and rebuild.
		want := clone(shards)
		for i := range min(p.M, p.K) {
			shards[i] = nil
		}
		if c.CanReconstruct(presentMask(shards)) {
			if err := c.Reconstruct(shards, nil); err != nil {
				t.Fatalf("size %d: reconstruct: %v", size, err)
			}
			assertEqual(t, fmt.Sprintf("size %d", size), shards, want)
		} else {
			shards = want
		}
		var buf bytes.Buffer
		if err := codec.Join(&buf, p, shards, size); err != nil {
			t.Fatalf("size %d: join: %v", size, err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("size %d: joined data differs", size)
		}
	}
}

func presentMask(shards [][]byte) []bool {
	m := make([]bool, len(shards))
	for i, s := range shards {
		m[i] = len(s) > 0
	}
	return m
}

func assertEqual(t testing.TB, what string, got, want [][]byte) {
	t.Helper()
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: shard %d differs after reconstruct", what, i)
		}
	}
}

// patterns calls fn for erasure patterns of e shards out of n: all of them
// when n ≤ exhaustiveMax or all is set, else count random ones.
func patterns(n, e, count int, all bool, rng *rand.Rand, fn func(lost []int)) {
	if n <= exhaustiveMax || all {
		combos(n, e, fn)
		return
	}
	for range count {
		fn(rng.Perm(n)[:e])
	}
}

// combos calls fn with every e-subset of 0..n-1 in lexicographic order. fn
// must not retain the slice.
func combos(n, e int, fn func([]int)) {
	idx := make([]int, e)
	var rec func(pos, start int)
	rec = func(pos, start int) {
		if pos == e {
			fn(idx)
			return
		}
		for i := start; i <= n-(e-pos); i++ {
			idx[pos] = i
			rec(pos+1, i+1)
		}
	}
	rec(0, 0)
}

func testErasures(t *testing.T, cfg Config) {
	c := cfg.Code
	p := c.Params()
	rng := Rand(t)
	orig := Stripe(t, c, rng, cfg.ShardSize)
	tried, decoded := 0, 0
	for e := 1; e <= p.M+1 && e <= p.N(); e++ {
		patterns(p.N(), e, cfg.RandomPatterns, cfg.Exhaustive, rng, func(lost []int) {
			tried++
			shards := clone(orig)
			for _, i := range lost {
				shards[i] = shards[i][:0] // missing, capacity reused
			}
			can := c.CanReconstruct(presentMask(shards))
			switch {
			case e <= cfg.Tolerance && !can:
				t.Fatalf("erasures %v: CanReconstruct = false within the claimed tolerance %d", lost, cfg.Tolerance)
			case e > p.M && can:
				t.Fatalf("erasures %v: CanReconstruct = true with fewer than K shards", lost)
			}
			err := c.Reconstruct(shards, nil)
			if can {
				if err != nil {
					t.Fatalf("erasures %v: reconstruct: %v", lost, err)
				}
				assertEqual(t, fmt.Sprintf("erasures %v", lost), shards, orig)
				decoded++
				return
			}
			if !errors.Is(err, codec.ErrUndecodable) {
				t.Fatalf("erasures %v: CanReconstruct = false but Reconstruct returned %v, want ErrUndecodable", lost, err)
			}
			for i, s := range shards {
				if len(s) > 0 && !bytes.Equal(s, orig[i]) {
					t.Fatalf("erasures %v: failed reconstruct modified shard %d", lost, i)
				}
			}
		})
	}
	t.Logf("%s: %d erasure patterns tried, %d decodable", c.Policy(), tried, decoded)
}

func testWant(t *testing.T, cfg Config) {
	c := cfg.Code
	p := c.Params()
	rng := Rand(t)
	orig := Stripe(t, c, rng, cfg.ShardSize)
	for range 32 {
		e := 1 + rng.IntN(cfg.Tolerance)
		lost := rng.Perm(p.N())[:e]
		shards := clone(orig)
		for _, i := range lost {
			shards[i] = nil
		}
		// Data only.
		if err := c.Reconstruct(shards, codec.Data(p.K)); err != nil {
			t.Fatalf("lost %v: reconstruct data: %v", lost, err)
		}
		for _, i := range lost {
			if i < p.K && !bytes.Equal(shards[i], orig[i]) {
				t.Fatalf("lost %v: data shard %d wrong", lost, i)
			}
			if i >= p.K && len(shards[i]) != 0 {
				t.Fatalf("lost %v: parity shard %d rebuilt though not wanted", lost, i)
			}
		}
		// One named shard.
		shards = clone(orig)
		for _, i := range lost {
			shards[i] = nil
		}
		one := lost[rng.IntN(len(lost))]
		if err := c.Reconstruct(shards, []int{one}); err != nil {
			t.Fatalf("lost %v: reconstruct %d: %v", lost, one, err)
		}
		for _, i := range lost {
			switch {
			case i == one && !bytes.Equal(shards[i], orig[i]):
				t.Fatalf("lost %v: wanted shard %d wrong", lost, i)
			case i != one && len(shards[i]) != 0:
				t.Fatalf("lost %v: shard %d rebuilt though not wanted", lost, i)
			}
		}
	}
}

func testVerify(t *testing.T, cfg Config) {
	c := cfg.Code
	p := c.Params()
	if p.M == 0 {
		t.Skip("no parity: nothing to verify against")
	}
	rng := Rand(t)
	shards := Stripe(t, c, rng, cfg.ShardSize)
	for i := range p.N() {
		pos := rng.IntN(len(shards[i]))
		bit := byte(1) << rng.IntN(8)
		shards[i][pos] ^= bit
		ok, err := c.Verify(shards)
		if err != nil || ok {
			t.Fatalf("flipped bit %d of byte %d in shard %d: verify = %v, %v; want false", bit, pos, i, ok, err)
		}
		shards[i][pos] ^= bit
		if ok, err := c.Verify(shards); err != nil || !ok {
			t.Fatalf("restored shard %d: verify = %v, %v; want true", i, ok, err)
		}
	}
}

func testMalformed(t *testing.T, cfg Config) {
	c := cfg.Code
	p := c.Params()
	rng := Rand(t)
	orig := Stripe(t, c, rng, cfg.ShardSize)
	check := func(name string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	check("encode short stripe", c.Encode(clone(orig)[:p.N()-1]), codec.ErrShardCount)
	check("reconstruct long stripe", c.Reconstruct(append(clone(orig), nil), nil), codec.ErrShardCount)
	if p.N() > 1 {
		s := clone(orig)
		s[0] = s[0][:len(s[0])-1]
		check("encode unequal sizes", c.Encode(s), codec.ErrShardSize)
		s = clone(orig)
		s[p.N()-1] = append(s[p.N()-1], 0)
		check("reconstruct unequal sizes", c.Reconstruct(s, nil), codec.ErrShardSize)
	}
	s := clone(orig)
	s[0] = nil
	check("encode missing data", c.Encode(s), codec.ErrShardSize)
	check("reconstruct want out of range", c.Reconstruct(clone(orig), []int{p.N()}), codec.ErrShardIndex)
	check("reconstruct want negative", c.Reconstruct(clone(orig), []int{-1}), codec.ErrShardIndex)
	check("reconstruct nothing present", c.Reconstruct(make([][]byte, p.N()), nil), codec.ErrUndecodable)
	_, err := c.Verify(make([][]byte, p.N()))
	check("verify missing", err, codec.ErrShardSize)
	if m := p.ShardMultiple; m > 1 {
		s := make([][]byte, p.N())
		for i := range p.K {
			s[i] = make([]byte, m+1)
		}
		check("encode size not a multiple", c.Encode(s), codec.ErrShardSize)
	}
	if c.CanReconstruct(make([]bool, p.N()+1)) {
		t.Errorf("CanReconstruct with a mask of the wrong length = true")
	}
	if lr, ok := c.(codec.LinearRepairer); ok {
		_, err := lr.RepairPlan([]int{p.N()}, []int{0})
		check("repair plan lost out of range", err, codec.ErrShardIndex)
		_, err = lr.RepairPlan([]int{0}, []int{1, 1})
		check("repair plan helper repeated", err, codec.ErrShardIndex)
		_, err = lr.RepairPlan([]int{0}, nil)
		check("repair plan no helpers", err, codec.ErrUndecodable)
	}
}

func testConcurrent(t *testing.T, cfg Config) {
	c := cfg.Code
	p := c.Params()
	rng := Rand(t)
	orig := Stripe(t, c, rng, cfg.ShardSize)
	var g errgroup.Group
	for w := range 8 {
		lost := rng.Perm(p.N())[:1+w%cfg.Tolerance]
		g.Go(func() error {
			for range 20 {
				shards := clone(orig)
				for _, i := range lost {
					shards[i] = nil
				}
				if err := c.Reconstruct(shards, nil); err != nil {
					return err
				}
				for i := range orig {
					if !bytes.Equal(shards[i], orig[i]) {
						return fmt.Errorf("lost %v: shard %d differs", lost, i)
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func testLinearRepair(t *testing.T, cfg Config) {
	c := cfg.Code
	lr := c.(codec.LinearRepairer)
	p := c.Params()
	rng := Rand(t)
	size := max(cfg.ShardSize, 4096)
	orig := Stripe(t, c, rng, size)
	for trial := range 4 * p.N() {
		f := 1 + trial%max(1, cfg.Tolerance)
		perm := rng.Perm(p.N())
		lost, avail := perm[:f], perm[f:]
		plan, err := lr.RepairPlan(lost, avail)
		if err != nil {
			t.Fatalf("repair plan lost %v from %v: %v", lost, avail, err)
		}
		if !slices.Equal(plan.Lost, lost) || len(plan.Coeffs) != f {
			t.Fatalf("plan for %v has Lost %v and %d coefficient rows", lost, plan.Lost, len(plan.Coeffs))
		}
		for _, h := range plan.Helpers {
			if !slices.Contains(avail, h) {
				t.Fatalf("plan for %v uses helper %d, which is not available", lost, h)
			}
		}
		if len(plan.Helpers) > p.K {
			t.Fatalf("plan for %v uses %d helpers, more than K=%d", lost, len(plan.Helpers), p.K)
		}
		// A random byte range, applied hop by hop in a random order.
		a := rng.IntN(size)
		b := a + 1 + rng.IntN(size-a)
		partial := make([][]byte, f)
		for j := range partial {
			partial[j] = make([]byte, b-a)
		}
		for _, i := range rng.Perm(len(plan.Helpers)) {
			plan.Apply(partial, i, orig[plan.Helpers[i]][a:b])
		}
		for j, l := range lost {
			if !bytes.Equal(partial[j], orig[l][a:b]) {
				t.Fatalf("lost %v: hop-by-hop repair of shard %d bytes [%d,%d) is wrong", lost, l, a, b)
			}
		}
		// The fused Repair on the same range.
		in := make([][]byte, len(plan.Helpers))
		for i, h := range plan.Helpers {
			in[i] = orig[h][a:b]
		}
		for j := range partial {
			fill(rng, partial[j]) // Repair must overwrite, not accumulate
		}
		if err := plan.Repair(in, partial); err != nil {
			t.Fatalf("lost %v: repair: %v", lost, err)
		}
		for j, l := range lost {
			if !bytes.Equal(partial[j], orig[l][a:b]) {
				t.Fatalf("lost %v: fused repair of shard %d bytes [%d,%d) is wrong", lost, l, a, b)
			}
		}
	}
}
