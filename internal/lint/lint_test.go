package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corePrefixes are the pure cores: no clock, no global randomness, no files,
// no network. (Test files may use them.)
var corePrefixes = []string{"codec", "placement", "layout", "repair/plan", "client/engine", "sim"}

var coreForbidden = map[string]string{
	"math/rand": "take a *rand.Rand (math/rand/v2) as input",
	"os":        "do I/O in a driver, not in a core",
	"net":       "do I/O in a driver, not in a core",
	"net/http":  "do I/O in a driver, not in a core",
}

type file struct {
	rel string // slash path relative to the module root
	ast *ast.File
}

func sources(t *testing.T) []file {
	t.Helper()
	root := filepath.Join("..", "..")
	var files []file
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{rel: filepath.ToSlash(rel), ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d Go files under %s", len(files), root)
	}
	return files
}

func imports(f *ast.File) []string {
	var out []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		out = append(out, p)
	}
	return out
}

func isCore(rel string) bool {
	for _, p := range corePrefixes {
		if strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

func TestCoresArePure(t *testing.T) {
	for _, f := range sources(t) {
		if !isCore(f.rel) || strings.HasSuffix(f.rel, "_test.go") || strings.HasPrefix(f.rel, "codec/codectest/") {
			continue
		}
		for _, p := range imports(f.ast) {
			if why, bad := coreForbidden[p]; bad {
				t.Errorf("%s imports %q: core packages must not (%s)", f.rel, p, why)
			}
		}
	}
}

// clockCalls are the time functions that read the clock or sleep; cores may
// use time.Duration and time.Time values, but take "now" as an input.
var clockCalls = map[string]bool{"Now": true, "Sleep": true, "After": true, "AfterFunc": true,
	"NewTimer": true, "NewTicker": true, "Tick": true, "Since": true, "Until": true}

func TestCoresReadNoClock(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	for _, f := range sources(t) {
		if !isCore(f.rel) || strings.HasSuffix(f.rel, "_test.go") || strings.HasPrefix(f.rel, "codec/codectest/") {
			continue
		}
		full, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(f.rel)), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && clockCalls[sel.Sel.Name] {
					t.Errorf("%s: time.%s: core packages take the time as an input", f.rel, sel.Sel.Name)
				}
			}
			return true
		})
	}
}

func TestLayering(t *testing.T) {
	for _, f := range sources(t) {
		for _, p := range imports(f.ast) {
			if p == "cairn/internal/cli" && !strings.HasPrefix(f.rel, "cmd/") {
				t.Errorf("%s imports internal/cli: only cmd/ may", f.rel)
			}
			if strings.HasPrefix(f.rel, "node/") && strings.HasPrefix(p, "cairn/s3") {
				t.Errorf("%s imports %s: the node must not depend on the S3 layer", f.rel, p)
			}
			if strings.HasPrefix(f.rel, "codec/") && strings.HasPrefix(p, "cairn/") && !strings.HasPrefix(p, "cairn/codec") {
				t.Errorf("%s imports %s: codecs depend only on codec packages", f.rel, p)
			}
		}
	}
}

func TestNoRawAtomics(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	for _, f := range sources(t) {
		full, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(f.rel)), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "atomic" &&
				(strings.HasPrefix(sel.Sel.Name, "Add") || strings.HasPrefix(sel.Sel.Name, "Load") ||
					strings.HasPrefix(sel.Sel.Name, "Store") || strings.HasPrefix(sel.Sel.Name, "CompareAndSwap") ||
					strings.HasPrefix(sel.Sel.Name, "Swap")) {
				t.Errorf("%s: atomic.%s: use typed atomics (atomic.Int64 ...)", f.rel, sel.Sel.Name)
			}
			return true
		})
	}
}
