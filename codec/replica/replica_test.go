package replica

import (
	"errors"
	"testing"

	"cairn/codec"
	"cairn/codec/codectest"
)

func mustNew(t testing.TB, n int) *Code {
	t.Helper()
	c, err := New(n)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		c := mustNew(t, n)
		t.Run(c.Policy().String(), func(t *testing.T) {
			codectest.Run(t, codectest.Config{Code: c, Tolerance: n - 1})
		})
	}
}

func FuzzReconstruct(f *testing.F) { codectest.Fuzz(f, mustNew(f, 3)) }

func BenchmarkRep(b *testing.B) { codectest.Bench(b, mustNew(b, 3)) }

func TestNewErrors(t *testing.T) {
	for _, n := range []int{0, -1, 257} {
		if _, err := New(n); !errors.Is(err, codec.ErrInvalidParams) {
			t.Errorf("New(%d) = %v, want ErrInvalidParams", n, err)
		}
	}
}

func TestRepairReadsOneCopy(t *testing.T) {
	plan, err := mustNew(t, 3).RepairPlan([]int{0}, []int{2, 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Helpers) != 1 || plan.Helpers[0] != 2 || plan.Coeffs[0][0] != 1 {
		t.Fatalf("plan %+v, want one helper (2) with coefficient 1", plan)
	}
}

// A spare row is one more copy: rows of rep-3 match shards of rep-5, and
// rep-5 decodes from them.
func TestExtensible(t *testing.T) {
	var x codec.Extensible = mustNew(t, 3)
	data := [][]byte{[]byte("copy me")}
	wide, err := x.ExtendTo(5)
	if err != nil || wide.Params().N() != 5 {
		t.Fatalf("ExtendTo(5) = %v, %v", wide, err)
	}
	stripe := [][]byte{data[0], nil, nil, nil, make([]byte, 7)}
	if err := x.MakeRow(4, data, stripe[4]); err != nil || string(stripe[4]) != "copy me" {
		t.Fatalf("MakeRow(4) = %q, %v", stripe[4], err)
	}
	stripe[0] = nil
	if err := wide.Reconstruct(stripe, []int{0}); err != nil || string(stripe[0]) != "copy me" {
		t.Fatalf("decoding from row 4: %q, %v", stripe[0], err)
	}
	for _, c := range []struct {
		r    int
		data [][]byte
		dst  []byte
		want error
	}{
		{-1, data, make([]byte, 7), codec.ErrShardIndex},
		{MaxCopies, data, make([]byte, 7), codec.ErrShardIndex},
		{3, [][]byte{data[0], data[0]}, make([]byte, 7), codec.ErrShardCount},
		{3, data, make([]byte, 6), codec.ErrShardSize},
	} {
		if err := x.MakeRow(c.r, c.data, c.dst); !errors.Is(err, c.want) {
			t.Errorf("MakeRow(%d, %d shards, %d bytes) = %v, want %v", c.r, len(c.data), len(c.dst), err, c.want)
		}
	}
	if _, err := x.ExtendTo(2); !errors.Is(err, codec.ErrInvalidParams) {
		t.Errorf("ExtendTo(2) = %v, want ErrInvalidParams", err)
	}
}
