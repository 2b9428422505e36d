package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/internal/units"
	"cairn/meta"
	"cairn/node"
	"cairn/repair"
	"cairn/repair/plan"
)

func runAdminRepair(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin repair", "The repair queue: what is left to rebuild, and how long each scheme would take.", []cmdline.Command{
		{Name: "status", Summary: "queued repair tasks: stripes, bytes, risk, failing tasks", Run: runRepairStatus},
		{Name: "plan", Summary: "predict the repair time of each scheme (PUSH paper's models)", Run: runRepairPlan},
	}, args, stdout, stderr)
}

// RepairStatus is what `cairn admin repair status --json` prints.
type RepairStatus struct {
	Tasks    int                   `json:"tasks"`
	Bytes    int64                 `json:"bytes"`
	ByRisk   map[int]int           `json:"by_risk"` // shards a stripe can still lose → tasks
	Failing  int                   `json:"failing"` // tasks with failed attempts
	Progress *cairn.RepairProgress `json:"progress,omitempty"`
	ETA      string                `json:"eta,omitempty"` // "ETA 1.1 s" for the Ready bytes, or why there is none
	Queue    []cairn.RepairTask    `json:"queue,omitempty"`
	// Ready is what the director can rebuild now; Waiting says why the
	// rest waits, by reason; Why, by task ID, for the tasks that wait.
	// Only the first Checked tasks are judged (the rest count as Ready).
	Ready   int64       `json:"ready_bytes"`
	Waiting []waitGroup `json:"waiting,omitempty"`
	// RAIDP is the raidp group's ongoing recovery, if any (run by the
	// director beside the queue: docs/design/raidp.md, "Stored plan").
	RAIDP   string            `json:"raidp,omitempty"`
	Why     map[string]string `json:"why,omitempty"`
	Checked int               `json:"checked"`
}

func runRepairStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin repair status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON (with the whole queue)")
	show := fs.Int("show", 10, "tasks to list, riskiest first")
	watch := addWatchFlags(fs, "cairn admin repair status")
	cmdline.Usage(fs, "cairn admin repair status [--json] [--show N] [--watch [--interval D] [--count N]]",
		`Shows the repair queue the director works through: how many stripes (objects
or parts) have lost shards, how many bytes are left to rebuild, how close the
riskiest stripes are to data loss ("risk 0": one more lost shard loses data),
and the tasks that failed with their last error (they are retried with a
backoff). The director logs each repaired stripe. With --watch the status
refreshes every --interval, e.g. to follow a repair to the end.`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		if err := watch.validate(); err != nil {
			return err
		}
		return watch.run(ctx, stdout, *asJSON, func(ctx context.Context, stdout io.Writer) error {
			return printRepairStatus(ctx, cl, stdout, *asJSON, *show)
		})
	})
}

// printRepairStatus writes the repair queue's status to stdout: JSON (with
// the whole queue) if asJSON, else text listing the show riskiest tasks.
func printRepairStatus(ctx context.Context, cl *cluster, stdout io.Writer, asJSON bool, show int) error {
	ts, err := meta.AllRepairTasks(ctx, cl.meta)
	if err != nil {
		return err
	}
	q, err := judgeQueue(ctx, cl.meta, ts)
	if err != nil {
		return err
	}
	st := RepairStatus{Tasks: len(ts), Bytes: q.Bytes, ByRisk: map[int]int{}, Failing: q.Failing,
		Ready: q.Ready, Waiting: q.Waiting, Why: q.Why, Checked: q.Checked}
	for _, t := range ts {
		st.ByRisk[t.Risk]++
	}
	if p, err := cl.meta.RepairProgress(ctx); err == nil {
		st.Progress = &p
	}
	if q.Ready > 0 {
		st.ETA = q.eta(st.Progress, time.Now())
	}
	if st.RAIDP, err = raidpStatusLine(ctx, cl); err != nil {
		return err
	}
	if asJSON {
		st.Queue = ts
		return printJSON(stdout, st)
	}
	if p := st.Progress; p != nil {
		fmt.Fprintf(stdout, "director %s has rebuilt %d shards (%s), %d failed attempts; rate %s (as of %s)\n",
			p.Director, p.Shards, fmtBytes(p.Bytes), p.Failed, units.FormatRate(p.Rate), p.Updated.Format(time.RFC3339))
	}
	if st.RAIDP != "" {
		fmt.Fprintln(stdout, st.RAIDP)
	}
	if len(ts) == 0 {
		fmt.Fprintln(stdout, "repair queue: empty (every stripe has its full redundancy, as far as the director knows)")
		return nil
	}
	fmt.Fprintf(stdout, "repair queue: %s, %s to rebuild, %d with failed attempts\n", plural(st.Tasks, "stripe"), fmtBytes(st.Bytes), st.Failing)
	if st.Ready > 0 {
		fmt.Fprintf(stdout, "  can be rebuilt now: %s, %s\n", fmtBytes(st.Ready), st.ETA)
	}
	for _, g := range st.Waiting {
		fmt.Fprintf(stdout, "  waiting: %s, %s: %s\n", plural(g.Stripes, "stripe"), fmtBytes(g.Bytes), g.Reason)
	}
	if st.Checked < st.Tasks {
		fmt.Fprintf(stdout, "  (the first %d stripes judged; the other %d are counted as rebuildable)\n", st.Checked, st.Tasks-st.Checked)
	}
	for r := range 8 {
		if n := st.ByRisk[r]; n > 0 {
			fmt.Fprintf(stdout, "  risk %d (can lose %d more shards): %d stripes\n", r, r, n)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tPART\tPOLICY\tLOST\tRISK\tBYTES\tNOW\tATTEMPTS\tLAST ERROR")
	for i, t := range ts {
		if i == show {
			break
		}
		now := "rebuild"
		switch {
		case i >= st.Checked:
			now = "?"
		case st.Why[t.ID] != "":
			now = "wait"
		}
		object := t.Bucket + "/" + t.Key
		if r := t.RAIDP; r != nil {
			object = fmt.Sprintf("raidp group %s: step %d (%s)", r.Group, r.Step, r.Kind)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%d\t%s\t%s\t%d\t%s\n", object, t.Part, t.Policy, t.Lost, t.Risk,
			fmtBytes(t.Bytes), now, t.Attempts, t.LastError)
	}
	return tw.Flush()
}

func runRepairPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin repair plan", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	policy := fs.String("policy", "", "code to model, rs-K-R (default: the most common policy in the repair queue, else rs-6-3)")
	failed := fs.Int("f", 1, "failed nodes")
	nodeData := fs.String("node-data", "", "bytes each failed node held (default: the bytes in the repair queue ÷ f, else 1TiB)")
	unit := fs.String("unit", "1MiB", "request unit")
	netRate := fs.String("net", "117MB", "each node's network bandwidth per second, each direction (1 GbE ≈ 117MB)")
	readRate := fs.String("read", "150MB", "each node's sequential disk read per second")
	writeRate := fs.String("write", "150MB", "each node's sequential disk write per second")
	mixedRate := fs.String("mixed-write", "5MB", "disk write per second under PULL-Sur's mix of random reads and writes")
	serveRate := fs.String("serve-read", "", "disk read per second when serving pullers one unit per request (default: --read)")
	sharedDisk := fs.Bool("shared-disk", false, "reads and writes share one disk per node: their times add instead of overlapping")
	cmdline.Usage(fs, "cairn admin repair plan [--policy rs-K-R] [--f N] [--node-data SIZE] [--net RATE] ...",
		`Predicts how long rebuilding the failed nodes' data takes with each scheme,
from the PUSH paper's models (its Eqs. 9–12) and cairn's bottleneck model of
the plans it builds, given each node's bandwidths (measure them, e.g. with
cairn bench push, and pass them here). The fastest scheme is what the
director would pick.

  PULL-Rep  a replacement fetches k shards per rebuilt shard and decodes
  PULL-Sur  the survivors each rebuild a share, pulling from each other
  PUSH-Rep  a chain of k helpers adds partial blocks hop by hop; the
            replacement receives one block per rebuilt block
  PUSH-Sur  chains that end at the survivors, rotating

Rates are sizes per second (e.g. 117MB, 1GiB).`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		ts, err := meta.AllRepairTasks(ctx, cl.meta)
		if err != nil {
			return err
		}
		var queued int64
		count := map[string]int{}
		for _, t := range ts {
			queued += t.Bytes
			count[t.Policy]++
		}
		if *policy == "" {
			*policy = "rs-6-3"
			best := 0
			for p, n := range count {
				if n > best {
					*policy, best = p, n
				}
			}
		}
		code, err := all.New(*policy)
		if err != nil {
			return fmt.Errorf("%w: --policy: %v", ErrUsage, err)
		}
		p := code.Params()
		m := plan.Model{K: p.K, R: p.N() - p.K, F: *failed}
		if *nodeData != "" {
			v, err := units.ParseSize(*nodeData)
			if err != nil {
				return fmt.Errorf("%w: --node-data: %v", ErrUsage, err)
			}
			m.SNode = float64(v)
		} else if queued > 0 {
			m.SNode = float64(queued) / float64(*failed)
		} else {
			m.SNode = 1 << 40
		}
		u, err := units.ParseSize(*unit)
		if err != nil {
			return fmt.Errorf("%w: --unit: %v", ErrUsage, err)
		}
		m.SBlock = float64(u)
		var rates [4]float64
		for i, f := range []struct{ name, v string }{{"net", *netRate}, {"read", *readRate}, {"write", *writeRate}, {"mixed-write", *mixedRate}} {
			v, err := units.ParseSize(f.v)
			if err != nil || v <= 0 {
				return fmt.Errorf("%w: --%s: want a positive size per second", ErrUsage, f.name)
			}
			rates[i] = float64(v)
		}
		r := plan.Rates{Read: rates[1], Write: rates[2], MixedWrite: rates[3], Send: rates[0], Recv: rates[0], SharedDisk: *sharedDisk}
		if *serveRate != "" {
			v, err := units.ParseSize(*serveRate)
			if err != nil || v <= 0 {
				return fmt.Errorf("%w: --serve-read: want a positive size per second", ErrUsage)
			}
			r.ServeRead = float64(v)
		}
		m.Survivors, m.Replacement = []plan.Rates{r}, r
		best, preds, err := plan.Choose(m, nil)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		// The predictions hold for stripes that can be rebuilt: say which
		// of the queue's wait, and why.
		q, err := judgeQueue(ctx, cl.meta, ts)
		if err != nil {
			return err
		}
		// The raidp group's recovery, ongoing or to be planned, with the
		// same rates (docs/design/raidp.md, "Time models").
		rest, err := estimateRAIDP(ctx, cl, r)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(map[string]any{"model": m, "predictions": preds, "choice": best.Scheme.String(),
				"waiting": q.Waiting, "raidp": rest})
		}
		for _, g := range q.Waiting {
			fmt.Fprintf(stdout, "%s of the queue (%s) cannot be rebuilt now, whatever the scheme: %s\n", plural(g.Stripes, "stripe"), fmtBytes(g.Bytes), g.Reason)
		}
		fmt.Fprintf(stdout, "%s, %d failed node(s) of %s each, unit %s\n", *policy, m.F, units.FormatSize(int64(m.SNode)), units.FormatSize(u))
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SCHEME\tPREDICTED\tPAPER\tEQ\tBOUND BY")
		for _, pr := range preds {
			mark := ""
			if pr.Scheme == best.Scheme {
				mark = "  ← chosen"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", pr.Scheme, seconds(pr.Seconds), seconds(pr.Paper), pr.Eq, pr.Bound, mark)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if rest != nil {
			return rest.print(stdout)
		}
		return nil
	})
}

func seconds(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%.1f h", s/3600)
	case s >= 60:
		return fmt.Sprintf("%.1f min", s/60)
	}
	return fmt.Sprintf("%.1f s", s)
}

// rebalanceEvery is how often the director's rebalancer looks for moves
// (when the repair queue is empty).
const rebalanceEvery = 10 * time.Second

// defaultMoveRate is --move-rate's default: a drain or a rebalance
// leaves most of a node's disk and network to its clients.
const defaultMoveRate = "32MiB"

// repairOptions are the director's repair settings (cairn server, cairn node).
type repairOptions struct {
	scheme   *string
	rates    *string
	rate     *string
	unit     *string
	parallel *int
	scan     *time.Duration
	moveRate *string
	spread   *string

	parsed    plan.Scheme
	auto      *plan.Rates // --repair-scheme auto: the rates the choice uses
	bytes     int64
	rateBytes int64 // --repair-rate; 0: unlimited
	moveBytes int64 // --move-rate; 0: unlimited
	minSpread int64 // --rebalance-min-spread; -1: any
}

func repairFlags(fs *flag.FlagSet) *repairOptions {
	return &repairOptions{
		scheme: fs.String("repair-scheme", "auto", "director: how lost shards are rebuilt: push-sur, push-rep, pull-sur, pull-rep, or auto: "+
			"per stripe, the PUSH or PULL form the repair-time models predict fastest with --repair-rates, which with the default rates is PUSH "+
			"(see cairn admin repair plan --help)"),
		rates: fs.String("repair-rates", "117MB,150MB,150MB,5MB", "director: the nodes' rates per second for --repair-scheme auto: "+
			"NET (each way),READ,WRITE,MIXED-WRITE (disk writes under PULL-Sur's random mix); the default is the PUSH paper's HDD nodes on 1 GbE"),
		rate: fs.String("repair-rate", "", "this node: most repair data it computes per second — partials it forwards, rebuilt shards it stores — "+
			"so repair leaves room for clients (e.g. 50MiB; default unlimited)"),
		unit:     fs.String("repair-unit", "1MiB", "director: request unit of repairs (the slice a repair chain moves at a time)"),
		parallel: fs.Int("repair-parallel", 2, "director: stripes repaired at once (more: faster repair, more load on the nodes)"),
		scan:     fs.Duration("repair-scan", 10*time.Second, "director: how often manifests are scanned for shards on down disks"),
		moveRate: fs.String("move-rate", defaultMoveRate, "director: most bytes per second moved off draining disks and by the rebalancer, "+
			"unless a drain sets its own (cairn admin node drain --rate); 0 for unlimited. Repairs of lost shards are never held back by it"),
		spread: fs.String("rebalance-min-spread", "1GiB", "director: the rebalancer moves shards only while the most used writable disk holds at least this many "+
			"bytes more than the least used (and not within 10% of it); 0 for any spread. Stripes sharing a node are spread whatever this says"),
	}
}

func (o *repairOptions) validate() error {
	var s plan.Scheme
	if *o.scheme == "auto" {
		s = plan.PushSur // the form when targets allow; the choice is per stripe
		f := strings.Split(*o.rates, ",")
		var v [4]float64
		for i := range v {
			var n int64
			var err error
			if len(f) == 4 {
				n, err = units.ParseSize(f[i])
			}
			if len(f) != 4 || err != nil || n <= 0 {
				return fmt.Errorf("%w: --repair-rates: want NET,READ,WRITE,MIXED-WRITE, four positive sizes per second", ErrUsage)
			}
			v[i] = float64(n)
		}
		o.auto = &plan.Rates{Send: v[0], Recv: v[0], Read: v[1], Write: v[2], MixedWrite: v[3]}
	} else {
		var err error
		if s, err = plan.ParseScheme(*o.scheme); err != nil {
			return fmt.Errorf("%w: --repair-scheme: %v (or auto)", ErrUsage, err)
		}
	}
	u, err := units.ParseSize(*o.unit)
	if err != nil || u < 4096 || u > 64<<20 {
		return fmt.Errorf("%w: --repair-unit: want a size from 4KiB to 64MiB", ErrUsage)
	}
	if *o.parallel < 1 || *o.scan <= 0 {
		return fmt.Errorf("%w: --repair-parallel must be at least 1 and --repair-scan positive", ErrUsage)
	}
	if *o.rate != "" {
		if o.rateBytes, err = units.ParseSize(*o.rate); err != nil || o.rateBytes <= 0 {
			return fmt.Errorf("%w: --repair-rate: want a positive size per second", ErrUsage)
		}
	}
	if o.moveBytes, err = units.ParseSize(*o.moveRate); err != nil || o.moveBytes < 0 {
		return fmt.Errorf("%w: --move-rate: want a size per second (e.g. 32MiB), or 0 for unlimited", ErrUsage)
	}
	if o.minSpread, err = units.ParseSize(*o.spread); err != nil {
		return fmt.Errorf("%w: --rebalance-min-spread: want a size (e.g. 1GiB), or 0 for any spread", ErrUsage)
	}
	if o.minSpread == 0 {
		o.minSpread = -1 // repair.Config: negative is any spread
	}
	o.parsed, o.bytes = s, u
	return nil
}

// duties are the director's repair jobs: a scan that queues stripes with
// shards on down disks, and a background worker that drains the queue and
// reports its progress (for the ETA in cairn admin repair status): at
// every change, and every 30 s without one, then with rate 0; and the
// census the scan takes, for the director's disk life cycle.
func (o *repairOptions) duties(store meta.Store, nc *node.Client, id string, log *slog.Logger, pm *procMetrics) ([]director.Duty, func() director.Census) {
	r := repair.New(store, nc, repair.Config{Scheme: o.parsed, Rates: o.auto, Unit: o.bytes, Parallel: *o.parallel,
		MoveRate: o.moveBytes, MinSpread: o.minSpread, Logger: log})
	census := func() director.Census {
		c := r.Census()
		return director.Census{At: c.At, Refs: c.Refs}
	}
	var (
		last                   time.Time
		lastBytes              int64
		lastPut                time.Time
		rate                   float64
		lastHealed, lastQueued int64
		lastBalance            time.Time
	)
	report := func(ctx context.Context) {
		now := time.Now()
		st := r.Stats()
		if !last.IsZero() {
			if dt := now.Sub(last).Seconds(); dt > 0 {
				inst := float64(st.Bytes-lastBytes) / dt
				if rate == 0 {
					rate = inst
				} else {
					rate = 0.7*rate + 0.3*inst
				}
			}
		}
		bal := r.Balance()
		changed := st.Bytes != lastBytes || st.DamageHealed != lastHealed || st.DamageQueued != lastQueued || !bal.At.Equal(lastBalance)
		lastHealed, lastQueued, lastBalance = st.DamageHealed, st.DamageQueued, bal.At
		last, lastBytes = now, st.Bytes
		if !changed && now.Sub(lastPut) < 30*time.Second {
			return
		}
		if !changed {
			rate = 0 // nothing rebuilt for 30 s: no rate to give an ETA by
		}
		lastPut = now
		p := cairn.RepairProgress{Director: id, Updated: now, Shards: int64(st.Shards), Bytes: st.Bytes, Failed: int64(st.Failed), Rate: rate,
			DamageQueued: st.DamageQueued, DamageHealed: st.DamageHealed}
		if !bal.At.IsZero() {
			p.Rebalance = &cairn.RebalanceProgress{At: bal.At, Balanced: bal.Balanced, Lo: bal.Lo, Hi: bal.Hi, Queued: bal.Queued, Total: bal.Total}
		}
		if err := store.PutRepairProgress(ctx, p); err != nil && ctx.Err() == nil {
			log.Warn("repair: reporting progress", "err", err)
		}
	}
	duties := []director.Duty{
		{Name: "queue repairs", Every: *o.scan, Run: func(ctx context.Context, now time.Time) error {
			n, err := r.Scan(ctx, now)
			if n > 0 {
				log.Warn("repair: stripes with lost shards queued", "count", n)
			}
			return err
		}},
		{Name: "rebalance", Every: rebalanceEvery, Background: true, Run: func(ctx context.Context, now time.Time) error {
			n, err := r.Rebalance(ctx, now)
			if n > 0 {
				b := r.Balance()
				log.Info("rebalance: moves queued", "count", n, "total", b.Total, "balanced", b.Balanced, "least_use", int64(b.Lo), "most_use", int64(b.Hi))
			}
			return err
		}},
		{Name: "repair", Every: time.Second, Background: true, Run: func(ctx context.Context, now time.Time) error {
			n, err := r.Work(ctx, now)
			report(ctx)
			if n > 0 {
				st := r.Stats()
				log.Info("repair: progress", "stripes_done", n, "total_stripes", st.Repaired, "total_bytes", st.Bytes,
					"failed_attempts", st.Failed, "bad_helpers", st.HelpersMarked, "failed_targets", st.TargetsFailed)
			}
			return err
		}},
	}
	duties = append(duties, pm.repair(r, store)...)
	return duties, census
}
