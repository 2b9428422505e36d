package benchcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/cmdline"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb)
	return out.String(), err
}

func TestHandles(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"push", "--quick"}, true},
		{[]string{"robustore"}, true},
		{[]string{"grid", "--quick"}, true},
		{[]string{"help"}, true},
		{[]string{"--help"}, true},
		{[]string{"help", "push"}, true},
		{[]string{"help", "node"}, false},
		{[]string{"node", "--id", "n1"}, false},
		{[]string{"meta"}, false},
		{[]string{"bench", "codec"}, false},
	}
	for _, tc := range tests {
		if got := Handles(tc.args); got != tc.want {
			t.Errorf("Handles(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "go run ./cmd/cairn-bench push --quick"},
		{[]string{"push", "--help"}, "Usage: cairn-bench push"},
		{[]string{"help", "robustore"}, "Usage: cairn-bench robustore"},
		{[]string{"grid", "--help"}, "Usage: cairn-bench grid"},
		{[]string{"help", "gp"}, "TIME MODEL"},
		{[]string{"raidp", "--help"}, "Usage: cairn-bench raidp"},
	} {
		out, err := run(t, tc.args...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%q: %v; output does not contain %q:\n%s", tc.args, err, tc.want, out)
		}
	}
}

// Bad arguments are refused before any process starts.
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"push", "--point", "6,3,1"},
		{"push", "--point", "6,3,4,128KiB"},
		{"push", "--link", "0"},
		{"push", "extra"},
		{"robustore", "--redundancy", "150"},
		{"robustore", "--size", "1000", "--blocks", "3"},
		{"robustore", "--depth", "0"},
		{"grid", "extra"},
		{"grid", "--reps", "-1"},
		{"grid", "--trials", "0"},
		{"gp", "--objects", "-1"},
		{"gp", "extra"},
		{"gp", "--mem-limit", "lots"},
		{"raidp", "extra"},
		{"raidp", "--nodes", "5"},
		{"raidp", "--superchunk", "100KiB"},
		{"raidp", "--link", "0"},
	} {
		_, err := run(t, args...)
		if !errors.Is(err, cmdline.ErrUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}

// TestGP runs the modelled part of the experiment on a few objects (the
// node part is bench/gpbench.TestNodeRun, on in-process nodes): it writes its CSV
// and plot and ends with the JSON line of the acceptance fields.
func TestGP(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, "gp", "--quick", "--model-only", "--objects", "40", "--json", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatalf("output is not one JSON line: %v\n%s", err, out)
	}
	for _, k := range []string{"recovery_vs_rs", "recovery_vs_lrc", "degraded_over_normal_read", "degraded_vs_stripe_max"} {
		if v, ok := line[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v", k, line[k])
		}
	}
	if line["modelled"] != true {
		t.Errorf("the line does not say the numbers are modelled: %s", out)
	}
	for _, f := range []string{"gp.csv", "tradeoff.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
