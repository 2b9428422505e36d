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
