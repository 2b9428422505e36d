package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn"
	"cairn/cleanup"
	"cairn/client"
	"cairn/director"
	"cairn/internal/metrics"
	"cairn/internal/proc"
	"cairn/internal/vfs"
	"cairn/meta"
	"cairn/node"
	"cairn/repair"
	"cairn/s3"
)

// metricsFlags are --metrics-addr (every long-running process) and, for
// the processes that serve S3, --s3-metrics (docs/metrics.md).
type metricsFlags struct {
	addr *string
	onS3 *bool // nil: the process serves no S3
}

func addMetricsFlags(fs *flag.FlagSet, servesS3 bool) *metricsFlags {
	f := &metricsFlags{addr: fs.String("metrics-addr", "",
		"serve Prometheus metrics at http://HOST:PORT/metrics (port 0: one the kernel picks; default: none). "+
			"They show no bucket or object data and need no credentials: bind a private address (docs/metrics.md)")}
	if servesS3 {
		f.onS3 = fs.Bool("s3-metrics", false,
			"also serve the metrics on the S3 port at /metrics, to requests that carry no S3 signature (a signed request for a bucket named metrics is S3's)")
	}
	return f
}

// procMetrics is a process's metrics registry and the series its parts
// feed. A nil *procMetrics is a process without metrics: every method
// then does nothing (or returns its argument).
type procMetrics struct {
	reg   *prometheus.Registry
	log   *slog.Logger
	onS3  bool
	s3    *metrics.S3    // made by the first S3 handler wrapped
	disks *metrics.Disks // made by the first disk wrapped
	meta  *metrics.Meta  // made by the first metadata store opened
}

// start makes the registry and serves it on --metrics-addr; it returns
// nil (and a no-op stop) when neither flag asks for metrics. addr is the
// bound address ("" without --metrics-addr). stop is never nil.
func (f *metricsFlags) start(ctx context.Context, log *slog.Logger) (pm *procMetrics, addr string, stop func(), err error) {
	onS3 := f.onS3 != nil && *f.onS3
	if *f.addr == "" && !onS3 {
		return nil, "", func() {}, nil
	}
	pm = &procMetrics{reg: metrics.NewRegistry(), log: log, onS3: onS3}
	stop = func() {}
	if *f.addr != "" {
		ln, err := net.Listen("tcp", *f.addr)
		if err != nil {
			return nil, "", func() {}, listenError(fmt.Errorf("metrics listener: %w", err), []listenAddr{{"metrics", *f.addr, "metrics-addr"}}, "")
		}
		addr, stop = ln.Addr().String(), serveHTTP(ctx, ln, metrics.Mux(pm.reg, log), "metrics", log)
	}
	return pm, addr, stop, nil
}

// readyAddrs adds the metrics address, if any, to a ready line's.
func readyAddrs(addrs map[string]string, metricsAddr string) map[string]string {
	if metricsAddr != "" {
		addrs[proc.Metrics] = metricsAddr
	}
	return addrs
}

// s3Handler counts h's requests and, with --s3-metrics, serves the
// metrics beside it.
func (pm *procMetrics) s3Handler(h http.Handler) http.Handler {
	if pm == nil {
		return h
	}
	if pm.s3 == nil {
		pm.s3 = metrics.NewS3(pm.reg)
	}
	h = pm.s3.Wrap(h, s3.Operation)
	if pm.onS3 {
		h = metrics.Beside(h, pm.reg, pm.log)
	}
	return h
}

// metaCalls returns the etcdmeta.Options.ObserveCall that counts a
// metadata store's calls (nil without metrics).
func (pm *procMetrics) metaCalls() func(op string, took time.Duration, err error) {
	if pm == nil {
		return nil
	}
	if pm.meta == nil {
		pm.meta = metrics.NewMeta(pm.reg)
	}
	return pm.meta.Observe
}

// diskFS counts the I/O of a disk on fsys (nil: the OS).
func (pm *procMetrics) diskFS(id cairn.DiskID, fsys vfs.FS) vfs.FS {
	if pm == nil {
		return fsys
	}
	if pm.disks == nil {
		pm.disks = metrics.NewDisks(pm.reg)
	}
	if fsys == nil {
		fsys = vfs.Default
	}
	return pm.disks.FS(id, fsys)
}

// node reports the started node's disks: space, health, CRC failures,
// scrub progress.
func (pm *procMetrics) node(srv *node.Server) {
	if pm == nil {
		return
	}
	metrics.RegisterNode(pm.reg, func() int64 { return srv.Handler().InFlight() })
	metrics.RegisterDisks(pm.reg, func() []metrics.DiskReport {
		vols, checks, scrub := srv.Volumes(), srv.Checks(), srv.ScrubProgress()
		out := make([]metrics.DiskReport, 0, len(vols))
		for i, v := range vols {
			if v == nil || i >= len(checks) || i >= len(scrub) {
				continue // not open (the three lists are read apart; a disk is never removed)
			}
			r := metrics.DiskReport{Disk: v.ID(), Healthy: v.Health() == nil && checks[i] == cairn.CheckOK,
				CRCFailures: v.Corruptions(), Scrub: scrub[i], Scrubbed: scrub[i] != cairn.ScrubProgress{Disk: scrub[i].Disk}}
			if u, err := v.Usage(); err == nil {
				r.Capacity, r.Free, r.UsageOK = u.Capacity, u.Free, true
			}
			out = append(out, r)
		}
		return out
	})
}

// client reports the data path's counters (client.Stats).
func (pm *procMetrics) client(c *client.Client) {
	if pm == nil {
		return
	}
	req := func(r client.Requests) metrics.ClientRequests {
		return metrics.ClientRequests{Succeeded: r.Succeeded, Failed: r.Failed, Cancelled: r.Cancelled, Hedged: r.Hedged, Replaced: r.Replaced}
	}
	metrics.RegisterClient(pm.reg, func() metrics.ClientReport {
		st := c.Stats()
		return metrics.ClientReport{Reads: req(st.Reads), Writes: req(st.Writes), Decodes: st.Decodes, DecodeTime: st.DecodeTime, SpareRows: st.SpareRows,
			SlowDisks: st.SlowDisks, SlowMarks: st.SlowMarks}
	})
}

// cleanup returns the func that counts a run of the cleanup duty (nil
// without metrics).
func (pm *procMetrics) cleanup() func(cleanup.Stats) {
	if pm == nil {
		return nil
	}
	m := metrics.NewCleanup(pm.reg)
	return func(st cleanup.Stats) { m.Add(st.Deleted, st.Done, st.Requeued, st.Dropped) }
}

// repairQueueEvery is how often the director counts the repair queue (and
// reads the disks' states) for the gauges.
const repairQueueEvery = 5 * time.Second

// repair reports r's counters and returns the director's duty that counts
// the repair queue and the disks by state for their gauges (nil without
// metrics).
func (pm *procMetrics) repair(r *repair.Repairer, store meta.Store) []director.Duty {
	if pm == nil {
		return nil
	}
	m := metrics.NewRepair(pm.reg, func() metrics.RepairReport {
		st := r.Stats()
		rep := metrics.RepairReport{Repaired: int64(st.Repaired), Dropped: int64(st.Dropped), Failed: int64(st.Failed),
			Permanent: int64(st.Permanent), Shards: int64(st.Shards), Bytes: st.Bytes, Busy: st.Busy,
			HelpersMarked: int64(st.HelpersMarked), TargetsFailed: int64(st.TargetsFailed),
			DamageQueued: st.DamageQueued, DamageHealed: st.DamageHealed, Moved: st.Moved, Schemes: map[string]int64{}}
		for s, n := range maps.All(st.Schemes) {
			rep.Schemes[s] = int64(n)
		}
		return rep
	})
	cm := metrics.NewCluster(pm.reg)
	return []director.Duty{{Name: "count the repair queue and the disks' states (metrics)", Every: repairQueueEvery, Background: true,
		Run: func(ctx context.Context, _ time.Time) error {
			disks, err := store.Disks(ctx)
			if err != nil {
				return fmt.Errorf("reading the cluster map: %w", err)
			}
			cm.SetDisks(disks)
			byRisk, bytes := map[int]int{}, int64(0)
			err = meta.EachRepairTask(ctx, store, func(t cairn.RepairTask) error {
				byRisk[t.Risk]++
				bytes += t.Bytes
				return nil
			})
			if err != nil {
				return fmt.Errorf("counting the repair queue: %w", err)
			}
			m.SetQueue(byRisk, bytes)
			return nil
		}}}
}
