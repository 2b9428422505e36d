package lint

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// outsideRefs matches citations of files that live outside the repository
// (the project's shared notes), which a reader of a clone cannot open.
var outsideRefs = regexp.MustCompile(`\b(CODES|PAPERS|DESIGN|STYLE)\.md\b|\.\./shared\b|/work/shared\b|\bSTYLE\s*[#§]\s*\d+`)

// text is one piece of prose to check: a Go comment or a whole Markdown
// file, with the line it starts on.
type text struct {
	rel  string // slash path relative to the module root
	line int
	body string
}

// prose returns every comment of every Go file and every Markdown file of
// the module, skipping hidden directories and testdata.
func prose(t *testing.T) []text {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []text
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasSuffix(p, ".md"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, text{rel, 1, string(b)})
		case strings.HasSuffix(p, ".go"):
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var s scanner.Scanner
			file := fset.AddFile(p, -1, len(src))
			s.Init(file, src, nil, scanner.ScanComments)
			for {
				pos, tok, lit := s.Scan()
				if tok == token.EOF {
					break
				}
				if tok == token.COMMENT {
					out = append(out, text{rel, fset.Position(pos).Line, lit})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found only %d comments and docs under %s", len(out), root)
	}
	return out
}

// lineOf returns the line, counted from start, of byte offset off in body.
func lineOf(start int, body string, off int) int {
	return start + strings.Count(body[:off], "\n")
}

// TestNoOutsideCitations: comments and docs cite docs/ in the repository
// or state the fact themselves; they never send the reader to a file a
// clone does not have.
func TestNoOutsideCitations(t *testing.T) {
	for _, x := range prose(t) {
		for _, m := range outsideRefs.FindAllStringIndex(x.body, -1) {
			t.Errorf("%s:%d: cites %q, which is outside the repository: cite a page in docs/ or say the fact",
				x.rel, lineOf(x.line, x.body, m[0]), x.body[m[0]:m[1]])
		}
	}
}

var (
	// docRef is a citation of a doc by its path from the module root, as
	// Go comments and docs write them: docs/codes.md#clay.
	docRef = regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]+\.md(#[A-Za-z0-9_-]+)?`)
	// mdLink is a relative Markdown link to a .md file, [x](design/lt.md#9),
	// or to a heading of the same file, [x](#clay).
	mdLink = regexp.MustCompile(`\]\(([A-Za-z0-9_./-]+\.md)?(#[^)\s]+)?\)`)
	// heading is a Markdown heading line.
	heading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
)

// anchors returns the anchors GitHub makes for the headings of a Markdown
// file: lower case, punctuation dropped, spaces turned into hyphens, and
// -1, -2 … appended to repeats.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		for i, try := 1, a; ; i++ {
			if !out[try] {
				out[try] = true
				break
			}
			try = a + "-" + strconv.Itoa(i)
		}
	}
	return out
}

// TestDocReferencesResolve: every docs/….md cited in a comment or a doc,
// and every relative .md link in a doc, names a file that exists and, when
// it has one, an anchor of one of that file's headings.
func TestDocReferencesResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	cache := map[string]map[string]bool{} // file → its anchors; nil if missing
	check := func(x text, off int, file, anchor string) {
		as, ok := cache[file]
		if !ok {
			if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file))); err == nil {
				as = anchors(string(b))
			}
			cache[file] = as
		}
		where := lineOf(x.line, x.body, off)
		switch {
		case as == nil:
			t.Errorf("%s:%d: cites %s, which does not exist", x.rel, where, file)
		case anchor != "" && !as[strings.TrimPrefix(anchor, "#")]:
			t.Errorf("%s:%d: cites %s%s, but %s has no such heading", x.rel, where, file, anchor, file)
		}
	}
	refs := 0
	for _, x := range prose(t) {
		for _, m := range docRef.FindAllStringSubmatchIndex(x.body, -1) {
			ref := x.body[m[0]:m[1]]
			file, anchor, _ := strings.Cut(ref, "#")
			if anchor != "" {
				anchor = "#" + anchor
			}
			check(x, m[0], file, anchor)
			refs++
		}
		if !strings.HasSuffix(x.rel, ".md") {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatchIndex(x.body, -1) {
			file, anchor := x.rel, ""
			if m[2] >= 0 {
				file = path.Clean(path.Join(path.Dir(x.rel), x.body[m[2]:m[3]]))
			}
			if m[4] >= 0 {
				anchor = x.body[m[4]:m[5]]
			}
			if m[2] < 0 && m[4] < 0 {
				continue // "]()"
			}
			check(x, m[0], file, anchor)
			refs++
		}
	}
	if refs < 10 {
		t.Fatalf("found only %d doc references", refs)
	}
}
