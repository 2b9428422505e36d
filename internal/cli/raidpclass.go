package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"cairn"
	"cairn/client"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/internal/units"
	"cairn/layout/gp"
	"cairn/meta"
	"cairn/node"
	"cairn/raidp"
	"cairn/repair/plan"
)

// storageClasses are the S3 storage classes a gateway maps to policies:
// s3's defaults, and WARM for the raidp policy (docs/design/raidp.md, "In
// the cluster"). coldClasses adds COLD.
func storageClasses() map[string]string {
	return map[string]string{"STANDARD": "", "REDUCED_REDUNDANCY": "rs-4-1", "WARM": cairn.RAIDPPolicy}
}

// checkPolicy accepts raidp, which is no code, and what gp.Check accepts:
// a code's policy (codec/all) or a cold one (CODE/gp=S0:Q).
func checkPolicy(p string) error {
	if p == cairn.RAIDPPolicy {
		return nil
	}
	return gp.Check(p)
}

// The raidp policy's data path runs over the node client and the
// metadata store.
var (
	_ client.RAIDPDisks = (*node.Client)(nil)
	_ client.RAIDPMeta  = meta.Store(nil)
)

// printRAIDP prints a raidp object's spans (cairn stat): the group, and
// per span its superchunk, bytes and both replicas.
func printRAIDP(w io.Writer, l *cairn.RAIDPLayout) {
	fmt.Fprintf(w, "group    %s (generation %d)\nspans:\n", l.Group, l.Generation)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  superchunk\toffset\tlength\treplica 1\treplica 2")
	for _, s := range l.Spans {
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s slot %d\t%s slot %d\n", s.Superchunk, s.Offset, s.Length, s.Disks[0], s.Slots[0], s.Disks[1], s.Slots[1])
	}
	tw.Flush()
}

// raidpEvery is how often the director looks for failed disks of the
// raidp group.
const raidpEvery = 5 * time.Second

// raidpDuty is the director's RAIDP recovery: once the cluster map holds
// a disk of the group down or out, the recovery is planned and stored
// (two at once: the dual plan), its steps queued as repair tasks phase by
// phase for the repair workers, and the group record replaced by CAS once
// every step is done (client.QueueFailedRAIDP; docs/design/raidp.md,
// "Through the repair queue").
func raidpDuty(data *client.Client, queue client.RAIDPQueue, log *slog.Logger) director.Duty {
	return director.Duty{Name: "raidp recovery", Every: raidpEvery, Background: true,
		Run: func(ctx context.Context, now time.Time) error {
			failed, committed, err := data.QueueFailedRAIDP(ctx, queue, now)
			if committed {
				log.Warn("RAIDP group recovered from failed disks", "disks", failed)
			}
			return err
		}}
}

func runRaidpGroup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp group", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the group record as JSON")
	cmdline.Usage(fs, "cairn admin raidp group [--json]", "Prints the raidp group: its generation, its disks (out: recovered away) and the replicas of each superchunk.")
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		rm := cl.meta
		b, err := rm.RAIDP(ctx, "groups/"+client.DefaultRAIDPGroup)
		if err != nil {
			return fmt.Errorf("raidp group %s: %w (it is made by the first raidp PUT)", client.DefaultRAIDPGroup, err)
		}
		g, err := raidp.DecodeGroup(b)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, g)
		}
		fmt.Fprintf(stdout, "group       %s\ngeneration  %d\nsuperchunk  %s\n", g.Name, g.Generation, units.FormatSize(g.Size))
		// What the nodes report of the disks' Lstors (a disk marked for
		// verification refuses RAIDP writes).
		fault := map[string]string{}
		if disks, err := cl.meta.Disks(ctx); err == nil {
			for _, d := range disks {
				fault[string(d.ID)] = d.RAIDPFault
			}
		} else {
			fmt.Fprintf(stderr, "warning: the cluster map: %v (Lstor states not shown)\n", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "disk\tdomain\tsuperchunks")
		for i, d := range g.Disks {
			var ids []string
			for _, s := range g.Layout.OnDisk(i) {
				ids = append(ids, strconv.Itoa(s.ID))
			}
			state := strings.Join(ids, " ")
			if slices.Contains(g.Out, i) {
				state = "out"
			}
			if f := fault[d.ID]; f != "" {
				state += "  (" + f + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.ID, d.Domain, state)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return printDeadBacklog(ctx, stdout, cl.data) // raidpspace.go
	})
}

func runRaidpRecover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp recover", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin raidp recover DISK [DISK]", "Recovers the raidp group from the loss of one or two of its disks now: their superchunks are\nre-mirrored to the other disks (for two, the superchunk they shared is first rebuilt from their\nLstors, if their nodes still serve them), and the group record is replaced. The director does\nthis by itself once the cluster map holds a disk of the group down.")
	return withClusterArgs(ctx, fs, args, stdout, stderr, 1, 2, func(ctx context.Context, cl *cluster, args []string) error {
		var failed []cairn.DiskID
		for _, a := range args {
			failed = append(failed, cairn.DiskID(a))
		}
		g, err := cl.data.RecoverRAIDP(ctx, failed)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "raidp group %s recovered: generation %d, disks out: %d\n", g.Name, g.Generation, len(g.Out))
		return nil
	})
}

func runRaidpRecovery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp recovery", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the stored plan as JSON")
	cmdline.Usage(fs, "cairn admin raidp recovery [--json]", "Prints the raidp group's stored recovery plan (docs/design/raidp.md, \"Stored plan\"): the generation\nit was planned from, its attempt, the failed disks, and each step with its phase and whether it\nis done. A plan of an older generation than the group's is finished.")
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		r, err := cl.data.RAIDPRecovery(ctx)
		if err != nil {
			return fmt.Errorf("raidp recovery plan of %s: %w", client.DefaultRAIDPGroup, err)
		}
		if *asJSON {
			return printJSON(stdout, r)
		}
		done := 0
		for _, s := range r.Steps {
			if s.Done {
				done++
			}
		}
		fmt.Fprintf(stdout, "group       %s\ngeneration  %d (planned from)\nattempt     %d\nfailed      %v\nsteps       %d of %d done\n",
			r.Group, r.Generation, r.Attempt, r.Failed, done, len(r.Steps))
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "phase\tkind\tsuperchunk\tfrom\tto\tdone")
		for _, s := range r.Steps {
			from := "-"
			switch {
			case s.From != nil && s.Len > 0:
				from = fmt.Sprintf("D%d slot %d [%d, +%d)", s.From.Disk, s.From.Slot, s.Off, s.Len)
			case s.From != nil:
				from = fmt.Sprintf("D%d slot %d", s.From.Disk, s.From.Slot)
			case s.Rebuild != nil:
				from = fmt.Sprintf("Lstor D%d [%d, +%d)", s.Rebuild.Lstor, s.Rebuild.Off, s.Rebuild.Len)
			}
			sc := strconv.Itoa(s.Superchunk)
			if s.Kind == raidp.StepZero {
				sc = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\tD%d slot %d\t%v\n", s.Phase, s.Kind, sc, from, s.To.Disk, s.To.Slot, s.Done)
		}
		return tw.Flush()
	})
}

// raidpEstimate is the RAIDP part of `cairn admin repair plan`: the
// recovery of the raidp group, stored and not finished (ongoing), or the
// one the director would plan for the disks the cluster map holds failed
// (planned), with the time the model predicts for what is left.
type raidpEstimate struct {
	State      string                       `json:"state"` // "ongoing" or "planned"
	Group      string                       `json:"group"`
	Failed     []string                     `json:"failed"`
	Size       int64                        `json:"superchunk_size"`
	Prediction plan.RAIDPRecoveryPrediction `json:"prediction"`
}

// raidpRecovery reads the raidp group and its stored recovery plan; rec
// is nil unless the plan is for the group's generation and not finished
// (an ongoing recovery). ok is false when there is no group.
func raidpRecovery(ctx context.Context, cl *cluster) (g raidp.Group, rec *raidp.Recovery, ok bool, err error) {
	b, err := cl.meta.RAIDP(ctx, "groups/"+client.DefaultRAIDPGroup)
	if errors.Is(err, cairn.ErrNotFound) {
		return raidp.Group{}, nil, false, nil
	}
	if err != nil {
		return raidp.Group{}, nil, false, err
	}
	if g, err = raidp.DecodeGroup(b); err != nil {
		return raidp.Group{}, nil, false, err
	}
	r, err := cl.data.RAIDPRecovery(ctx)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return g, nil, true, nil
	case err != nil:
		return raidp.Group{}, nil, false, err
	case r.Generation != g.Generation || r.Complete():
		return g, nil, true, nil
	}
	return g, &r, true, nil
}

// raidpStatusLine is the line `cairn admin repair status` prints for an
// ongoing raidp recovery ("" for none).
func raidpStatusLine(ctx context.Context, cl *cluster) (string, error) {
	g, rec, _, err := raidpRecovery(ctx, cl)
	if err != nil || rec == nil {
		return "", err
	}
	done, phase := 0, 0
	for _, s := range rec.Steps {
		if s.Done {
			done++
		} else if phase == 0 {
			phase = s.Phase
		}
	}
	var failed []string
	for _, d := range rec.Failed {
		failed = append(failed, g.Disks[d].ID)
	}
	return fmt.Sprintf("raidp recovery of group %s from the loss of %s: %d of %d steps done, phase %d of %d (generation %d, attempt %d; cairn admin raidp recovery)",
		g.Name, strings.Join(failed, " "), done, len(rec.Steps), phase, rec.Steps[len(rec.Steps)-1].Phase, rec.Generation, rec.Attempt), nil
}

// estimateRAIDP returns the estimate of the raidp group's recovery at
// rates r, or nil when there is no group or nothing to recover.
func estimateRAIDP(ctx context.Context, cl *cluster, r plan.Rates) (*raidpEstimate, error) {
	g, ongoing, ok, err := raidpRecovery(ctx, cl)
	if err != nil || !ok {
		return nil, err
	}
	est := &raidpEstimate{State: "ongoing", Group: g.Name, Size: g.Size}
	var rec raidp.Recovery
	if ongoing != nil {
		rec = *ongoing
	} else {
		disks, err := cl.meta.Disks(ctx)
		if err != nil {
			return nil, err
		}
		var failed []int
		for _, d := range client.FailedRAIDPDisks(g, disks) {
			failed = append(failed, slices.IndexFunc(g.Disks, func(x raidp.GroupDisk) bool { return x.ID == string(d) }))
		}
		if len(failed) == 0 {
			return nil, nil
		}
		ok := map[int]bool{}
		for _, d := range failed {
			ok[d] = true // the director tries the Lstors first; assume they answer
		}
		if rec, err = raidp.PlanRecovery(g, failed, ok, nil); err != nil {
			return nil, fmt.Errorf("raidp group %s: %w", g.Name, err)
		}
		est.State = "planned"
	}
	for _, d := range rec.Failed {
		est.Failed = append(est.Failed, g.Disks[d].ID)
	}
	m := plan.RAIDPModel{Size: float64(g.Size), Disks: []plan.Rates{r}}
	if est.Prediction, err = m.Recovery(rec); err != nil {
		return nil, err
	}
	return est, nil
}

// print writes the estimate as the repair plan's text.
func (e *raidpEstimate) print(w io.Writer) error {
	fmt.Fprintf(w, "\nraidp recovery of group %s (%s) from the loss of %s: %s left, superchunks of %s\n",
		e.Group, e.State, strings.Join(e.Failed, " "), seconds(e.Prediction.Seconds), units.FormatSize(e.Size))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tKIND\tSTEPS LEFT\tPARALLEL\tWRITTEN\tNETWORK\tBUSIEST DISK\tPREDICTED\tBOUND BY")
	for _, ph := range e.Prediction.Phases {
		fmt.Fprintf(tw, "%d\t%s\t%d of %d\t%d\t%s\t%s\t%s\t%s\t%s\n", ph.Phase, ph.Kind, ph.Left, ph.Steps, ph.Left,
			fmtBytes(int64(ph.Written)), fmtBytes(int64(ph.Network)), fmtBytes(int64(ph.Busiest)), seconds(ph.Seconds), ph.Bound)
	}
	return tw.Flush()
}
