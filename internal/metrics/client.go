package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the client data path series (docs/metrics.md).
const (
	NameClientRequests  = "cairn_client_shard_requests_total"
	NameClientHedged    = "cairn_client_hedged_requests_total"
	NameClientSpares    = "cairn_client_spare_rows_total"
	NameClientSlowDisks = "cairn_client_slow_disks"
)

// ClientReport is what a process's data path (client.Stats) did since it
// started: the speculative engine at work.
type ClientReport struct {
	Reads, Writes ClientRequests
	Decodes       int64         // GET windows decoded around missing data shards
	DecodeTime    time.Duration // the time their decoding took
	SpareRows     int64         // PUT streams started on a spare parity row
	SlowDisks     int           // disks held slow now (new stripes avoid them, reads ask them last)
	SlowMarks     int64         // times a disk was marked slow
}

// ClientRequests counts shard requests of one direction.
type ClientRequests struct {
	Succeeded, Failed, Cancelled int64
	Hedged, Replaced             int64
}

// RegisterClient registers, with reg, the data path series read from
// report at each scrape.
func RegisterClient(reg prometheus.Registerer, report func() ClientReport) {
	n := func(v int64) float64 { return float64(v) }
	reg.MustRegister(&clientRequests{report: report,
		requests: prometheus.NewDesc(NameClientRequests,
			"Shard requests of the data path (GET: op=read, PUT: op=write) that ended, by result: succeeded, failed, "+
				"or cancelled by the speculative engine (a straggler, or a loser once enough shards arrived; a cancelled request may never have started).",
			[]string{"op", "result"}, nil),
		hedged: prometheus.NewDesc(NameClientHedged,
			"Shard requests started because others were too slow: hedged GETs, and PUT streams on a spare parity row.", []string{"op"}, nil),
		replaced: prometheus.NewDesc("cairn_client_replacement_requests_total",
			"Shard requests started because another failed.", []string{"op"}, nil),
	}, &reportCollector[ClientReport]{read: one(report), labels: noLabels[ClientReport], series: []series[ClientReport]{
		counter(NameClientSpares, "PUT shard streams started on a spare parity row, replacing a stream that held the write back.", nil,
			func(r ClientReport) float64 { return n(r.SpareRows) }),
		counter("cairn_client_decodes_total", "GET windows (runs of stripes) decoded around missing data shards.", nil,
			func(r ClientReport) float64 { return n(r.Decodes) }),
		counter("cairn_client_decode_seconds_total", "Time spent decoding GET windows around missing data shards.", nil,
			func(r ClientReport) float64 { return r.DecodeTime.Seconds() }),
		gauge(NameClientSlowDisks, "Disks this process holds slow now, judged against their peers in its own PUTs and GETs: new stripes avoid them and reads ask them last.", nil,
			func(r ClientReport) float64 { return float64(r.SlowDisks) }),
		counter("cairn_client_slow_disk_marks_total", "Times a disk was marked slow (each mark holds it off for a while, doubling while it stays slow).", nil,
			func(r ClientReport) float64 { return n(r.SlowMarks) }),
	}})
}

// clientRequests emits the labelled request counters of the report.
type clientRequests struct {
	report                     func() ClientReport
	requests, hedged, replaced *prometheus.Desc
}

func (c *clientRequests) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.hedged
	ch <- c.replaced
}

func (c *clientRequests) Collect(ch chan<- prometheus.Metric) {
	r := c.report()
	for _, d := range []struct {
		op string
		r  ClientRequests
	}{{"read", r.Reads}, {"write", r.Writes}} {
		for _, o := range []struct {
			result string
			n      int64
		}{{"succeeded", d.r.Succeeded}, {"failed", d.r.Failed}, {"cancelled", d.r.Cancelled}} {
			ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(o.n), d.op, o.result)
		}
		ch <- prometheus.MustNewConstMetric(c.hedged, prometheus.CounterValue, float64(d.r.Hedged), d.op)
		ch <- prometheus.MustNewConstMetric(c.replaced, prometheus.CounterValue, float64(d.r.Replaced), d.op)
	}
}
