package placement

import (
	"fmt"
	"testing"

	"cairn"
)

func TestSpare(t *testing.T) {
	var disks []cairn.Disk
	for n := range 4 {
		for d := range 2 {
			disks = append(disks, cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("n%d/d%d", n, d)), Node: cairn.NodeID(fmt.Sprint("n", n))})
		}
	}
	all := func(cairn.Disk) bool { return true }
	flat := func(cairn.Disk) int { return 0 }
	// Deterministic, and spread: 400 keys land on every disk.
	seen := map[cairn.DiskID]int{}
	for i := range 400 {
		k := fmt.Sprint("key", i)
		a, ok1 := Spare(disks, k, all, flat)
		b, ok2 := Spare(disks, k, all, flat)
		if !ok1 || !ok2 || a != b {
			t.Fatalf("key %s: %s then %s", k, a, b)
		}
		seen[a]++
	}
	for _, d := range disks {
		if seen[d.ID] < 20 {
			t.Fatalf("disk %s chosen %d times of 400: %v", d.ID, seen[d.ID], seen)
		}
	}
	// Rank wins over the hash; ok filters.
	onlyN3 := func(d cairn.Disk) int {
		if d.Node == "n3" {
			return 0
		}
		return 1
	}
	for i := range 50 {
		if got, _ := Spare(disks, fmt.Sprint(i), all, onlyN3); got[:2] != "n3" {
			t.Fatalf("rank ignored: %s", got)
		}
	}
	if _, ok := Spare(disks, "x", func(cairn.Disk) bool { return false }, flat); ok {
		t.Fatal("a disk was chosen although none was acceptable")
	}
}
