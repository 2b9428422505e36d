package director

import (
	"fmt"

	"cairn"
)

// Op is an operator's command on one disk (cairn admin disk).
type Op string

// The operator's commands.
const (
	// OpOut takes a disk out for good: its shards are lost to the
	// cluster and rebuilt elsewhere. The caller first checks that every
	// stripe with a shard on it can be rebuilt without it.
	OpOut Op = "out"
	// OpDrain empties a disk: read, not written, its shards moved off
	// (rebuilt elsewhere) at the repair's pace; out once empty.
	OpDrain Op = "drain"
	// OpIn puts an out or draining disk back into service.
	OpIn Op = "in"
)

// Operate decides the transition of an operator's command on disk d
// (alive: its node has a liveness lease). Errors wrap cairn.ErrInvalid and
// say why the command does not apply to the disk as it is and what would.
//
//   - out: from any state but out → out.
//   - drain: up → draining. A suspect or down disk is refused (its shards
//     are rebuilt anyway, or it is not readable to move them from).
//   - in: draining → up (the drain ends). out → up if the node is ready
//     (alive, no fault, check passed) and reports the trusted volume; out →
//     down, waiting to be empty, if the node is ready with another volume
//     (the disk was replaced while out). A down disk returns by itself:
//     the error says what it waits for.
func Operate(op Op, d cairn.Disk, alive bool) (Transition, error) {
	to := func(s cairn.DiskState, why string) (Transition, error) {
		return Transition{Disk: d.ID, From: d.State, To: s, Why: why, Volume: d.Volume}, nil
	}
	refuse := func(format string, args ...any) (Transition, error) {
		return Transition{}, fmt.Errorf("%w: disk %s is %s: %s", cairn.ErrInvalid, d.ID, d.State, fmt.Sprintf(format, args...))
	}
	switch op {
	case OpOut:
		if d.State == cairn.DiskOut {
			return refuse("already out")
		}
		return to(cairn.DiskOut, "taken out by the operator")
	case OpDrain:
		switch d.State {
		case cairn.DiskUp:
			return to(cairn.DiskDraining, "drained by the operator: its shards are moved off")
		case cairn.DiskDraining:
			return refuse("already draining")
		case cairn.DiskOut:
			return refuse("out: nothing to drain ('cairn admin disk in' brings it back first)")
		default:
			return refuse("not readable to move shards from; its shards are rebuilt elsewhere if it stays down ('cairn admin disk out' gives it up now)")
		}
	case OpIn:
		switch d.State {
		case cairn.DiskDraining:
			return to(cairn.DiskUp, "drain ended by the operator")
		case cairn.DiskUp:
			return refuse("already in service")
		case cairn.DiskSuspect:
			return refuse("it returns to up by itself once %s", orNextRound(waitingFor(d, alive, false)))
		case cairn.DiskDown:
			if d.Replaced() || d.Trusted == "" && d.Volume != "" {
				return refuse("it holds a new volume and returns, empty, by itself once no shard is left on its old one (repair rebuilds them elsewhere; 'cairn admin repair status')")
			}
			return refuse("it returns by itself once %s", orNextRound(waitingFor(d, alive, true)))
		case cairn.DiskOut:
			if w := waitingFor(d, alive, true); w != "" {
				return refuse("it can come back only once %s", w)
			}
			if d.Replaced() || d.Trusted == "" {
				tr, _ := to(cairn.DiskDown, replacedWhy(d))
				return tr, nil
			}
			return to(cairn.DiskUp, "back in service by the operator: volume "+short(d.Volume)+" passed its check")
		}
		return refuse("unknown state")
	}
	return Transition{}, fmt.Errorf("%w: unknown disk command %q (want out, drain or in)", cairn.ErrInvalid, op)
}

// waitingFor says what keeps a disk from returning: its node's lease, a
// fault, and (check) the volume ID and its check. "" if nothing.
func waitingFor(d cairn.Disk, alive, check bool) string {
	switch {
	case !alive:
		return "its node " + string(d.Node) + " is alive (it has no liveness lease now)"
	case d.Fault != "":
		return "its node reports no fault (now: " + d.Fault + ")"
	case !check:
		return ""
	case d.Volume == "":
		return "its node reports a volume ID (node " + string(d.Node) + " runs an older cairn)"
	case d.Check == "":
		return "the check of its volume has passed (it is running)"
	case d.Check != cairn.CheckOK:
		return "the check of its volume passes (now: " + d.Check + ")"
	}
	return ""
}

func orNextRound(w string) string {
	if w == "" {
		return "the director sees it (its next detection round)"
	}
	return w
}
