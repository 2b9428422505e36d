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
	grace        *time.Duration
	every        *time.Duration
	batch        *int
	compactDead  *float64
	compactEvery *time.Duration
}

func addRaidpZeroFlags(fs *flag.FlagSet) raidpZeroFlags {
	return raidpZeroFlags{
		grace: fs.Duration("raidp-zero-grace", time.Minute,
			"director: how long the bytes of a deleted raidp object stay before the zeroer zeroes them, so reads under way finish"),
		every: fs.Duration("raidp-zero-every", 10*time.Second, "director: how often the queue of dead raidp ranges is worked"),
		batch: fs.Int("raidp-zero-batch", 256, "director: most dead raidp ranges zeroed per run"),
		compactDead: fs.Float64("raidp-compact-dead", client.DefaultRAIDPCompactDead,
			"director: a raidp superchunk this share of whose size is dead is compacted: its live objects moved out, then it is zeroed and reused (1: only superchunks all dead)"),
		compactEvery: fs.Duration("raidp-compact-every", time.Minute,
			"director: how often raidp compaction runs (each run reads every object's manifest)"),
	}
}

func (f raidpZeroFlags) validate() error {
	switch {
	case *f.grace < 0:
		return fmt.Errorf("%w: --raidp-zero-grace must not be negative", ErrUsage)
	case *f.every <= 0 || *f.batch < 1 || *f.compactEvery <= 0:
		return fmt.Errorf("%w: --raidp-zero-every, --raidp-zero-batch and --raidp-compact-every must be positive", ErrUsage)
	case !(*f.compactDead > 0 && *f.compactDead <= 1):
		return fmt.Errorf("%w: --raidp-compact-dead %v: want a share in (0, 1]", ErrUsage, *f.compactDead)
	}
	return nil
}

// raidpCompactBatch is the most superchunks one compaction run empties.
const raidpCompactBatch = 4

// duty is the director's raidp zeroer (client.ZeroDeadRAIDP) and, every
// --raidp-compact-every, its compaction (client.CompactRAIDP) after it in
// the same run.
func (f raidpZeroFlags) duty(data *client.Client, log *slog.Logger) director.Duty {
	grace, batch, dead, every := *f.grace, *f.batch, *f.compactDead, *f.compactEvery
	// The duty never overlaps itself, so its state needs no lock.
	var last time.Time      // the last compaction's start
	var lastUsed int64 = -1 // the group's bytes handed out at the previous run
	return director.Duty{Name: "zero dead raidp ranges and compact", Every: *f.every, Background: true,
		Run: func(ctx context.Context, now time.Time) error {
			// Idle time (the paper's baseline zeroes then): the group took
			// no new bytes since the previous run, or the backlog is half
			// full and must not wait any longer.
			a, err := data.RAIDPAllocation(ctx)
			if err != nil {
				return err
			}
			used := int64(0)
			for _, e := range a.End {
				used += e
			}
			busy := lastUsed >= 0 && used != lastUsed
			lastUsed = used
			if busy {
				q, err := data.RAIDPDeadBacklog(ctx)
				if err != nil || len(q.Ranges) < client.DefaultRAIDPDeadBacklog/2 {
					return err
				}
			}
			st, err := data.ZeroDeadRAIDP(ctx, now, grace, batch)
			if st.Zeroed > 0 || st.Stale > 0 {
				log.Info("raidp: dead ranges zeroed", "ranges", st.Zeroed, "bytes", st.Bytes, "stale", st.Stale, "waiting", st.Waiting)
			}
			if err != nil || now.Sub(last) < every {
				return err
			}
			last = now
			cs, err := data.CompactRAIDP(ctx, dead, raidpCompactBatch)
			if len(cs.Candidates) > 0 {
				log.Info("raidp: compacted", "superchunks", cs.Candidates, "reclaimed", cs.Reclaimed, "moved", cs.Moved,
					"moved_bytes", cs.MovedBytes, "lost_to_writes", cs.Lost)
			}
			return err
		}}
}

func runRaidpSpace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp space", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the allocation record and the dead ranges as JSON")
	zero := fs.Bool("zero", false, "zero every queued dead range now (no grace), as the director's zeroer does, then print")
	compact := fs.Float64("compact", 0, "compact now the superchunks at least this share of whose size is dead (0: do not), as the director does, then print")
	cmdline.Usage(fs, "cairn admin raidp space [--json] [--zero] [--compact SHARE]", "Prints the raidp group's space: per superchunk the bytes handed out and dead, the superchunks a recovery\ndiverts, and the backlog of dead ranges waiting to be zeroed on both replicas.")
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		if *zero {
			st, err := cl.data.ZeroDeadRAIDP(ctx, time.Now(), 0, 1<<30)
			fmt.Fprintf(stdout, "zeroed %d ranges (%s), %d waiting\n", st.Zeroed, units.FormatSize(st.Bytes), st.Waiting)
			if err != nil {
				return err
			}
		}
		if *compact < 0 || *compact > 1 {
			return fmt.Errorf("%w: --compact %v: want a share in (0, 1]", ErrUsage, *compact)
		}
		if *compact > 0 {
			cs, err := cl.data.CompactRAIDP(ctx, *compact, 1<<30)
			fmt.Fprintf(stdout, "compacted superchunks %v: reclaimed %v, %d objects moved (%s), %d lost to writes\n",
				cs.Candidates, cs.Reclaimed, cs.Moved, units.FormatSize(cs.MovedBytes), cs.Lost)
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

// printDeadBacklog prints the group's dead backlog line (cairn admin
// raidp group).
func printDeadBacklog(ctx context.Context, w io.Writer, data *client.Client) error {
	q, err := data.RAIDPDeadBacklog(ctx)
	if err != nil {
		return err
	}
	printBacklog(w, q)
	return nil
}

// printRaidpSpace prints the allocation record and the dead backlog.
func printRaidpSpace(w io.Writer, a client.RAIDPAlloc, q client.RAIDPDeadQueue) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "superchunk\tused\tdead\tstate")
	ids := slices.Sorted(maps.Keys(a.End))
	for _, s := range ids {
		state := ""
		switch {
		case slices.Contains(a.Divert, s):
			state = "diverted"
		case slices.Contains(a.Compacting, s):
			state = "compacting"
		case slices.Contains(a.Open, s):
			state = "open" // PUTs append to it now
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s, units.FormatSize(a.End[s]), units.FormatSize(a.Dead[s]), state)
	}
	tw.Flush()
	printBacklog(w, q)
}

// printBacklog prints one line: the ranges of q, their bytes and the oldest.
func printBacklog(w io.Writer, q client.RAIDPDeadQueue) {
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
