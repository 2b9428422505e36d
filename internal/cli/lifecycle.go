package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"cairn"
	"cairn/cold"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/meta"
)

// lifecycleFlags configure the director's lifecycle runner (cairn node,
// cairn server): docs/design/s3.md, "Lifecycle".
type lifecycleFlags struct {
	every     *time.Duration
	rate      *float64
	dayLength *time.Duration
}

func addLifecycleFlags(fs *flag.FlagSet) *lifecycleFlags {
	return &lifecycleFlags{
		every: fs.Duration("lifecycle-every", time.Hour, "director: how often a pass applies the buckets' lifecycle rules"),
		rate:  fs.Float64("lifecycle-rate", 100, "director: most lifecycle actions (expirations, deletions, aborts) per second"),
		dayLength: fs.Duration("lifecycle-day-length", 24*time.Hour,
			"for tests only: the length of a lifecycle rule's day (ages are scaled by 24h over it)"),
	}
}

func (f *lifecycleFlags) validate() error {
	if f == nil {
		return nil
	}
	if *f.every <= 0 || *f.rate <= 0 || *f.dayLength <= 0 {
		return fmt.Errorf("%w: --lifecycle-every, --lifecycle-rate and --lifecycle-day-length must be positive", ErrUsage)
	}
	return nil
}

// duty returns the director's lifecycle duty (defaults if f is nil).
// coldPolicy is the COLD class's policy ("" if the cluster has none):
// a Transition to COLD stages the current version for the cold tier's
// export job (lifecycleTransition).
func (f *lifecycleFlags) duty(store meta.Store, log *slog.Logger, coldPolicy string, freed func(context.Context, *cairn.Manifest)) director.Duty {
	cfg := director.LifecycleConfig{Logger: log, ClassOf: classOf, Transition: lifecycleTransition(store, coldPolicy, time.Now), Freed: freed}
	if f != nil {
		cfg.Every, cfg.Rate, cfg.DayLength = *f.every, *f.rate, *f.dayLength
	}
	return director.NewLifecycleRunner(store, cfg).Duty()
}

// classOf names the storage class of a policy, as the lifecycle runner
// asks so that it does not move an object again to the class it is in.
func classOf(policy string) string {
	switch {
	case cairn.IsColdPolicy(policy):
		return ColdClass
	case policy == cairn.RAIDPPolicy:
		return "WARM"
	}
	return "STANDARD"
}

// lifecycleTransition is the lifecycle runner's Transition: to the COLD
// class it stages the current version for the cold tier's export job
// (cold.Stage: the manifest takes the cold policy by compare-and-swap and
// the job moves the bytes later, docs/design/cold.md). Other classes,
// noncurrent versions, a cluster without a cold tier, and a version that
// is no longer current are refused: permanent errors the runner counts as
// refused (a version that changed is judged again in the next pass).
func lifecycleTransition(store meta.Store, coldPolicy string, now func() time.Time) director.TransitionFunc {
	return func(ctx context.Context, bucket string, v cairn.ObjectVersion, class string) error {
		switch {
		case class != ColdClass:
			return fmt.Errorf("%w: a lifecycle transition to %s: only %s moves objects (the other classes are policies chosen at write time)", cairn.ErrInvalid, class, ColdClass)
		case coldPolicy == "":
			return fmt.Errorf("%w: a lifecycle transition to %s: this cluster has no cold tier (--cold-policy)", cairn.ErrInvalid, ColdClass)
		case !v.Latest:
			return fmt.Errorf("%w: a lifecycle transition of a noncurrent version: only current versions move to %s", cairn.ErrInvalid, ColdClass)
		}
		cur, err := store.ObjectVersion(ctx, bucket, v.Key, "")
		if err != nil {
			return err
		}
		if cur.Version != v.Version {
			return fmt.Errorf("%w: %s/%s changed since the lifecycle pass listed it", cairn.ErrConflict, bucket, v.Key)
		}
		return cold.Stage(ctx, store, bucket, v.Key, coldPolicy, now())
	}
}

func runAdminLifecycle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin lifecycle",
		`Lifecycle: the director applies the buckets' S3 lifecycle rules in passes
(docs/design/s3.md, "Lifecycle").`, []cmdline.Command{
			{Name: "status", Summary: "the pass under way and the last complete pass: what they expired, deleted and aborted", Run: runLifecycleStatus},
		}, args, stdout, stderr)
}

func runLifecycleStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin lifecycle status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON (cairn.LifecycleProgress)")
	cmdline.Usage(fs, "cairn admin lifecycle status [--json]",
		`Shows how many lifecycle passes the director completed, where the pass under
way stands (bucket and key) and what it and the last complete pass did:
versions evaluated, current versions expired, noncurrent versions and delete
markers deleted, uploads aborted, transitions to COLD run (objects staged for
the cold tier's export job), and actions refused (e.g. locked versions, or a
transition the cold tier cannot take).`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		p, err := cl.meta.LifecycleProgress(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(p)
		}
		printLifecycleStatus(stdout, p)
		return nil
	})
}

func printLifecycleStatus(w io.Writer, p cairn.LifecycleProgress) {
	fmt.Fprintf(w, "passes complete: %d", p.Passes)
	if !p.Finished.IsZero() {
		fmt.Fprintf(w, ", last finished %s", p.Finished.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if !p.Started.IsZero() {
		fmt.Fprintf(w, "pass under way since %s at bucket %q after key %q\n", p.Started.UTC().Format(time.RFC3339), p.Bucket, p.After)
		printLifecycleCounts(w, "this pass", p.Current)
	}
	if p.Passes > 0 {
		printLifecycleCounts(w, "last pass", p.Last)
		printLifecycleCounts(w, "all passes", p.Total)
	}
}

func printLifecycleCounts(w io.Writer, name string, c cairn.LifecycleCounts) {
	fmt.Fprintf(w, "%s: %d buckets, %d versions; expired %d, noncurrent deleted %d, markers removed %d, uploads aborted %d, transitioned %d (pending %d), refused %d\n",
		name, c.Buckets, c.Versions, c.Expired, c.DeletedVersions, c.DeletedMarkers, c.Aborted, c.Transitioned, c.TransitionsPending, c.Refused)
}

// lifecycleSummary is the lifecycle line of cairn admin status.
func lifecycleSummary(p cairn.LifecycleProgress) string {
	if p.Passes == 0 && p.Started.IsZero() {
		return ""
	}
	t := p.Total
	t.Add(p.Current)
	s := fmt.Sprintf("%d passes; expired %d, noncurrent deleted %d, markers removed %d, uploads aborted %d, transitions pending %d, refused %d",
		p.Passes, t.Expired, t.DeletedVersions, t.DeletedMarkers, t.Aborted, t.TransitionsPending, t.Refused)
	if !p.Started.IsZero() {
		s += fmt.Sprintf("; a pass under way at bucket %q", p.Bucket)
	}
	return s + " (cairn admin lifecycle status)"
}
