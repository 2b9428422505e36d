package s3

// Limits (docs/design/s3.md, "Limits"): at most Config.MaxRequests
// requests are served at once; one more waits up to Config.QueueWait for
// a slot, then gets 503 SlowDown. Every write of a response must be taken
// by the client within Config.WriteTimeout, so a reader that stopped
// reading cannot hold a slot and its buffers for ever.

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"
)

// slots bounds the requests served at once.
type slots struct {
	sem  *semaphore.Weighted
	n    int
	wait time.Duration
}

// take waits up to s.wait for a slot. Errors: ErrSlowDown, or ctx's if
// the client went away.
func (s *slots) take(ctx context.Context) error {
	if s.sem.TryAcquire(1) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.wait)
	defer cancel()
	if err := s.sem.Acquire(wctx, 1); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("%w: %d requests in progress, none ended within %v", ErrSlowDown, s.n, s.wait)
	}
	return nil
}

func (s *slots) give() { s.sem.Release(1) }

// writeDeadline is a ResponseWriter whose every write must be taken by
// the client within d (a deadline on the connection, renewed per write).
type writeDeadline struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

// newWriteDeadline wraps w, clearing a deadline left on the connection by
// its previous request (deadlines are wall-clock instants on the socket:
// time.Now, not Config.Now).
func newWriteDeadline(w http.ResponseWriter, d time.Duration) *writeDeadline {
	wd := &writeDeadline{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
	_ = wd.rc.SetWriteDeadline(time.Time{})
	return wd
}

func (w *writeDeadline) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *writeDeadline) WriteHeader(status int) {
	w.extend()
	w.ResponseWriter.WriteHeader(status)
}

func (w *writeDeadline) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// Flush flushes the response (http.Flusher), under the deadline.
func (w *writeDeadline) Flush() {
	w.extend()
	_ = w.rc.Flush()
}

// Unwrap gives http.ResponseController the connection's writer.
func (w *writeDeadline) Unwrap() http.ResponseWriter { return w.ResponseWriter }
