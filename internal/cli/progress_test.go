package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// put, get and the benchmarks draw a progress bar only on a terminal:
// with stderr a buffer (a pipe, a file, a log) they write nothing there.
// internal/progress tests the drawing, on a pseudo-terminal too.
func TestProgressOnlyOnTerminal(t *testing.T) {
	s := startServer(t)
	s.CLI(t, "mb", "bars")
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	data := bytes.Repeat([]byte("progress"), 3<<17) // 3 MiB
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{
		{"put", in, "bars/obj", "--config", s.Conf},
		{"get", "bars/obj", out, "--config", s.Conf},
		{"bench", "put", "--size", "1MiB", "--runs", "1", "--warmup", "0", "--bucket", "bars", "--config", s.Conf},
		{"bench", "get", "--size", "1MiB", "--runs", "1", "--warmup", "0", "--bucket", "bars", "--config", s.Conf},
		{"bench", "codec", "--code", "rs-2-1", "--shard", "4KiB", "--threads", "1", "--time", "10ms", "--ops", "encode"},
	} {
		var stdout, stderr bytes.Buffer
		if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("cairn %s: %v\n%s%s", strings.Join(args, " "), err, &stdout, &stderr)
		}
		if stderr.Len() != 0 {
			t.Errorf("cairn %s wrote to stderr, which is not a terminal:\n%q", strings.Join(args, " "), stderr.String())
		}
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get read %d bytes back (%v), want the %d put", len(got), err, len(data))
	}
}
