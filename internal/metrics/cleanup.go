package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// NameCleanupDeleted names the cleanup counter of files deleted
// (docs/metrics.md).
const NameCleanupDeleted = "cairn_cleanup_deleted_files_total"

// Cleanup holds the series of the director's cleanup duty, which deletes
// the shard files of overwritten and deleted objects after their grace
// period (docs/design/cleanup.md).
type Cleanup struct {
	deleted                 prometheus.Counter
	done, requeued, dropped prometheus.Counter
}

// NewCleanup registers the cleanup series with reg.
func NewCleanup(reg prometheus.Registerer) *Cleanup {
	records := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_cleanup_records_total",
		Help: "Cleanup records worked, by result: done (every file deleted), requeued (files left, tried again), dropped (given up after the attempts allowed)."},
		[]string{"result"})
	c := &Cleanup{
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: NameCleanupDeleted,
			Help: "Shard files of overwritten or deleted objects the cleanup deleted (or found gone)."}),
		done: records.WithLabelValues("done"), requeued: records.WithLabelValues("requeued"), dropped: records.WithLabelValues("dropped"),
	}
	reg.MustRegister(c.deleted, records)
	return c
}

// Add counts one run of the duty (cleanup.Stats).
func (c *Cleanup) Add(deleted, done, requeued, dropped int) {
	c.deleted.Add(float64(deleted))
	c.done.Add(float64(done))
	c.requeued.Add(float64(requeued))
	c.dropped.Add(float64(dropped))
}

// RegisterNode registers, with reg, the node-wide series read at each
// scrape: the node protocol requests in flight.
func RegisterNode(reg prometheus.Registerer, inFlight func() int64) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cairn_node_requests_in_flight",
		Help: "Node protocol requests being served now (shard reads and writes, repair calls; not health checks): the node's queue depth."},
		func() float64 { return float64(inFlight()) }))
}
