package codectest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"cairn/codec"
)

// RatelessConfig describes a rateless code under test and what it claims.
type RatelessConfig struct {
	// Code is the code under test.
	Code codec.Rateless
	// Systematic says block IDs 0..K−1 are the source blocks themselves.
	Systematic bool
	// BlockSize is the block length (default: BlockMultiple rounded up to
	// at least 64 bytes).
	BlockSize int
	// Trials is the number of seeded decode trials (default 32).
	Trials int
	// Spread: trial IDs are drawn from 0..Spread·K−1 (default 3).
	Spread int
	// MaxMeanOverhead is the largest acceptable mean reception overhead
	// over the trials, as a fraction of K (default 0.05).
	MaxMeanOverhead float64
}

func (cfg *RatelessConfig) fill() {
	if cfg.BlockSize == 0 {
		m := max(cfg.Code.BlockMultiple(), 1)
		cfg.BlockSize = (64 + m - 1) / m * m
	}
	if cfg.Trials == 0 {
		cfg.Trials = 32
	}
	if cfg.Spread == 0 {
		cfg.Spread = 3
	}
	if cfg.MaxMeanOverhead == 0 {
		cfg.MaxMeanOverhead = 0.05
	}
}

// RunRateless runs the conformance suite of codec.Rateless: encoders are
// deterministic and agree with each other, blocks fed to a decoder in a
// seeded random order decode to the source, the decoder is done exactly
// when Decodable says the IDs so far suffice, and malformed calls return
// codec's errors. It logs the seeded decode-success vs overhead curve and
// fails if the mean overhead exceeds cfg.MaxMeanOverhead.
func RunRateless(t *testing.T, cfg RatelessConfig) {
	cfg.fill()
	t.Run("Encoder", func(t *testing.T) { testRatelessEncoder(t, cfg) })
	t.Run("Decode", func(t *testing.T) { testRatelessDecode(t, cfg, false) })
	if cfg.Systematic {
		t.Run("DecodeRepairOnly", func(t *testing.T) { testRatelessDecode(t, cfg, true) })
	}
	t.Run("Malformed", func(t *testing.T) { testRatelessMalformed(t, cfg) })
}

func sourceBlocks(rng *rand.Rand, k, size int) [][]byte {
	src := make([][]byte, k)
	for i := range src {
		src[i] = make([]byte, size)
		fill(rng, src[i])
	}
	return src
}

// encodeIDs returns the blocks with the given IDs.
func encodeIDs(t testing.TB, r codec.Rateless, src [][]byte, ids []int) [][]byte {
	t.Helper()
	enc, err := r.NewEncoder(src)
	if err != nil {
		t.Fatalf("new encoder: %v", err)
	}
	dst := make([][]byte, len(ids))
	for i := range dst {
		dst[i] = make([]byte, len(src[0]))
	}
	if err := enc.EncodeBlocks(ids, dst); err != nil {
		t.Fatalf("encode blocks: %v", err)
	}
	return dst
}

func testRatelessEncoder(t *testing.T, cfg RatelessConfig) {
	r := cfg.Code
	k := r.SourceBlocks()
	rng := Rand(t)
	src := sourceBlocks(rng, k, cfg.BlockSize)
	orig := clone(src)
	ids := []int{0, k - 1, k, k + 1, 2 * k, r.MaxBlockID() - 1}
	for range 8 {
		ids = append(ids, rng.IntN(r.MaxBlockID()))
	}
	ids = slices.Compact(ids)
	batch := encodeIDs(t, r, src, ids)
	for i := range src {
		if !bytes.Equal(src[i], orig[i]) {
			t.Fatalf("encoding modified source block %d", i)
		}
	}
	// One at a time, in reverse, from a second encoder: the same bytes.
	enc, err := r.NewEncoder(src)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(ids) - 1; i >= 0; i-- {
		one := [][]byte{make([]byte, cfg.BlockSize)}
		fill(rng, one[0]) // must be overwritten
		if err := enc.EncodeBlocks(ids[i:i+1], one); err != nil {
			t.Fatalf("encode block %d: %v", ids[i], err)
		}
		if !bytes.Equal(one[0], batch[i]) {
			t.Fatalf("block %d differs between a batch and a single encode", ids[i])
		}
	}
	if cfg.Systematic {
		for i, id := range ids {
			if id < k && !bytes.Equal(batch[i], src[id]) {
				t.Fatalf("systematic code: block %d is not source block %d", id, id)
			}
		}
	}
	// A change of one source block changes its own block (systematic) and
	// leaves the encoding otherwise a function of the source only.
	src[0][0] ^= 1
	again := encodeIDs(t, r, src, ids)
	changed := 0
	for i := range ids {
		if !bytes.Equal(again[i], batch[i]) {
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("changing source block 0 changed none of blocks %v", ids)
	}
}

// testRatelessDecode feeds seeded random orders of IDs to decoders and
// records how many blocks each needed.
func testRatelessDecode(t *testing.T, cfg RatelessConfig, repairOnly bool) {
	r := cfg.Code
	k := r.SourceBlocks()
	rng := Rand(t)
	src := sourceBlocks(rng, k, cfg.BlockSize)
	lo := 0
	if repairOnly {
		lo = k
	}
	pool := make([]int, cfg.Spread*k-lo)
	for i := range pool {
		pool[i] = lo + i
	}
	blocks := encodeIDs(t, r, src, pool)
	byID := make(map[int][]byte, len(pool))
	for i, id := range pool {
		byID[id] = blocks[i]
	}
	extra := make([]int, 0, cfg.Trials)
	for trial := range cfg.Trials {
		order := slices.Clone(pool)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		dec, err := r.NewDecoder(cfg.BlockSize)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, id := range order {
			done, err := dec.Add(id, byID[id])
			if err != nil {
				t.Fatalf("trial %d: add block %d: %v", trial, id, err)
			}
			n++
			// The stateless check agrees with the decoder at every step
			// near the threshold (earlier it is false by counting).
			if n >= k-1 || done {
				if can := r.Decodable(order[:n]); can != done {
					t.Fatalf("trial %d: after %d blocks the decoder says done=%v, Decodable says %v", trial, n, done, can)
				}
			}
			if done {
				break
			}
		}
		if !dec.Done() {
			t.Fatalf("trial %d: all %d blocks do not decode", trial, len(order))
		}
		out := make([][]byte, k)
		if err := dec.Source(out); err != nil {
			t.Fatalf("trial %d: source: %v", trial, err)
		}
		for i := range out {
			if !bytes.Equal(out[i], src[i]) {
				t.Fatalf("trial %d: decoded source block %d differs (decoder done after %d blocks)", trial, i, n)
			}
		}
		extra = append(extra, n-k)
	}
	logCurve(t, k, extra, repairOnly)
	mean := 0.0
	for _, e := range extra {
		mean += float64(e)
	}
	mean /= float64(len(extra)) * float64(k)
	if mean > cfg.MaxMeanOverhead {
		t.Fatalf("mean reception overhead %.4f of K exceeds %.4f", mean, cfg.MaxMeanOverhead)
	}
}

// logCurve logs the fraction of trials decoded with at most K+h blocks.
func logCurve(t *testing.T, k int, extra []int, repairOnly bool) {
	slices.Sort(extra)
	var b strings.Builder
	what := "random order"
	if repairOnly {
		what = "repair blocks only"
	}
	fmt.Fprintf(&b, "K=%d, %d trials (%s): decoded with ≤ K+h blocks:", k, len(extra), what)
	for h := 0; h <= extra[len(extra)-1]; h++ {
		n, _ := slices.BinarySearch(extra, h+1)
		fmt.Fprintf(&b, " h=%d %.1f%%", h, 100*float64(n)/float64(len(extra)))
	}
	t.Log(b.String())
}

func testRatelessMalformed(t *testing.T, cfg RatelessConfig) {
	r := cfg.Code
	k := r.SourceBlocks()
	rng := Rand(t)
	src := sourceBlocks(rng, k, cfg.BlockSize)
	check := func(name string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	_, err := r.NewEncoder(src[:k-1])
	check("encoder with K−1 blocks", err, codec.ErrShardCount)
	short := clone(src)
	short[1] = short[1][:len(short[1])-1]
	_, err = r.NewEncoder(short)
	check("encoder with unequal blocks", err, codec.ErrShardSize)
	enc, err := r.NewEncoder(src)
	if err != nil {
		t.Fatal(err)
	}
	buf := [][]byte{make([]byte, cfg.BlockSize)}
	check("encode ID −1", enc.EncodeBlocks([]int{-1}, buf), codec.ErrShardIndex)
	check("encode ID past the limit", enc.EncodeBlocks([]int{r.MaxBlockID()}, buf), codec.ErrShardIndex)
	check("encode short buffer", enc.EncodeBlocks([]int{k}, [][]byte{make([]byte, cfg.BlockSize-1)}), codec.ErrShardSize)
	check("encode count mismatch", enc.EncodeBlocks([]int{k, k + 1}, buf), codec.ErrShardCount)
	_, err = r.NewDecoder(0)
	check("decoder of size 0", err, codec.ErrShardSize)
	dec, err := r.NewDecoder(cfg.BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	blk := encodeIDs(t, r, src, []int{k})[0]
	_, err = dec.Add(-1, blk)
	check("add ID −1", err, codec.ErrShardIndex)
	_, err = dec.Add(k, blk[:len(blk)-1])
	check("add short block", err, codec.ErrShardSize)
	if _, err := dec.Add(k, blk); err != nil {
		t.Fatalf("add: %v", err)
	}
	_, err = dec.Add(k, blk)
	check("add twice", err, codec.ErrShardIndex)
	check("source before done", dec.Source(make([][]byte, k)), codec.ErrUndecodable)
	check("source with wrong count", dec.Source(make([][]byte, k+1)), codec.ErrShardCount)
	if r.Decodable(codec.Data(k - 1)) {
		t.Errorf("Decodable with K−1 blocks = true")
	}
	if r.Decodable(append(codec.Data(k), -1)) {
		t.Errorf("Decodable with an ID out of range = true")
	}
	if cfg.Systematic && !r.Decodable(codec.Data(k)) {
		t.Errorf("systematic code: Decodable(source IDs) = false")
	}
}
