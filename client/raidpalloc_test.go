package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"cairn"
	"cairn/raidp"
)

func TestRAIDPAllocate(t *testing.T) {
	g, err := raidp.NewGroup("g", []raidp.GroupDisk{{ID: "a", Domain: "1"}, {ID: "b", Domain: "2"}, {ID: "c", Domain: "3"}, {ID: "d", Domain: "4"}}, 100, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	var a RAIDPAlloc
	var avoid map[int]bool
	step := func(n int64, want string) {
		t.Helper()
		es, next, err := allocate(g, a, n, avoid)
		got := fmt.Sprint(es)
		if err != nil {
			got = err.Error()
		} else {
			a = next
		}
		if got != want {
			t.Errorf("allocate %d: %s, want %s", n, got, want)
		}
	}
	step(30, "[{0 0 30}]")
	step(80, "[{0 30 70} {1 0 10}]")
	step(90, "[{1 10 90}]")
	step(201, "no space left: RAIDP group g has not enough free space (1 bytes more needed)")
	step(150, "[{2 0 100} {3 0 50}]")
	step(50, "[{3 50 50}]")
	if _, _, err := allocate(g, a, 1, nil); !errors.Is(err, cairn.ErrNoSpace) {
		t.Errorf("a full group: %v, want ErrNoSpace", err)
	}
	// Diverted superchunks and those on avoided disks are skipped.
	a = RAIDPAlloc{Divert: []int{0}}
	avoid = map[int]bool{g.Layout.Superchunks[1].Replicas[1].Disk: true}
	var skip []int
	for _, s := range g.Layout.Superchunks {
		if s.ID == 0 || avoid[s.Replicas[0].Disk] || avoid[s.Replicas[1].Disk] {
			skip = append(skip, s.ID)
		}
	}
	es, _, err := allocate(g, a, 10, avoid)
	if err != nil || len(es) != 1 || slices.Contains(skip, es[0].Superchunk) {
		t.Errorf("allocate avoiding superchunks %v: %v %v", skip, es, err)
	}
}

func TestNewRAIDPGroup(t *testing.T) {
	disk := func(id, node string, size int64, st cairn.DiskState) cairn.Disk {
		return cairn.Disk{ID: cairn.DiskID(id), Node: cairn.NodeID(node), RAIDPSize: size, RAIDPSlots: 4, State: st}
	}
	// Three nodes: one disk per node, the node its domain; a disk that is
	// down and one of another geometry are left out.
	g, err := NewRAIDPGroup("w", []cairn.Disk{disk("n1/d1", "n1", 1<<20, cairn.DiskUp), disk("n1/d2", "n1", 1<<20, cairn.DiskUp),
		disk("n2/d1", "n2", 1<<20, cairn.DiskUp), disk("n3/d1", "n3", 1<<20, cairn.DiskUp), disk("n4/d1", "n4", 1<<20, cairn.DiskDown),
		disk("n5/d1", "n5", 2<<20, cairn.DiskUp), {ID: "n6/d1", Node: "n6", State: cairn.DiskUp}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(g.Disks); got != "[{n1/d1 n1} {n2/d1 n2} {n3/d1 n3}]" || g.Size != 1<<20 || g.Layout.Slots != 4 {
		t.Errorf("group %s of %d bytes, %d slots", got, g.Size, g.Layout.Slots)
	}
	// One node: every disk, each its own domain.
	g, err = NewRAIDPGroup("w", []cairn.Disk{disk("n1/d1", "n1", 1<<20, cairn.DiskUp), disk("n1/d2", "n1", 1<<20, cairn.DiskUp), disk("n1/d3", "n1", 1<<20, cairn.DiskUp)})
	if err != nil || fmt.Sprint(g.Disks) != "[{n1/d1 n1/d1} {n1/d2 n1/d2} {n1/d3 n1/d3}]" {
		t.Errorf("one node: %v %v", g.Disks, err)
	}
	if _, err := NewRAIDPGroup("w", []cairn.Disk{disk("n1/d1", "n1", 1<<20, cairn.DiskUp), disk("n1/d2", "n1", 1<<20, cairn.DiskUp)}); !errors.Is(err, cairn.ErrUnavailable) {
		t.Errorf("two disks: %v, want ErrUnavailable", err)
	}
	if _, err := NewRAIDPGroup("w", []cairn.Disk{{ID: "a", Node: "n1", State: cairn.DiskUp}}); !errors.Is(err, cairn.ErrUnavailable) {
		t.Errorf("no Lstor: %v, want ErrUnavailable", err)
	}
}
