package raidp

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"cairn/internal/golden"
)

func testDisks(n int) []GroupDisk {
	var d []GroupDisk
	for i := range n {
		d = append(d, GroupDisk{ID: fmt.Sprintf("disk-%d", i), Domain: fmt.Sprintf("node-%d", i)})
	}
	return d
}

// TestGroupRoundTrip: a group survives its stored form (golden), and a
// recovery yields the next generation with the failed disk out.
func TestGroupRoundTrip(t *testing.T) {
	g, err := NewGroup("warm-0", testDisks(5), 1<<20, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "group.json", string(b)+"\n")
	back, err := DecodeGroup(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(g) {
		t.Fatalf("round trip: %+v, want %+v", back, g)
	}
	p, err := Remirror(g.Layout, []int{3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	next, err := g.Recovered(p.After, 3)
	if err != nil {
		t.Fatal(err)
	}
	if next.Generation != 2 || len(next.Out) != 1 || next.Out[0] != 3 {
		t.Fatalf("after recovery: generation %d, out %v", next.Generation, next.Out)
	}
	// Marking a disk out that still holds superchunks is refused.
	if _, err := g.Recovered(g.Layout, 3); !errors.Is(err, ErrGroup) {
		t.Fatalf("out disk with superchunks: %v, want ErrGroup", err)
	}
}

func TestGroupValidate(t *testing.T) {
	good, err := NewGroup("g", testDisks(4), 1<<20, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*Group)
		want error
	}{
		{"no name", func(g *Group) { g.Name = "" }, ErrGroup},
		{"zero size", func(g *Group) { g.Size = 0 }, ErrGroup},
		{"same domain", func(g *Group) { g.Disks[1].Domain = g.Disks[0].Domain }, ErrGroup},
		{"same disk", func(g *Group) { g.Disks[2].ID = g.Disks[0].ID }, ErrGroup},
		{"disk count", func(g *Group) { g.Disks = g.Disks[:3] }, ErrGroup},
		{"layout", func(g *Group) { g.Layout.Superchunks[0].Replicas[1] = g.Layout.Superchunks[0].Replicas[0] }, ErrInvariant},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := good
			g.Disks = append([]GroupDisk(nil), good.Disks...)
			g.Layout.Superchunks = append([]Superchunk(nil), good.Layout.Superchunks...)
			c.edit(&g)
			if err := g.Validate(); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if _, err := DecodeGroup([]byte("{")); !errors.Is(err, ErrGroup) {
		t.Fatalf("bad JSON: %v", err)
	}
}
