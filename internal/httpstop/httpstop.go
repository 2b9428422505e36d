package httpstop

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Tracker knows a server's silent connections; its zero value is ready.
type Tracker struct {
	mu     sync.Mutex
	silent map[net.Conn]struct{} // guarded by mu
}

// ConnState is the server's http.Server.ConnState hook.
func (t *Tracker) ConnState(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st != http.StateNew {
		delete(t.silent, c)
		return
	}
	if t.silent == nil {
		t.silent = map[net.Conn]struct{}{}
	}
	t.silent[c] = struct{}{}
}

// Silent returns how many silent connections t knows of.
func (t *Tracker) Silent() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.silent)
}

// closeSilent closes the silent connections t knows of.
func (t *Tracker) closeSilent() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.silent {
		_ = c.Close()
		delete(t.silent, c)
	}
}

// Shutdown stops srv, whose ConnState is t's: the requests being served
// may end until ctx does, after which every connection is closed; the
// silent connections are closed at once.
func Shutdown(ctx context.Context, srv *http.Server, t *Tracker) error {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		t.closeSilent()
		select {
		case err := <-done:
			if err != nil {
				return srv.Close()
			}
			return nil
		case <-tick.C:
		}
	}
}
