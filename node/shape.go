package node

import (
	"context"
	"math"
	"net"
	"net/http"
	"sync"
	"time"
)

// Link shaping (Config.LinkRate): for repair experiments, a node can be
// given a slow network link. All bytes the node receives, on every
// connection (accepted by its listener or dialled by its own HTTP client),
// share one token bucket; all bytes it sends share another. So a node
// limited to R bytes/s receives at most about R bytes/s in total, however
// many chains and fetches run at once — as a node behind an R-bytes/s NIC.
//
// The bucket is pure (tokenBucket: the time is an argument); the limiter
// around it takes a linkClock, so tests run it on a fake clock.

// tokenBucket is a token bucket over caller-supplied time: up to burst
// tokens (bytes), refilled at rate per second. A take larger than the
// tokens available puts the bucket in debt and says how long the caller
// must wait; later takers wait behind that debt, so concurrent callers are
// served in order at the rate. Not safe for concurrent use.
type tokenBucket struct {
	rate   float64   // tokens per second, > 0
	burst  float64   // most tokens held, > 0
	tokens float64   // available; negative: owed to callers still waiting
	last   time.Time // when tokens was brought up to date
}

// newTokenBucket returns a full bucket at time now.
func newTokenBucket(rate, burst int64, now time.Time) *tokenBucket {
	return &tokenBucket{rate: float64(rate), burst: float64(burst), tokens: float64(burst), last: now}
}

// take removes n tokens at time now and returns how long the caller must
// wait before using them (0: at once). Times earlier than the last call
// count as the last call's time.
func (b *tokenBucket) take(now time.Time, n int) time.Duration {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(math.Ceil(-b.tokens * float64(time.Second) / b.rate)) // never short
}

// linkClock is the time source of a linkLimiter.
type linkClock interface {
	Now() time.Time
	// Sleep waits for d, or until done is closed (then it returns
	// net.ErrClosed).
	Sleep(d time.Duration, done <-chan struct{}) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(d time.Duration, done <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-done:
		return net.ErrClosed
	}
}

// linkLimiter shapes one direction of a node's traffic. Safe for
// concurrent use.
type linkLimiter struct {
	clock linkClock
	mu    sync.Mutex
	b     *tokenBucket // guarded by mu
}

// Shaping granularity: reads and writes are cut into chunks of at most
// linkChunk bytes, each charged before it is written or after it is read;
// the bucket holds linkBurst (at least 50 ms at the rate), so short
// exchanges are not delayed while transfers run at the rate.
const (
	linkChunk = 16 << 10
	linkBurst = 64 << 10
)

func newLinkLimiter(rate int64, clock linkClock) *linkLimiter {
	burst := max(int64(linkBurst), rate/20)
	return &linkLimiter{clock: clock, b: newTokenBucket(rate, burst, clock.Now())}
}

// wait charges n bytes and blocks until they may pass, or done closes.
func (l *linkLimiter) wait(n int, done <-chan struct{}) error {
	l.mu.Lock()
	d := l.b.take(l.clock.Now(), n)
	l.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return l.clock.Sleep(d, done)
}

// shapedConn charges what it reads to in and what it writes to out (nil:
// not shaped).
type shapedConn struct {
	net.Conn
	in, out   *linkLimiter
	closed    chan struct{}
	closeOnce sync.Once
}

var _ net.Conn = (*shapedConn)(nil)

func newShapedConn(c net.Conn, in, out *linkLimiter) *shapedConn {
	return &shapedConn{Conn: c, in: in, out: out, closed: make(chan struct{})}
}

// Read reads at most linkChunk bytes, then waits until the receive link
// has carried them; the peer is slowed by TCP flow control.
func (c *shapedConn) Read(p []byte) (int, error) {
	if c.in != nil && len(p) > linkChunk {
		p = p[:linkChunk]
	}
	n, err := c.Conn.Read(p)
	if n > 0 && c.in != nil {
		if werr := c.in.wait(n, c.closed); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// Write writes p in chunks, each once the send link has room for it.
func (c *shapedConn) Write(p []byte) (int, error) {
	if c.out == nil {
		return c.Conn.Write(p)
	}
	written := 0
	for len(p) > 0 {
		k := min(len(p), linkChunk)
		if err := c.out.wait(k, c.closed); err != nil {
			return written, err
		}
		n, err := c.Conn.Write(p[:k])
		written += n
		if err != nil {
			return written, err
		}
		p = p[k:]
	}
	return written, nil
}

// Close stops waits in progress and closes the connection.
func (c *shapedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// CloseWrite half-closes the connection if the underlying one can
// (net/http's server uses it to let a client read an answer before the
// connection is closed).
func (c *shapedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// shapedListener shapes every connection it accepts.
type shapedListener struct {
	net.Listener
	in, out *linkLimiter
}

func (l shapedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newShapedConn(c, l.in, l.out), nil
}

// linkShaper is a node's pair of limiters.
type linkShaper struct {
	in, out *linkLimiter
}

func newLinkShaper(rate int64, clock linkClock) *linkShaper {
	return &linkShaper{in: newLinkLimiter(rate, clock), out: newLinkLimiter(rate, clock)}
}

func (s *linkShaper) listener(ln net.Listener) net.Listener {
	return shapedListener{Listener: ln, in: s.in, out: s.out}
}

// client returns hc (nil: NewClient's default) with its transport's
// connections shaped: a copy, with a clone of the transport whose dialer
// wraps each connection. hc's Transport must be nil or an *http.Transport;
// connections it makes with a DialTLSContext of its own are not shaped.
func (s *linkShaper) client(hc *http.Client) *http.Client {
	var t *http.Transport
	if hc == nil {
		hc = defaultHTTPClient()
	}
	switch tr := hc.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = tr.Clone()
	default:
		return hc // Config.Validate refuses this
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newShapedConn(c, s.in, s.out), nil
	}
	shaped := *hc
	shaped.Transport = t
	return &shaped
}
