package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Cmd is one command of a script: a line "name key=value key …", the
// input lines under it, and, after a line "----", the output it must
// give, up to a blank line.
type Cmd struct {
	Pos   string // file:line of the command
	Name  string
	Args  []Arg
	Input []string
}

// Arg is one argument of a command: key=value, or a bare key ("").
type Arg struct{ Key, Value string }

// Arg returns the value of the argument key and whether it was given.
func (c *Cmd) Arg(key string) (string, bool) {
	for _, a := range c.Args {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// Script runs the script testdata/name (datadriven, after raft's
// interaction tests): blank lines and lines starting with '#' are kept as
// they are; every other line starts a command, which do runs. Its output
// must equal the text after the command's "----" line up to the next blank
// line, so it must not contain a blank line itself. With -rewrite the file
// is written back with do's outputs instead.
func Script(t *testing.T, name string, do func(t *testing.T, c *Cmd) string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		if l := lines[i]; l == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			i++
			continue
		}
		c := &Cmd{Pos: fmt.Sprintf("%s:%d", path, i+1)}
		fields := strings.Fields(lines[i])
		c.Name = fields[0]
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.Args = append(c.Args, Arg{k, v})
		}
		out.WriteString(lines[i] + "\n")
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			c.Input = append(c.Input, lines[i])
			out.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			t.Fatalf("%s: no ---- after the command", c.Pos)
		}
		out.WriteString("----\n")
		var want []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := strings.TrimRight(do(t, c), "\n")
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s: %s: the output has a blank line, which would end it:\n%s", c.Pos, c.Name, got)
		}
		if got != "" {
			out.WriteString(got + "\n")
		}
		if !*rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s: %s: output differs; review it and run with -rewrite if intended\ngot:\n%s\nwant:\n%s",
				c.Pos, c.Name, got, strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
