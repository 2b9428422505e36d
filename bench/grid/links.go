package grid

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"cairn/internal/linkshape"
)

// Link is the path between the client and one storage node: the paper's
// wide-area connection to one storage element.
type Link struct {
	Site string        // a label (the paper's sites: "at", "sk", "fi", "us"; "near" for a nearby one)
	Rate int64         // bytes per second in each direction; > 0
	RTT  time.Duration // round-trip time: what every request waits for its answer's first byte
}

// Links shapes the connections an HTTP client makes, per peer address:
// each peer has its Link, whose rate both directions of every connection
// to it share (linkshape.Limiter), and whose RTT delays the first byte
// read after a write, so every request/answer exchange pays one RTT. It
// counts the bytes each way. A peer without a Link is counted, not
// shaped. Safe for concurrent use; Set may change a peer's link between
// transfers (connections already open take the new one on their next
// read or write).
//
// Caveats: the RTT is charged per exchange, not per TCP window: a
// transfer's rate is its Link's, whatever the RTT (no bandwidth-delay
// limit), and connection set-up costs no RTT.
type Links struct {
	clock linkshape.Clock

	mu    sync.Mutex
	peers map[string]*atomic.Pointer[path] // by address "host:port"; guarded by mu

	sent, recv atomic.Int64 // bytes written to and read from every peer
}

// path is one peer's shaping: nil limiters (no Link) shape nothing.
type path struct {
	link    Link
	in, out *linkshape.Limiter
}

// NewLinks returns an empty set of links on clock (nil: the wall clock).
func NewLinks(clock linkshape.Clock) *Links {
	if clock == nil {
		clock = linkshape.WallClock{}
	}
	return &Links{clock: clock, peers: map[string]*atomic.Pointer[path]{}}
}

// Set gives the peer at addr link (with fresh limiters).
func (l *Links) Set(addr string, link Link) {
	p := &path{link: link}
	if link.Rate > 0 {
		p.in, p.out = linkshape.NewLimiter(link.Rate, l.clock), linkshape.NewLimiter(link.Rate, l.clock)
	}
	l.peer(addr).Store(p)
}

// Get returns the link of the peer at addr (zero if none).
func (l *Links) Get(addr string) Link {
	if p := l.peer(addr).Load(); p != nil {
		return p.link
	}
	return Link{}
}

func (l *Links) peer(addr string) *atomic.Pointer[path] {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.peers[addr]
	if !ok {
		p = &atomic.Pointer[path]{}
		p.Store(&path{})
		l.peers[addr] = p
	}
	return p
}

// Bytes returns the bytes sent to and received from every peer so far
// (HTTP headers included).
func (l *Links) Bytes() (sent, recv int64) { return l.sent.Load(), l.recv.Load() }

// Conn shapes c, a connection to the peer at addr.
func (l *Links) Conn(c net.Conn, addr string) net.Conn {
	return &conn{Conn: c, links: l, p: l.peer(addr), closed: make(chan struct{})}
}

// Client returns a copy of hc whose transport — a clone of hc's if it is
// an *http.Transport, else of http.DefaultTransport — shapes every
// connection it dials by the peer's address.
func (l *Links) Client(hc *http.Client) *http.Client {
	out := *hc
	base, ok := hc.Transport.(*http.Transport)
	if !ok {
		base = http.DefaultTransport.(*http.Transport)
	}
	t := base.Clone()
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return l.Conn(c, addr), nil
	}
	out.Transport = t
	return &out
}

// conn is a shaped connection to one peer.
type conn struct {
	net.Conn
	links     *Links
	p         *atomic.Pointer[path]
	wrote     atomic.Bool  // written since the last read waited for its RTT
	lastWrite atomic.Int64 // when the last write started, Unix nanoseconds
	closed    chan struct{}
	closeOnce sync.Once
}

// Read reads at most linkshape.Chunk bytes; the first bytes after a write
// wait until RTT after that write, and every byte waits for the link.
func (c *conn) Read(b []byte) (int, error) {
	p := c.p.Load()
	if p.in != nil && len(b) > linkshape.Chunk {
		b = b[:linkshape.Chunk]
	}
	n, err := c.Conn.Read(b)
	if n <= 0 {
		return n, err
	}
	c.links.recv.Add(int64(n))
	if c.wrote.Swap(false) && p.link.RTT > 0 {
		due := time.Unix(0, c.lastWrite.Load()).Add(p.link.RTT)
		if d := due.Sub(c.links.clock.Now()); d > 0 {
			if werr := c.links.clock.Sleep(d, c.closed); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if p.in != nil {
		if werr := p.in.Wait(n, c.closed); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// Write writes b in chunks, each once the link has room for it.
func (c *conn) Write(b []byte) (int, error) {
	p := c.p.Load()
	written := 0
	for len(b) > 0 {
		k := len(b)
		if p.out != nil {
			k = min(k, linkshape.Chunk)
			if err := p.out.Wait(k, c.closed); err != nil {
				return written, err
			}
		}
		// Marked before the bytes leave: the answer may be read before
		// this Write returns.
		c.lastWrite.Store(c.links.clock.Now().UnixNano())
		c.wrote.Store(true)
		n, err := c.Conn.Write(b[:k])
		written += n
		c.links.sent.Add(int64(n))
		if err != nil {
			return written, err
		}
		b = b[k:]
	}
	return written, nil
}

// Close stops waits in progress and closes the connection.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
