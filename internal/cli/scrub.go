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

func runAdminScrub(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin scrub", "Scrub: every node verifies every shard of its disks in the background (docs/design/scrub.md).", []cmdline.Command{
		{Name: "status", Summary: "each disk's scrub progress, last full pass and damage found; damage healed", Run: runScrubStatus},
		{Name: "start", Summary: "resume scrubbing and start a new pass on every disk now", Run: runScrubStart},
		{Name: "pause", Summary: "pause scrubbing on every node until 'start'", Run: runScrubPause},
	}, args, stdout, stderr)
}

// ScrubStatus is what `cairn admin scrub status --json` prints.
type ScrubStatus struct {
	Paused  bool                  `json:"paused"`
	Disks   []ScrubDisk           `json:"disks"`
	Pending int                   `json:"pending_damage"`   // damage records not healed yet (up to scrubStatusMaxDamage)
	Queued  int64                 `json:"damage_queued"`    // damaged shards the director queued for repair
	Healed  int64                 `json:"damage_healed"`    // damaged shards healed (since the director started)
	Damage  []cairn.Damage        `json:"damage,omitempty"` // the pending records (--json)
	Repair  *cairn.RepairProgress `json:"repair_progress,omitempty"`
}

// ScrubDisk is one disk's line of ScrubStatus.
type ScrubDisk struct {
	cairn.ScrubProgress
	Shards int64 `json:"shards"` // shard files the manifests place on the disk (usage counters)
}

// scrubStatusMaxDamage bounds the damage records status reads.
const scrubStatusMaxDamage = 10000

func runScrubStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin scrub status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON (with the pending damage records)")
	watch := addWatchFlags(fs, "cairn admin scrub status")
	cmdline.Usage(fs, "cairn admin scrub status [--json] [--watch [--interval D] [--count N]]",
		`Shows, for every disk, how far its node's scrubber is in the pass in progress,
when its last full pass ended and what the passes found damaged; then the
damaged shards not healed yet and how many were healed. The director queues a
repair for every damaged shard (also those reads found), like for a lost disk.
With --watch the status refreshes every --interval.`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		if err := watch.validate(); err != nil {
			return err
		}
		return watch.run(ctx, stdout, *asJSON, func(ctx context.Context, stdout io.Writer) error {
			return showScrubStatus(ctx, cl, stdout, *asJSON)
		})
	})
}

// scrubState reads what scrub status and gc status both show: the
// scrub's control record, every disk's progress, and the disks.
func scrubState(ctx context.Context, cl *cluster) (cairn.ScrubControl, []cairn.ScrubProgress, []cairn.Disk, error) {
	ctl, err := cl.meta.ScrubControl(ctx)
	if err != nil {
		return ctl, nil, nil, err
	}
	ps, err := cl.meta.ScrubProgress(ctx)
	if err != nil {
		return ctl, nil, nil, err
	}
	disks, err := cl.meta.Disks(ctx)
	return ctl, ps, disks, err
}

// showScrubStatus writes the scrub status to stdout: JSON (with the
// pending damage records) if asJSON, else text.
func showScrubStatus(ctx context.Context, cl *cluster, stdout io.Writer, asJSON bool) error {
	ctl, ps, disks, err := scrubState(ctx, cl)
	if err != nil {
		return err
	}
	use, err := cl.meta.Usage(ctx)
	if err != nil {
		return err
	}
	st := ScrubStatus{Paused: ctl.Paused}
	byDisk := map[cairn.DiskID]cairn.ScrubProgress{}
	for _, p := range ps {
		byDisk[p.Disk] = p
	}
	for _, d := range disks {
		p, ok := byDisk[d.ID]
		if !ok {
			p = cairn.ScrubProgress{Disk: d.ID}
		}
		st.Disks = append(st.Disks, ScrubDisk{ScrubProgress: p, Shards: use.Disks[d.ID].Files})
	}
	after := ""
	for len(st.Damage) < scrubStatusMaxDamage {
		ds, more, err := cl.meta.Damages(ctx, after, 1000)
		if err != nil {
			return err
		}
		for _, d := range ds {
			after = cairn.DamageKey(d.Disk, d.Shard)
			st.Damage = append(st.Damage, d)
		}
		if !more {
			break
		}
	}
	st.Pending = len(st.Damage)
	if p, err := cl.meta.RepairProgress(ctx); err == nil {
		st.Repair, st.Queued, st.Healed = &p, p.DamageQueued, p.DamageHealed
	}
	if asJSON {
		return printJSON(stdout, st)
	}
	printScrubStatus(stdout, st, time.Now())
	return nil
}

func printScrubStatus(w io.Writer, st ScrubStatus, now time.Time) {
	state := "running"
	if st.Paused {
		state = "paused ('cairn admin scrub start' resumes it)"
	}
	fmt.Fprintf(w, "scrub: %s\n", state)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DISK\tNOW\tTHIS PASS\tLAST FULL PASS\tSHARDS\tDAMAGED\tFOUND IN ALL")
	for _, d := range st.Disks {
		doing := "idle"
		switch {
		case d.Updated.IsZero():
			doing = "never reported"
		case d.Paused:
			doing = "paused"
		case !d.PassStarted.IsZero():
			doing = "scrubbing"
		}
		pass := "-"
		if !d.PassStarted.IsZero() {
			pass = fmt.Sprintf("%d shards, %s", d.PassShards, fmtBytes(d.PassBytes))
			if d.Shards > 0 {
				pass += fmt.Sprintf(" (~%d%%)", min(100, 100*d.PassShards/d.Shards))
			}
			if d.PassDamage > 0 {
				pass += fmt.Sprintf(", %d damaged", d.PassDamage)
			}
		}
		last, shards, damaged := "never", "-", "-"
		if !d.LastPass.IsZero() {
			last = fmt.Sprintf("%s (%s ago)", d.LastPass.Format(time.RFC3339), now.Sub(d.LastPass).Round(time.Second))
			shards, damaged = fmt.Sprint(d.LastShards), fmt.Sprint(d.LastDamage)
		}
		found := fmt.Sprint(d.Found)
		if d.Unreported > 0 {
			found += fmt.Sprintf(" (%d not recorded: the next pass reports them)", d.Unreported)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Disk, doing, pass, last, shards, damaged, found)
	}
	tw.Flush()
	fmt.Fprintf(w, "damaged shards: %d pending, %d queued for repair and %d healed since the director started\n",
		st.Pending, st.Queued, st.Healed)
	for i, d := range st.Damage {
		if i == 10 {
			fmt.Fprintf(w, "  … and %d more (--json lists them)\n", len(st.Damage)-i)
			break
		}
		queued := "not queued yet"
		if d.Task != "" {
			queued = "repair queued"
		}
		fmt.Fprintf(w, "  %s %s: %s (%s, %s): %s\n", d.Disk, d.Shard, d.Kind, d.Source, queued, d.Detail)
	}
}

func runScrubStart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin scrub start", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin scrub start",
		`Resumes scrubbing if it was paused, and makes every node start a new full pass
on each of its disks now (a pass in progress starts over). Nodes look at the
switch every 10 seconds.`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		c, err := cl.meta.ScrubControl(ctx)
		if err != nil {
			return err
		}
		c.Paused, c.Start, c.Updated = false, c.Start+1, time.Now()
		if err := cl.meta.PutScrubControl(ctx, c); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "scrub started: every disk begins a new pass within 10s (start %d)\n", c.Start)
		return nil
	})
}

func runScrubPause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin scrub pause", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin scrub pause",
		`Pauses scrubbing on every node (within 10 seconds) until 'cairn admin scrub
start'. A paused scrubber keeps its place; start begins a new pass.`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		c, err := cl.meta.ScrubControl(ctx)
		if err != nil {
			return err
		}
		if c.Paused {
			fmt.Fprintln(stdout, "scrub: already paused")
			return nil
		}
		c.Paused, c.Updated = true, time.Now()
		if err := cl.meta.PutScrubControl(ctx, c); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "scrub paused on every node (within 10s); 'cairn admin scrub start' resumes it")
		return nil
	})
}

// scrubSummary is cairn admin status's scrub line: paused or running, how
// many disks are in a pass, the oldest last full pass of the disks, and
// the damaged shards not healed yet.
func scrubSummary(ctx context.Context, cl *cluster, disks []cairn.Disk, now time.Time) (string, error) {
	ctl, err := cl.meta.ScrubControl(ctx)
	if err != nil {
		return "", err
	}
	ps, err := cl.meta.ScrubProgress(ctx)
	if err != nil {
		return "", err
	}
	ds, more, err := cl.meta.Damages(ctx, "", 1000)
	if err != nil {
		return "", err
	}
	byDisk := map[cairn.DiskID]cairn.ScrubProgress{}
	for _, p := range ps {
		byDisk[p.Disk] = p
	}
	return summarizeScrub(ctl, disks, byDisk, len(ds), more, now), nil
}

func summarizeScrub(ctl cairn.ScrubControl, disks []cairn.Disk, byDisk map[cairn.DiskID]cairn.ScrubProgress, damaged int, more bool, now time.Time) string {
	s := "running"
	if ctl.Paused {
		s = "paused"
	}
	scrubbing, never := 0, 0
	var oldest time.Time
	for _, d := range disks {
		p := byDisk[d.ID]
		if !p.PassStarted.IsZero() && !p.Paused {
			scrubbing++
		}
		switch {
		case p.LastPass.IsZero():
			never++
		case oldest.IsZero() || p.LastPass.Before(oldest):
			oldest = p.LastPass
		}
	}
	s += fmt.Sprintf("; %d of %d disks in a pass", scrubbing, len(disks))
	switch {
	case never > 0:
		s += fmt.Sprintf(", %d never fully scrubbed", never)
	case !oldest.IsZero():
		s += fmt.Sprintf(", the oldest full pass ended %s ago", now.Sub(oldest).Round(time.Second))
	}
	pending := fmt.Sprint(damaged)
	if more {
		pending += "+"
	}
	return s + fmt.Sprintf("; %s damaged shards pending repair (cairn admin scrub status)", pending)
}
