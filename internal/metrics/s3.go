package metrics

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the S3 series (docs/metrics.md).
const (
	NameS3Requests = "cairn_s3_requests_total"
	NameS3Seconds  = "cairn_s3_request_duration_seconds"
	NameS3Bytes    = "cairn_s3_bytes_total"
	NameS3InFlight = "cairn_s3_requests_in_flight"
)

// LatencyBuckets are the buckets of the request latency histograms, in
// seconds: 1 ms to about 65 s.
var LatencyBuckets = prometheus.ExponentialBuckets(0.001, 4, 9)

// S3 holds the S3 API's series: requests by operation and status code,
// their latency, and the bytes of request and response bodies.
type S3 struct {
	requests *prometheus.CounterVec   // operation, code
	seconds  *prometheus.HistogramVec // operation
	bytesIn  prometheus.Counter
	bytesOut prometheus.Counter
	inFlight prometheus.Gauge
}

// NewS3 registers the S3 series with reg.
func NewS3(reg prometheus.Registerer) *S3 {
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameS3Bytes,
		Help: "Bytes of S3 request bodies received (direction=in) and response bodies sent (direction=out)."}, []string{"direction"})
	m := &S3{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameS3Requests,
			Help: "S3 requests served, by operation (s3.Operation: GetObject, PutObject, ...) and HTTP status code."},
			[]string{"operation", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameS3Seconds,
			Help:    "Time from an S3 request's arrival to the end of its response, by operation.",
			Buckets: LatencyBuckets}, []string{"operation"}),
		bytesIn:  bytes.WithLabelValues("in"),
		bytesOut: bytes.WithLabelValues("out"),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: NameS3InFlight, Help: "S3 requests being served now."}),
	}
	reg.MustRegister(m.requests, m.seconds, bytes, m.inFlight)
	return m
}

// Wrap returns next with every request counted: op names the request's
// operation (s3.Operation), which must be one of a few fixed names. Body
// bytes are counted as they move, so a long transfer shows in the bytes
// while it runs; the request, its status code and its latency are
// counted when next returns.
func (m *S3) Wrap(next http.Handler, op func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		name := op(r)
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &countingBody{ReadCloser: r.Body, c: m.bytesIn}
		}
		cw := &countingWriter{ResponseWriter: w, c: m.bytesOut}
		next.ServeHTTP(cw, r)
		code := cw.code
		if code == 0 {
			code = http.StatusOK // net/http's status for a handler that wrote nothing
		}
		m.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
		m.seconds.WithLabelValues(name).Observe(time.Since(start).Seconds())
	})
}

// countingBody adds the bytes read from a request body to c.
type countingBody struct {
	io.ReadCloser
	c prometheus.Counter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.c.Add(float64(n))
	}
	return n, err
}

// countingWriter records the status code and adds the bytes written to
// c. It is used by one handler goroutine at a time, as a ResponseWriter
// is.
type countingWriter struct {
	http.ResponseWriter
	c    prometheus.Counter
	code int // the status written; 0: none yet
}

func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 { // 1xx are informational: the final status follows
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	if n > 0 {
		w.c.Add(float64(n))
	}
	return n, err
}

// Unwrap gives http.ResponseController the writer underneath (Flush,
// deadlines).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
