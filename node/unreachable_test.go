package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cairn"
)

// TestClientReportsUnreachable: a call that cannot connect to the address
// its resolver gave tells WithUnreachable's function which disk and
// address (so a caching resolver can read the map again); an answer from
// the node, even an error, does not.
func TestClientReportsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	var got []string
	c := NewClient("secret", func(context.Context, cairn.DiskID) (string, error) { return dead, nil }, nil).
		WithUnreachable(func(d cairn.DiskID, addr string) { got = append(got, string(d)+"@"+addr) })
	_, err = c.PutShard(t.Context(), "n1/d1", "0123456789abcdef0123456789abcdef.0", strings.NewReader("x"))
	if !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("a put to a closed port: %v, want ErrUnavailable", err)
	}
	if err := c.DeleteShard(t.Context(), "n1/d2", "0123456789abcdef0123456789abcdef.1"); !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("a delete to a closed port: %v, want ErrUnavailable", err)
	}
	if len(got) != 2 || got[0] != "n1/d1@"+dead || got[1] != "n1/d2@"+dead {
		t.Fatalf("reported %v, want both calls at %s", got, dead)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	got = nil
	c = NewClient("secret", func(context.Context, cairn.DiskID) (string, error) { return srv.URL, nil }, nil).
		WithUnreachable(func(d cairn.DiskID, addr string) { got = append(got, string(d)+"@"+addr) })
	if err := c.DeleteShard(t.Context(), "n1/d1", "0123456789abcdef0123456789abcdef.0"); err == nil {
		t.Fatal("a node answering 503: no error")
	}
	if len(got) != 0 {
		t.Fatalf("a node that answered was reported unreachable: %v", got)
	}
}
