package benchcli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"cairn"
	"cairn/bench/gpbench"
	"cairn/codec/all"
	"cairn/cold"
	"cairn/internal/cmdline"
	"cairn/internal/units"
	"cairn/layout/gp"
)

const gpHelp = `Usage: cairn-bench gp [--quick] [--out DIR] [--objects N] [--seed N] [--model-only]
                       [--scale X] [--shrink F] [--node-objects N] [--node-reads N]
                       [--codes LIST] [--json]

The Geometric Partitioning paper's experiment (its Figure 9, workload W1),
in two parts.

On real node processes (skipped with --model-only): for each code
(--codes: clay-10-4-13, rs-10-4 and lrc-10-2-2, all in the Geometric
Partitioning layout of package cold) an embedded etcd and 16 storage nodes,
one throttled disk each (the spinning-disk model slowed --scale times:
250 MB/s and 4.2 ms per seek), hold 7 placement groups, rotations of the
16 disks that hold the lost disk at stripe positions 0, 2, …, 12, with 10
objects each (20 without --quick), the largest first, each to the group
with the fewest bytes. The groups are set up on the machine's own disks
(export, then --pad: every never-written data slot of a used row written
with zeros and kept as a free slot, so the groups are full as the paper's
are), and the nodes restart on their throttled disks to be measured.
The run is the paper's W1 setup shrunk --shrink (F) times in every size
that meets the disk: s0 = 4 MiB/F, q = 2, chunks up to 256 MiB/F, objects
drawn log-uniformly from 1 MiB/F to 700 MiB/F (the model's W1), and the
disk's bytes per seek (250 MB/s × 4.2 ms) divided by F too (the seek is
4.2 ms × scale / F), so that a Clay helper's sub-chunk runs cost, against
the seeks between them, what they cost the paper's disks; F = 4 is the
most the code allows (s0 ≥ 1 MiB, clay-10-4-13's sub-chunk unit).
For Clay it reads a sample of the objects whole through a client link of
1 Gb/s slowed --scale times, normally and with the object's disk
unavailable, and the same objects in the Stripe-Max layout (one stripe per
object) and the Contiguous one (64 MiB/F chunks), losing the same disk.
Stripe-Max is read twice: sending each strip once it and those before it
are in (degraded_vs_stripe_max), and as the paper's system read a stripe,
sending nothing before all of it is in
(degraded_vs_stripe_max_whole_stripe_reader). The link sends each write
from when it comes: a read that starts late cannot catch up.
Then for each code it rebuilds one disk in all its groups at once (each
group's copy onto a disk outside it, so the writes spread as the paper's
do) under one weight budget (64 units of 4 MiB; the paper's 512 assumed
128 GB servers) and times it. These give the measured recovery_vs_rs,
recovery_vs_lrc, degraded_over_normal_read and degraded_vs_stripe_max.
Mind the memory: an export holds whole rows (K+M chunks, at most 512 MiB
of rows per group, 4 groups at once) and a rebuild its tasks' helper
reads (RS: about 3 GB live, 10 helpers' reads for each chunk the weight
budget admits). Without a heap limit the garbage on top grew the process
to 11.5 GB; --mem-limit bounds it.

As a TIME MODEL (always): for Clay(10,4) with Geometric
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

Writes DIR/gp.csv (the model), DIR/gp-nodes.csv (the measurements) and
DIR/tradeoff.png and prints, last, a JSON line with recovery_vs_rs,
recovery_vs_lrc, degraded_over_normal_read and degraded_vs_stripe_max, the
small-size bucket's share of bytes for the three s0 (model), and which
fields were measured on nodes ("measured") and which modelled. The
modelled ratios are also given as model_*.
--quick: 70 objects on the nodes, 5 of them read (4 min 25 s on this
2-core machine, lightly loaded; peak memory 6.3 GB with the default
--mem-limit), 2000 in the model.`

func runGP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn-bench gp", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "the small run: 2000 objects, 0.3 s per codec measurement")
	out := fs.String("out", "", "directory for gp.csv and the plot (default: a new directory under the system's temp dir)")
	objects := fs.Int("objects", 0, "objects of the workload (default 20000, --quick 2000)")
	seed := fs.Uint64("seed", 1, "seed of the object sizes")
	asJSON := fs.Bool("json", false, "print only the JSON summary")
	modelOnly := fs.Bool("model-only", false, "only the time model: start no node process")
	scale := fs.Float64("scale", 10, "how many times slower than the paper's disks and client links the nodes run")
	nodeObjects := fs.Int("node-objects", 0, "objects on the nodes per code (default 140, --quick 70)")
	shrink := fs.Int64("shrink", 4, "how many times smaller than the paper's every size of the node run is (1, 2 or 4)")
	codes := fs.String("codes", "clay-10-4-13,rs-10-4,lrc-10-2-2", "the codes measured on the nodes (the first is read in the three layouts)")
	padRows := fs.Bool("pad", true, "on the nodes, fill the groups' used rows after the exports: write every never-written data slot (zeros, as free slots the recovery rebuilds too), so that the groups are full as the paper's are (--pad=false: sparse groups, where a never-written slot reads as zeros without the disk and most of a lost disk's bytes are parity)")
	nodeReads := fs.Int("node-reads", 0, "objects read whole on the nodes, normally and degraded (default 16, --quick 5)")
	memLimit := fs.String("mem-limit", "6GiB", "soft limit of this process's Go heap while the nodes run (runtime/debug.SetMemoryLimit; 0: none; GOMEMLIMIT, when set, wins); below about 3GiB the collector takes the CPU an RS rebuild's measurement needs")
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
	if *nodeObjects < 0 || *nodeObjects > 10_000 {
		return fmt.Errorf("%w: --node-objects: want 0 … 10000", cmdline.ErrUsage)
	}
	if *scale < 1 || *scale > 1000 {
		return fmt.Errorf("%w: --scale: want 1 … 1000", cmdline.ErrUsage)
	}
	if *nodeReads < 0 || *nodeReads > 10_000 {
		return fmt.Errorf("%w: --node-reads: want 0 … 10000", cmdline.ErrUsage)
	}
	limit, err := units.ParseSize(*memLimit)
	if err != nil || limit < 0 {
		return fmt.Errorf("%w: --mem-limit %q: want a size such as 3GiB, or 0", cmdline.ErrUsage, *memLimit)
	}
	if *shrink != 1 && *shrink != 2 && *shrink != 4 {
		return fmt.Errorf("%w: --shrink: want 1, 2 or 4 (s0 = 4 MiB/F must stay a multiple of clay-10-4-13's 1 MiB sub-chunk unit)", cmdline.ErrUsage)
	}
	geo, err := gp.NewGeometry(4<<20 / *shrink, 2, 256<<20 / *shrink)
	if err != nil {
		return err
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
	bar, step := stepsBar(stderr, "bench gp")
	defer bar.Done()
	say := sayer(stdout, bar, *asJSON)
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
	sum := gpbench.Summarize(rows)
	line := struct {
		gpbench.Summary
		ModelRecoveryVsRS           float64  `json:"model_recovery_vs_rs"`
		ModelRecoveryVsLRC          float64  `json:"model_recovery_vs_lrc"`
		ModelDegradedOverNormalRead float64  `json:"model_degraded_over_normal_read"`
		ModelDegradedVsStripeMax    float64  `json:"model_degraded_vs_stripe_max"`
		Measured                    []string `json:"measured"`
		Objects                     int      `json:"objects"`
		NodeObjects                 int      `json:"node_objects,omitempty"`
		Scale                       float64  `json:"scale,omitempty"`
		Shrink                      int64    `json:"shrink,omitempty"`
		NodeReads                   int      `json:"node_reads,omitempty"`
		ClayRepairBps               float64  `json:"clay_repair_bytes_per_s"`
		RSDecodeBps                 float64  `json:"rs_decode_bytes_per_s"`
	}{Summary: sum, ModelRecoveryVsRS: sum.RecoveryVsRS, ModelRecoveryVsLRC: sum.RecoveryVsLRC,
		ModelDegradedOverNormalRead: sum.DegradedOverNormalRead, ModelDegradedVsStripeMax: sum.DegradedVsStripeMax, Measured: []string{},
		Objects: w.Count, ClayRepairBps: m.ClayRepair, RSDecodeBps: m.RSDecode}
	if !*modelOnly {
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set && limit > 0 {
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit)) // the node run's garbage, not the model's
		}
		n, reads := 20*len(lostAt), 16
		if *quick {
			n, reads = perGroup*len(lostAt), 5
		}
		if *nodeObjects > 0 {
			n = *nodeObjects
		}
		if *nodeReads > 0 {
			reads = *nodeReads
		}
		wl := gpbench.Workload{Count: n, Min: gpbench.W1.Min / *shrink, Max: gpbench.W1.Max / *shrink, Seed: *seed}
		var ncodes []gpbench.NodeCode
		for i, c := range strings.Split(*codes, ",") {
			if _, err := all.New(c); err != nil {
				return fmt.Errorf("%w: --codes: %v", cmdline.ErrUsage, err)
			}
			nc := gpbench.NodeCode{Code: c}
			if i == 0 {
				nc.Reads, nc.Layouts = reads, true
			}
			ncodes = append(ncodes, nc)
		}
		nrows, err := runGPNodes(ctx, *quick, *padRows, *scale, *shrink, geo, wl, ncodes, say, step)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, "gp-nodes.csv"), func(w io.Writer) error { return gpbench.WriteNodeCSV(w, nrows) }); err != nil {
			return err
		}
		line.Summary, line.Measured = gpbench.SummarizeNodes(line.Summary, nrows)
		line.NodeObjects, line.Scale, line.Shrink, line.NodeReads = n, *scale, *shrink, reads
	}
	return report(stdout, say, dir, "gp.csv", rows, gpbench.WriteCSV, gpbench.Plot, line)
}

// repairBudget is the measured run's repair weight budget: 64 units of
// 4 MiB, 256 MiB of chunks rebuilt at once (each holding its helpers'
// reads too) — the paper's 512 was for servers with 128 GB of memory.
const repairBudget = 64

// lostAt are the positions in its groups of the disk the node run loses,
// one group each: every other position of the 14-disk stripe meets Clay's
// y-sections and LRC's local and global parities as often as all 14 do, and
// 7 groups of 14 of the 16 disks spread the rebuild over all of them.
var lostAt = []int{0, 2, 4, 6, 8, 10, 12}

// perGroup is the objects a group of the quick node run gets, in one
// export batch: enough that most rows of the small chunk sizes are full,
// as they are in the paper's full groups (a group with few objects holds
// mostly parity, and its lost disk would be mostly parity slots).
const perGroup = 10

// runGPNodes runs the measured part of the experiment, one code at a
// time, each on a new cluster of etcd and 16 node processes with throttled
// disks (so no code's shards fill the machine's disk for the next, and
// none reads another's from the page cache), telling step its progress.
// The disks stream 250 MB/s / scale; their seek is 4.2 ms × scale / shrink,
// so the bytes a disk streams in a seek shrink with the chunks.
func runGPNodes(ctx context.Context, quick, padRows bool, scale float64, shrink int64, geo gp.Geometry, wl gpbench.Workload, codes []gpbench.NodeCode, say func(string, ...any), step func(done, total int)) ([]gpbench.NodeRow, error) {
	rate := int64(250e6 / scale)
	seek := time.Duration(4.2 * scale / float64(shrink) * float64(time.Millisecond)).Round(100 * time.Microsecond)
	say("each code on 16 nodes: disks %.0f MB/s, %v per seek (a 7200 rpm disk slowed %.1f×, its seek shrunk %d× with the sizes); s0 %s, chunks up to %s, objects %s … %s",
		float64(rate)/1e6, seek, scale, shrink, units.FormatSize(geo.S0), units.FormatSize(geo.Max), units.FormatSize(wl.Min), units.FormatSize(wl.Max))
	var rows []gpbench.NodeRow
	step(0, len(codes))
	for _, c := range codes {
		r, err := runGPCode(ctx, quick, padRows, rate, seek, shrink, geo, wl, c, say)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
		step(len(rows), len(codes))
	}
	return rows, nil
}

// runGPCode measures one code on a new cluster.
func runGPCode(ctx context.Context, quick, padRows bool, rate int64, seek time.Duration, shrink int64, geo gp.Geometry, wl gpbench.Workload, code gpbench.NodeCode, say func(string, ...any)) ([]gpbench.NodeRow, error) {
	work, err := os.MkdirTemp("", "cairn-gp-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	// The groups are set up (exported, padded) on the machine's own disks
	// and measured on throttled ones: the nodes restart in between.
	fast, slow := make([]nodeSpec, 16), make([]nodeSpec, 16)
	for i := range fast {
		id := fmt.Sprintf("n%d", i+1)
		fast[i] = nodeSpec{ID: id, Disks: []string{filepath.Join(work, id)}}
		slow[i] = nodeSpec{ID: id, Disks: []string{filepath.Join(work, id) + fmt.Sprintf(",bw=%d,seek=%v,wb=%d", rate, seek, writeBehind)}}
	}
	cl, err := startCluster(ctx, work, fast)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	var disks []cairn.DiskID
	for _, p := range cl.procs {
		disks = append(disks, p.Disks[0])
	}
	nr := gpbench.NodeRun{Disks: disks, LostAt: lostAt, Nodes: cl.client, Geo: geo, Sizes: wl.Sizes(), Gap: cold.CoalesceGap / shrink,
		ClientLink: float64(rate) / 2, // 1 Gb/s beside the disk's 250 MB/s, slowed alike
		Budget:     repairBudget, Batch: perGroup, Pad: padRows, Log: say, CPU: procStatCPU,
		Measured: func(ctx context.Context) error { return cl.restart(ctx, slow) }}
	if !quick {
		nr.Contiguous = 64 << 20 / shrink
	}
	return nr.Run(ctx, []gpbench.NodeCode{code})
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// procStatCPU returns the machine's busy and total CPU time in ticks from
// /proc/stat (Linux; zeros elsewhere, which NodeRun ignores).
func procStatCPU() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, s := range f[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}
