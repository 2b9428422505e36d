package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"cairn"
	"cairn/codec/all"
	"cairn/internal/cmdline"
)

const duHelp = `Shows how much the cluster stores: per bucket and per code the objects,
their logical bytes (what clients wrote) and stored bytes (their shard files
on disk, block checksums and footers included), and per node the shard files
and their bytes; with a BUCKET, only that bucket.

The numbers are counters the metadata store moves in the same transaction as
every commit, overwrite, delete, multipart upload and repair, so they are
exact and cost no scan. STORED/LOGICAL is the real expansion: for a code it
should be close to EXPANSION (its N/K); it is higher when objects are small
(checksums, 32-byte footers and alignment weigh more). Objects of at most
16 KiB are stored as copies that survive as many lost disks as their policy
(rs-4-2: rep-3), and count under that code. Per node and per disk the counts
include parts of multipart uploads in progress. Shard files that no manifest
names (left by crashed writes, not yet collected) are not counted: a scan of
a disk that finds more than its counter has found garbage.`

// DuReport is what `cairn admin du --json` prints (without a bucket).
type DuReport struct {
	Buckets []BucketDu  `json:"buckets"` // by name
	Total   cairn.Tally `json:"total"`   // of the buckets
	Codes   []CodeDu    `json:"codes"`   // by code
	Nodes   []NodeDu    `json:"nodes"`   // by node
	Disks   []DiskDu    `json:"disks,omitempty"`
}

// BucketDu is one bucket's usage.
type BucketDu struct {
	Bucket string `json:"bucket"`
	cairn.Tally
}

// CodeDu is the usage of one code: objects whose shards it stores.
type CodeDu struct {
	Code string `json:"code"`
	cairn.Tally
	Expansion float64 `json:"expansion,omitempty"` // N/K of the code (0 if unknown)
}

// NodeDu is the shard files on one node's disks.
type NodeDu struct {
	Node cairn.NodeID `json:"node"`
	cairn.DiskTally
}

// DiskDu is the shard files on one disk.
type DiskDu struct {
	Disk cairn.DiskID `json:"disk"`
	Node cairn.NodeID `json:"node"`
	cairn.DiskTally
}

func runAdminDu(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin du", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	disks := fs.Bool("disks", false, "also list every disk")
	cmdline.Usage(fs, "cairn admin du [--json] [--disks] [BUCKET]", duHelp)
	return withClusterArgs(ctx, fs, args, stdout, stderr, 0, 1, func(ctx context.Context, cl *cluster, args []string) error {
		if len(args) == 1 {
			name := args[0]
			if err := cairn.ValidateBucketName(name); err != nil {
				return fmt.Errorf("%w: %w", ErrUsage, err)
			}
			t, err := cl.meta.BucketUsage(ctx, name)
			if errors.Is(err, cairn.ErrNotFound) {
				return fmt.Errorf("bucket %q does not exist (cairn ls lists the buckets): %w", name, err)
			}
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(stdout, BucketDu{Bucket: name, Tally: t})
			}
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "BUCKET\tOBJECTS\tLOGICAL\tSTORED\tSTORED/LOGICAL")
			printTally(tw, name, t)
			return tw.Flush()
		}
		u, err := cl.meta.Usage(ctx)
		if err != nil {
			return err
		}
		buckets, err := cl.meta.Buckets(ctx)
		if err != nil {
			return err
		}
		dks, err := cl.meta.Disks(ctx)
		if err != nil {
			return err
		}
		r := duReport(u, buckets, dks, *disks)
		if *asJSON {
			return printJSON(stdout, r)
		}
		printDu(stdout, r)
		return nil
	})
}

// duReport arranges the usage counters: every bucket (those that exist,
// and any other with objects counted), every code with its expansion,
// every node's disks summed (a disk missing from the cluster map under
// node "?"), and with withDisks every disk.
func duReport(u cairn.Usage, buckets []cairn.Bucket, disks []cairn.Disk, withDisks bool) *DuReport {
	r := &DuReport{Buckets: []BucketDu{}, Codes: []CodeDu{}, Nodes: []NodeDu{}}
	seen := map[string]bool{}
	for _, b := range buckets {
		seen[b.Name] = true
		r.Buckets = append(r.Buckets, BucketDu{Bucket: b.Name, Tally: u.Buckets[b.Name]})
	}
	for name, t := range u.Buckets {
		if !seen[name] && t != (cairn.Tally{}) {
			r.Buckets = append(r.Buckets, BucketDu{Bucket: name, Tally: t})
		}
	}
	slices.SortFunc(r.Buckets, func(a, b BucketDu) int { return cmp.Compare(a.Bucket, b.Bucket) })
	for _, b := range r.Buckets {
		r.Total = r.Total.Add(b.Tally)
	}
	r.Codes = codeUsage(u)
	nodeOf := map[cairn.DiskID]cairn.NodeID{}
	for _, d := range disks {
		nodeOf[d.ID] = d.Node
	}
	perNode := map[cairn.NodeID]cairn.DiskTally{}
	for id, t := range u.Disks {
		n, ok := nodeOf[id]
		if !ok {
			n = "?"
		}
		perNode[n] = perNode[n].Add(t)
		if withDisks {
			r.Disks = append(r.Disks, DiskDu{Disk: id, Node: n, DiskTally: t})
		}
	}
	if withDisks {
		for _, d := range disks { // disks with nothing on them too
			if _, ok := u.Disks[d.ID]; !ok {
				r.Disks = append(r.Disks, DiskDu{Disk: d.ID, Node: d.Node})
			}
		}
		slices.SortFunc(r.Disks, func(a, b DiskDu) int { return cmp.Compare(a.Disk, b.Disk) })
	}
	for _, d := range disks {
		if _, ok := perNode[d.Node]; !ok {
			perNode[d.Node] = cairn.DiskTally{}
		}
	}
	for n, t := range perNode {
		r.Nodes = append(r.Nodes, NodeDu{Node: n, DiskTally: t})
	}
	slices.SortFunc(r.Nodes, func(a, b NodeDu) int { return cmp.Compare(a.Node, b.Node) })
	return r
}

// codeUsage lists the codes with objects counted, by name, with their
// expansion N/K.
func codeUsage(u cairn.Usage) []CodeDu {
	out := []CodeDu{}
	for code, t := range u.Codes {
		c := CodeDu{Code: code, Tally: t}
		if cd, err := all.New(code); err == nil {
			p := cd.Params()
			c.Expansion = float64(p.N()) / float64(p.K)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b CodeDu) int { return cmp.Compare(a.Code, b.Code) })
	return out
}

func printDu(w io.Writer, r *DuReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUCKET\tOBJECTS\tLOGICAL\tSTORED\tSTORED/LOGICAL")
	for _, b := range r.Buckets {
		printTally(tw, b.Bucket, b.Tally)
	}
	printTally(tw, "(all buckets)", r.Total)
	fmt.Fprintln(tw, "\nCODE\tOBJECTS\tLOGICAL\tSTORED\tSTORED/LOGICAL\tEXPANSION")
	for _, c := range r.Codes {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", c.Code, c.Objects, humanBytes(c.Logical), humanBytes(c.Stored), ratio(c.Tally), expansion(c.Expansion))
	}
	fmt.Fprintln(tw, "\nNODE\tFILES\tSTORED")
	for _, n := range r.Nodes {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", n.Node, n.Files, humanBytes(n.Bytes))
	}
	if len(r.Disks) > 0 {
		fmt.Fprintln(tw, "\nDISK\tNODE\tFILES\tSTORED")
		for _, d := range r.Disks {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", d.Disk, d.Node, d.Files, humanBytes(d.Bytes))
		}
	}
	tw.Flush()
}

func printTally(tw io.Writer, name string, t cairn.Tally) {
	fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", name, t.Objects, humanBytes(t.Logical), humanBytes(t.Stored), ratio(t))
}

func ratio(t cairn.Tally) string {
	if t.Logical <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", t.Ratio())
}

func expansion(e float64) string {
	if e == 0 {
		return "?"
	}
	return fmt.Sprintf("%.3f", e)
}

// humanBytes prints n in the largest binary unit it reaches, with one
// decimal (bytes exactly).
func humanBytes(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n || -n >= u.n {
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.n), u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// StatusUsage is the usage section of `cairn admin status`: every
// bucket's objects together, and per code its stored ÷ logical ratio next
// to its expansion, so that drift shows.
type StatusUsage struct {
	Total cairn.Tally `json:"total"`
	Codes []CodeDu    `json:"codes"`
}

// statusUsage reads the usage section of admin status.
func statusUsage(ctx context.Context, cl *cluster) (*StatusUsage, error) {
	u, err := cl.meta.Usage(ctx)
	if err != nil {
		return nil, err
	}
	su := &StatusUsage{Codes: codeUsage(u)}
	for _, t := range u.Buckets {
		su.Total = su.Total.Add(t)
	}
	return su, nil
}

func printStatusUsage(w io.Writer, su *StatusUsage) {
	if su == nil {
		return
	}
	fmt.Fprintf(w, "\nusage: %d objects, %s logical, %s stored (cairn admin du)\n", su.Total.Objects,
		humanBytes(su.Total.Logical), humanBytes(su.Total.Stored))
	for _, c := range su.Codes {
		fmt.Fprintf(w, "  %s: %d objects, stored/logical %s (expansion %s)\n", c.Code, c.Objects, ratio(c.Tally), expansion(c.Expansion))
	}
}
