package benchcli

import (
	"bytes"
	"context"
	"errors"
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
	} {
		_, err := run(t, args...)
		if !errors.Is(err, cmdline.ErrUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}
