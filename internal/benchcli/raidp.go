package benchcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"cairn"
	"cairn/bench/raidpbench"
	"cairn/client"
	"cairn/internal/cmdline"
	"cairn/internal/units"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
	"cairn/raidp"
)

const raidpHelp = `Usage: cairn-bench raidp [--quick] [--out DIR] [--nodes N] [--slots S] [--superchunk SIZE] [--link RATE] [--json]

Reproduces the RAIDP paper's experiment (its §5) on real processes: an
embedded etcd and N storage nodes (cairn node, one disk each with an Lstor
beside it, links shaped by the node to --link per direction). Each part runs
on a fresh cluster of the same disks:

  (a) the same stream of objects written, then read back and checked, under
      raidp, rep-2, rep-3 and rs-(N-4)-2: throughput, and per user byte the
      disk bytes (read and written), the stored bytes, the network bytes
      (counted on the bench's connections: the nodes do not forward writes)
      and the Lstors' bytes apart, all counted by the nodes' disk counters;
  (b) two disks that share a raidp superchunk fail: the time to leave the
      critical state — for raidp the shared superchunk rebuilt from both
      Lstors and the mirrors (the dual plan's rebuild), for rs and rep-3
      the repair queue (scan, then the riskiest stripes first, 2 at a time
      as the director does) until no stripe has lost two pieces;
  (c) one disk fails: its superchunks re-mirrored with the matching
      receivers against random ones (the naive plan), on two clusters in
      the same state.

The data volume is 90% of the raidp group's space, the same for every
policy. rs uses K = N-4 so that two spare nodes remain to rebuild onto.

Disks are a current 7200 rpm disk (250 MB/s sequential, 4.2 ms per request
that does not continue the previous one) and the links 1 GbE, all slowed by
one factor until they, not the two cores, bound the run (the output says
the factor). The paper's Lstor is battery-backed DRAM with flash (its §3.2:
parity stored at least as fast as the disk stores data); here it is a
throttled directory of 2 GB/s scaled by the same factor, without seeks, on
its own throttle (another device). Its journal's fsyncs are the machine's.

--quick: N=16, 4 MiB superchunks, 9 slots per disk (about 3 minutes). The
full run: N=16, 32 MiB superchunks, 9 slots (about 19 minutes). 16 nodes are the paper's
cluster, and the gap it measured needs them: raidp's critical data is one
superchunk, RS's grows with a disk's contents, and 1-sharing (kept after a
recovery) caps the group's rows (superchunks per disk) at
min(slots·(N−2)/N, (N−2)(N−3)/N): 3 at N=8, 7 at N=16 with 9 slots. Below
N/2 rows the layout is bipartite: no disk holds replicas of both failed
disks' superchunks, so every mirror sends only half a superchunk. The free
slots (2 per disk) are where re-mirroring copies go: with one free slot
per disk no plan can give a receiver two superchunks, and matching and
naive plans coincide. The earlier quick run, at 8 nodes: --quick --nodes 8
--superchunk 8MiB --slots 8.

Writes DIR/raidp.csv and PNG plots and prints, last, a JSON line with
write_vs_rep3, write_vs_rep2, critical_exit_speedup_vs_rs,
storage_per_byte, network_per_byte, lstor_per_byte, matching_over_naive
and measured.`

func runRaidp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn-bench raidp", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "the small run (16 nodes, 4 MiB superchunks)")
	out := fs.String("out", "", "directory for raidp.csv and the plots (default: a new directory under the system's temp dir)")
	nodesFlag := fs.Int("nodes", 0, "nodes, one disk each (default 16)")
	link := fs.String("link", "8MiB", "each node's link, bytes per second in each direction")
	scFlag := fs.String("superchunk", "", "superchunk size, a multiple of 64KiB (default 32MiB; 4MiB with --quick)")
	objFlag := fs.String("object", "2MiB", "object size of the stream")
	conc := fs.Int("concurrency", 4, "objects written and read at once")
	slots := fs.Int("slots", 0, "superchunk slots per disk (default 9): with the nodes, they set the group's rows; the rest are free for re-mirroring")
	asJSON := fs.Bool("json", false, "print only the JSON summary")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", raidpHelp)
		fs.PrintDefaults()
	}
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	n, sc, sl := 16, "32MiB", 9
	if *quick {
		sc = "4MiB"
	}
	if *slots != 0 {
		sl = *slots
	}
	if sl < 2 {
		return fmt.Errorf("%w: --slots %d: want at least 2", cmdline.ErrUsage, sl)
	}
	if *nodesFlag != 0 {
		n = *nodesFlag
	}
	if *scFlag != "" {
		sc = *scFlag
	}
	if n < 6 {
		return fmt.Errorf("%w: --nodes %d: want at least 6 (rs-2-2 and two spares)", cmdline.ErrUsage, n)
	}
	size := func(name, v string) (int64, error) {
		x, err := units.ParseSize(v)
		if err != nil || x <= 0 {
			return 0, fmt.Errorf("%w: --%s: want a positive size", cmdline.ErrUsage, name)
		}
		return x, nil
	}
	linkRate, err := size("link", *link)
	if err != nil {
		return err
	}
	superchunk, err := size("superchunk", sc)
	if err != nil {
		return err
	}
	if superchunk%(64<<10) != 0 {
		return fmt.Errorf("%w: --superchunk %s: want a multiple of 64KiB", cmdline.ErrUsage, sc)
	}
	obj, err := size("object", *objFlag)
	if err != nil {
		return err
	}
	factor := 117e6 / float64(linkRate)
	rc := raidpRun{n: n, linkRate: linkRate, superchunk: superchunk, slots: sl,
		disk: int64(250e6 / factor), seek: time.Duration(4.2 * factor * float64(time.Millisecond)).Round(100 * time.Microsecond),
		lstor: int64(2e9 / factor)}
	rsPolicy := fmt.Sprintf("rs-%d-2", n-4)
	dir, err := outDir(*out, "cairn-bench-raidp-")
	if err != nil {
		return err
	}
	bar, step := stepsBar(stderr, "bench raidp")
	defer bar.Done()
	say := sayer(stdout, bar, *asJSON)
	say("%d nodes, links %s each way (%.1f× slower than 1 GbE); disks %s, %v per seek, write-behind %s; Lstors %s; superchunks %s, %d slots",
		n, units.FormatRate(float64(linkRate)), factor, units.FormatRate(float64(rc.disk)), rc.seek, units.FormatSize(writeBehind), units.FormatRate(float64(rc.lstor)),
		units.FormatSize(superchunk), rc.slots)

	const steps = 5
	done := 0
	step(0, steps)
	var rows []raidpbench.Row
	var w raidpbench.Workload
	var a, b int
	var failed []cairn.DiskID // disks a and b by ID (layout indexes need not follow the node order)
	var crowding float64      // the share of naive plans that crowd a receiver
	// raidp: the stream, the matching re-mirroring of disk a, the
	// critical exit of a and b.
	err = rc.with(ctx, func(cl raidpbench.Cluster, c *client.Client) error {
		g, err := rc.probe(ctx, c)
		if err != nil {
			return err
		}
		capacity := int64(len(g.Layout.Superchunks)) * g.Size
		w = raidpbench.Workload{Count: int(capacity * 9 / 10 / obj), Size: obj, Concurrency: *conc, Seed: 1}
		if w.Count < 1 {
			return fmt.Errorf("%w: --object %s is larger than 90%% of the group's %s", cmdline.ErrUsage, *objFlag, units.FormatSize(capacity))
		}
		if a, b, err = raidpbench.SharedPair(g); err != nil {
			return err
		}
		failed = []cairn.DiskID{cairn.DiskID(g.Disks[a].ID), cairn.DiskID(g.Disks[b].ID)} // the same disks in every cluster
		say("raidp group: %d disks, %d superchunks of %s; the stream: %d objects of %s (%s)", len(g.Disks), len(g.Layout.Superchunks),
			units.FormatSize(g.Size), w.Count, units.FormatSize(obj), units.FormatSize(int64(w.Count)*obj))
		r, err := raidpbench.WriteRead(ctx, cl, c, cairn.RAIDPPolicy, w)
		if err != nil {
			return err
		}
		say("%s", writeLine(r))
		rows = append(rows, r)
		m, err := raidpbench.Remirror(ctx, cl, c, a, false, 1)
		if err != nil {
			return err
		}
		if crowding, err = raidpbench.NaiveCrowding(g, a, 1000); err != nil {
			return err
		}
		say("re-mirroring %s (matching): %.2f s, at most %d superchunk(s) per receiver; %.0f%% of 1000 naive plans give a receiver two or more",
			m.Failed, m.Seconds, m.MaxPerReceiver, 100*crowding)
		rows = append(rows, m)
		e, err := raidpbench.ExitRAIDP(ctx, cl, c, a, b)
		if err != nil {
			return err
		}
		say("raidp: disks %s fail: shared superchunk rebuilt in %.2f s, both disks re-mirrored in %.2f s", e.Failed, e.Seconds, e.AllSeconds)
		rows = append(rows, e)
		return nil
	})
	if err != nil {
		return err
	}
	done++
	step(done, steps)
	// The naive re-mirroring on a cluster in the same state.
	err = rc.with(ctx, func(cl raidpbench.Cluster, c *client.Client) error {
		if _, err := rc.probe(ctx, c); err != nil {
			return err
		}
		if _, err := raidpbench.WriteRead(ctx, cl, c, cairn.RAIDPPolicy, w); err != nil {
			return err
		}
		// The first naive draw that is a plan (a draw can leave a
		// superchunk no receiver).
		var m raidpbench.Row
		var err error
		for seed := uint64(1); ; seed++ {
			m, err = raidpbench.Remirror(ctx, cl, c, a, true, seed)
			if !errors.Is(err, raidp.ErrNoAssignment) || seed == 100 {
				break
			}
		}
		if err != nil {
			return err
		}
		say("re-mirroring %s (naive): %.2f s, at most %d superchunk(s) per receiver", m.Failed, m.Seconds, m.MaxPerReceiver)
		rows = append(rows, m)
		return nil
	})
	if err != nil {
		return err
	}
	done++
	step(done, steps)
	for _, p := range []string{"rep-2", "rep-3", rsPolicy} {
		err = rc.with(ctx, func(cl raidpbench.Cluster, c *client.Client) error {
			if _, err := rc.probe(ctx, c); err != nil { // the same cluster state as raidp's
				return err
			}
			r, err := raidpbench.WriteRead(ctx, cl, c, p, w)
			if err != nil {
				return err
			}
			say("%s", writeLine(r))
			rows = append(rows, r)
			if p == "rep-2" {
				return nil
			}
			e, err := raidpbench.ExitRepair(ctx, cl, p, 2, failed, 2, 20*time.Minute)
			if err != nil {
				return err
			}
			say("%s: disks %s fail: %d critical stripes repaired in %.2f s (scan %.2f s), all in %.2f s", p, e.Failed, e.Critical, e.Seconds, e.ScanSeconds, e.AllSeconds)
			rows = append(rows, e)
			return nil
		})
		if err != nil {
			return err
		}
		done++
		step(done, steps)
	}
	line := struct {
		raidpbench.Summary
		Nodes         int     `json:"nodes"`
		RS            string  `json:"rs"`
		LinkBytesPerS int64   `json:"link_bytes_per_s"`
		ScaleFactor   float64 `json:"link_scale_vs_1gbe"`
		DiskBytesPerS int64   `json:"disk_bytes_per_s"`
		SeekSeconds   float64 `json:"seek_s"`
		LstorBytesPS  int64   `json:"lstor_bytes_per_s"`
		Superchunk    int64   `json:"superchunk_bytes"`
		UserBytes     int64   `json:"user_bytes"`
		NaiveCrowded  float64 `json:"naive_crowded_share"`
	}{raidpbench.Summarize(rows), n, rsPolicy, linkRate, factor, rc.disk, rc.seek.Seconds(), rc.lstor, superchunk, int64(w.Count) * w.Size, crowding}
	return report(stdout, say, dir, "raidp.csv", rows, raidpbench.WriteCSV, raidpbench.Plot, line)
}

func writeLine(r raidpbench.Row) string {
	return fmt.Sprintf("%s: write %s, read %s; per user byte: disk %.2f (stored %.2f), network %.2f, Lstor %.2f",
		r.Policy, units.FormatRate(r.Bps), units.FormatRate(r.ReadBps), r.DiskPerByte, r.DiskWrittenPerByte, r.NetPerByte, r.LstorPerByte)
}

// raidpRun is the cluster every part runs on.
type raidpRun struct {
	n                    int
	linkRate, superchunk int64
	slots                int
	disk, lstor          int64 // bytes per second
	seek                 time.Duration
}

// probeBucket holds the probe: raidp, apart from the stream's buckets.
const probeBucket = "probe"

// probe writes one byte under raidp (the first raidp PUT makes the group)
// and returns the group; every cluster gets it, so all start alike.
func (rc raidpRun) probe(ctx context.Context, c *client.Client) (raidp.Group, error) {
	if _, err := c.Put(ctx, probeBucket, "probe", strings.NewReader("p"), client.PutOptions{Size: 1}); err != nil {
		return raidp.Group{}, fmt.Errorf("probe: %w", err)
	}
	return c.RAIDPGroup(ctx)
}

// with starts a fresh cluster, runs f on it and stops it.
func (rc raidpRun) with(ctx context.Context, f func(raidpbench.Cluster, *client.Client) error) error {
	work, err := os.MkdirTemp("", "cairn-raidp-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	specs := make([]nodeSpec, rc.n)
	for i := range specs {
		id := fmt.Sprintf("n%d", i+1)
		d := filepath.Join(work, id, "disk")
		l := filepath.Join(work, id, "lstor")
		spec := fmt.Sprintf("%s,bw=%d,seek=%v,wb=%d,lstor=%s,lbw=%d", d, rc.disk, rc.seek, writeBehind, l, rc.lstor)
		specs[i] = nodeSpec{ID: id, Disks: []string{spec}, Args: []string{"--link-rate", strconv.FormatInt(rc.linkRate, 10),
			"--metrics-addr", "127.0.0.1:0", "--no-scrub", "--raidp-size", strconv.FormatInt(rc.superchunk, 10), "--raidp-slots", strconv.Itoa(rc.slots)}}
	}
	nc, err := startCluster(ctx, work, specs)
	if err != nil {
		return err
	}
	defer nc.stop()
	store, err := etcdmeta.Open(ctx, nc.meta, etcdmeta.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	var counter raidpbench.Counter
	nodes := node.NewClient(nc.secret, nc.resolve, counter.HTTPClient())
	var metrics []string
	cl := raidpbench.Cluster{Meta: store, Nodes: nodes, Net: &counter}
	for _, p := range nc.procs {
		cl.Disks = append(cl.Disks, p.Disks[0])
		metrics = append(metrics, p.Metrics)
	}
	var scrapes raidpbench.Counter // the scrapes' bytes are not the experiment's
	hc := scrapes.HTTPClient()
	cl.DiskIO = func(ctx context.Context) (map[string]raidpbench.DiskIO, error) {
		return raidpbench.ScrapeDiskIO(ctx, hc, metrics)
	}
	c := client.New(store, nodes, client.Config{})
	// The nodes register their disks as they start: wait for all.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := store.Disks(ctx)
		if err != nil {
			return err
		}
		if len(ds) >= rc.n {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d disks registered after 30 s", len(ds), rc.n)
		}
		time.Sleep(100 * time.Millisecond) // real time: node processes starting
	}
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: probeBucket, Policy: cairn.RAIDPPolicy}); err != nil {
		return err
	}
	return f(cl, c)
}
