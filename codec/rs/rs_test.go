package rs

import (
	"bytes"
	"errors"
	"testing"

	"cairn/codec"
	"cairn/codec/codectest"

	"github.com/klauspost/reedsolomon"
)

func mustNew(t testing.TB, k, m int) *Code {
	t.Helper()
	c, err := New(k, m)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	for _, km := range [][2]int{{1, 1}, {2, 1}, {4, 2}, {6, 3}, {10, 4}, {12, 4}, {17, 3}} {
		c := mustNew(t, km[0], km[1])
		t.Run(c.Policy().String(), func(t *testing.T) {
			codectest.Run(t, codectest.Config{Code: c, Tolerance: km[1]})
		})
	}
}

func FuzzReconstruct(f *testing.F) { codectest.Fuzz(f, mustNew(f, 4, 3)) }

func BenchmarkRS(b *testing.B) {
	for _, km := range [][2]int{{6, 3}, {10, 4}} {
		codectest.Bench(b, mustNew(b, km[0], km[1]))
	}
}

func TestNewErrors(t *testing.T) {
	for _, km := range [][2]int{{0, 2}, {2, 0}, {-1, 1}, {200, 100}, {255, 2}} {
		if _, err := New(km[0], km[1]); !errors.Is(err, codec.ErrInvalidParams) {
			t.Errorf("New(%d, %d) = %v, want ErrInvalidParams", km[0], km[1], err)
		}
	}
	if _, err := New(255, 1); err != nil {
		t.Errorf("New(255, 1): %v", err)
	}
}

// The parity matrix is klauspost's Cauchy layout; our generator rows (used
// for decoding and repair) must agree with the encoder byte for byte.
func TestMatchesKlauspostCauchy(t *testing.T) {
	rng := codectest.Rand(t)
	c := mustNew(t, 10, 4)
	shards := codectest.Stripe(t, c, rng, 1000)
	ref, err := reedsolomon.New(10, 4, reedsolomon.WithCauchyMatrix())
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, 14)
	for i := range 10 {
		want[i] = shards[i]
	}
	for i := 10; i < 14; i++ {
		want[i] = make([]byte, 1000)
	}
	if err := ref.Encode(want); err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 14; i++ {
		if !bytes.Equal(want[i], shards[i]) {
			t.Fatalf("parity %d differs from klauspost WithCauchyMatrix", i)
		}
	}
}

// Prefix-stable parity (docs/codes.md#prefix-stable-parity): parity row i
// made on demand equals shard K+i of any wider code, and a reader decodes
// from any K of rows 0..i with the extended code.
func TestPrefixStableParity(t *testing.T) {
	rng := codectest.Rand(t)
	c := mustNew(t, 10, 4)
	wide := mustNew(t, 10, 12)
	shards := codectest.Stripe(t, wide, rng, 4096)
	narrow := make([][]byte, 14)
	copy(narrow, shards[:10])
	if err := c.Encode(narrow); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if !bytes.Equal(narrow[10+i], shards[10+i]) {
			t.Fatalf("rs-10-4 parity %d != rs-10-12 parity %d", i, i)
		}
	}
	for i := range 12 {
		dst := make([]byte, 4096)
		if err := c.MakeParity(i, shards[:10], dst); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, shards[10+i]) {
			t.Fatalf("MakeParity(%d) differs from shard %d of rs-10-12", i, 10+i)
		}
	}
	// Lose 8 shards, including every original parity; decode from spare rows.
	ext, err := c.Extend(12)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]byte, 22)
	copy(got, shards)
	for _, i := range []int{0, 2, 4, 6, 10, 11, 12, 13} {
		got[i] = nil
	}
	if err := ext.Reconstruct(got, nil); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !bytes.Equal(got[i], shards[i]) {
			t.Fatalf("shard %d wrong after decoding from spare parity", i)
		}
	}
	if err := c.MakeParity(246, shards[:10], make([]byte, 4096)); !errors.Is(err, codec.ErrShardIndex) {
		t.Fatalf("MakeParity(246) with K=10 = %v, want ErrShardIndex", err)
	}
	if _, err := c.Extend(3); !errors.Is(err, codec.ErrInvalidParams) {
		t.Fatalf("Extend(3) = %v, want ErrInvalidParams", err)
	}
	// The same through codec.Extensible: rows by number, data rows too.
	var x codec.Extensible = c
	for r := range 22 {
		dst := make([]byte, 4096)
		if err := x.MakeRow(r, shards[:10], dst); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst, shards[r]) {
			t.Fatalf("MakeRow(%d) differs from shard %d of rs-10-12", r, r)
		}
	}
	if e, err := x.ExtendTo(22); err != nil || e.Params().N() != 22 {
		t.Fatalf("ExtendTo(22) = %v, %v", e, err)
	}
	if _, err := x.ExtendTo(13); !errors.Is(err, codec.ErrInvalidParams) {
		t.Fatalf("ExtendTo(13) = %v, want ErrInvalidParams", err)
	}
	if err := x.MakeRow(256, shards[:10], make([]byte, 4096)); !errors.Is(err, codec.ErrShardIndex) {
		t.Fatalf("MakeRow(256) = %v, want ErrShardIndex", err)
	}
}

// RS repair reads exactly K helpers, and they are the first K available.
func TestRepairPlanHelpers(t *testing.T) {
	c := mustNew(t, 6, 3)
	plan, err := c.RepairPlan([]int{2}, []int{8, 7, 6, 5, 4, 3, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{8, 7, 6, 5, 4, 3}
	if len(plan.Helpers) != 6 {
		t.Fatalf("helpers %v, want %v", plan.Helpers, want)
	}
	for i := range want {
		if plan.Helpers[i] != want[i] {
			t.Fatalf("helpers %v, want %v", plan.Helpers, want)
		}
	}
}
