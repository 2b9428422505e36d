package benchcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cairn"
	"cairn/bench/grid"
	"cairn/internal/cmdline"
	etcdmeta "cairn/meta/etcd"
)

const gridHelp = `Usage: cairn-bench grid [--quick] [--out DIR] [--reps N] [--seed N] [--json]

Reproduces the Grid RS storage paper's measurements (Pitkänen et al.;
docs/papers.md) on real processes: it starts an embedded etcd and 9 storage
nodes (cairn node), and this process is the paper's client: it stripes
files with cairn's own data path (client.Put and Get) to nodes behind
wide-area links, each with its own speed and latency, shaped in the
client (like the paper's storage elements in Switzerland, Austria,
Slovakia, Finland and the USA, seen from a client in Switzerland):

  n1 ch 40 MB/s 5 ms   n2-n3 at 16 MB/s 20 ms   n4-n5 sk 10 MB/s 35 ms
  n6-n7 fi 8 MB/s 50 ms   n8-n9 us 4 MB/s 120 ms   near: 100 MB/s 1 ms

(rates in each direction, round-trip times charged once per request).
The parts:

  (a) rs-5-3 (the paper's k=5, n=8): upload and download time by file
      size, split into coding — the client's time in the code's Encode
      and Reconstruct calls — and transfer, and a degraded download with
      3 of the 5 data shards deleted, so that every stripe is decoded
      (the paper's decoding measurement; a normal download decodes only
      when a parity shard arrives before a data shard); then, at one
      size, by packet size (cairn's block: 10, 20 and 50 kB, and the
      default 1 MiB), with the code alone in memory beside it.
  (b) 4-available files: rs-5-4 (survives 4 losses) against rep-5 (five
      copies), data moved, upload and download time; with every node far
      (global), and with the node of shard (copy) 0 — the one a read asks
      first — on the near link for the download (near; its upload runs on
      the far links: which node holds shard 0 is known only after it).
  (c) the probability that a file is readable when each node is down
      with probability p, by Monte-Carlo on the cluster's PG tables
      (cairn's placement), for rs-5-4 and rep-5, beside the binomial.

The client writes no spare streams (as the paper's client); downloads ask
K+1 shards and decode from the first K, cairn's default. Data moved counts
every byte over the links (HTTP headers included) ÷ the file size.

Writes DIR/grid.csv and PNG plots (transfer.png, packet.png,
replication.png, availability.png), prints the table and, last, a JSON
line with coding_share_upload, coding_share_download and
coding_share_download_degraded (rs-5-3 at the largest size; the paper:
about 0.10 and 0.25 at 1000 MB), data_moved_ratio_rep_over_rs (the
paper: 5 ÷ 9/5 ≈ 2.78), upload_speedup_rs_vs_rep, the download speedups
far and near, the code's own MB/s, and readable probabilities.

--quick: files of 10 and 100 MiB, the sweep and comparison at 16 MiB, one
repetition (under a minute). The full run: 10, 100 and 1000 MiB (the
paper's sizes), the sweep and comparison at 100 MiB (the paper's), 2
repetitions (about 10 minutes: the links, not the CPU, set the pace).
docs/papers.md has a full run's numbers beside the paper's.`

// gridSites are the nodes' links, in node order (n1, n2, …).
var gridSites = []grid.Link{
	{Site: "ch", Rate: 40e6, RTT: 5 * time.Millisecond},
	{Site: "at", Rate: 16e6, RTT: 20 * time.Millisecond},
	{Site: "at", Rate: 16e6, RTT: 20 * time.Millisecond},
	{Site: "sk", Rate: 10e6, RTT: 35 * time.Millisecond},
	{Site: "sk", Rate: 10e6, RTT: 35 * time.Millisecond},
	{Site: "fi", Rate: 8e6, RTT: 50 * time.Millisecond},
	{Site: "fi", Rate: 8e6, RTT: 50 * time.Millisecond},
	{Site: "us", Rate: 4e6, RTT: 120 * time.Millisecond},
	{Site: "us", Rate: 4e6, RTT: 120 * time.Millisecond},
}

var gridNear = grid.Link{Site: "near", Rate: 100e6, RTT: time.Millisecond}

func runGrid(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn-bench grid", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "the small run (under a minute)")
	out := fs.String("out", "", "directory for grid.csv and the plots (default: a new directory under the system's temp dir)")
	reps := fs.Int("reps", 0, "uploads and downloads per point (default 1 with --quick, else 2)")
	trials := fs.Int("trials", 100_000, "Monte-Carlo trials per availability point")
	seed := fs.Uint64("seed", 1, "seed for the files' bytes and the Monte-Carlo")
	asJSON := fs.Bool("json", false, "print only the JSON summary")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", gridHelp)
		fs.PrintDefaults()
	}
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	if *reps < 0 || *trials < 1 {
		return fmt.Errorf("%w: --reps must not be negative and --trials must be positive", cmdline.ErrUsage)
	}
	bar, step := stepsBar(stderr, "bench grid")
	defer bar.Done()
	say := sayer(stdout, bar, *asJSON)
	cfg := grid.Config{Bucket: "grid", Sizes: []int64{10 << 20, 100 << 20, 1000 << 20}, PacketSize: 100 << 20,
		Packets: []int{10_000, 20_000, 50_000, 0}, CompareSize: 100 << 20, Near: gridNear, Reps: 2,
		Down: []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5}, Trials: *trials, Seed: *seed, Log: func(f string, a ...any) { say(f, a...) }, Progress: step}
	if *quick {
		cfg.Sizes, cfg.PacketSize, cfg.CompareSize, cfg.Reps = []int64{10 << 20, 100 << 20}, 16<<20, 16<<20, 1
	}
	if *reps > 0 {
		cfg.Reps = *reps
	}
	dir, err := outDir(*out, "cairn-bench-grid-")
	if err != nil {
		return err
	}
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm" // the nodes' disks in memory: the links, not a disk, set the pace
	}
	work, err := os.MkdirTemp(base, "cairn-grid-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	specs := make([]nodeSpec, len(gridSites))
	for i := range specs {
		specs[i] = nodeSpec{ID: fmt.Sprintf("n%d", i+1), Disks: []string{filepath.Join(work, fmt.Sprintf("n%d", i+1))}}
	}
	say("starting etcd and %d nodes in %s", len(specs), work)
	cl, err := startCluster(ctx, work, specs)
	if err != nil {
		return err
	}
	defer cl.stop()
	store, err := etcdmeta.Open(ctx, cl.meta, etcdmeta.Options{})
	if err != nil {
		return fmt.Errorf("connecting to the bench's etcd: %w", err)
	}
	defer store.Close()
	if err := waitDisksUp(ctx, store, len(specs)); err != nil {
		return err
	}
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: cfg.Bucket, Policy: grid.Striped, Created: time.Now()}); err != nil && !errors.Is(err, cairn.ErrExists) {
		return err
	}
	links := grid.NewLinks(nil)
	var sites []string
	for i, p := range cl.procs {
		links.Set(p.Addr, gridSites[i])
		sites = append(sites, fmt.Sprintf("%s %s %g MB/s %v", p.ID, gridSites[i].Site, float64(gridSites[i].Rate)/1e6, gridSites[i].RTT))
	}
	say("links from the client: %s; near: %g MB/s %v", strings.Join(sites, ", "), float64(gridNear.Rate)/1e6, gridNear.RTT)
	rows, err := grid.Run(ctx, cfg, grid.NewEnv(store, cl.resolve, cl.secret, links))
	if err != nil {
		return err
	}
	if !*asJSON {
		if err := grid.Table(stdout, rows); err != nil {
			return err
		}
	}
	line := struct {
		grid.Summary
		Reps int `json:"reps"`
	}{grid.Summarize(rows), cfg.Reps}
	return report(stdout, say, dir, "grid.csv", rows, grid.WriteCSV, grid.Plot, line)
}

// waitDisksUp waits until the metadata store lists n disks up (the nodes
// register theirs as they start), for at most 30 s.
func waitDisksUp(ctx context.Context, store *etcdmeta.Store, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		disks, err := store.Disks(ctx)
		up := 0
		for _, d := range disks {
			if d.State == cairn.DiskUp {
				up++
			}
		}
		if err == nil && up >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d disks up (%d so far, %v): %w", n, up, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
