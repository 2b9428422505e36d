package benchcli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"cairn/bench/gpbench"
	"cairn/internal/cmdline"
)

const gpHelp = `Usage: cairn-bench gp [--quick] [--out DIR] [--objects N] [--seed N] [--json]

The Geometric Partitioning paper's experiment (its Figure 9, workload W1)
as a TIME MODEL — no node process runs. For Clay(10,4) with Geometric
Partitioning (s0 = 1, 4, 16 MiB, q = 2) against Clay in the Contiguous
(16, 64, 256 MiB chunks), Stripe (256 KiB) and Stripe-Max layouts and
RS(10,4) and LRC(10,2,2) in the Stripe layout, it models the recovery
throughput of one lost disk and the mean normal and degraded read times of
whole objects.

Objects are drawn log-uniformly from 1 MiB to 700 MiB (mean ≈ 107 MiB,
about W1's 102.8 MB). The machine is the paper's: 16 nodes of 6 disks,
12 cores, 56 Gb/s node links, 1 Gb/s clients; each disk is the
spinning-disk model of cairn's other experiments (250 MB/s, 4.2 ms per
request that does not continue the previous one). What is measured on this
machine: the decode rates of the real codecs on one core (clay-10-4-13's
sub-chunk repair, rs-10-4's decode), and each Clay helper's reads, taken
from codec/clay's repair plan.

Writes DIR/gp.csv and DIR/tradeoff.png and prints, last, a JSON line with
recovery_vs_rs, recovery_vs_lrc, degraded_over_normal_read and
degraded_vs_stripe_max (Clay+GP with s0 = 4 MiB), the small-size bucket's
share of bytes for the three s0, and "modelled": true.
--quick: 2000 objects and short codec measurements (seconds).`

func runGP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn-bench gp", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "the small run: 2000 objects, 0.3 s per codec measurement")
	out := fs.String("out", "", "directory for gp.csv and the plot (default: a new directory under the system's temp dir)")
	objects := fs.Int("objects", 0, "objects of the workload (default 20000, --quick 2000)")
	seed := fs.Uint64("seed", 1, "seed of the object sizes")
	asJSON := fs.Bool("json", false, "print only the JSON summary")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", gpHelp)
		fs.PrintDefaults()
	}
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	if *objects < 0 || *objects > 10_000_000 {
		return fmt.Errorf("%w: --objects: want 0 … 10000000", cmdline.ErrUsage)
	}
	w := gpbench.W1
	w.Seed = *seed
	dur := 2 * time.Second
	if *quick {
		w.Count, dur = 2000, 300*time.Millisecond
	}
	if *objects > 0 {
		w.Count = *objects
	}
	say := func(f string, a ...any) {
		if !*asJSON {
			fmt.Fprintf(stdout, f+"\n", a...)
		}
	}
	dir, err := outDir(*out, "cairn-bench-gp-")
	if err != nil {
		return err
	}
	clay, rs, err := gpbench.Codes(10, 4)
	if err != nil {
		return err
	}
	say("measuring %s repair and %s decode on one core (%v each)", clay.Policy(), rs.Policy(), dur)
	m := gpbench.PaperMachine
	if m.ClayRepair, m.RSDecode, err = gpbench.Measure(clay, rs, dur); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	say("clay repair %.0f MB/s, rs decode %.0f MB/s per core; modelling %d objects", m.ClayRepair/1e6, m.RSDecode/1e6, w.Count)
	md, err := gpbench.NewModel(m, clay, gpbench.LRCRead)
	if err != nil {
		return err
	}
	rows, err := md.Run(gpbench.Schemes, w.Sizes())
	if err != nil {
		return err
	}
	for _, r := range rows {
		say("%-10s recovery %6.3f GB/s (%s-bound)  normal read %.3f s  degraded read %.3f s  small bucket %.1f%%",
			r.Scheme, r.RecoveryBps/1e9, r.Bound, r.NormalRead, r.DegradedRead, 100*r.SmallShare)
	}
	line := struct {
		gpbench.Summary
		Objects       int     `json:"objects"`
		ClayRepairBps float64 `json:"clay_repair_bytes_per_s"`
		RSDecodeBps   float64 `json:"rs_decode_bytes_per_s"`
	}{gpbench.Summarize(rows), w.Count, m.ClayRepair, m.RSDecode}
	return report(stdout, say, dir, "gp.csv", rows, gpbench.WriteCSV, gpbench.Plot, line)
}
