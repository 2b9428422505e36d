package cli

// cairn admin node drain|remove|readmit: the operator's side of a node's
// membership (docs/design/rebalance.md). A node's state is its disks'
// (director.NodeState); director.OperateNode decides which disks a
// command changes, and each change is the same compare-and-swap on the
// disk's state as cairn admin disk's.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"cairn"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/internal/units"
	"cairn/repair/decide"
)

func runAdminNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin node", `Drain a node, remove it from the cluster, or readmit it.

A node's state follows its disks' ('cairn admin status'): up when every
disk is up, draining while any drains, removed once every disk is out,
degraded otherwise. To retire a node: drain it (its shards move to the
other nodes at a bounded rate while S3 keeps serving them), wait until
'cairn admin status' shows it removed, then stop it. A new node needs no
command: once it registers, new objects use it and the rebalancer moves
shards onto it.`, []cmdline.Command{
		{Name: "drain", Summary: "move every shard off a node at a bounded rate; its disks go out when empty", Run: runNodeDrain},
		{Name: "remove", Summary: "take a drained node out of the cluster (--force: before it is empty)", Run: runNodeRemove},
		{Name: "readmit", Summary: "bring a drained or removed node back into service", Run: runNodeReadmit},
	}, args, stdout, stderr)
}

func runNodeDrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin node drain", flag.ContinueOnError)
	rate := fs.String("rate", "", "most bytes per second moved off the node (e.g. 20MiB); default: the director's --move-rate")
	cmdline.Usage(fs, "cairn admin node drain NODE [--rate BYTES/s]", `Drains NODE (e.g. node3, as 'cairn admin status' lists it): every up disk of
it is still read but no longer written, and the director moves its shards
onto the other nodes — each one rebuilt from the other shards of its stripe
onto a disk of a node that holds none of the stripe where the cluster has
one, then recorded in the object's manifest, so every object keeps its full
redundancy throughout and reads keep working. A disk goes out once no
shard is left on it; when all are out the node is removed and can be
stopped.

The moves run at most at --rate bytes per second (all drains together run
at the lowest rate set), after every repair of a stripe that lost
redundancy. 'cairn admin node readmit NODE' stops the drain.`)
	var bps int64
	check := func() (clusterOptions, error) { // before connecting
		if *rate != "" {
			var err error
			if bps, err = units.ParseSize(*rate); err != nil || bps <= 0 {
				return clusterOptions{}, fmt.Errorf("%w: --rate %q: want a positive size per second, e.g. 20MiB", ErrUsage, *rate)
			}
		}
		return clusterOptions{log: logger(stderr, false)}, nil
	}
	return withClusterOpts(ctx, fs, args, stdout, stderr, 1, 1, check, func(ctx context.Context, cl *cluster, args []string) error {
		return nodeCommand(ctx, cl.meta, director.NodeDrain, args[0], bps, false, time.Now(), stdout)
	})
}

func runNodeRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin node remove", flag.ContinueOnError)
	force := fs.Bool("force", false, "take the node's disks out although shards are left on them: they are rebuilt elsewhere from the other shards of their stripes")
	cmdline.Usage(fs, "cairn admin node remove NODE [--force]", `Removes NODE from the cluster: every disk of it is out, so nothing reads or
writes it and new placement groups leave it out. A node whose drain has
finished is removed already.

It refuses while any manifest still places a shard on the node (drain it
first: 'cairn admin node drain NODE'). With --force it takes the disks out
anyway and repair rebuilds their shards elsewhere — meanwhile those stripes
have less redundancy — but it still refuses if some object could not be
rebuilt without the node, and names one.

'cairn admin node readmit NODE' brings it back.`)
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		return nodeCommand(ctx, cl.meta, director.NodeRemove, args[0], 0, *force, time.Now(), stdout)
	})
}

func runNodeReadmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin node readmit", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin node readmit NODE", `Brings NODE back into service: a drain in progress stops (its draining disks
are up again), and its out disks come back as 'cairn admin disk in' brings
them: up if the node is alive and serves the same volumes, checked; a disk
whose directory holds a new volume goes down until repair has rebuilt every
shard the old one held, then up, empty. The shards still on its disks are
read again, and the rebalancer moves shards back onto it over time.`)
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		return nodeCommand(ctx, cl.meta, director.NodeReadmit, args[0], 0, false, time.Now(), stdout)
	})
}

// nodeCommand runs op on node id at time now (rate: a drain's; force: a
// remove's) and says what it did.
func nodeCommand(ctx context.Context, st diskStore, op director.NodeOp, id string, rate int64, force bool, now time.Time, out io.Writer) error {
	nodes, err := st.Nodes(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(nodes, func(n cairn.Node) bool { return string(n.ID) == id }) {
		var ids []string
		for _, n := range nodes {
			ids = append(ids, string(n.ID))
		}
		return fmt.Errorf("%w: no node %q in the cluster map (nodes: %s)", ErrUsage, id, strings.Join(ids, ", "))
	}
	all, err := st.Disks(ctx)
	if err != nil {
		return err
	}
	var mine []cairn.Disk
	for _, d := range all {
		if string(d.Node) == id {
			mine = append(mine, d)
		}
	}
	alive, err := st.Alive(ctx)
	if err != nil {
		return err
	}
	trs, skipped, err := director.OperateNode(op, cairn.NodeID(id), mine, slices.Contains(alive, id), rate)
	if err != nil {
		return err
	}
	var on diskShards
	if op != director.NodeReadmit {
		set := map[cairn.DiskID]bool{}
		for _, d := range mine {
			set[d.ID] = true
		}
		if on, err = shardsOnAny(ctx, st, decide.NewView(nodes, all), set); err != nil {
			return err
		}
	}
	if op == director.NodeRemove && len(trs) > 0 && on.shards+on.coded > 0 {
		switch {
		case on.lost > 0:
			return fmt.Errorf("%w: removing node %s would lose data: %d stripe(s) could not be rebuilt without it, e.g. %s; bring their other disks back first",
				cairn.ErrInvalid, id, on.lost, on.example)
		case !force:
			return fmt.Errorf("%w: node %s still holds %d shard(s) and %d coded block(s); drain it first ('cairn admin node drain %s'), "+
				"or remove it now with --force (its shards are then rebuilt elsewhere, with less redundancy meanwhile)",
				cairn.ErrInvalid, id, on.shards, on.coded, id)
		}
	}
	for _, tr := range trs {
		if _, err := st.ChangeDisk(ctx, tr.Disk, tr.Change(now)); err != nil {
			if errors.Is(err, cairn.ErrConflict) {
				return fmt.Errorf("disk %s changed state meanwhile; look again ('cairn admin status') and repeat the command: %w", tr.Disk, err)
			}
			return err
		}
		fmt.Fprintf(out, "disk %s: %s → %s: %s\n", tr.Disk, tr.From, tr.To, tr.Why)
	}
	for _, s := range skipped {
		fmt.Fprintf(out, "left alone: %s\n", s)
	}
	switch op {
	case director.NodeDrain:
		pace := "the director's --move-rate"
		if rate > 0 {
			pace = units.FormatSize(rate) + "/s"
		}
		fmt.Fprintf(out, "node %s: %d shards are moved off at most at %s, after every stripe that lost redundancy; its disks go out when empty ('cairn admin status')\n",
			id, on.shards, pace)
	case director.NodeRemove:
		if len(trs) == 0 {
			fmt.Fprintf(out, "node %s is removed: every disk of it is out\n", id)
		} else if on.shards > 0 {
			fmt.Fprintf(out, "node %s is removed; %d shards that were on it are rebuilt elsewhere ('cairn admin repair status')\n", id, on.shards)
		} else {
			fmt.Fprintf(out, "node %s is removed\n", id)
		}
	case director.NodeReadmit:
		fmt.Fprintf(out, "node %s is back in service\n", id)
	}
	return nil
}

// rebalanceSummary is the rebalancer's line in cairn admin status: its
// last round (the director reports it with the repair progress).
func rebalanceSummary(ctx context.Context, st interface {
	RepairProgress(ctx context.Context) (cairn.RepairProgress, error)
}, now time.Time) string {
	p, err := st.RepairProgress(ctx)
	if err != nil || p.Rebalance == nil {
		return "no round yet (the director looks every " + rebalanceEvery.String() + " while nothing is to repair)"
	}
	return fmtRebalance(*p.Rebalance, now)
}

// fmtRebalance says what a rebalancer round found and did.
func fmtRebalance(b cairn.RebalanceProgress, now time.Time) string {
	share := 100.0
	if b.Hi > 0 {
		share = 100 * b.Lo / b.Hi
	}
	ago := now.Sub(b.At).Round(time.Second)
	if b.Balanced && b.Queued == 0 {
		return fmt.Sprintf("balanced: the least used disk holds %.0f%% of the most used's bytes (%v ago; %d moves so far)", share, ago, b.Total)
	}
	return fmt.Sprintf("moving: %d shard moves queued %v ago (%d so far); the least used disk holds %.0f%% of the most used's bytes",
		b.Queued, ago, b.Total, share)
}
