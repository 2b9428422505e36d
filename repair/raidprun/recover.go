package raidprun

import (
	"context"
	"errors"
	"slices"

	"cairn"
	"cairn/raidp"
)

// Node reaches disks' RAIDP slots and Lstors over the node protocol
// (*node.Client has it).
type Node interface {
	ReadRAIDP(ctx context.Context, disk cairn.DiskID, slot int, p []byte, off int64) error
	ReadLstor(ctx context.Context, disk cairn.DiskID, p []byte, off int64) error
	WriteRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off int64, p []byte) error
	ZeroRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off, n int64) error
}

// Remote is a group disk on a node: a Disk over the node protocol. Its
// ReadAt and Parity run under ctx (the executor's Disk has none), and
// every call moves at most one chunk, so Config.Chunk must be at most the
// protocol's wire.MaxRAIDPCall (the default, 1 MiB, is).
func Remote(ctx context.Context, n Node, disk cairn.DiskID) Disk {
	return remote{ctx: ctx, n: n, d: disk}
}

type remote struct {
	ctx context.Context
	n   Node
	d   cairn.DiskID
}

func (r remote) ReadAt(slot int, p []byte, off int64) error {
	return r.n.ReadRAIDP(r.ctx, r.d, slot, p, off)
}

func (r remote) Parity(p []byte, off int64) error { return r.n.ReadLstor(r.ctx, r.d, p, off) }

func (r remote) Write(ctx context.Context, slot int, off int64, p []byte) error {
	return r.n.WriteRAIDP(ctx, r.d, slot, off, p)
}

func (r remote) Zero(ctx context.Context, slot int, off, n int64) error {
	return r.n.ZeroRAIDP(ctx, r.d, slot, off, n)
}

// ErrNothing: Recover was given no failed disk (or only disks already
// out).
var ErrNothing = errors.New("raidprun: no failed disk to recover")

// Recover recovers group g from the loss of one or two of its disks
// (layout indexes) without storing its plan: raidp.PlanRecovery (one
// disk by a re-mirroring, two by the dual plan: the superchunk they
// shared rebuilt from the Lstors that answer, then both re-mirrored) run
// by Resume. It returns the group to store by compare-and-swap against g
// (g.Recovered). disks holds the group's live disks (and the failed ones
// whose Lstor may still be read, for a dual rebuild); lstorOK says, per
// failed disk, whether its Lstor can be read. Writes must be kept off
// every superchunk of the failed disks while it runs. Run again after an
// interruption it plans afresh, and the receivers may differ: a cluster
// stores the plan and resumes it instead (client.RecoverRAIDP).
func Recover(ctx context.Context, g raidp.Group, failed []int, lstorOK map[int]bool, disks map[int]Disk, cfg Config) (raidp.Group, error) {
	if len(slices.DeleteFunc(slices.Clone(failed), func(d int) bool { return slices.Contains(g.Out, d) })) == 0 {
		return raidp.Group{}, ErrNothing
	}
	plan, err := raidp.PlanRecovery(g, failed, lstorOK, nil)
	if err != nil {
		return raidp.Group{}, err
	}
	if err := Resume(ctx, plan, disks, cfg, func(int) error { return nil }); err != nil {
		return raidp.Group{}, err
	}
	return g.Recovered(plan.After, plan.Failed...)
}
