package console

import (
	"io"
	"net/http"
	"sync/atomic"
)

// Counters count the S3 requests served through Wrap and their bytes.
// The zero value is ready; it is safe for concurrent use.
type Counters struct {
	requests atomic.Int64
	errors   atomic.Int64 // answered 5xx
	bytesIn  atomic.Int64 // request bodies read
	bytesOut atomic.Int64 // response bodies written
}

// CounterValues are the counters at one moment.
type CounterValues struct {
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// Values reads the counters.
func (c *Counters) Values() CounterValues {
	return CounterValues{Requests: c.requests.Load(), Errors: c.errors.Load(), BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load()}
}

// Wrap returns h counting every request it serves, the request body
// bytes it reads and the response body bytes it writes.
func (c *Counters) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &countingBody{ReadCloser: r.Body, n: &c.bytesIn}
		}
		cw := &countingWriter{ResponseWriter: w, n: &c.bytesOut}
		h.ServeHTTP(cw, r)
		if cw.status >= 500 {
			c.errors.Add(1)
		}
	})
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// countingWriter counts the bytes written through it and keeps the
// status; Unwrap lets http.ResponseController reach the writer below.
type countingWriter struct {
	http.ResponseWriter
	n      *atomic.Int64
	status int
}

func (w *countingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
