package lint

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerLinksNoPlots: the cairn binary does not link the experiments'
// plotting library and its fonts; they are cairn-bench's (internal/benchcli).
func TestServerLinksNoPlots(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/cairn")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/cairn: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "gonum.org/") || p == "cairn/internal/benchcli" {
			t.Errorf("cmd/cairn depends on %s: the experiments and their plots belong to cmd/cairn-bench", p)
		}
	}
}

// TestBenchCLIOnlyFromCmd: like internal/cli, the experiments' commands are
// wired only by a main package.
func TestBenchCLIOnlyFromCmd(t *testing.T) {
	for _, f := range sources(t) {
		for _, p := range imports(f.ast) {
			if p == "cairn/internal/benchcli" && !strings.HasPrefix(f.rel, "cmd/") {
				t.Errorf("%s imports internal/benchcli: only cmd/ may", f.rel)
			}
		}
	}
}
