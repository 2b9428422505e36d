package director

import (
	"fmt"
	"strings"

	"cairn"
)

// NodeOp is an operator's command on a whole node (cairn admin node): the
// disk commands of Operate applied to each of its disks.
type NodeOp string

// The operator's node commands.
const (
	// NodeDrain drains every up disk of the node (OpDrain): read, not
	// written, its shards moved off; each disk goes out once empty.
	NodeDrain NodeOp = "drain"
	// NodeRemove takes every disk of the node out (OpOut). The caller
	// first checks that no shard is left on them (or that the operator
	// forces it and every stripe can be rebuilt without them).
	NodeRemove NodeOp = "remove"
	// NodeReadmit brings the node's draining and out disks back into
	// service (OpIn).
	NodeReadmit NodeOp = "readmit"
)

// Node states, derived from its disks' states (NodeState).
const (
	NodeUp       = "up"       // every disk up
	NodeDraining = "draining" // some disk draining
	NodeRemoved  = "removed"  // every disk out
	NodeDegraded = "degraded" // some disk suspect, down or out, none draining
	NodeEmpty    = "no disks" // no disk registered
)

// NodeState names a node's state from the states of its disks: removed
// once every disk is out, draining while any drains, up when all are up,
// degraded otherwise.
func NodeState(disks []cairn.Disk) string {
	if len(disks) == 0 {
		return NodeEmpty
	}
	up, out := 0, 0
	for _, d := range disks {
		switch d.State {
		case cairn.DiskDraining:
			return NodeDraining
		case cairn.DiskUp:
			up++
		case cairn.DiskOut:
			out++
		}
	}
	switch {
	case out == len(disks):
		return NodeRemoved
	case up == len(disks):
		return NodeUp
	}
	return NodeDegraded
}

// OperateNode decides the transitions of op on node, whose disks are
// disks (the node's only; alive: it has a liveness lease). rate is the
// drain's MoveRate in bytes per second (0: the director's default); only
// drain takes one. It returns the transitions to apply, one per disk the
// command changes, and what it leaves alone and why (skipped, one line
// per disk). Errors wrap cairn.ErrInvalid and say why the command does
// not apply to any disk of the node.
//
//   - drain: every up disk → draining; draining and out disks are left
//     as they are; a suspect or down disk is left to repair (its shards
//     are rebuilt if it stays down). Refused if no disk is up.
//   - remove: every disk not out yet → out; none if every disk is out
//     (a drained node: removed already).
//   - readmit: every draining or out disk → Operate(OpIn); up disks are
//     left alone, suspect and down ones return by themselves. Refused if
//     no disk is draining or out, or if every one of them refuses (the
//     error says why).
func OperateNode(op NodeOp, node cairn.NodeID, disks []cairn.Disk, alive bool, rate int64) ([]Transition, []string, error) {
	if rate < 0 {
		return nil, nil, fmt.Errorf("%w: negative move rate %d B/s", cairn.ErrInvalid, rate)
	}
	if rate != 0 && op != NodeDrain {
		return nil, nil, fmt.Errorf("%w: only drain takes a move rate", cairn.ErrInvalid)
	}
	if len(disks) == 0 {
		return nil, nil, fmt.Errorf("%w: node %s has no disk in the cluster map", cairn.ErrInvalid, node)
	}
	var trs []Transition
	var skipped, refused []string
	for _, d := range disks {
		if d.Node != node {
			return nil, nil, fmt.Errorf("%w: disk %s is on node %s, not %s", cairn.ErrInvalid, d.ID, d.Node, node)
		}
		var dop Op
		switch op {
		case NodeDrain:
			if d.State != cairn.DiskUp {
				skipped = append(skipped, fmt.Sprintf("disk %s is %s: %s", d.ID, d.State, drainSkip(d.State)))
				continue
			}
			dop = OpDrain
		case NodeRemove:
			if d.State == cairn.DiskOut {
				skipped = append(skipped, fmt.Sprintf("disk %s is out already", d.ID))
				continue
			}
			dop = OpOut
		case NodeReadmit:
			if d.State != cairn.DiskDraining && d.State != cairn.DiskOut {
				skipped = append(skipped, fmt.Sprintf("disk %s is %s: %s", d.ID, d.State, readmitSkip(d.State)))
				continue
			}
			dop = OpIn
		default:
			return nil, nil, fmt.Errorf("%w: unknown node command %q (want drain, remove or readmit)", cairn.ErrInvalid, op)
		}
		tr, err := Operate(dop, d, alive)
		if err != nil {
			refused = append(refused, strings.TrimPrefix(err.Error(), cairn.ErrInvalid.Error()+": "))
			continue
		}
		if op == NodeDrain {
			tr.Why = fmt.Sprintf("node %s drained by the operator: its shards are moved off", node)
			tr.MoveRate = rate
		}
		if op == NodeRemove {
			tr.Why = fmt.Sprintf("node %s removed by the operator", node)
		}
		trs = append(trs, tr)
	}
	skipped = append(skipped, refused...)
	if len(trs) == 0 && op == NodeRemove && len(refused) == 0 {
		return nil, skipped, nil // every disk is out: removed already (e.g. by its drain)
	}
	if len(trs) == 0 {
		return nil, nil, fmt.Errorf("%w: node %s: nothing to %s: %s", cairn.ErrInvalid, node, op, strings.Join(skipped, "; "))
	}
	return trs, skipped, nil
}

func drainSkip(s cairn.DiskState) string {
	switch s {
	case cairn.DiskDraining:
		return "draining already"
	case cairn.DiskOut:
		return "out: nothing to drain"
	}
	return "not readable to move shards from; repair rebuilds its shards elsewhere if it stays down"
}

func readmitSkip(s cairn.DiskState) string {
	if s == cairn.DiskUp {
		return "in service already"
	}
	return "it returns to up by itself once its node is alive and checked"
}
