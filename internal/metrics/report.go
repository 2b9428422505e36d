package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// series is one series a report collector emits: its description and how
// its value is read from the report.
type series[R any] struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(R) float64
}

// reportCollector emits series read from the reports a func returns at
// each scrape; labels gives each report's label values (in the order of
// the descriptions' variable labels).
type reportCollector[R any] struct {
	series []series[R]
	read   func() []R
	labels func(R) []string
}

func (c *reportCollector[R]) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.series {
		ch <- s.desc
	}
}

func (c *reportCollector[R]) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.read() {
		lv := c.labels(r)
		for _, s := range c.series {
			ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(r), lv...)
		}
	}
}

// counter and gauge describe a series of a report collector.
func counter[R any](name, help string, labels []string, v func(R) float64) series[R] {
	return series[R]{desc: prometheus.NewDesc(name, help, labels, nil), kind: prometheus.CounterValue, value: v}
}

func gauge[R any](name, help string, labels []string, v func(R) float64) series[R] {
	return series[R]{desc: prometheus.NewDesc(name, help, labels, nil), kind: prometheus.GaugeValue, value: v}
}

// one turns a func returning one report into one returning a slice.
func one[R any](f func() R) func() []R { return func() []R { return []R{f()} } }

// noLabels is the labels func of an unlabelled report.
func noLabels[R any](R) []string { return nil }

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// unixSeconds is t in Unix seconds, 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
