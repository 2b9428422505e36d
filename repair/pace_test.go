package repair

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/meta"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(100, 0)
	tests := []struct {
		name  string
		takes []struct {
			at   time.Duration // after t0
			rate int64
			n    int64
		}
		want []time.Duration
	}{
		{"a fresh bucket holds one second", []struct {
			at   time.Duration
			rate int64
			n    int64
		}{{0, 1000, 600}, {0, 1000, 400}, {0, 1000, 500}}, []time.Duration{0, 0, 500 * time.Millisecond}},
		{"a shard larger than a second's worth waits for its debt", []struct {
			at   time.Duration
			rate int64
			n    int64
		}{{0, 1000, 3000}}, []time.Duration{2 * time.Second}},
		{"it refills at the rate, up to one second", []struct {
			at   time.Duration
			rate int64
			n    int64
		}{{0, 1000, 1000}, {time.Second / 2, 1000, 1000}, {10 * time.Second, 1000, 1500}},
			[]time.Duration{0, 500 * time.Millisecond, 500 * time.Millisecond}},
		{"a lower rate refills slower", []struct {
			at   time.Duration
			rate int64
			n    int64
		}{{0, 1000, 1000}, {time.Second, 100, 200}}, []time.Duration{0, time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bucket
			for i, tk := range tc.takes {
				if got := b.take(t0.Add(tk.at), tk.rate, tk.n); got != tc.want[i] {
					t.Fatalf("take %d (%+v): wait %v, want %v", i, tk, got, tc.want[i])
				}
			}
		})
	}
}

// A drain at a set rate (cairn.Disk.MoveRate) moves its shards no faster
// than the rate plus the bucket's one second; without a rate the same
// drain takes no (virtual) time at all. The clock is synctest's.
func TestDrainIsPaced(t *testing.T) {
	for _, rate := range []int64{0, 8 << 10} {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 8, "rs-4-2", 40)
			r := New(e.meta, e.exec, Config{Unit: 4096})
			const victim cairn.DiskID = "n4/d1"
			if _, err := e.meta.ChangeDisk(ctx, victim, cairn.DiskChange{From: cairn.DiskUp, To: cairn.DiskDraining, MoveRate: rate}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			now := start
			for range 20 {
				if _, err := r.Scan(ctx, now); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Work(ctx, now); err != nil {
					t.Fatal(err)
				}
				if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) == 0 {
					break
				}
				now = now.Add(rescanEvery)
			}
			if n := e.refs(t)[victim]; n != 0 {
				t.Fatalf("%d shards still on the drained disk", n)
			}
			took, moved := time.Since(start), r.Stats().Moved
			t.Logf("rate %d B/s: moved %d bytes in %v (virtual)", rate, moved, took)
			if rate == 0 {
				if took != 0 || moved != 0 {
					t.Fatalf("an unpaced drain took %v and counted %d paced bytes", took, moved)
				}
				return
			}
			if moved < 4*rate {
				t.Fatalf("moved %d bytes: too few to show the pace of %d B/s", moved, rate)
			}
			// The bucket starts with one second's worth.
			if min := time.Duration(float64(moved-rate) / float64(rate) * float64(time.Second)); took < min {
				t.Fatalf("moved %d bytes in %v at %d B/s: faster than the %v the rate allows", moved, took, rate, min)
			}
			e.check(t)
		})
	}
}
