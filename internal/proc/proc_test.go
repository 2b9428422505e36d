package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"testing"
	"time"
)

// The test binary is also the child process: with $PROC_TEST_CHILD set,
// TestMain plays a cairn process instead of running the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("PROC_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "ready":
		fmt.Fprintln(os.Stderr, "a log line")
		fmt.Print("cairn node n1 serving 1 disks on 127.0.0.1:4")
		fmt.Println("1234")
		fmt.Println(Ready{Role: "node", Addrs: map[string]string{Node: "127.0.0.1:41234"}})
		fmt.Fprintln(os.Stderr, "after ready")
		waitForSignal()
	case "exit":
		fmt.Fprintln(os.Stderr, "listen tcp: address already in use")
		os.Exit(1)
	case "silent":
		waitForSignal()
	case "ticking":
		fmt.Println(Ready{Role: "node"})
		for {
			fmt.Println("tick")
			time.Sleep(time.Millisecond) // real time: a child process printing at a steady pace
		}
	}
}

// waitForSignal blocks until the parent kills the child (signal.Notify
// keeps the runtime from calling the wait a deadlock).
func waitForSignal() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
}

func child(t *testing.T, mode string, timeout time.Duration, discard bool) (*Proc, error) {
	t.Setenv("PROC_TEST_CHILD", mode)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(context.Background(), Config{Name: mode, Bin: self, Timeout: timeout, DiscardOutput: discard})
	if p != nil {
		t.Cleanup(p.Kill)
	}
	return p, err
}

func TestStartReadsReadyLine(t *testing.T) {
	for _, discard := range []bool{false, true} {
		p, err := child(t, "ready", time.Minute, discard)
		if err != nil {
			t.Fatal(err)
		}
		if p.Addr(Node) != "127.0.0.1:41234" || p.Ready().Role != "node" || !p.Alive() {
			t.Fatalf("ready %+v, alive %v", p.Ready(), p.Alive())
		}
		if out := p.Output(); !strings.Contains(out, "a log line") || !strings.Contains(out, "serving 1 disks on 127.0.0.1:41234\n") {
			t.Fatalf("output %q", out)
		}
		p.Kill()
		if p.Alive() {
			t.Fatal("alive after Kill")
		}
		p.Kill() // idempotent
	}
}

func TestStartFails(t *testing.T) {
	_, err := child(t, "exit", time.Minute, false)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "exited before it was ready") ||
		!strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("exiting child: %v", err)
	}
	// A real process that prints nothing: the timeout is the point.
	_, err = child(t, "silent", 200*time.Millisecond, false)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "not ready after") {
		t.Fatalf("silent child: %v", err)
	}
}

func TestReadyLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want Ready
	}{
		{"cairn server ready meta=http://127.0.0.1:1 node=127.0.0.1:2 s3=http://127.0.0.1:3", true,
			Ready{"server", map[string]string{Meta: "http://127.0.0.1:1", Node: "127.0.0.1:2", S3: "http://127.0.0.1:3"}}},
		{"cairn gateway ready", true, Ready{"gateway", map[string]string{}}},
		{"cairn server running", false, Ready{}},
		{"cairn node n1 serving 2 disks on 127.0.0.1:9100", false, Ready{}},
		{"cairn meta ready =x", false, Ready{}},
		{"cairn meta ready meta", false, Ready{}},
		{"", false, Ready{}},
	}
	for _, tc := range tests {
		got, ok := ParseReady(tc.line)
		if ok != tc.ok || ok && (got.Role != tc.want.Role || fmt.Sprint(got.Addrs) != fmt.Sprint(tc.want.Addrs)) {
			t.Errorf("ParseReady(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
		if ok && got.String() != tc.line {
			t.Errorf("ParseReady(%q).String() = %q", tc.line, got.String())
		}
	}
}

// TestFreeze: once Freeze returns, the child prints nothing more until
// Thaw.
func TestFreeze(t *testing.T) {
	p, err := child(t, "ticking", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Freeze(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // real time: the pipe drains what the child printed before it stopped
	frozen := len(p.Output())
	time.Sleep(200 * time.Millisecond) // real time: a stopped child prints nothing, however long we watch
	if n := len(p.Output()); n != frozen {
		t.Fatalf("printed %d bytes while frozen", n-frozen)
	}
	if err := p.Thaw(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(p.Output()) == frozen {
		if time.Now().After(deadline) {
			t.Fatal("printed nothing 10 s after Thaw")
		}
		time.Sleep(time.Millisecond) // real time: polling a real process's output
	}
}

func TestStatState(t *testing.T) {
	for stat, want := range map[string]byte{
		"42 (cairn) T 1 42":        'T',
		"42 (a) (b) ) S 1 42":      'S',
		"42 (odd name) t 1 42 0 0": 't',
		"42 (cut":                  0,
		"42 (x)":                   0,
	} {
		if got := statState([]byte(stat)); got != want {
			t.Errorf("statState(%q) = %q, want %q", stat, got, want)
		}
	}
}
