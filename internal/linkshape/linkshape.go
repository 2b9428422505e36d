package linkshape

import (
	"context"
	"math"
	"net"
	"net/http"
	"sync"
	"time"
)

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

// Clock is the time source of a Limiter.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or until done is closed (then it returns
	// net.ErrClosed).
	Sleep(d time.Duration, done <-chan struct{}) error
}

// WallClock is the real time.
type WallClock struct{}

var _ Clock = WallClock{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer.
func (WallClock) Sleep(d time.Duration, done <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-done:
		return net.ErrClosed
	}
}

// Limiter shapes one direction of a link. Safe for concurrent use.
type Limiter struct {
	clock Clock
	mu    sync.Mutex
	b     *tokenBucket // guarded by mu
}

// Shaping granularity: reads and writes are cut into chunks of at most
// Chunk bytes, each charged before it is written or after it is read;
// the bucket holds at least Burst (and at least 50 ms at the rate), so
// short exchanges are not delayed while transfers run at the rate.
const (
	Chunk = 16 << 10
	Burst = 64 << 10
)

// NewLimiter returns a limiter of rate bytes per second (> 0) whose
// bucket starts full.
func NewLimiter(rate int64, clock Clock) *Limiter {
	burst := max(int64(Burst), rate/20)
	return &Limiter{clock: clock, b: newTokenBucket(rate, burst, clock.Now())}
}

// Wait charges n bytes and blocks until they may pass, or until done
// closes (then it returns net.ErrClosed).
func (l *Limiter) Wait(n int, done <-chan struct{}) error {
	l.mu.Lock()
	d := l.b.take(l.clock.Now(), n)
	l.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return l.clock.Sleep(d, done)
}

// Conn charges what it reads to in and what it writes to out (nil: not
// shaped).
type Conn struct {
	net.Conn
	in, out   *Limiter
	closed    chan struct{}
	closeOnce sync.Once
}

var _ net.Conn = (*Conn)(nil)

// NewConn shapes c: what it reads is charged to in, what it writes to out
// (either may be nil: that direction is not shaped).
func NewConn(c net.Conn, in, out *Limiter) *Conn {
	return &Conn{Conn: c, in: in, out: out, closed: make(chan struct{})}
}

// Read reads at most Chunk bytes, then waits until the receive link
// has carried them; the peer is slowed by TCP flow control.
func (c *Conn) Read(p []byte) (int, error) {
	if c.in != nil && len(p) > Chunk {
		p = p[:Chunk]
	}
	n, err := c.Conn.Read(p)
	if n > 0 && c.in != nil {
		if werr := c.in.Wait(n, c.closed); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// Write writes p in chunks, each once the send link has room for it.
func (c *Conn) Write(p []byte) (int, error) {
	if c.out == nil {
		return c.Conn.Write(p)
	}
	written := 0
	for len(p) > 0 {
		k := min(len(p), Chunk)
		if err := c.out.Wait(k, c.closed); err != nil {
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
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// CloseWrite half-closes the connection if the underlying one can
// (net/http's server uses it to let a client read an answer before the
// connection is closed).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// shapedListener shapes every connection it accepts.
type shapedListener struct {
	net.Listener
	in, out *Limiter
}

func (l shapedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewConn(c, l.in, l.out), nil
}

// Link is a pair of limiters: what a process receives and what it sends.
type Link struct {
	in, out *Limiter
}

// New returns a link of rate bytes per second (> 0) in each direction.
func New(rate int64, clock Clock) *Link {
	return &Link{in: NewLimiter(rate, clock), out: NewLimiter(rate, clock)}
}

// Listener shapes every connection ln accepts.
func (s *Link) Listener(ln net.Listener) net.Listener {
	return shapedListener{Listener: ln, in: s.in, out: s.out}
}

// Client returns hc (nil: a zero http.Client) with its transport's
// connections shaped: a copy, with a clone of the transport whose dialer
// wraps each connection. hc's Transport must be nil or an *http.Transport
// (another is returned unshaped); connections it makes with a
// DialTLSContext of its own are not shaped.
func (s *Link) Client(hc *http.Client) *http.Client {
	var t *http.Transport
	if hc == nil {
		hc = &http.Client{}
	}
	switch tr := hc.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = tr.Clone()
	default:
		return hc
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
		return NewConn(c, s.in, s.out), nil
	}
	shaped := *hc
	shaped.Transport = t
	return &shaped
}
