// Package golden compares test output with files in testdata/: a whole
// file (Check), or the outputs of a script of commands (Script, datadriven
// tests whose inputs live in the file too). Run a package's tests with
// -rewrite to regenerate its files, then review the diff like code.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata/ instead of comparing")

// Check compares got with testdata/name, or writes it there with -rewrite.
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs from the golden file; review the change and run with -rewrite if intended:\n%s", path, got)
	}
}
