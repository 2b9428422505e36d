package gp

import (
	"testing"
	"time"
)

func TestWeight(t *testing.T) {
	tests := []struct {
		size int64
		want int
	}{{0, 1}, {1 << 20, 1}, {4 << 20, 1}, {4<<20 + 1, 2}, {64 << 20, 16}, {256 << 20, 64}}
	for _, tt := range tests {
		if got := Weight(tt.size); got != tt.want {
			t.Errorf("Weight(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestAdmit(t *testing.T) {
	tests := []struct {
		name            string
		queue           []int
		running, budget int
		want            int
	}{
		{"eight 256MB", []int{64, 64, 64, 64, 64, 64, 64, 64, 64}, 0, 512, 8},
		{"four 256MB and eight 128MB", []int{64, 64, 64, 64, 32, 32, 32, 32, 32, 32, 32, 32, 1}, 0, 512, 12},
		{"FIFO: a big task waits, the small after it too", []int{64, 1, 1}, 480, 512, 0},
		{"heavier than the budget, alone", []int{600, 1}, 0, 512, 1},
		{"heavier than the budget waits for the running", []int{600}, 1, 512, 0},
		{"empty", nil, 0, 512, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Admit(tt.queue, tt.running, tt.budget); got != tt.want {
				t.Fatalf("Admit = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPipeline(t *testing.T) {
	ms := time.Millisecond
	// Repair faster than send: the read takes the first repair plus the
	// sends (the paper's good case of Figure 8).
	tl := Pipeline([]Step{{10 * ms, 40 * ms}, {20 * ms, 80 * ms}, {40 * ms, 160 * ms}}, 1)
	if tl.FirstByte != 10*ms || tl.Done != 290*ms {
		t.Fatalf("fast repair: %+v", tl)
	}
	// Repair slower than send: the link waits on every piece.
	tl = Pipeline([]Step{{50 * ms, 10 * ms}, {100 * ms, 20 * ms}}, 1)
	if tl.FirstByte != 50*ms || tl.Done != 170*ms || tl.Pieces[1].SendStart != 150*ms {
		t.Fatalf("slow repair: %+v", tl)
	}
	// ahead bounds memory: piece 2 waits until piece 1 starts sending.
	tl = Pipeline([]Step{{1 * ms, 100 * ms}, {1 * ms, 100 * ms}, {1 * ms, 100 * ms}}, 1)
	if tl.Pieces[2].ProduceStart != 101*ms || tl.Done != 301*ms {
		t.Fatalf("bounded look-ahead: %+v", tl)
	}
	if tl := Pipeline(nil, 1); tl.Done != 0 || tl.FirstByte != 0 {
		t.Fatalf("empty: %+v", tl)
	}
}

func TestRangePieces(t *testing.T) {
	sizes := []int64{3, 4, 4, 8}
	tests := []struct {
		off, n      int64
		first, last int
	}{{0, 19, 0, 4}, {0, 1, 0, 1}, {3, 1, 1, 2}, {2, 2, 0, 2}, {11, 8, 3, 4}, {18, 10, 3, 4}, {19, 5, 0, 0}, {5, 0, 0, 0}}
	for _, tt := range tests {
		if f, l := RangePieces(sizes, tt.off, tt.n); f != tt.first || l != tt.last {
			t.Errorf("RangePieces(%d, %d) = [%d, %d), want [%d, %d)", tt.off, tt.n, f, l, tt.first, tt.last)
		}
	}
}
