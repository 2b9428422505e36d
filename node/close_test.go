package node

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"cairn/internal/vfs"
)

// TestCloseSilentConn: a connection that has asked nothing (Go's HTTP
// clients leave such connections behind) does not hold Close, which closes
// it at once; http.Server.Shutdown alone waits 5 s on each, in case a
// request is on its way.
func TestCloseSilentConn(t *testing.T) {
	mem := vfs.NewMem()
	s, err := NewServer(Config{Node: "n", Secret: testSecret, Disks: []DiskConfig{{ID: "n/d", Path: "/d", FS: mem}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	fsckCleanup(t, mem, "/d", "n/d")
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server accepts connections in the order they came, so once a
	// request on a later connection is answered, the silent one has been
	// accepted and tracked.
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + s.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := s.conns.Silent(); n != 1 {
		t.Fatalf("the server tracks %d silent connections, want 1", n)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Not a speed target: 5 s is Go's wait for a silent connection, which
	// Close must not take (half of it leaves a loaded machine room).
	if d := time.Since(start); d >= 2500*time.Millisecond {
		t.Errorf("Close took %v with a silent connection open", d)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("the silent connection read %d bytes after Close, want it closed", n)
	}
}
