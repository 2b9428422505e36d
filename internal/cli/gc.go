package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"cairn"
	"cairn/internal/cmdline"
)

func runAdminGC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin gc",
		`Orphan collection: each disk's scrub pass removes the shard files that no committed
manifest or upload names, once older than the node's --gc-grace
(docs/design/scrub.md, "Orphans"). start and pause are scrub's.`, []cmdline.Command{
			{Name: "status", Summary: "orphan shard files found and removed, per disk", Run: runGCStatus},
			{Name: "start", Summary: "start a new scrub pass (and so a collection) on every disk now", Run: runScrubStart},
			{Name: "pause", Summary: "pause scrubbing (and so collection) on every node", Run: runScrubPause},
		}, args, stdout, stderr)
}

// GCStatus is what `cairn admin gc status --json` prints.
type GCStatus struct {
	Paused bool     `json:"paused"`
	Disks  []GCDisk `json:"disks"`
	// Orphans adds up the disks' last full passes' orphans, Collected
	// the files removed.
	Orphans   int64 `json:"orphans"`
	Collected int64 `json:"collected"`
}

// GCDisk is one disk's line of GCStatus (from its scrub progress).
type GCDisk struct {
	Disk        cairn.DiskID `json:"disk"`
	Updated     time.Time    `json:"updated"`
	Scrubbing   bool         `json:"scrubbing"`    // a pass is in progress
	PassOrphans int64        `json:"pass_orphans"` // found by the pass in progress
	LastPass    time.Time    `json:"last_pass"`    // zero: never
	LastOrphans int64        `json:"last_orphans"` // found by the last full pass (removed or within the grace period)
	Collected   int64        `json:"collected"`    // removed, all passes of this volume
}

func runGCStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin gc status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	cmdline.Usage(fs, "cairn admin gc status [--json]",
		`Shows, for every disk, the orphan shard files (recording an identity that no
committed manifest or upload names on that disk) its scrub passes found and
removed. An orphan younger than the node's --gc-grace is counted, not removed:
the next pass removes it. Files written before shard identities (format 1)
are never collected.`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		ctl, ps, disks, err := scrubState(ctx, cl)
		if err != nil {
			return err
		}
		st := gcStatus(ctl, disks, ps)
		if *asJSON {
			return printJSON(stdout, st)
		}
		printGCStatus(stdout, st, time.Now())
		return nil
	})
}

// gcStatus gathers the orphan counts of every disk's scrub progress.
func gcStatus(ctl cairn.ScrubControl, disks []cairn.Disk, ps []cairn.ScrubProgress) GCStatus {
	byDisk := map[cairn.DiskID]cairn.ScrubProgress{}
	for _, p := range ps {
		byDisk[p.Disk] = p
	}
	st := GCStatus{Paused: ctl.Paused}
	for _, d := range disks {
		p := byDisk[d.ID]
		st.Disks = append(st.Disks, GCDisk{Disk: d.ID, Updated: p.Updated, Scrubbing: !p.PassStarted.IsZero(),
			PassOrphans: p.PassOrphans, LastPass: p.LastPass, LastOrphans: p.LastOrphans, Collected: p.Collected})
		st.Orphans += p.LastOrphans
		st.Collected += p.Collected
	}
	return st
}

func printGCStatus(w io.Writer, st GCStatus, now time.Time) {
	state := "running (with scrub)"
	if st.Paused {
		state = "paused with scrub ('cairn admin gc start' resumes it)"
	}
	fmt.Fprintf(w, "orphan collection: %s\n", state)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DISK\tTHIS PASS\tLAST FULL PASS\tORPHANS THEN\tREMOVED IN ALL")
	for _, d := range st.Disks {
		pass := "-"
		switch {
		case d.Updated.IsZero():
			pass = "never reported"
		case d.Scrubbing:
			pass = fmt.Sprintf("%d orphans so far", d.PassOrphans)
		}
		last, then := "never", "-"
		if !d.LastPass.IsZero() {
			last = fmt.Sprintf("%s (%s ago)", d.LastPass.Format(time.RFC3339), now.Sub(d.LastPass).Round(time.Second))
			then = fmt.Sprint(d.LastOrphans)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", d.Disk, pass, last, then, d.Collected)
	}
	tw.Flush()
	fmt.Fprintf(w, "orphans: %d found by the last full passes, %d removed\n", st.Orphans, st.Collected)
}
