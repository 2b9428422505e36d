package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sleepExplained is the comment that marks a time.Sleep as real time on
// purpose, on the same line or the line before.
const sleepExplained = "real time:"

// isTestCode reports whether rel is test code: a _test.go file, or a file
// of a test-support package (metatest, clienttest, codectest ...).
func isTestCode(rel string) bool {
	return strings.HasSuffix(rel, "_test.go") || strings.HasSuffix(path.Dir(rel), "test")
}

// TestSleepsAreRealTime: tests do not sleep to let something happen. They
// wait on the condition itself (a channel, a watch, errorfs.Signal), or run
// in a testing/synctest bubble, where time.Sleep moves a virtual clock. A
// sleep that must take real time — a retry pause or a load generator
// against real processes, a real lease running out — says why in a
// "// real time:" comment on its line or the line before.
func TestSleepsAreRealTime(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	for _, f := range sources(t) {
		if !isTestCode(f.rel) {
			continue
		}
		full, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(f.rel)), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, pos := range unexplainedSleeps(fset, full) {
			t.Errorf("%s:%d: time.Sleep in a test: wait on the condition or use testing/synctest; "+
				"if it must be real time, say why in a %q comment", f.rel, pos.Line, "// "+sleepExplained)
		}
	}
}

// unexplainedSleeps returns the positions of the references to time.Sleep
// in f that are neither inside a function literal passed to synctest.Test
// nor next to a "real time:" comment.
func unexplainedSleeps(fset *token.FileSet, f *ast.File) []token.Position {
	timePkg, synctestPkg := "", ""
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		switch p {
		case "time":
			timePkg = name
		case "testing/synctest":
			synctestPkg = name
		}
	}
	if timePkg == "" {
		return nil
	}
	explained := map[int]bool{} // lines a "real time:" comment covers
	for _, cg := range f.Comments {
		if strings.Contains(cg.Text(), sleepExplained) {
			for l := fset.Position(cg.Pos()).Line; l <= fset.Position(cg.End()).Line+1; l++ {
				explained[l] = true
			}
		}
	}
	var bubbles []ast.Node // function literals run by synctest.Test
	var out []token.Position
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if synctestPkg != "" && isSelector(n.Fun, synctestPkg, "Test") {
				for _, a := range n.Args {
					if fl, ok := a.(*ast.FuncLit); ok {
						bubbles = append(bubbles, fl)
					}
				}
			}
		case *ast.SelectorExpr:
			if !isSelector(n, timePkg, "Sleep") {
				return true
			}
			for _, b := range bubbles {
				if b.Pos() <= n.Pos() && n.End() <= b.End() {
					return true
				}
			}
			if pos := fset.Position(n.Pos()); !explained[pos.Line] {
				out = append(out, pos)
			}
		}
		return true
	})
	return out
}

// isSelector reports whether e is pkg.name.
func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func TestUnexplainedSleeps(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
	}{
		{"plain", `import "time"
func f() { time.Sleep(1) }`, 1},
		{"comment on the line", `import "time"
func f() { time.Sleep(1) } // real time: why`, 0},
		{"comment on the line before", `import "time"
func f() {
	// A pause against real processes.
	// real time: why
	time.Sleep(1)
}`, 0},
		{"comment too far up", `import "time"
func f() {
	// real time: why

	time.Sleep(1)
}`, 1},
		{"other comment", `import "time"
func f() {
	// let it happen
	time.Sleep(1)
}`, 1},
		{"in a bubble", `import ("testing"; "testing/synctest"; "time")
func f(t *testing.T) { synctest.Test(t, func(t *testing.T) { time.Sleep(1) }) }`, 0},
		{"in a helper of a bubble", `import ("testing"; "testing/synctest"; "time")
func g() { time.Sleep(1) }
func f(t *testing.T) { synctest.Test(t, func(t *testing.T) { g() }) }`, 1},
		{"renamed import", `import tm "time"
func f() { tm.Sleep(1) }`, 1},
		{"as a value", `import "time"
var sleep = time.Sleep`, 1},
		{"another package's Sleep", `import "example.com/time2"
func f() { time2.Sleep(1) }`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x_test.go", "package x\n"+tc.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if got := unexplainedSleeps(fset, f); len(got) != tc.want {
				t.Errorf("%d unexplained sleeps %v, want %d", len(got), got, tc.want)
			}
		})
	}
}
