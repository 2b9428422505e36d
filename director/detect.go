package director

import (
	"fmt"
	"time"

	"cairn"
)

// Transition is one change of a disk's life-cycle fields that Detect or
// Operate decided: its state (To may equal From when only the reason or
// the trusted volume changes), the reason, and the volume the disk is
// trusted with from now on.
type Transition struct {
	Disk     cairn.DiskID
	From, To cairn.DiskState
	Why      string
	Trust    string // if not empty: the disk's new trusted volume (cairn.Disk.Trusted)
	Volume   string // the volume the node reported when it was decided
	MoveRate int64  // to draining: the drain's rate in bytes per second (cairn.Disk.MoveRate); 0 the default
}

// Change returns the compare-and-swap that applies tr at time now: from
// tr.From and while the node reports tr.Volume, with a new Since only when
// the state changes.
func (tr Transition) Change(now time.Time) cairn.DiskChange {
	c := cairn.DiskChange{From: tr.From, To: tr.To, Reason: tr.Why, Trust: tr.Trust, IfVolume: tr.Volume, MoveRate: tr.MoveRate}
	if tr.From != tr.To {
		c.Since = now
	}
	return c
}

// Census is what the last complete walk of the manifests and multipart
// uploads found: how many shards they place on each disk. The repair scan
// makes it (repair.Repairer.Census).
type Census struct {
	At   time.Time            // when the walk started; zero: no complete walk yet
	Refs map[cairn.DiskID]int // shards per disk; a disk not in it holds none
}

// Input is what Detect decides from.
type Input struct {
	Disks []cairn.Disk
	Alive map[string]bool // node IDs with a liveness lease
	Now   time.Time
	Grace time.Duration // suspect → down after this long
	// LeaseFrom is when a missing liveness lease starts to count: before
	// it, a node without a lease may be one that is starting and has not
	// taken its lease yet (the director has just started leading), so its
	// disks keep their state. Zero: leases count from the start.
	LeaseFrom time.Time
	// Census tells when a down or draining disk holds no shard any more.
	// A walk counts only if it started at least Grace after the disk
	// entered its state, so writes that were under way then have landed.
	Census Census
}

// Detect decides the disk state changes of one detection round, in disk
// order. docs/design/disks.md draws the state diagram; the rules, first
// match per disk:
//
// up, draining:
//   - the node reports a volume other than the trusted one (replaced) → down
//   - the node has no liveness lease, before LeaseFrom → no change
//   - the node has no liveness lease → suspect
//   - the node reports a fault → suspect
//   - draining, and the census finds no shard on it → out
//   - no trusted volume yet (registered before volume IDs) → adopt the
//     reported one, same state
//
// suspect:
//   - replaced → down
//   - the node is alive and reports no fault → up (adopting its volume if
//     none was trusted)
//   - suspect for Grace or longer → down (if the node has no lease: only
//     from LeaseFrom on)
//
// down:
//   - the node does not report a volume ID (an older node) → stays down
//   - replaced, or no trusted volume: once the node is ready (alive, no
//     fault, check passed) and the census finds no shard on the disk → up,
//     trusting the new volume (empty); until then the reason says why it
//     waits
//   - the trusted volume, node ready → up (returned intact)
//   - the trusted volume, alive, no fault, check failed → stays down, the
//     reason says what the check found
//
// out: only the operator (Operate) changes it.
func Detect(in Input) []Transition {
	var out []Transition
	for _, d := range in.Disks {
		if tr, ok := detect(d, in); ok && (tr.To != tr.From || tr.Why != d.Reason || tr.Trust != "") {
			out = append(out, tr)
		}
	}
	return out
}

func detect(d cairn.Disk, in Input) (Transition, bool) {
	live := in.Alive[string(d.Node)]
	leaseCounts := !in.Now.Before(in.LeaseFrom)
	ready := live && d.Fault == "" && d.Check == cairn.CheckOK
	empty := !in.Census.At.IsZero() && !in.Census.At.Before(d.Since.Add(in.Grace)) && in.Census.Refs[d.ID] == 0
	to := func(s cairn.DiskState, why string) (Transition, bool) {
		return Transition{Disk: d.ID, From: d.State, To: s, Why: why, Volume: d.Volume}, true
	}
	switch d.State {
	case cairn.DiskUp, cairn.DiskDraining:
		switch {
		case d.Replaced():
			return to(cairn.DiskDown, replacedWhy(d))
		case !live && !leaseCounts:
			return Transition{}, false
		case !live:
			return to(cairn.DiskSuspect, leaseWhy(d))
		case d.Fault != "":
			return to(cairn.DiskSuspect, faultWhy(d))
		case d.State == cairn.DiskDraining && empty:
			return to(cairn.DiskOut, "drained: no shard is left on it")
		case d.Trusted == "" && d.Volume != "":
			tr, _ := to(d.State, "adopted volume "+short(d.Volume))
			tr.Trust = d.Volume
			return tr, true
		}
	case cairn.DiskSuspect:
		switch {
		case d.Replaced():
			return to(cairn.DiskDown, replacedWhy(d))
		case live && d.Fault == "":
			tr, _ := to(cairn.DiskUp, "node "+string(d.Node)+" is alive again")
			if d.Trusted == "" {
				tr.Trust = d.Volume
			}
			return tr, true
		case in.Now.Sub(d.Since) >= in.Grace && (live || leaseCounts):
			return to(cairn.DiskDown, "suspect for longer than "+in.Grace.String()+" ("+suspectWhy(d, live)+")")
		}
	case cairn.DiskDown:
		switch {
		case d.Volume == "":
			// An older node: no way to tell a returned volume from a new one.
		case d.Replaced() || d.Trusted == "":
			if ready && empty {
				tr, _ := to(cairn.DiskUp, "new volume "+short(d.Volume)+" in service, empty: no shard is left on "+trustedName(d))
				tr.Trust = d.Volume
				return tr, true
			}
			return to(cairn.DiskDown, replacedWhy(d))
		case ready:
			return to(cairn.DiskUp, "returned intact: volume "+short(d.Volume)+" passed its check")
		case live && d.Fault == "" && d.Check != "":
			return to(cairn.DiskDown, "returned, but its "+d.Check)
		}
	}
	return Transition{}, false
}

func leaseWhy(d cairn.Disk) string { return "node " + string(d.Node) + " missed its liveness lease" }

func faultWhy(d cairn.Disk) string { return "node " + string(d.Node) + " reports: " + d.Fault }

// suspectWhy is why a suspect disk is still suspect.
func suspectWhy(d cairn.Disk, live bool) string {
	if !live {
		return leaseWhy(d)
	}
	return faultWhy(d)
}

// replacedWhy is the reason of a disk whose node reports a volume the
// cluster does not trust.
func replacedWhy(d cairn.Disk) string {
	return fmt.Sprintf("replaced: node %s has a new volume %s; the shards on %s are rebuilt elsewhere, then it returns empty",
		d.Node, short(d.Volume), trustedName(d))
}

func trustedName(d cairn.Disk) string {
	if d.Trusted == "" {
		return "the volume it had before volume IDs"
	}
	return "volume " + short(d.Trusted)
}

// short is a volume ID's first 8 digits, as reasons show it.
func short(id string) string { return id[:min(len(id), 8)] }
