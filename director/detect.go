package director

import (
	"time"

	"cairn"
)

// Transition is one disk state change Detect decided.
type Transition struct {
	Disk     cairn.DiskID
	From, To cairn.DiskState
	Why      string
}

// Detect decides disk state changes from the cluster map and the set of
// live node IDs at time now: up disks of dead nodes, and up disks their
// node reports faulty (Disk.Fault), become suspect; suspect disks of live
// nodes without a fault become up again; disks suspect for longer than
// grace (since the disk's Since time) become down. Disks in other states
// are left alone. The result is in disk order.
func Detect(disks []cairn.Disk, alive map[string]bool, now time.Time, grace time.Duration) []Transition {
	var out []Transition
	for _, d := range disks {
		live := alive[string(d.Node)]
		switch {
		case d.State == cairn.DiskUp && !live:
			out = append(out, Transition{d.ID, d.State, cairn.DiskSuspect, "node " + string(d.Node) + " missed its liveness lease"})
		case d.State == cairn.DiskUp && d.Fault != "":
			out = append(out, Transition{d.ID, d.State, cairn.DiskSuspect, "node " + string(d.Node) + " reports: " + d.Fault})
		case d.State == cairn.DiskSuspect && live && d.Fault == "":
			out = append(out, Transition{d.ID, d.State, cairn.DiskUp, "node " + string(d.Node) + " is alive again"})
		case d.State == cairn.DiskSuspect && now.Sub(d.Since) >= grace:
			out = append(out, Transition{d.ID, d.State, cairn.DiskDown, "suspect for longer than " + grace.String()})
		}
	}
	return out
}
