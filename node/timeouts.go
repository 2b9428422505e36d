package node

// Timeouts of the node client (docs/design/node-protocol.md, "Client
// timeouts"): every call connects within Dial; a small call (delete,
// list, stat) ends within Call; a shard stream has no overall limit, but
// fails when its node answers no request within Header or moves no byte
// for Idle. A watchdog per call cancels the request's context when one of
// them passes.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"cairn"
)

// Timeouts bound a Client's calls. Zero fields take DefaultTimeouts'.
type Timeouts struct {
	// Dial bounds connecting to a node (and a TLS handshake).
	Dial time.Duration
	// Header bounds the wait for a node's response headers once a shard
	// request is sent: a GET's first verified block, a PUT's durable
	// write after the last byte of its body.
	Header time.Duration
	// Call bounds a whole small call: delete, list, stat.
	Call time.Duration
	// Idle fails a shard stream — a GET's body, a PUT's body or reply —
	// that moves no byte for this long while it waits on the node,
	// however long the whole transfer takes.
	Idle time.Duration
}

// DefaultTimeouts are the timeouts of a Client unless WithTimeouts says
// otherwise.
var DefaultTimeouts = Timeouts{Dial: 5 * time.Second, Header: 30 * time.Second, Call: 10 * time.Second, Idle: 30 * time.Second}

// withDefaults fills t's zero fields from DefaultTimeouts.
func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts
	if t.Dial > 0 {
		d.Dial = t.Dial
	}
	if t.Header > 0 {
		d.Header = t.Header
	}
	if t.Call > 0 {
		d.Call = t.Call
	}
	if t.Idle > 0 {
		d.Idle = t.Idle
	}
	return d
}

// NewHTTPClient returns an HTTP client for node calls: pooled keep-alive
// connections (64 idle per node, closed after 90 s unused) with 256 KiB
// buffers, connects and TLS handshakes bounded by t.Dial, no proxy, no
// redirects and no overall timeout (Client bounds each call).
func NewHTTPClient(t Timeouts) *http.Client {
	t = t.withDefaults()
	d := &net.Dialer{Timeout: t.Dial, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         d.DialContext,
			TLSHandshakeTimeout: t.Dial,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			WriteBufferSize:     256 << 10,
			ReadBufferSize:      256 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// watchdog ends a call whose node stalls: while armed, it cancels the
// call's context after its delay, and cause then says what stalled.
type watchdog struct {
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	t     *time.Timer // nil until first armed; guarded by mu
	why   error       // the cause if the armed timer fires; guarded by mu
	fired error       // the cause it fired with; guarded by mu
}

// newWatchdog returns ctx under a watchdog, not armed. stop releases it.
func newWatchdog(ctx context.Context) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancelCause(ctx)
	return ctx, &watchdog{cancel: cancel}
}

// arm (re)starts the timer: the call ends with why after d.
func (w *watchdog) arm(d time.Duration, why error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.why = why
	if w.t == nil {
		w.t = time.AfterFunc(d, w.fire)
		return
	}
	w.t.Reset(d)
}

// disarm stops the timer.
func (w *watchdog) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Stop()
	}
}

func (w *watchdog) fire() {
	w.mu.Lock()
	why := w.why
	w.fired = why
	w.mu.Unlock()
	w.cancel(why)
}

// cause returns why the watchdog ended the call, or nil.
func (w *watchdog) cause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// stop disarms the watchdog and releases its context.
func (w *watchdog) stop() {
	w.disarm()
	w.cancel(nil)
}

// stall is the cause of a watchdog's timeout: it wraps
// cairn.ErrUnavailable.
func stall(what string, d time.Duration) error {
	return fmt.Errorf("%w: the node %s within %v", cairn.ErrUnavailable, what, d)
}

// guardedBody is a response body read under the watchdog: each read that
// waits on the node must return within idle (0: the watchdog stays as
// armed, e.g. a small call's overall limit). Close stops the watchdog.
type guardedBody struct {
	io.ReadCloser
	wd   *watchdog
	idle time.Duration
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.idle > 0 {
		b.wd.arm(b.idle, stall("sent no byte", b.idle))
		defer b.wd.disarm()
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		if cause := b.wd.cause(); cause != nil {
			err = cause
		}
	}
	return n, err
}

func (b *guardedBody) Close() error {
	err := b.ReadCloser.Close()
	b.wd.stop()
	return err
}
