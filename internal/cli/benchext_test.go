package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/cmdline"
)

// Without cairn-bench next to the test binary or on PATH, `cairn bench
// push` fails and says how to get it; its --help says the same.
func TestBenchExternalMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, name := range []string{"push", "robustore", "grid"} {
		_, _, err := run(t, "bench", name, "--quick")
		if err == nil || cmdline.ExitCode(err) != 1 {
			t.Fatalf("bench %s without cairn-bench: %v", name, err)
		}
		for _, want := range []string{"go build -o cairn-bench ./cmd/cairn-bench", "go run ./cmd/cairn-bench " + name + " --quick"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("bench %s: error %q does not say %q", name, err, want)
			}
		}
		out, _, err := run(t, "bench", name, "--help")
		if err != nil || !strings.Contains(out, "go build -o cairn-bench") {
			t.Errorf("bench %s --help: %v\n%s", name, err, out)
		}
	}
	out, _, _ := run(t, "bench", "--help")
	if !strings.Contains(out, "cairn-bench") {
		t.Errorf("bench --help does not mention cairn-bench:\n%s", out)
	}
}

// `cairn bench robustore ARGS` runs `cairn-bench robustore ARGS` found on
// PATH, passes its output on, and maps its usage status to a usage error.
func TestBenchExternalRuns(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"cairn-bench $*\"\necho to-stderr >&2\nexit ${FAKE_BENCH_EXIT:-0}\n"
	if err := os.WriteFile(filepath.Join(dir, benchProgram), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	out, errOut, err := run(t, "bench", "robustore", "--quick", "--out", "x y")
	if err != nil || out != "cairn-bench robustore --quick --out x y\n" || errOut != "to-stderr\n" {
		t.Fatalf("got %q, %q, %v", out, errOut, err)
	}
	t.Setenv("FAKE_BENCH_EXIT", "2")
	if _, _, err := run(t, "bench", "push", "--nope"); !errors.Is(err, ErrUsage) {
		t.Errorf("exit status 2: got %v, want a usage error", err)
	}
	t.Setenv("FAKE_BENCH_EXIT", "1")
	if _, _, err := run(t, "bench", "push"); err == nil || errors.Is(err, ErrUsage) {
		t.Errorf("exit status 1: got %v, want a failure", err)
	}
}
