package gf

import (
	"testing"

	"github.com/klauspost/reedsolomon"
)

// Our scalar tables must be the field klauspost's SIMD kernels compute in.
func TestMulMatchesKlauspost(t *testing.T) {
	var ll reedsolomon.LowLevel
	in := make([]byte, 256)
	for i := range in {
		in[i] = byte(i)
	}
	out := make([]byte, 256)
	for c := range 256 {
		ll.GalMulSlice(byte(c), in, out)
		for x := range 256 {
			if got := Mul(byte(c), byte(x)); got != out[x] {
				t.Fatalf("Mul(%d, %d) = %d, klauspost says %d", c, x, got, out[x])
			}
		}
		if c != 0 && Mul(byte(c), Inv(byte(c))) != 1 {
			t.Fatalf("Inv(%d) is not an inverse", c)
		}
		if c != 0 && reedsolomon.Inv(byte(c)) != Inv(byte(c)) {
			t.Fatalf("Inv(%d) differs from klauspost", c)
		}
	}
	if Div(Mul(7, 9), 9) != 7 {
		t.Fatal("Div does not undo Mul")
	}
}

func TestSpan(t *testing.T) {
	rows := [][]byte{
		{1, 0, 0},
		{0, 1, 0},
		{1, 1, 0}, // dependent
		{3, 5, 7},
	}
	s := NewSpan(3)
	wantRank := []int{1, 2, 2, 3}
	for i, r := range rows {
		s.Add(r)
		if s.Rank() != wantRank[i] {
			t.Fatalf("after row %d rank %d, want %d", i, s.Rank(), wantRank[i])
		}
	}
	v := []byte{9, 200, 31}
	e, ok := s.Express(v)
	if !ok {
		t.Fatal("full-rank span does not contain v")
	}
	got := make([]byte, 3)
	for i, r := range rows {
		for c := range got {
			got[c] ^= Mul(e[i], r[c])
		}
	}
	for c := range got {
		if got[c] != v[c] {
			t.Fatalf("expression %v gives %v, want %v", e, got, v)
		}
	}
	s2 := NewSpan(3)
	s2.Add([]byte{1, 2, 3})
	if _, ok := s2.Express([]byte{0, 0, 1}); ok {
		t.Fatal("vector outside the span was expressed")
	}
	if Rank([][]byte{{2, 4}, {1, 2}}) != 1 {
		t.Fatal("Rank of proportional rows is not 1")
	}
}
