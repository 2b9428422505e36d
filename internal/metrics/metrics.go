package metrics

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Path is where the metrics are served.
const Path = "/metrics"

// NewRegistry returns a new registry holding the Go runtime collector
// (go_*) and the process collector (process_*: CPU, memory, open files).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// EtcdPath is where Mux serves the series libraries register in the
// client library's global registry: an embedded etcd server's etcd_* and
// grpc_* (cairn server, cairn meta), named and typed as etcd has them
// (several fail the lint Path passes, so they are kept apart).
const EtcdPath = "/metrics/etcd"

// Global gathers the client library's global registry without its runtime
// and process collectors (the process's registry has them).
var Global prometheus.Gatherer = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
	fams, err := prometheus.DefaultGatherer.Gather()
	return slices.DeleteFunc(fams, func(f *dto.MetricFamily) bool {
		return strings.HasPrefix(f.GetName(), "go_") || strings.HasPrefix(f.GetName(), "process_")
	}), err
})

// scrapeTimeout bounds one scrape; scrapesInFlight bounds the scrapes
// served at once (a 503 beyond).
const (
	scrapeTimeout   = 30 * time.Second
	scrapesInFlight = 4
)

// Handler serves g in the Prometheus text exposition format. A collector
// that fails is logged and left out; the rest is still served.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: scrapesInFlight,
		Timeout:             scrapeTimeout,
	})
}

// Mux serves g at Path and Global at EtcdPath; every other path is 404.
// The process serves it on --metrics-addr.
func Mux(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, Handler(g, log))
	mux.Handle(EtcdPath, Handler(Global, log))
	return mux
}

// Beside serves g at Path on the same port as h (the S3 port, with
// --s3-metrics): a GET or HEAD of Path that carries no S3 signature (no
// Authorization header, no presigned X-Amz-Signature or Signature
// parameter) gets the metrics; every other request, including signed
// requests for a bucket named "metrics", goes to h. S3 refuses anonymous
// requests, so no request h would have served changes hands.
func Beside(h http.Handler, g prometheus.Gatherer, log *slog.Logger) http.Handler {
	mh := Handler(g, log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Path && (r.Method == http.MethodGet || r.Method == http.MethodHead) && unsigned(r) {
			mh.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// unsigned reports whether r carries no S3 signature of any kind.
func unsigned(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		return false
	}
	q := r.URL.Query()
	return !q.Has("X-Amz-Signature") && !q.Has("Signature")
}
