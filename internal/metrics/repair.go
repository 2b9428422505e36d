package metrics

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the repair series (docs/metrics.md).
const (
	NameRepairBytes      = "cairn_repair_rebuilt_bytes_total"
	NameRepairShards     = "cairn_repair_rebuilt_shards_total"
	NameRepairTasks      = "cairn_repair_tasks_total"
	NameRepairSchemes    = "cairn_repair_stripes_by_scheme_total"
	NameRepairQueue      = "cairn_repair_queue_tasks"
	NameRepairQueueBytes = "cairn_repair_queue_bytes"
)

// RepairReport is what the director's repairer did since it started
// (repair.Stats).
type RepairReport struct {
	Repaired, Dropped, Failed, Permanent int64 // task attempts by outcome
	Shards, Bytes                        int64 // rebuilt
	Busy                                 time.Duration
	HelpersMarked, TargetsFailed         int64
	DamageQueued, DamageHealed           int64
	Moved                                int64            // bytes moved off draining disks and by the rebalancer
	Schemes                              map[string]int64 // stripes repaired by the scheme chosen
}

// Repair holds the repair series: counters read from the repairer's
// report at each scrape, and the queue gauges the director sets.
type Repair struct {
	queue *prometheus.GaugeVec // risk
	bytes prometheus.Gauge

	mu   sync.Mutex
	seen map[string]bool // risk levels ever set; guarded by mu
}

// NewRepair registers the repair series with reg; report is read at each
// scrape.
func NewRepair(reg prometheus.Registerer, report func() RepairReport) *Repair {
	m := &Repair{
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameRepairQueue,
			Help: "Stripes queued for repair, by risk: the shards a stripe can still lose (0: one more loss loses data). As the director last counted the queue."},
			[]string{"risk"}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: NameRepairQueueBytes,
			Help: "Bytes of the shards the queued repairs have left to rebuild, as the director last counted."}),
		seen: map[string]bool{},
	}
	n := func(v int64) float64 { return float64(v) }
	stats := &reportCollector[RepairReport]{read: one(report), labels: noLabels[RepairReport], series: []series[RepairReport]{
		counter(NameRepairBytes, "Bytes of shards rebuilt by repair.", nil, func(r RepairReport) float64 { return n(r.Bytes) }),
		counter(NameRepairShards, "Shards rebuilt by repair.", nil, func(r RepairReport) float64 { return n(r.Shards) }),
		counter("cairn_repair_busy_seconds_total", "Time spent running repair tasks, summed over the tasks running at once.", nil,
			func(r RepairReport) float64 { return r.Busy.Seconds() }),
		counter("cairn_repair_permanent_failures_total", "Failed repair attempts whose error was permanent (retried only after the longest backoff).", nil,
			func(r RepairReport) float64 { return n(r.Permanent) }),
		counter("cairn_repair_helpers_bad_total", "Helper shards a repair found missing or corrupt.", nil, func(r RepairReport) float64 { return n(r.HelpersMarked) }),
		counter("cairn_repair_targets_failed_total", "Repair targets that failed (missing, full, not writable) and were replaced.", nil,
			func(r RepairReport) float64 { return n(r.TargetsFailed) }),
		counter("cairn_repair_damage_queued_total", "Damage records (from scrub and reads) turned into repair tasks.", nil,
			func(r RepairReport) float64 { return n(r.DamageQueued) }),
		counter("cairn_repair_damage_healed_total", "Damage records dropped once their repair moved the shard.", nil,
			func(r RepairReport) float64 { return n(r.DamageHealed) }),
		counter("cairn_rebalance_moved_bytes_total", "Bytes of shards moved off draining disks and by the rebalancer.", nil,
			func(r RepairReport) float64 { return n(r.Moved) }),
	}}
	reg.MustRegister(m.queue, m.bytes, stats, &repairOutcomes{report: report,
		tasks: prometheus.NewDesc(NameRepairTasks,
			"Repair task attempts by result: repaired, dropped (object overwritten or deleted), failed (retried later).",
			[]string{"result"}, nil),
		schemes: prometheus.NewDesc(NameRepairSchemes,
			"Stripes repaired by the scheme chosen for them (push-sur, push-rep, pull-sur, pull-rep).", []string{"scheme"}, nil)})
	return m
}

// SetQueue sets the queue gauges to what the director counted: tasks by
// risk, and the bytes left to rebuild. A risk level counted before and
// absent now reads 0, so an emptied queue shows as zeros, not as gone.
func (m *Repair) SetQueue(byRisk map[int]int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for r := range m.seen {
		m.queue.WithLabelValues(r).Set(0)
	}
	for r, n := range byRisk {
		l := strconv.Itoa(r)
		m.seen[l] = true
		m.queue.WithLabelValues(l).Set(float64(n))
	}
	if len(m.seen) == 0 {
		m.seen["0"] = true // an empty queue from the first count on
		m.queue.WithLabelValues("0").Set(0)
	}
	m.bytes.Set(float64(bytes))
}

// repairOutcomes emits the labelled repair counters of the report.
type repairOutcomes struct {
	report         func() RepairReport
	tasks, schemes *prometheus.Desc
}

func (c *repairOutcomes) Describe(ch chan<- *prometheus.Desc) { ch <- c.tasks; ch <- c.schemes }

func (c *repairOutcomes) Collect(ch chan<- prometheus.Metric) {
	r := c.report()
	for _, o := range []struct {
		result string
		n      int64
	}{{"repaired", r.Repaired}, {"dropped", r.Dropped}, {"failed", r.Failed}} {
		ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.CounterValue, float64(o.n), o.result)
	}
	for _, s := range slices.Sorted(maps.Keys(r.Schemes)) {
		ch <- prometheus.MustNewConstMetric(c.schemes, prometheus.CounterValue, float64(r.Schemes[s]), s)
	}
}
