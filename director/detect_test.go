package director

import (
	"testing"
	"time"

	"cairn"
)

func TestDetect(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	grace := time.Minute
	disks := []cairn.Disk{
		{ID: "a/1", Node: "a", State: cairn.DiskUp},
		{ID: "b/1", Node: "b", State: cairn.DiskUp},
		{ID: "c/1", Node: "c", State: cairn.DiskSuspect, Since: t0},
		{ID: "d/1", Node: "d", State: cairn.DiskSuspect, Since: t0.Add(-2 * time.Minute)},
		{ID: "e/1", Node: "e", State: cairn.DiskSuspect, Since: t0.Add(-2 * time.Minute)},
		{ID: "f/1", Node: "f", State: cairn.DiskDown, Since: t0.Add(-time.Hour)},
		{ID: "g/1", Node: "g", State: cairn.DiskDraining},
		{ID: "h/1", Node: "h", State: cairn.DiskUp, Fault: "write: input/output error"},
		{ID: "i/1", Node: "i", State: cairn.DiskSuspect, Since: t0, Fault: "directory missing"},
		{ID: "j/1", Node: "j", State: cairn.DiskSuspect, Since: t0.Add(-2 * time.Minute), Fault: "directory missing"},
	}
	alive := map[string]bool{"a": true, "e": true, "f": true, "h": true, "i": true, "j": true}
	got := Detect(disks, alive, t0.Add(30*time.Second), grace)
	want := []struct {
		disk cairn.DiskID
		to   cairn.DiskState
	}{
		{"b/1", cairn.DiskSuspect}, // dead node: suspect at once
		{"d/1", cairn.DiskDown},    // suspect past the grace period
		{"e/1", cairn.DiskUp},      // came back within... any time while suspect
		{"h/1", cairn.DiskSuspect}, // live node, faulty disk
		{"j/1", cairn.DiskDown},    // faulty for longer than the grace period
		// i/1: live but still faulty, within the grace period: stays suspect
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Disk != w.disk || got[i].To != w.to || got[i].Why == "" {
			t.Fatalf("transition %d = %+v, want %s → %s", i, got[i], w.disk, w.to)
		}
	}
	// c/1 stays suspect until the grace period has passed.
	if got := Detect(disks[2:3], nil, t0.Add(59*time.Second), grace); len(got) != 0 {
		t.Fatalf("c/1 went down early: %+v", got)
	}
	if got := Detect(disks[2:3], nil, t0.Add(60*time.Second), grace); len(got) != 1 || got[0].To != cairn.DiskDown {
		t.Fatalf("c/1 did not go down after the grace period: %+v", got)
	}
}
