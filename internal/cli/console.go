package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"cairn/client"
	"cairn/console"
	"cairn/internal/httpstop"
	"cairn/s3"
)

// consoleHelp documents --console-addr.
const consoleHelp = `web console listen address (docs/design/console.md): log in with S3 credentials; "" or "off": no console`

// gatewayConsoleHelp documents cairn gateway's --console-addr.
const gatewayConsoleHelp = consoleHelp + `. Default: the port after the S3 port (port 0 if that is 0) on 127.0.0.1, or on S3's host if that is a loopback address: 127.0.0.1:9001 for the default --s3-addr`

// consoleDefault is cairn gateway's console address for the S3 address
// s3Addr: the next port (0 stays 0), on s3Addr's host if it is a
// loopback address, else on 127.0.0.1 — a gateway serving S3 to the
// network keeps its console to the machine unless told otherwise.
func consoleDefault(s3Addr string) (string, error) {
	host, port, err := net.SplitHostPort(s3Addr)
	if err != nil {
		return "", fmt.Errorf("%w: --s3-addr %q: %w", ErrUsage, s3Addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p >= 65535 {
		return "", fmt.Errorf("%w: --s3-addr %q: a numeric port below 65535 (or give --console-addr)", ErrUsage, s3Addr)
	}
	if p != 0 {
		p++
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// consoleOff reports whether a --console-addr value turns the console off.
func consoleOff(addr string) bool { return addr == "" || addr == "off" }

// consoleStatus is the console's cluster view: what cairn admin status
// shows.
type consoleStatus struct{ cl *cluster }

var _ console.Cluster = consoleStatus{}

// Status implements console.Cluster.
func (s consoleStatus) Status(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return clusterStatus(ctx, s.cl)
}

// engineStatus is the console's view of c's speculative engine.
func engineStatus(c *client.Client, now time.Time) console.EngineStatus {
	st := c.Stats()
	e := console.EngineStatus{ReadsHedged: st.Reads.Hedged, ReadsCancelled: st.Reads.Cancelled, ReadsReplaced: st.Reads.Replaced,
		WritesCancelled: st.Writes.Cancelled, WritesReplaced: st.Writes.Replaced, SpareRows: st.SpareRows, Decodes: st.Decodes,
		SlowMarks: st.SlowMarks, SlowDisks: []console.SlowDisk{}}
	for _, d := range c.SlowDisks(now) {
		s := console.SlowDisk{Disk: string(d.Disk), State: d.State.String(), Score: d.Score, Since: d.Since.UnixMilli()}
		if !d.Until.IsZero() {
			s.Until = d.Until.UnixMilli()
		}
		e.SlowDisks = append(e.SlowDisks, s)
	}
	return e
}

// startConsole serves the web console of cl on addr until stop: it acts
// through s3h (the gateway's handler, counted by counters) as the users of
// creds. With tlsc it serves HTTPS only. It returns the console's URL.
func startConsole(ctx context.Context, cl *cluster, addr string, s3h http.Handler, creds s3.Credentials, counters *console.Counters, tlsc *tls.Config, log *slog.Logger) (string, func(), error) {
	c, err := console.New(console.Config{S3: s3h, Credentials: creds, Objects: cl.data, Meta: cl.meta,
		Cluster: consoleStatus{cl}, Counters: counters, Engine: func() console.EngineStatus { return engineStatus(cl.data, time.Now()) }, Logger: log})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("console listener: %w", err)
	}
	if tlsc != nil {
		ln = tls.NewListener(ln, tlsc)
	} else if plainWarning(addr) != "" { // not loopback
		log.Warn("the web console is plain HTTP off loopback: a login sends the S3 secret key in the clear; serve it with TLS (--tls-cert/--tls-key) or keep it on 127.0.0.1", "addr", addr)
	}
	return s3URL(ln.Addr().String(), tlsc), serveHTTP(ctx, ln, c, "console", log), nil
}

// serveHTTP serves h on ln, with the limits the gateway's listeners share,
// until stop, which shuts the server down (waiting up to 5 s for the
// requests in flight, and not for connections that asked nothing). what
// names the server in its log lines.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, what string, log *slog.Logger) (stop func()) {
	var conns httpstop.Tracker
	srv := &http.Server{
		ConnState:         conns.ConnState,
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" server stopped", "err", err)
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = httpstop.Shutdown(sctx, srv, &conns)
		<-done
	}
}
