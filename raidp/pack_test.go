package raidp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"cairn/internal/golden"
)

func TestPackerScript(t *testing.T) {
	var p *Packer
	golden.Script(t, "pack.txt", func(t *testing.T, c *golden.Cmd) string {
		arg := func(k string) int64 {
			v, _ := c.Arg(k)
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %s=%q: %v", c.Pos, k, v, err)
			}
			return n
		}
		var err error
		switch c.Name {
		case "new":
			v, _ := c.Arg("superchunks")
			var ids []int
			for _, f := range strings.Split(v, ",") {
				id, _ := strconv.Atoi(f)
				ids = append(ids, id)
			}
			p, err = NewPacker(arg("size"), ids)
		case "place":
			var es []Extent
			if es, err = p.Place(arg("n")); err == nil {
				return fmt.Sprint(es) + "\n" + p.state()
			}
		case "free":
			err = p.Free([]Extent{{int(arg("superchunk")), arg("off"), arg("len")}})
		case "compactable":
			v, _ := c.Arg("min")
			f, _ := strconv.ParseFloat(v, 64)
			return fmt.Sprint(p.Compactable(f))
		case "divert":
			_, off := c.Arg("off")
			p.Divert(int(arg("superchunk")), !off)
		case "reset":
			err = p.Reset(int(arg("superchunk")))
		default:
			t.Fatalf("%s: unknown command %s", c.Pos, c.Name)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return p.state()
	})
}

// state renders the packer's superchunks: fill/dead, and D if diverted.
func (p *Packer) state() string {
	var b strings.Builder
	for s := range len(p.fill) {
		f, d := p.Usage(s)
		fmt.Fprintf(&b, "sc%d %d/%d", s, f, d)
		if p.diverted[s] {
			b.WriteString(" D")
		}
		b.WriteString("  ")
	}
	return strings.TrimRight(b.String(), " ")
}

func TestPackerBadInput(t *testing.T) {
	if _, err := NewPacker(0, []int{1}); !errors.Is(err, ErrBadInput) {
		t.Fatal(err)
	}
	if _, err := NewPacker(10, []int{1, 1}); !errors.Is(err, ErrBadInput) {
		t.Fatal(err)
	}
	p, _ := NewPacker(10, []int{0})
	if _, err := p.Place(0); !errors.Is(err, ErrBadInput) {
		t.Fatal(err)
	}
	es, _ := p.Place(5)
	if err := p.Free([]Extent{{0, 3, 5}}); !errors.Is(err, ErrExtent) {
		t.Fatalf("free past the fill: %v", err)
	}
	if err := p.Free(es); err != nil {
		t.Fatal(err)
	}
	if err := p.Free(es); !errors.Is(err, ErrExtent) {
		t.Fatalf("double free: %v", err)
	}
	if err := p.Reset(7); !errors.Is(err, ErrExtent) {
		t.Fatalf("reset of an unknown superchunk: %v", err)
	}
}
