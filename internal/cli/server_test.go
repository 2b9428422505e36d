package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/internal/proc"
)

func TestPortAddrs(t *testing.T) {
	for _, tc := range []struct {
		base  int
		given map[string]string
		want  map[string]string
		err   bool
	}{
		{DefaultPortBase, nil, map[string]string{"s3-addr": "127.0.0.1:9000", "console-addr": "127.0.0.1:9001", "node-addr": "127.0.0.1:9100",
			"meta-addr": "127.0.0.1:9379", "meta-peer-addr": "127.0.0.1:9380"}, false},
		{10000, map[string]string{"node-addr": "0.0.0.0:7000", "console-addr": "off"}, map[string]string{"s3-addr": "127.0.0.1:10000", "console-addr": "off",
			"node-addr": "0.0.0.0:7000", "meta-addr": "127.0.0.1:10379", "meta-peer-addr": "127.0.0.1:10380"}, false},
		{0, nil, map[string]string{"s3-addr": "127.0.0.1:0", "console-addr": "127.0.0.1:0", "node-addr": "127.0.0.1:0",
			"meta-addr": "127.0.0.1:0", "meta-peer-addr": "127.0.0.1:0"}, false},
		{-1, nil, nil, true},
		{65535, nil, nil, true},
	} {
		t.Run(fmt.Sprint(tc.base), func(t *testing.T) {
			got, err := portAddrs(tc.base, tc.given)
			if tc.err {
				if !errors.Is(err, ErrUsage) {
					t.Fatalf("got %v, %v; want a usage error", got, err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestListenError(t *testing.T) {
	inUse := func(addr string) error {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		return fmt.Errorf("wrapped: %w", &net.OpError{Op: "listen", Net: "tcp", Addr: a,
			Err: os.NewSyscallError("bind", syscall.EADDRINUSE)})
	}
	meta := []listenAddr{{"client", "127.0.0.1:9379", "client-addr"}, {"peer", "127.0.0.1:9380", "peer-addr"}}
	for _, tc := range []struct {
		name  string
		err   error
		addrs []listenAddr
		hint  string
		want  string // "" : err unchanged
	}{
		{"other error", errors.New("boom"), meta, "", ""},
		{"one address", inUse("127.0.0.1:9000"), []listenAddr{{"S3", "127.0.0.1:9000", "s3-addr"}}, "or move every port with --port-base",
			"S3 port 127.0.0.1:9000 is taken (by another process?): choose another with --s3-addr or move every port with --port-base (wrapped: listen tcp 127.0.0.1:9000: bind: address already in use)"},
		{"the one the error names", inUse("127.0.0.1:9380"), meta, "",
			"peer port 127.0.0.1:9380 is taken (by another process?): choose another with --peer-addr (wrapped: listen tcp 127.0.0.1:9380: bind: address already in use)"},
		{"none named", os.NewSyscallError("bind", syscall.EADDRINUSE), meta, "",
			"client port 127.0.0.1:9379 or peer port 127.0.0.1:9380 is taken (by another process?): choose others with --client-addr and --peer-addr (bind: address already in use)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := listenError(tc.err, tc.addrs, tc.hint)
			if tc.want == "" {
				if got != tc.err {
					t.Fatalf("got %v, want the error unchanged", got)
				}
				return
			}
			if got.Error() != tc.want || !errors.Is(got, syscall.EADDRINUSE) {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A taken port fails cairn server with an error naming the flag that
// moves it and --port-base.
func TestServerPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, flag := range []string{"s3-addr", "console-addr", "meta-peer-addr"} {
		t.Run(flag, func(t *testing.T) {
			_, _, err := run(t, "server", "--data", t.TempDir(), "--port-base", "0", "--"+flag, taken)
			if err == nil {
				t.Fatal("cairn server started on a taken port")
			}
			for _, want := range []string{"port " + taken + " is taken", "--" + flag, "--port-base"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// testServer is `cairn server` run in-process by startServer.
type testServer struct {
	Data  string
	Conf  string // DIR/client.conf
	Ready proc.Ready

	stop   context.CancelFunc
	done   chan error
	stderr *proc.Output
}

// startServer runs `cairn server --data DIR --port-base 0 args...` in
// this process until the test ends (or Stop), and waits for its ready
// line.
func startServer(t *testing.T, args ...string) *testServer {
	t.Helper()
	return startServerIn(t, t.TempDir(), args...)
}

// startServerIn is startServer on the data directory dir.
func startServerIn(t *testing.T, dir string, args ...string) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{Data: dir, Conf: filepath.Join(dir, "client.conf"), stop: cancel, done: make(chan error, 1), stderr: proc.NewOutput()}
	stdout := proc.NewOutput()
	go func() {
		s.done <- Run(ctx, append([]string{"server", "--data", dir, "--port-base", "0"}, args...), stdout, s.stderr)
	}()
	t.Cleanup(func() { s.Stop(t) })
	timeout := time.NewTimer(2 * time.Minute)
	defer timeout.Stop()
	select {
	case s.Ready = <-stdout.ReadyC():
		return s
	case err := <-s.done:
		s.done <- err
		t.Fatalf("cairn server stopped before it was ready: %v\n%s", err, s.stderr)
	case <-timeout.C:
		t.Fatalf("cairn server not ready after 2 minutes:\n%s", s.stderr)
	}
	return nil
}

// Stop stops the server as SIGINT would and returns what it wrote to
// stderr. It may be called more than once.
func (s *testServer) Stop(t *testing.T) string {
	t.Helper()
	s.stop()
	if err := <-s.done; err != nil {
		t.Errorf("cairn server: %v", err)
	}
	s.done <- nil
	return s.stderr.String()
}

// CLI runs a cairn command against the server.
func (s *testServer) CLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, err := run(t, append(args, "--config", s.Conf)...)
	if err != nil {
		t.Fatalf("cairn %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
	}
	return out
}

// A clean stop (SIGINT, SIGTERM: the context ends) logs no ERROR line.
func TestServerCleanStop(t *testing.T) {
	s := startServer(t)
	s.CLI(t, "mb", "clean")
	if errs := s.Stop(t); strings.Contains(errs, "level=ERROR") {
		t.Fatalf("a clean stop logged errors:\n%s", errs)
	}
}

// cairn gateway's console follows its S3 address: the next port, on a
// loopback host only.
func TestConsoleDefault(t *testing.T) {
	for _, tc := range []struct{ s3, want string }{
		{"127.0.0.1:9000", "127.0.0.1:9001"},
		{"127.0.0.1:0", "127.0.0.1:0"},
		{"127.0.0.7:9000", "127.0.0.7:9001"},
		{"localhost:10000", "localhost:10001"},
		{"10.0.0.4:9000", "127.0.0.1:9001"},
		{":9000", "127.0.0.1:9001"},
		{"[::1]:9000", "[::1]:9001"},
		{"127.0.0.1:65535", ""},
		{"127.0.0.1:s3", ""},
		{"nonsense", ""},
	} {
		got, err := consoleDefault(tc.s3)
		if tc.want == "" {
			if !errors.Is(err, ErrUsage) {
				t.Errorf("%s: %q, %v; want a usage error", tc.s3, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %s", tc.s3, got, err, tc.want)
		}
	}
}

// The server's console is on by default, in its ready line, and refuses
// a caller without a session; --console-addr off (or "") turns it off.
func TestServerConsoleOnAndOff(t *testing.T) {
	s := startServer(t)
	con := s.Ready.Addrs[proc.Console]
	if con == "" {
		t.Fatalf("ready line %v names no console", s.Ready)
	}
	resp, err := http.Get(con + "/api/buckets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/buckets without a session: %s, want 401", resp.Status)
	}
	s.Stop(t)
	for _, off := range []string{"off", ""} {
		if s := startServer(t, "--console-addr", off); s.Ready.Addrs[proc.Console] != "" {
			t.Fatalf("--console-addr %q: the ready line %v names a console", off, s.Ready)
		}
	}
}
