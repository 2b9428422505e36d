package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layers of docs/design/layering.md, by directory (a package and its
// subpackages). TestLayeringListsExist keeps the lists true to the tree.
var (
	// corePrefixes are the pure cores: no clock, no global randomness, no
	// files, no network. (Test files may use them.)
	corePrefixes = []string{"codec", "placement", "repair/plan", "repair/decide", "client/engine", "client/slowdisk", "crypt", "raidp", "layout/gp", "lifecycle", "access"}
	// coreMayImport is what a core may import of cairn besides other cores:
	// the vocabulary, the invariant checks and the pure size units.
	coreMayImport = []string{"cairn", "cairn/node/wire", "cairn/internal/invariants", "cairn/internal/units"}
	// wirePrefixes are the packages that talk to storage nodes only through
	// the wire types, never the node server.
	wirePrefixes = []string{"client", "repair", "cold"}
	// nodeServer is the node server's tree, and nodeWire the part of it
	// that everyone may import.
	nodeServer, nodeWire = "node", "node/wire"
)

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

// isCore reports whether the package in dir is a pure core.
func isCore(dir string) bool {
	return slices.ContainsFunc(corePrefixes, func(p string) bool { return under(dir, p) })
}

func TestCoresArePure(t *testing.T) {
	for _, f := range sources(t) {
		if !isCore(pkgDir(f.rel)) || strings.HasSuffix(f.rel, "_test.go") || strings.HasPrefix(f.rel, "codec/codectest/") {
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
		if !isCore(pkgDir(f.rel)) || strings.HasSuffix(f.rel, "_test.go") || strings.HasPrefix(f.rel, "codec/codectest/") {
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

// under reports whether the file or package at rel is dir or below it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

// pkgDir is the directory of the file at rel ("" for the root package).
func pkgDir(rel string) string {
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		return rel[:i]
	}
	return ""
}

// TestLayering enforces docs/design/layering.md.
func TestLayering(t *testing.T) {
	for _, f := range sources(t) {
		dir := pkgDir(f.rel)
		test := strings.HasSuffix(f.rel, "_test.go")
		external := strings.HasSuffix(f.ast.Name.Name, "_test")
		for _, p := range imports(f.ast) {
			if !strings.HasPrefix(p, "cairn/") && p != "cairn" {
				continue
			}
			imp := strings.TrimPrefix(strings.TrimPrefix(p, "cairn"), "/")
			// 1. Only cmd/ imports internal/cli.
			if imp == "internal/cli" && !under(f.rel, "cmd") {
				t.Errorf("%s imports internal/cli: only cmd/ may", f.rel)
			}
			// 2. Cores import only the vocabulary, other cores and
			// internal/invariants.
			if isCore(dir) && !test && !isCore(imp) && !slices.Contains(coreMayImport, p) {
				t.Errorf("%s imports %s: a pure core imports only %v and other cores", f.rel, p, coreMayImport)
			}
			// 3. The vocabulary is a leaf.
			if dir == "" && !test {
				t.Errorf("%s imports %s: the root package imports no cairn package", f.rel, p)
			}
			if dir == nodeWire && !test && p != "cairn" {
				t.Errorf("%s imports %s: node/wire imports only the root package", f.rel, p)
			}
			// 4. client and repair reach nodes only through node/wire.
			for _, w := range wirePrefixes {
				if under(dir, w) && under(imp, nodeServer) && !under(imp, nodeWire) && !external {
					t.Errorf("%s imports %s: %s talks to nodes only through cairn/%s (an external test package may run servers)", f.rel, p, w, nodeWire)
				}
			}
			// 5. The node does not depend on the S3 layer.
			if under(dir, nodeServer) && under(imp, "s3") {
				t.Errorf("%s imports %s: the node must not depend on the S3 layer", f.rel, p)
			}
			// 6. Codecs import only codec packages.
			if under(dir, "codec") && !under(imp, "codec") {
				t.Errorf("%s imports %s: codecs depend only on codec packages", f.rel, p)
			}
		}
	}
}

// TestLayeringListsExist: every package the layering rules name exists, so
// a rule cannot silently guard nothing.
func TestLayeringListsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs := slices.Concat(corePrefixes, wirePrefixes, []string{nodeServer, nodeWire})
	for _, p := range coreMayImport {
		dirs = append(dirs, strings.TrimPrefix(strings.TrimPrefix(p, "cairn"), "/"))
	}
	for _, d := range dirs {
		if d == "" {
			continue // the root package
		}
		ms, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(d), "*.go"))
		if len(ms) == 0 {
			t.Errorf("the layering rules name %s, which has no Go files", d)
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
