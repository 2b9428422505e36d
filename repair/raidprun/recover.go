package raidprun

import (
	"context"
	"errors"
	"fmt"
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

// ErrNothing: Recover was given no failed disk (or only disks already
// out).
var ErrNothing = errors.New("raidprun: no failed disk to recover")

// Recover recovers group g from the loss of one or two of its disks
// (layout indexes): one by a re-mirroring (raidp.Remirror), two by the
// dual plan (raidp.Dual: the superchunk they shared rebuilt from the
// Lstors that answer, then both re-mirrored). It returns the group to
// store by compare-and-swap against g (g.Recovered). disks holds the
// group's live disks (and the failed ones whose Lstor may still be read,
// for a dual rebuild); lstorOK says, per failed disk, whether its Lstor
// can be read. Writes must be kept off every superchunk of the failed
// disks while it runs. Idempotent: run again after an interruption.
func Recover(ctx context.Context, g raidp.Group, failed []int, lstorOK map[int]bool, disks map[int]Disk, cfg Config) (raidp.Group, error) {
	failed = slices.DeleteFunc(slices.Clone(failed), func(d int) bool { return slices.Contains(g.Out, d) })
	slices.Sort(failed)
	failed = slices.Compact(failed)
	var after raidp.Layout
	switch len(failed) {
	case 0:
		return raidp.Group{}, ErrNothing
	case 1:
		plan, err := raidp.Remirror(g.Layout, failed, nil, g.Out...)
		if err != nil {
			return raidp.Group{}, fmt.Errorf("plan re-mirroring disk %d of %s: %w", failed[0], g.Name, err)
		}
		if err := Remirror(ctx, plan, disks, cfg); err != nil {
			return raidp.Group{}, err
		}
		after = plan.After
	case 2:
		a, b := failed[0], failed[1]
		plan, err := raidp.Dual(g.Layout, a, b, g.Size, [2]bool{lstorOK[a], lstorOK[b]}, nil, g.Out...)
		if err != nil {
			return raidp.Group{}, fmt.Errorf("plan the recovery of disks %d and %d of %s: %w", a, b, g.Name, err)
		}
		if err := Dual(ctx, plan, disks, cfg); err != nil {
			return raidp.Group{}, err
		}
		after = plan.After
	default:
		return raidp.Group{}, fmt.Errorf("%w: %d disks of group %s failed; RAIDP survives two", raidp.ErrLost, len(failed), g.Name)
	}
	return g.Recovered(after, failed...)
}
