package httpstop_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"cairn/internal/httpstop"
)

// TestShutdown: a request being served when Shutdown starts runs to its
// end and its client gets the answer; a connection that asked nothing is
// closed at once, not after Go's 5 s; Shutdown returns nil.
func TestShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	var tr httpstop.Tracker
	accepted := make(chan struct{}, 2) // a connection's StateNew, once the Tracker has it
	track := func(c net.Conn, st http.ConnState) {
		tr.ConnState(c, st)
		if st == http.StateNew {
			accepted <- struct{}{}
		}
	}
	srv := &http.Server{ConnState: track, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inside)
		<-release
		_, _ = io.WriteString(w, "done")
	})}
	go func() { _ = srv.Serve(ln) }()

	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	<-inside
	<-accepted // the request's connection
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	<-accepted
	if n := tr.Silent(); n != 1 {
		t.Fatalf("tracking %d silent connections, want 1", n)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- httpstop.Shutdown(context.Background(), srv, &tr) }()
	// The silent connection is closed while the request is still served,
	// well before Go's own 5 s (half of it leaves a loaded machine room;
	// a bound on a wait, not a speed target).
	if err := silent.SetReadDeadline(time.Now().Add(2500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := silent.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("the silent connection: read %d bytes, %v; want it closed", n, err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned %v before the request being served ended", err)
	default:
	}
	close(release)
	if got := <-answer; got != "done" {
		t.Errorf("the request being served got %q, want its answer", got)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
