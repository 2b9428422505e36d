package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"cairn"
	"cairn/director"
	"cairn/internal/cmdline"
)

func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin", "Inspect and operate the cluster.", []cmdline.Command{
		{Name: "status", Summary: "nodes, disks and their states, placement groups, capacity", Run: runAdminStatus},
		{Name: "repair", Summary: "the repair queue and repair-time predictions", Run: runAdminRepair},
		{Name: "du", Summary: "stored and logical bytes per bucket, code, node and disk", Run: runAdminDu},
	}, args, stdout, stderr)
}

// Status is what `cairn admin status --json` prints.
type Status struct {
	Director string         `json:"director,omitempty"`
	Nodes    []NodeStatus   `json:"nodes"`
	Disks    []cairn.Disk   `json:"disks"`
	PGTables []PGStatus     `json:"pg_tables"`
	Capacity int64          `json:"capacity"`
	Free     int64          `json:"free"`
	Buckets  int            `json:"buckets"`
	Warnings []string       `json:"warnings,omitempty"`
	Repair   string         `json:"repair"` // one line: the repair queue and its ETA
	States   map[string]int `json:"disk_states"`
	Usage    *StatusUsage   `json:"usage,omitempty"` // du.go
}

// NodeStatus is one node in Status.
type NodeStatus struct {
	cairn.Node
	Alive bool `json:"alive"`
	Disks int  `json:"disks"`
}

// PGStatus summarizes one placement-group table.
type PGStatus struct {
	Width         int  `json:"width"`
	PGs           int  `json:"pgs"`
	DistinctNodes bool `json:"distinct_nodes"`
}

func runAdminStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	cmdline.Usage(fs, "cairn admin status [--json]", "Shows the cluster: nodes (alive or not), disks and their states, capacity,\nplacement-group tables, and warnings such as \"cannot survive a node loss\".")
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		st, err := clusterStatus(ctx, cl)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		}
		printStatus(stdout, st)
		return nil
	})
}

func clusterStatus(ctx context.Context, cl *cluster) (*Status, error) {
	nodes, err := cl.meta.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	disks, err := cl.meta.Disks(ctx)
	if err != nil {
		return nil, err
	}
	alive, err := cl.meta.Alive(ctx)
	if err != nil {
		return nil, err
	}
	buckets, err := cl.meta.Buckets(ctx)
	if err != nil {
		return nil, err
	}
	st := &Status{Disks: disks, Buckets: len(buckets), States: map[string]int{}}
	if id, err := cl.meta.Leader(ctx, director.Role); err == nil {
		st.Director = id
	}
	st.Repair = "nothing to repair"
	if ts, err := cl.meta.RepairTasks(ctx); err == nil && len(ts) > 0 {
		var bytes int64
		for _, t := range ts {
			bytes += t.Bytes
		}
		st.Repair = fmt.Sprintf("%d stripes with lost shards, %s to rebuild", len(ts), fmtBytes(bytes))
		if p, err := cl.meta.RepairProgress(ctx); err == nil {
			if eta := repairETA(bytes, p, time.Now()); eta != "" {
				st.Repair += ", ETA " + eta
			}
		}
		st.Repair += " (cairn admin repair status)"
	}
	per := map[cairn.NodeID]int{}
	for _, d := range disks {
		per[d.Node]++
		st.States[string(d.State)]++
		if d.State.Readable() {
			st.Capacity += d.Capacity
			st.Free += d.Free
		}
	}
	for _, n := range nodes {
		ns := NodeStatus{Node: n, Alive: slices.Contains(alive, string(n.ID)), Disks: per[n.ID]}
		st.Nodes = append(st.Nodes, ns)
		if !ns.Alive {
			st.Warnings = append(st.Warnings, fmt.Sprintf("node %s is not alive (no liveness lease)", n.ID))
		}
	}
	for w := 1; w <= 64; w++ { // tables exist only for the widths of policies in use
		t, err := cl.meta.PGTable(ctx, w)
		if err != nil {
			continue
		}
		st.PGTables = append(st.PGTables, PGStatus{Width: t.Width, PGs: len(t.PGs), DistinctNodes: t.DistinctNodes})
		if !t.DistinctNodes {
			st.Warnings = append(st.Warnings, fmt.Sprintf("placement groups of width %d share nodes: the cluster cannot survive a node loss (only disk losses) for policies with %d shards", w, w))
		}
	}
	if len(nodes) == 1 {
		st.Warnings = append(st.Warnings, "single node: the cluster cannot survive a node loss")
	}
	if st.Usage, err = statusUsage(ctx, cl); err != nil {
		return nil, err
	}
	for _, d := range disks {
		if d.State != cairn.DiskUp {
			st.Warnings = append(st.Warnings, fmt.Sprintf("disk %s is %s since %s", d.ID, d.State, d.Since.Format("2006-01-02 15:04:05")))
		}
	}
	return st, nil
}

func printStatus(w io.Writer, st *Status) {
	fmt.Fprintf(w, "director: %s\ncapacity: %s, %s free; %d buckets\nrepair: %s\n\n", orNone(st.Director),
		fmtBytes(st.Capacity), fmtBytes(st.Free), st.Buckets, st.Repair)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDR\tALIVE\tDISKS")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\n", n.ID, n.Addr, n.Alive, n.Disks)
	}
	fmt.Fprintln(tw, "\nDISK\tNODE\tSTATE\tCAPACITY\tFREE\tPATH")
	for _, d := range st.Disks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Node, d.State, fmtBytes(d.Capacity), fmtBytes(d.Free), d.Path)
	}
	tw.Flush()
	if len(st.PGTables) > 0 {
		fmt.Fprintln(w, "\nplacement groups:")
		for _, t := range st.PGTables {
			fmt.Fprintf(w, "  width %d: %d PGs, distinct nodes: %v\n", t.Width, t.PGs, t.DistinctNodes)
		}
	}
	printStatusUsage(w, st.Usage)
	if len(st.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, s := range st.Warnings {
			fmt.Fprintln(w, "  -", s)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}
