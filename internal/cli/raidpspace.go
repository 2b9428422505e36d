package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"cairn/client"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/internal/units"
)

// The raidp group's space: zeroing the dead ranges deletes queue
// (docs/design/raidp.md, "Deletes" in "In the cluster").

const raidpDeletesHelp = `how a raidp delete zeroes the bytes it frees on both replicas: "lazy" queues them for the director's zeroer (the paper's baseline; the delete costs one metadata write), "online" zeroes them before the delete answers (a journaled write per replica). docs/design/raidp.md, "Deletes"`

// raidpZeroFlags configure the director's raidp zeroer (cairn node,
// cairn server).
type raidpZeroFlags struct {
	grace *time.Duration
	every *time.Duration
	batch *int
}

func addRaidpZeroFlags(fs *flag.FlagSet) raidpZeroFlags {
	return raidpZeroFlags{
		grace: fs.Duration("raidp-zero-grace", time.Minute,
			"director: how long the bytes of a deleted raidp object stay before the zeroer zeroes them, so reads under way finish"),
		every: fs.Duration("raidp-zero-every", 10*time.Second, "director: how often the queue of dead raidp ranges is worked"),
		batch: fs.Int("raidp-zero-batch", 256, "director: most dead raidp ranges zeroed per run"),
	}
}

func (f raidpZeroFlags) validate() error {
	switch {
	case *f.grace < 0:
		return fmt.Errorf("%w: --raidp-zero-grace must not be negative", ErrUsage)
	case *f.every <= 0 || *f.batch < 1:
		return fmt.Errorf("%w: --raidp-zero-every and --raidp-zero-batch must be positive", ErrUsage)
	}
	return nil
}

// duty is the director's raidp zeroer (client.ZeroDeadRAIDP).
func (f raidpZeroFlags) duty(data *client.Client, log *slog.Logger) director.Duty {
	grace, batch := *f.grace, *f.batch
	return director.Duty{Name: "zero dead raidp ranges", Every: *f.every, Background: true,
		Run: func(ctx context.Context, now time.Time) error {
			st, err := data.ZeroDeadRAIDP(ctx, now, grace, batch)
			if st.Zeroed > 0 {
				log.Info("raidp: dead ranges zeroed", "ranges", st.Zeroed, "bytes", st.Bytes, "waiting", st.Waiting)
			}
			return err
		}}
}

func runRaidpSpace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp space", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the allocation record and the dead ranges as JSON")
	zero := fs.Bool("zero", false, "zero every queued dead range now (no grace), as the director's zeroer does, then print")
	cmdline.Usage(fs, "cairn admin raidp space [--json] [--zero]", "Prints the raidp group's space: per superchunk the bytes handed out and dead, the superchunks a recovery\ndiverts, and the backlog of dead ranges waiting to be zeroed on both replicas.")
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		if *zero {
			st, err := cl.data.ZeroDeadRAIDP(ctx, time.Now(), 0, 1<<30)
			fmt.Fprintf(stdout, "zeroed %d ranges (%s), %d waiting\n", st.Zeroed, units.FormatSize(st.Bytes), st.Waiting)
			if err != nil {
				return err
			}
		}
		a, err := cl.data.RAIDPAllocation(ctx)
		if err != nil {
			return err
		}
		q, err := cl.data.RAIDPDeadBacklog(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, struct {
				Alloc client.RAIDPAlloc     `json:"alloc"`
				Dead  client.RAIDPDeadQueue `json:"dead"`
			}{a, q})
		}
		printRaidpSpace(stdout, a, q)
		return nil
	})
}

// printRaidpSpace prints the allocation record and the dead backlog.
func printRaidpSpace(w io.Writer, a client.RAIDPAlloc, q client.RAIDPDeadQueue) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "superchunk\tused\tdead\tstate")
	ids := slices.Sorted(maps.Keys(a.End))
	for _, s := range ids {
		state := ""
		if slices.Contains(a.Divert, s) {
			state = "diverted"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s, units.FormatSize(a.End[s]), units.FormatSize(a.Dead[s]), state)
	}
	tw.Flush()
	var bytes int64
	var oldest time.Time
	for _, r := range q.Ranges {
		bytes += r.Length
		if oldest.IsZero() || r.Since.Before(oldest) {
			oldest = r.Since
		}
	}
	fmt.Fprintf(w, "dead backlog: %d ranges, %s", len(q.Ranges), units.FormatSize(bytes))
	if !oldest.IsZero() {
		fmt.Fprintf(w, ", oldest since %s", oldest.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
}
