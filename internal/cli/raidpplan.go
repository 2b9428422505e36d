package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"

	"cairn/internal/cmdline"
	"cairn/internal/units"
	"cairn/raidp"
	"cairn/repair/plan"
)

const raidpPlanHelp = `Predicts RAIDP recovery times for a group laid out as raidp.New(disks, slots,
rows), with the time models of repair/plan (docs/design/raidp.md): one disk
lost (the min-cost matching's re-mirroring, and the mean of naive random
assignments for comparison), and two disks lost (the rebuild of their shared
superchunk from both Lstors — the end of the critical state — then the
re-mirroring), each the worst over the disks or pairs. For comparison it
prints the best RS-K-2 repair scheme (PUSH paper's models) for two failed
nodes holding what a RAIDP disk holds. Offline: it needs no cluster.

Rates are sizes per second (e.g. 117MB, 1GiB).`

// RaidpPlan is what `cairn admin raidp plan` prints, in seconds.
type RaidpPlan struct {
	Single, SingleNaive    float64 // worst disk; naive: mean over draws, worst disk
	DualRebuild, DualTotal float64 // worst pair
	RS                     float64 // best RS-K-2 scheme, two failed nodes
	RSScheme               string
}

func runRaidpPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin raidp plan", flag.ContinueOnError)
	disks := fs.Int("disks", 16, "disks in the group")
	slots := fs.Int("slots", 0, "superchunk slots per disk (default: disks−1)")
	rows := fs.Int("rows", 0, "rows of superchunks in use (default: half the slots, rounded up to even)")
	sizeArg := fs.String("size", "4GiB", "superchunk size")
	netRate := fs.String("net", "117MB", "each node's network bandwidth per second, each direction")
	readRate := fs.String("read", "150MB", "each disk's sequential read per second")
	writeRate := fs.String("write", "150MB", "each disk's sequential write per second")
	k := fs.Int("rs-k", 6, "K of the RS-K-2 code to compare with")
	cmdline.Usage(fs, "cairn admin raidp plan [--disks N] [--rows R] [--size SIZE] [--net RATE] [--read RATE] [--write RATE]", raidpPlanHelp)
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	if *slots == 0 {
		*slots = *disks - 1
	}
	if *rows == 0 {
		*rows = (*slots/2 + 1) / 2 * 2
	}
	l, err := raidp.New(*disks, *slots, *rows)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	var v [4]float64
	for i, f := range []struct{ name, v string }{{"size", *sizeArg}, {"net", *netRate}, {"read", *readRate}, {"write", *writeRate}} {
		n, err := units.ParseSize(f.v)
		if err != nil || n <= 0 {
			return fmt.Errorf("%w: --%s %q: want a positive size", ErrUsage, f.name, f.v)
		}
		v[i] = float64(n)
	}
	if *k < 1 {
		return fmt.Errorf("%w: --rs-k %d", ErrUsage, *k)
	}
	r := plan.Rates{Read: v[2], Write: v[3], Send: v[1], Recv: v[1]}
	m := plan.RAIDPModel{Size: v[0], Disks: []plan.Rates{r}}
	out, err := raidpPlan(l, int64(v[0]), m)
	if err != nil {
		return err
	}
	rs := plan.Model{K: *k, R: 2, F: 2, SNode: float64(*rows) * v[0], SBlock: 1 << 20, Survivors: []plan.Rates{r}, Replacement: r}
	best, _, err := plan.Choose(rs, nil)
	if err != nil {
		return err
	}
	out.RS, out.RSScheme = best.Seconds, best.Scheme.String()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group\t%d disks, %d slots, %d rows, %d superchunks of %s\n", *disks, *slots, *rows, len(l.Superchunks), units.FormatSize(int64(v[0])))
	fmt.Fprintf(tw, "one disk lost, matching\t%.1f s\n", out.Single)
	fmt.Fprintf(tw, "one disk lost, naive assignment\t%.1f s\n", out.SingleNaive)
	fmt.Fprintf(tw, "two disks lost, critical state ends\t%.1f s\n", out.DualRebuild)
	fmt.Fprintf(tw, "two disks lost, all re-mirrored\t%.1f s\n", out.DualTotal)
	fmt.Fprintf(tw, "rs-%d-2, two nodes lost (%s)\t%.1f s (%.1f× the critical state)\n", *k, out.RSScheme, out.RS, out.RS/out.DualRebuild)
	return tw.Flush()
}

// raidpPlan evaluates the models over every disk and pair of l.
func raidpPlan(l raidp.Layout, size int64, m plan.RAIDPModel) (RaidpPlan, error) {
	var out RaidpPlan
	rng := rand.New(rand.NewPCG(1, 1)) // the naive draws are part of the model: fixed
	for d := range l.Disks {
		p, err := raidp.Remirror(l, []int{d}, nil)
		if err != nil {
			return out, err
		}
		t, err := m.Remirror(p)
		if err != nil {
			return out, err
		}
		out.Single = max(out.Single, t.Seconds)
		const draws = 8
		var sum float64
		for range draws {
			np, err := raidp.RemirrorNaive(l, []int{d}, rng)
			if err != nil {
				return out, err
			}
			nt, err := m.Remirror(np)
			if err != nil {
				return out, err
			}
			sum += nt.Seconds
		}
		out.SingleNaive = max(out.SingleNaive, sum/draws)
		for e := d + 1; e < l.Disks; e++ {
			dp, err := raidp.Dual(l, d, e, size, [2]bool{true, true}, nil)
			if err != nil {
				return out, fmt.Errorf("disks %d and %d: %w", d, e, err)
			}
			dt, err := m.Dual(dp)
			if err != nil {
				return out, err
			}
			out.DualRebuild = max(out.DualRebuild, dt.Rebuild.Seconds)
			out.DualTotal = max(out.DualTotal, dt.Total)
		}
	}
	return out, nil
}
