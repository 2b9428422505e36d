package cli

import (
	"strings"
	"testing"
)

// --auth-skew and --auth-replay-entries are validated before anything
// starts, with the bounds in the error, and documented in --help.
func TestAuthFlags(t *testing.T) {
	for _, cmd := range [][]string{{"server", "--data", t.TempDir()}, {"node", "--id", "n1", "--meta", "http://127.0.0.1:1", "--disk", t.TempDir(), "--secret-file", "/nonexistent"}} {
		for _, c := range []struct {
			flags []string
			want  string
		}{
			{[]string{"--auth-skew", "0s"}, "--auth-skew 0s: want 1s to 1h0m0s"},
			{[]string{"--auth-skew", "2h"}, "--auth-skew 2h0m0s: want 1s to 1h0m0s"},
			{[]string{"--auth-replay-entries", "10"}, "--auth-replay-entries 10: want 1024 to 67108864"},
			{[]string{"--auth-replay-entries", "-1"}, "--auth-replay-entries -1: want"},
		} {
			_, _, err := run(t, append(append([]string{}, cmd...), c.flags...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %v: %v, want %q", cmd[0], c.flags, err, c.want)
			}
		}
		out, _, _ := run(t, cmd[0], "--help")
		for _, want := range []string{"-auth-skew", "-auth-replay-entries", "3495/s with the defaults"} {
			if !strings.Contains(out, want) {
				t.Errorf("cairn %s --help does not say %q", cmd[0], want)
			}
		}
	}
}
