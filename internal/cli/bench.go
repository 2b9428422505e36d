package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"cairn/bench/codecbench"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/cmdline"
	"cairn/internal/progress"
	"cairn/internal/units"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn bench", benchAbout, []cmdline.Command{
		{Name: "codec", Summary: "encode/decode/repair throughput of a code, against memcpy", Run: runBenchCodec},
		{Name: "put", Summary: "PUT throughput of a running cluster vs the raw disk directories", Run: runBenchPut},
		{Name: "get", Summary: "GET throughput of a running cluster vs the raw disk directories", Run: runBenchGet},
		{Name: "s3", Summary: "S3 PUT/GET throughput and latency of concurrent clients; --slow-disk: healthy vs one slow disk", Run: runBenchS3},
		{Name: "push", Summary: "the PUSH paper's repair experiment: PULL/PUSH-Rep/Sur on shaped links (runs cairn-bench)", Run: runBenchExternal("push")},
		{Name: "grid", Summary: "the Grid RS storage paper's experiment: coding vs transfer, striping vs replication on wide-area links (runs cairn-bench)", Run: runBenchExternal("grid")},
		{Name: "robustore", Summary: "the RobuSTore paper's experiment: speculative access on 64 heterogeneous disks (runs cairn-bench)", Run: runBenchExternal("robustore")},
		{Name: "gp", Summary: "the Geometric Partitioning paper's experiment, as a time model (runs cairn-bench)", Run: runBenchExternal("gp")},
		{Name: "raidp", Summary: "the RAIDP paper's experiment: writes vs replication, dual-failure rebuild vs RS, on real nodes (runs cairn-bench)", Run: runBenchExternal("raidp")},
	}, args, stdout, stderr)
}

const benchCodecHelp = `Usage: cairn bench codec [--code POLICY[,POLICY...]] [--shard SIZE] [--threads N] [--json]

Measures a code's throughput on this machine, the way an operator sizes a
server: encode (make parity), decode1 and decodem (rebuild the data with 1
and with M data shards lost), repair (rebuild one lost shard from its repair
plan), mulacc (the dst ^= c·src primitive) and memcpy of the same bytes as
the stripe's data, measured in the same run as the reference.

Throughput is bytes per second of data: K·shard per stripe for encode,
decode and memcpy; the rebuilt shard for repair; the source for mulacc.
Each op runs on N goroutines, each with its own stripe; by default once
with 1 goroutine and once with one per core.

Policies:
%s
Flags:
`

func runBenchCodec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn bench codec", flag.ContinueOnError)
	codes := fs.String("code", "rs-10-4", "policies to measure, comma-separated")
	shardFlag := fs.String("shard", "1MiB", "shard size (e.g. 64KiB, 1MiB); rounded up to what the code needs")
	threads := fs.Int("threads", 0, "goroutines per op; 0 runs 1 and then one per core ("+fmt.Sprint(runtime.GOMAXPROCS(0))+" here)")
	jsonOut := fs.Bool("json", false, "print one JSON object per measurement instead of a table")
	dur := fs.Duration("time", time.Second, "how long to run each op")
	opsFlag := fs.String("ops", "", "only these ops, comma-separated (default: all)")
	seed := fs.Uint64("seed", 1, "seed for the random stripe contents")
	fs.Usage = func() {
		var b strings.Builder
		for _, s := range all.Schemes {
			fmt.Fprintf(&b, "  %-12s %s (e.g. %s)\n", s.Form, s.Summary, s.Example)
		}
		fmt.Fprintf(fs.Output(), benchCodecHelp, b.String())
		fs.PrintDefaults()
	}
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	shard, err := units.ParseSize(*shardFlag)
	if err != nil || shard <= 0 || shard > 1<<30 {
		return fmt.Errorf("%w: --shard %q: want a size between 1 byte and 1GiB", ErrUsage, *shardFlag)
	}
	if *threads < 0 {
		return fmt.Errorf("%w: --threads must not be negative", ErrUsage)
	}
	if *dur <= 0 {
		return fmt.Errorf("%w: --time must be positive", ErrUsage)
	}
	threadSet := []int{*threads}
	if *threads == 0 {
		threadSet = []int{1}
		if n := runtime.GOMAXPROCS(0); n > 1 {
			threadSet = append(threadSet, n)
		}
	}
	var only []string
	if *opsFlag != "" {
		only = strings.Split(*opsFlag, ",")
	}
	var policies []codec.Code
	for _, p := range strings.Split(*codes, ",") {
		c, err := all.New(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("%w: --code: %v", ErrUsage, err)
		}
		policies = append(policies, c)
	}

	var tw *tabwriter.Writer
	if !*jsonOut {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "code\top\tthreads\tshard\tthroughput\tvs memcpy\textra\t")
	}
	// The ops of each code (they make their stripes only when measured),
	// counted first for the progress bar.
	sizes, opsOf, measurements := make([]int, len(policies)), make([][]codecbench.Op, len(policies)), 0
	for i, c := range policies {
		p := c.Params()
		sizes[i] = int(shard)
		if m := max(p.ShardMultiple, 1); sizes[i]%m != 0 {
			sizes[i] = (sizes[i] + m - 1) / m * m
		}
		ops, err := codecbench.Ops(c, sizes[i], *seed)
		if err != nil {
			return err
		}
		ops = slices.DeleteFunc(ops, func(op codecbench.Op) bool {
			return only != nil && !slices.Contains(only, op.Name) && op.Name != "memcpy"
		})
		opsOf[i], measurements = ops, measurements+len(ops)*len(threadSet)
	}
	bar := progress.New(stderr, "bench codec", int64(measurements), progress.Steps)
	defer bar.Done()
	for i, c := range policies {
		size, ops := sizes[i], opsOf[i]
		for _, t := range threadSet {
			results := make([]codecbench.Result, 0, len(ops))
			var memcpy float64
			for _, op := range ops {
				if err := ctx.Err(); err != nil {
					return err
				}
				bar.Describe(fmt.Sprintf("bench codec %s %s ×%d", c.Policy(), op.Name, t))
				r, err := codecbench.Measure(op, t, *dur)
				bar.Add(1)
				if err != nil {
					return fmt.Errorf("%s: %w", c.Policy(), err)
				}
				r.Code, r.Shard = c.Policy().String(), size
				if op.Name == "memcpy" {
					memcpy = r.BytesPerS
				}
				results = append(results, r)
			}
			bar.Clear() // JSON lines go out now, on the terminal the bar may share
			for _, r := range results {
				if *jsonOut {
					if err := writeJSON(stdout, r, memcpy); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.2f\t%s\t\n", r.Code, r.Op, r.Threads, units.FormatSize(int64(r.Shard)),
					units.FormatRate(r.BytesPerS), r.BytesPerS/memcpy, extras(r.Extra))
			}
		}
	}
	bar.Done()
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

func extras(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// writeJSON prints one result as a JSON object: the Result fields, the
// op's extra fields, and vs_memcpy.
func writeJSON(w io.Writer, r codecbench.Result, memcpy float64) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	for k, v := range r.Extra {
		if _, clash := obj[k]; clash {
			return errors.New("bench: extra field " + k + " clashes with a result field")
		}
		obj[k] = v
	}
	if memcpy > 0 {
		obj["vs_memcpy"] = r.BytesPerS / memcpy
	}
	b, err = json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
