package gp

import (
	"fmt"
	"strings"
	"testing"

	"cairn/internal/golden"
)

// TestRecoveryTasksGolden lists the recovery of a data disk and of a
// parity disk of a group after placements and a release.
func TestRecoveryTasksGolden(t *testing.T) {
	pg := testPG(t, 1<<20, 8<<20)
	var recs []Record
	for _, size := range []int64{73<<20 + 1<<19, 3 << 20, 1 << 20, 40 << 20, 9<<20 + 5} {
		r, err := pg.Place(pg.Geo.Partition(size))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if err := pg.Release(recs[0]); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, lost := range []int{0, 3, 4} {
		fmt.Fprintf(&b, "lost disk %d\n", lost)
		weight := 0
		for _, task := range pg.RecoveryTasks(lost) {
			fmt.Fprintf(&b, "  L%-2d slot %-2d %s [%d, +%d) live=%v weight=%d\n", task.Level, task.Slot, task.Where.File, task.Where.Offset, task.Where.Length, task.Live, task.Weight)
			weight += task.Weight
		}
		fmt.Fprintf(&b, "  total weight %d, first batch under budget 8: %d tasks\n", weight, Admit(weights(pg.RecoveryTasks(lost)), 0, 8))
	}
	golden.Check(t, "recovery.txt", b.String())
}

func weights(ts []Task) []int {
	out := make([]int, len(ts))
	for i, t := range ts {
		out[i] = t.Weight
	}
	return out
}

// TestRecoveryCoversTheDisk: the tasks of a lost disk cover every byte a
// surviving copy of that disk would hold — each slot below its bucket's
// end (or the row's, for parity) once, and the small bucket's bytes.
func TestRecoveryCoversTheDisk(t *testing.T) {
	rng := testRand(t, 4)
	pg := testPG(t, 1<<20, 16<<20)
	var recs []Record
	for range 200 {
		if len(recs) > 0 && rng.IntN(4) == 0 {
			i := rng.IntN(len(recs))
			if err := pg.Release(recs[i]); err != nil {
				t.Fatal(err)
			}
			recs = append(recs[:i], recs[i+1:]...)
		}
		r, err := pg.Place(pg.Geo.Partition(rng.Int64N(50 << 20)))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	for lost := range pg.K + pg.M {
		want := map[string]int64{}
		for level := range pg.Geo.Levels() {
			rows := uint32(0)
			for d, disk := range pg.Disks {
				if lost >= pg.K || d == lost {
					rows = max(rows, disk.Buckets[level].Next)
				}
			}
			want[fmt.Sprint(level)] = int64(rows) * pg.Geo.Size(level)
		}
		for d, disk := range pg.Disks {
			if lost >= pg.K || d == lost {
				want["-1"] = max(want["-1"], disk.SmallEnd)
			}
		}
		got := map[string]int64{}
		seen := map[Location]bool{}
		for _, task := range pg.RecoveryTasks(lost) {
			if seen[task.Where] || task.Where.Disk != lost {
				t.Fatalf("disk %d: task %+v repeated or on another disk", lost, task)
			}
			seen[task.Where] = true
			got[fmt.Sprint(task.Level)] += task.Where.Length
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("disk %d level %s: tasks rebuild %d bytes, the disk holds %d", lost, k, got[k], v)
			}
		}
	}
}
