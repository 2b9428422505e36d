package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"
)

// TestRingMemory: a PUT takes its pipeline's stripes (waiting), and of
// its spare window only what the budget has free — halving until it fits.
func TestRingMemory(t *testing.T) {
	const mem = 10 // bytes per stripe
	tests := []struct {
		name     string
		size     int64 // budget (0: none)
		taken    int64 // of it by others
		stripes  int64
		hold     int
		wantHold int
		wantErr  bool
	}{
		{"no budget", 0, 0, -1, 16, 16, false},
		{"room for all", 1000, 0, -1, 16, 16, false},
		{"room for half the window", 4*mem + 6*mem, 0, -1, 16, 10, false},
		{"room for the pipeline only", 4*mem + mem - 1, 0, -1, 16, 4, false},
		{"small object", 2 * mem, 0, 2, 2, 2, false},
		{"a window below the pipeline", 4 * mem, 0, -1, 2, 2, false},
		{"no room for the pipeline", 100, 70, -1, 16, 0, true},
		{"no spares", 1000, 0, -1, 0, 0, false},
		{"a pipeline larger than the budget takes it all", 3 * mem, 0, -1, 16, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b *Budget
			if tc.size > 0 {
				b = NewBudget(tc.size, 0)
				if _, ok := b.tryTake(tc.taken); !ok {
					t.Fatal("cannot take the others' share")
				}
			}
			hold, release, err := ringMemory(context.Background(), b, mem, tc.stripes, tc.hold)
			if tc.wantErr {
				if !errors.Is(err, ErrBusy) {
					t.Fatalf("err %v, want ErrBusy", err)
				}
				return
			}
			if err != nil || hold != tc.wantHold {
				t.Fatalf("hold %d, err %v; want %d", hold, err, tc.wantHold)
			}
			if b != nil {
				ring := int64(max(pipelineDepth, hold))
				if tc.stripes >= 0 {
					ring = min(ring, tc.stripes)
				}
				if _, ok := b.tryTake(max(0, b.size-tc.taken-ring*mem) + 1); ok {
					t.Fatalf("the budget has more free than the ring of %d stripes leaves", ring)
				}
			}
			release()
			if _, ok := b.tryTake(tc.size - tc.taken); b != nil && !ok {
				t.Fatal("the ring's memory did not come back")
			}
		})
	}
}

// TestBudgetBusy: a GET that cannot get its window's memory within the
// budget's wait fails with ErrBusy, a PUT under a tight budget shrinks
// its spare window and succeeds, and every request gives its memory back.
func TestBudgetBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := NewBudget(2<<20, 5*time.Second)
		e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 64 << 10, WindowBytes: 512 << 10, Memory: budget})
		ctx := context.Background()
		data := randBytes(3, 3<<20)
		if _, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1}); err != nil {
			t.Fatal(err) // 4 + 6·4 blocks of 64 KiB fit in 2 MiB: the spare window shrinks to the pipeline
		}
		_, rc, err := e.c.Get(ctx, "bkt", "k", 0, -1) // (6/4 + 2)·512 KiB
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, _, err := e.c.Get(ctx, "bkt", "k", 0, -1); !errors.Is(err, ErrBusy) || time.Since(start) != 5*time.Second {
			t.Fatalf("a second GET with the first one open: %v after %v, want ErrBusy after the 5 s wait", err, time.Since(start))
		}
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the first GET: %v", err)
		}
		rc.Close()
		if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
			t.Fatal("a GET after the first one closed read other bytes")
		}
		if _, ok := budget.tryTake(budget.Size()); !ok {
			t.Fatal("the budget is not whole again after every request ended")
		}
	})
}
