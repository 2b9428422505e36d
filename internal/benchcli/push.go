package benchcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"cairn/bench/pushbench"
	"cairn/internal/cmdline"
	"cairn/internal/units"
	"cairn/node"
	"cairn/repair/plan"
)

const pushHelp = `Usage: cairn-bench push [--quick] [--out DIR] [--link RATE] [--disk-rate RATE] [--seek DUR] [--json]

Reproduces the PUSH paper's reconstruction experiment (its Figs. 8-11) on
real processes: it starts an embedded etcd and storage nodes (cairn node,
one disk each, links shaped by the node to --link per direction), lays out
(k+r, k) RS stripes so that every node holds one shard of each, fails f
nodes, and rebuilds their data with PULL-Rep, PULL-Sur, PUSH-Rep and
PUSH-Sur through the nodes' repair endpoints, next to the repair-time
model's prediction for each.

The paper's nodes had 1 GbE links (about 117 MB/s) and one spinning disk
each, with the CPU idle; here every node shares two cores, so links and
disks are all slowed down by one factor until they, not the CPU, bound the
repair; the output prints the factor and the CPU use of every run. Each
node's disk is modelled as a current 7200 rpm disk — 250 MB/s sequential,
and 4.2 ms (half a rotation) for each request that does not continue the
previous one — slowed by that factor, with a page cache that lets writes
run ahead until a sync. A push hop reads its shard in 4 MiB runs and
targets write in 4 MiB runs, while a pull fetches one request unit per
GET, so on these disks PULL-Sur pays the seeks the paper describes (its
Fig. 6: under 5 MB/s of writes in that mix). --disk-rate 0 leaves the disks
unthrottled (links only).

Points: k in {6, 9, 12}, r in {3, 4}, f in {1, 2}, request units of 128 KiB
and 1 MiB, plus units of 64 KiB to 2 MiB at k=6, r=3, f=1 (about 40
minutes); --quick: k=6, r=3, f=1 and f=2 at 128 KiB (about 2 minutes). The speedups are taken at k=6, r=3, f=1 with 128 KiB
units, the paper's. The -Sur schemes rebuild one stripe per survivor at
once, the -Rep schemes 4 (--concurrency overrides both).

The model beside each time is repair/plan's bottleneck model of the plans
(the paper's Eqs. 9-12 where they apply), with the disks' rates for the
request sizes the nodes use, plus what a finite run adds to that steady
state: the fill (a PUSH chain's first slice crosses k links in turn; the
first wave's helper reads queue on each disk) and the drain (the final
wave's last write runs queue on the targets' disks).

Writes DIR/push.csv and PNG plots (time against k, against the unit, and
measured against the model) and prints, last, a JSON line with
push_rep_speedup and push_sur_speedup (PULL ÷ PUSH at k=6, r=3, f=1),
model_error_max, cpu_util_max and max_partials_per_slice.`

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn-bench push", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "the small run (k=6, r=3; under 3 minutes)")
	out := fs.String("out", "", "directory for push.csv and the plots (default: a new directory under the system's temp dir)")
	link := fs.String("link", "8MiB", "each node's link, bytes per second in each direction")
	nodeData := fs.String("node-data", "", "data each failed node held, rounded up to whole stripes per survivor (default 24MiB)")
	shard := fs.String("shard", "4MiB", "shard size (each stripe's share of a node; a push hop reads it, and a target writes it, in runs of up to 4 MiB)")
	diskRate := fs.String("disk-rate", "", "each node's disk, sequential bytes per second (default: 250MB scaled like the link; 0: not throttled)")
	seek := fs.Duration("seek", 0, "each node's disk: time of a request that does not continue the previous one (default: 4.2ms scaled like the link)")
	asJSON := fs.Bool("json", false, "print only the JSON summary")
	conc := fs.Int("concurrency", 0, "stripes rebuilt at once (default: the number of surviving nodes for -Sur, 4 for -Rep)")
	var only []pushbench.Point
	fs.Func("point", "measure only this point, K,R,F,UNIT (e.g. 6,3,1,128KiB; repeatable)", func(v string) error {
		f := strings.Split(v, ",")
		if len(f) != 4 {
			return errors.New("want K,R,F,UNIT")
		}
		var p pushbench.Point
		var err error
		for i, dst := range []*int{&p.K, &p.R, &p.F} {
			if *dst, err = strconv.Atoi(f[i]); err != nil || *dst < 1 {
				return fmt.Errorf("bad number %q", f[i])
			}
		}
		if p.Unit, err = units.ParseSize(f[3]); err != nil || p.Unit <= 0 {
			return fmt.Errorf("bad unit %q", f[3])
		}
		if p.F > p.R {
			return errors.New("f must be at most r")
		}
		only = append(only, p)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", pushHelp)
		fs.PrintDefaults()
	}
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	size := func(name, v, def string) (int64, error) {
		if v == "" {
			v = def
		}
		n, err := units.ParseSize(v)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: --%s: want a positive size", cmdline.ErrUsage, name)
		}
		return n, nil
	}
	linkRate, err := size("link", *link, "")
	if err != nil {
		return err
	}
	data, err := size("node-data", *nodeData, "24MiB")
	if err != nil {
		return err
	}
	shardSize, err := size("shard", *shard, "")
	if err != nil {
		return err
	}
	factor := 117e6 / float64(linkRate) // the paper's 1 GbE ÷ our link
	disk := int64(250e6 / factor)
	if *diskRate != "" {
		if disk, err = units.ParseSize(*diskRate); err != nil || disk < 0 {
			return fmt.Errorf("%w: --disk-rate: want a size per second, or 0", cmdline.ErrUsage)
		}
	}
	if *seek < 0 {
		return fmt.Errorf("%w: --seek must not be negative", cmdline.ErrUsage)
	}
	if *seek == 0 && disk > 0 {
		*seek = time.Duration(4.2 * factor * float64(time.Millisecond)).Round(100 * time.Microsecond)
	}
	if disk == 0 {
		*seek = 0
	}
	bar, step := stepsBar(stderr, "bench push")
	defer bar.Done()
	say := sayer(stdout, bar, *asJSON)
	points := only
	if len(points) > 0 {
	} else if *quick {
		points = []pushbench.Point{{K: 6, R: 3, F: 1, Unit: 128 << 10}, {K: 6, R: 3, F: 2, Unit: 128 << 10}}
	} else {
		for _, k := range []int{6, 9, 12} {
			for _, r := range []int{3, 4} {
				for _, f := range []int{1, 2} {
					us := []int64{128 << 10, 1 << 20}
					if k == 6 && r == 3 && f == 1 {
						us = []int64{64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20}
					}
					for _, u := range us {
						if u <= shardSize {
							points = append(points, pushbench.Point{K: k, R: r, F: f, Unit: u})
						}
					}
				}
			}
		}
	}
	need := 0
	for _, p := range points {
		need = max(need, p.K+p.R+p.F)
	}
	dir, err := outDir(*out, "cairn-bench-push-")
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "cairn-push-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	say("starting etcd and %d nodes in %s: links %s/s each way, %.1f× slower than 1 GbE", need, work, units.FormatSize(linkRate), factor)
	if disk > 0 {
		say("disks %s/s sequential, %v per seek (a 7200 rpm disk slowed %.1f×)", units.FormatSize(disk), *seek, factor)
	} else {
		say("disks not throttled")
	}
	cl, err := startPushCluster(ctx, work, need, linkRate, disk, *seek)
	if err != nil {
		return err
	}
	defer cl.stop()

	cfg := pushbench.Config{Points: points, Schemes: plan.Schemes, NodeData: data, ShardSize: shardSize,
		LinkRate: float64(linkRate), DiskRate: float64(disk), Seek: *seek, Seed: 1, Concurrency: *conc, Log: func(f string, a ...any) { say(f, a...) }, Progress: step}
	rows, err := pushbench.Run(ctx, cfg, cl.nodes, cl.client, runtime.NumCPU())
	if err != nil {
		return err
	}
	sum := pushbench.Summarize(rows)
	line := struct {
		pushbench.Summary
		LinkBytesPerS int64   `json:"link_bytes_per_s"`
		ScaleFactor   float64 `json:"link_scale_vs_1gbe"`
		DiskBytesPerS int64   `json:"disk_bytes_per_s"`
		SeekSeconds   float64 `json:"seek_s"`
		NodeData      int64   `json:"node_data_bytes"`
	}{sum, linkRate, factor, disk, seek.Seconds(), data}
	return report(stdout, say, dir, "push.csv", rows, pushbench.WriteCSV, pushbench.Plot, line)
}

// writeBehind is how far writes may run ahead of a bench node's disk
// (its page cache): rebuilt data streams in while earlier runs are
// written, and each shard's fsync waits for its own.
const writeBehind = 16 << 20

// pushCluster is an embedded etcd and node processes for an experiment.
type pushCluster struct {
	nodes  []pushbench.Node
	client *node.Client
	stop   func()
}

func startPushCluster(ctx context.Context, dir string, n int, linkRate, diskRate int64, seek time.Duration) (*pushCluster, error) {
	specs := make([]nodeSpec, n)
	for i := range specs {
		id := fmt.Sprintf("n%d", i+1)
		disk := filepath.Join(dir, id)
		if diskRate > 0 {
			disk += fmt.Sprintf(",bw=%d,seek=%v,wb=%d", diskRate, seek, writeBehind)
		}
		specs[i] = nodeSpec{ID: id, Disks: []string{disk}, Args: []string{"--link-rate", strconv.FormatInt(linkRate, 10)}}
	}
	procs, nc, stop, err := startNodes(ctx, dir, specs)
	if err != nil {
		return nil, err
	}
	cl := &pushCluster{client: nc, stop: stop}
	for _, p := range procs {
		cl.nodes = append(cl.nodes, pushbench.Node{ID: p.ID, Addr: p.Addr, Disk: p.Disks[0], CPU: p.CPU})
	}
	return cl, nil
}
