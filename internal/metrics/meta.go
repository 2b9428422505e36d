package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the metadata store series (docs/metrics.md).
const (
	NameMetaSeconds = "cairn_meta_request_duration_seconds"
	NameMetaErrors  = "cairn_meta_request_errors_total"
)

// Meta holds the series of a process's calls to the metadata store
// (etcd): latency and errors by call.
type Meta struct {
	seconds *prometheus.HistogramVec // op
	errs    *prometheus.CounterVec   // op

	mu sync.Mutex
	op map[string]metaOp // resolved series by op; guarded by mu
}

type metaOp struct {
	seconds prometheus.Observer
	errs    prometheus.Counter
}

// NewMeta registers the metadata store series with reg.
func NewMeta(reg prometheus.Registerer) *Meta {
	m := &Meta{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameMetaSeconds,
			Help:    "Latency of the process's unary calls to the metadata store (etcd), by call: Range, Txn, Put, DeleteRange, LeaseGrant, ...",
			Buckets: LatencyBuckets}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameMetaErrors,
			Help: "Calls to the metadata store that failed (a deadline, an unavailable cluster, a refused request), by call."}, []string{"op"}),
		op: map[string]metaOp{},
	}
	reg.MustRegister(m.seconds, m.errs)
	return m
}

// Observe counts one call (etcdmeta.Options.ObserveCall). op must come
// from a small fixed set (the etcd API's method names).
func (m *Meta) Observe(op string, took time.Duration, err error) {
	m.mu.Lock()
	o, ok := m.op[op]
	if !ok {
		o = metaOp{seconds: m.seconds.WithLabelValues(op), errs: m.errs.WithLabelValues(op)}
		m.op[op] = o
	}
	m.mu.Unlock()
	o.seconds.Observe(took.Seconds())
	if err != nil {
		o.errs.Inc()
	}
}
