package decide

import "cairn"

// View is the cluster map a decision is made against. It is read-only
// once made; decisions never modify it.
type View struct {
	Disks map[cairn.DiskID]cairn.Disk
	Addr  map[cairn.NodeID]string // a node's address; "" if unknown
	List  []cairn.Disk            // every disk, in the order given (the store's: by ID)
	// Avoid holds disks not to choose as targets although the cluster
	// map says they are writable: a target that failed a repair recently
	// (missing, full, not writable; package repair sets it). They still
	// serve as helpers.
	Avoid map[cairn.DiskID]bool
}

// NewView returns the view of nodes and disks. disks is kept as given.
func NewView(nodes []cairn.Node, disks []cairn.Disk) *View {
	v := &View{Disks: make(map[cairn.DiskID]cairn.Disk, len(disks)), Addr: make(map[cairn.NodeID]string, len(nodes)), List: disks}
	for _, n := range nodes {
		v.Addr[n.ID] = n.Addr
	}
	for _, d := range disks {
		v.Disks[d.ID] = d
	}
	return v
}

// Usable reports whether a shard on disk can serve as a helper: its disk
// is up or draining (not suspect: its node may be gone) and its node has
// an address.
func (v *View) Usable(disk cairn.DiskID) bool {
	d, ok := v.Disks[disk]
	return ok && (d.State == cairn.DiskUp || d.State == cairn.DiskDraining) && v.Addr[d.Node] != ""
}

// Target reports whether disk can take a rebuilt shard: it is up (not
// draining), usable, and not avoided.
func (v *View) Target(disk cairn.DiskID) bool {
	return v.Disks[disk].State.Writable() && v.Usable(disk) && !v.Avoid[disk]
}

// addrOf is the address of disk's node.
func (v *View) addrOf(disk cairn.DiskID) string { return v.Addr[v.Disks[disk].Node] }

// LostDisk reports whether shards on a disk in state s are gone (to be
// rebuilt), as opposed to temporarily unreachable (suspect): down or out
// (cairn.DiskState.Lost).
func LostDisk(s cairn.DiskState) bool { return s.Lost() }

// Moving reports whether shards on a disk in state s are to be moved off
// it while it still serves them: draining.
func Moving(s cairn.DiskState) bool { return s == cairn.DiskDraining }
