package node

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/node/wire"
)

// pipeNet is an in-memory network for a synctest bubble: each dial is a
// net.Pipe whose other end the listener accepts.
type pipeNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeNet() *pipeNet { return &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})} }

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error   { p.once.Do(func() { close(p.done) }); return nil }
func (p *pipeNet) Addr() net.Addr { return &net.TCPAddr{} }

func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case p.conns <- b:
		return a, nil
	case <-p.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stallClient returns a client with short timeouts whose every call goes
// to h over a pipe network; the server and the connections end with the
// test, and quit is closed first (for handlers that hold a request).
func stallClient(t *testing.T, h http.HandlerFunc, quit chan struct{}) *Client {
	pn := newPipeNet()
	srv := &http.Server{Handler: h}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(pn) })
	tr := &http.Transport{DialContext: pn.dial}
	t.Cleanup(func() {
		close(quit)
		srv.Close()
		tr.CloseIdleConnections()
		wg.Wait()
		// net/http lingers 500 ms before closing a connection whose
		// request body it did not read; on the bubble's clock.
		<-time.After(time.Second)
	})
	c := NewClient("x", func(context.Context, cairn.DiskID) (string, error) { return "node", nil }, &http.Client{Transport: tr})
	return c.WithTimeouts(Timeouts{Header: 3 * time.Second, Call: 2 * time.Second, Idle: time.Second})
}

// shardBody answers a GET of body with the protocol's headers and
// trailers, pausing before each byte.
func shardBody(w http.ResponseWriter, body []byte, pause time.Duration) {
	w.Header().Set("Trailer", wire.TrailerStatus+", "+wire.TrailerBodyCRC)
	w.Header().Set(wire.HeaderLength, strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	for i := range body {
		<-time.After(pause) // the bubble's clock: a node sending slowly
		w.Write(body[i : i+1])
		w.(http.Flusher).Flush()
	}
	w.Header().Set(wire.TrailerStatus, wire.StatusOK)
	w.Header().Set(wire.TrailerBodyCRC, wire.FormatCRC(crc32c(body)))
}

// slowReader returns body a byte at a time, pausing before each.
type slowReader struct {
	b     []byte
	pause time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	<-time.After(r.pause) // the bubble's clock: a data path making its blocks slowly
	p[0], r.b = r.b[0], r.b[1:]
	return 1, nil
}

// TestClientTimeouts: a node that does not answer, stops sending or stops
// taking bytes ends the call with ErrUnavailable when its timeout passes
// (Header, Idle, Call), on the bubble's clock; a node that is slow but
// moves, and a PUT whose own source is slow, go on however long it takes.
func TestClientTimeouts(t *testing.T) {
	name := shardName(1, 0)
	var quit chan struct{}          // each subtest's (stallClient)
	hold := func(r *http.Request) { // until the client gives up, or the test ends
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		call    func(c *Client) error
		want    time.Duration // how long until it fails; 0: it succeeds
	}{
		{"GET not answered", func(w http.ResponseWriter, r *http.Request) { hold(r) },
			func(c *Client) error { _, err := c.GetShard(context.Background(), "d", name, 0, -1); return err }, 3 * time.Second},
		{"GET stops sending", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(wire.HeaderLength, "10")
			w.Write([]byte("he"))
			w.(http.Flusher).Flush()
			hold(r)
		}, func(c *Client) error {
			rc, err := c.GetShard(context.Background(), "d", name, 0, -1)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.ReadAll(rc)
			return err
		}, time.Second},
		{"GET slow but moving", func(w http.ResponseWriter, r *http.Request) {
			shardBody(w, []byte("hello, slow world"), 700*time.Millisecond)
		}, func(c *Client) error {
			rc, err := c.GetShard(context.Background(), "d", name, 0, -1)
			if err != nil {
				return err
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err == nil && string(b) != "hello, slow world" {
				err = errors.New("wrong bytes")
			}
			return err
		}, 0},
		{"DELETE not answered", func(w http.ResponseWriter, r *http.Request) { hold(r) },
			func(c *Client) error { return c.DeleteShard(context.Background(), "d", name) }, 2 * time.Second},
		{"PUT body not taken", func(w http.ResponseWriter, r *http.Request) { hold(r) },
			func(c *Client) error {
				_, err := c.PutShard(context.Background(), "d", name, bytes.NewReader(make([]byte, 1<<20)))
				return err
			}, time.Second},
		{"PUT not answered", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			hold(r)
		}, func(c *Client) error {
			_, err := c.PutShard(context.Background(), "d", name, strings.NewReader("abc"))
			return err
		}, 3 * time.Second},
		{"PUT from a slow source", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			writeJSON(w, 201, wire.PutResponse{Size: int64(len(b)), CRC: crc32c(b)})
		}, func(c *Client) error {
			_, err := c.PutShard(context.Background(), "d", name, &slowReader{b: []byte("slowly made"), pause: 2 * time.Second})
			return err
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				quit = make(chan struct{})
				c := stallClient(t, tc.handler, quit)
				start := time.Now()
				err := tc.call(c)
				took := time.Since(start)
				switch {
				case tc.want == 0 && err != nil:
					t.Fatalf("failed after %v: %v", took, err)
				case tc.want > 0 && !errors.Is(err, cairn.ErrUnavailable):
					t.Fatalf("after %v: %v, want ErrUnavailable", took, err)
				case tc.want > 0 && took != tc.want:
					t.Fatalf("failed after %v, want %v: %v", took, tc.want, err)
				}
			})
		})
	}
}
