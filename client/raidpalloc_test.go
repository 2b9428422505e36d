package client

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
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
	// Four disks, superchunks 0 (disks 0,1), 1 (1,2), 2 (2,3), 3 (3,0):
	// 0 and 2 open first, reservations taking them in turn.
	step(30, "[{0 0 30}]")
	step(80, "[{2 0 80}]")
	step(90, "[{0 30 70} {2 80 20}]") // continues in the next open one
	if len(a.Open) != 0 {
		t.Errorf("full superchunks left open: %v", a.Open)
	}
	step(201, "no space left: RAIDP group g has not enough free space (1 bytes more needed)")
	step(150, "[{3 0 100} {1 0 50}]") // 1 and 3 open now; the turn is at the second
	step(50, "[{1 50 50}]")
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

// TestRAIDPAllocateSpreads: on random groups, with superchunks diverted,
// compacting or on avoided disks at random, a stream of reservations
// never hands out a byte twice or one of a superchunk it may not write,
// fails with ErrNoSpace only when the writable free space is short, keeps
// at most N/2 superchunks open on pairwise distinct disks, and gives
// successive small reservations different disk pairs while more than one
// superchunk is open.
func TestRAIDPAllocateSpreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	for iter := range 200 {
		n := 4 + rng.IntN(13)
		var gd []raidp.GroupDisk
		for i := range n {
			gd = append(gd, raidp.GroupDisk{ID: fmt.Sprint("d", i), Domain: fmt.Sprint(i)})
		}
		slots := 2 + rng.IntN(6)
		rows := max(1, min(slots*(n-2)/n, (n-2)*(n-3)/n))
		g, err := raidp.NewGroup("g", gd, 1000, slots, rows)
		if err != nil {
			t.Fatal(err)
		}
		var a RAIDPAlloc
		handed := map[int]int64{} // per superchunk, bytes handed out (append-only: must equal End)
		var prev []raidp.Extent
		for step := range 300 {
			avoid := map[int]bool{}
			if rng.IntN(10) == 0 {
				avoid[rng.IntN(n)] = true
			}
			a.Divert, a.Compacting = nil, nil
			if rng.IntN(10) == 0 {
				a.Divert = []int{rng.IntN(len(g.Layout.Superchunks))}
			}
			if rng.IntN(10) == 0 {
				a.Compacting = []int{rng.IntN(len(g.Layout.Superchunks))}
			}
			may := func(s raidp.Superchunk) bool {
				return !slices.Contains(a.Divert, s.ID) && !slices.Contains(a.Compacting, s.ID) && !avoid[s.Replicas[0].Disk] && !avoid[s.Replicas[1].Disk]
			}
			var free int64
			for _, s := range g.Layout.Superchunks {
				if may(s) {
					free += g.Size - a.End[s.ID]
				}
			}
			want := int64(1 + rng.IntN(300))
			es, next, err := allocate(g, a, want, avoid)
			if errors.Is(err, cairn.ErrNoSpace) {
				if free >= want {
					t.Fatalf("iter %d step %d: ErrNoSpace for %d bytes with %d writable free", iter, step, want, free)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			for _, e := range es {
				s := g.Layout.Superchunks[slices.IndexFunc(g.Layout.Superchunks, func(s raidp.Superchunk) bool { return s.ID == e.Superchunk })]
				if !may(s) || e.Off != handed[e.Superchunk] || e.Len <= 0 || e.Off+e.Len > g.Size {
					t.Fatalf("iter %d step %d: extent %+v (handed out %d, may write %v)", iter, step, e, handed[e.Superchunk], may(s))
				}
				handed[e.Superchunk] += e.Len
				got += e.Len
			}
			if got != want || !maps.Equal(handed, next.End) {
				t.Fatalf("iter %d step %d: %d bytes in %v, want %d; ends %v, handed %v", iter, step, got, es, want, next.End, handed)
			}
			disks := map[int]bool{}
			for _, id := range next.Open {
				s := g.Layout.Superchunks[slices.IndexFunc(g.Layout.Superchunks, func(s raidp.Superchunk) bool { return s.ID == id })]
				for _, r := range s.Replicas {
					if disks[r.Disk] {
						t.Fatalf("iter %d step %d: open %v shares disk %d", iter, step, next.Open, r.Disk)
					}
					disks[r.Disk] = true
				}
			}
			if len(next.Open) > n/2 {
				t.Fatalf("iter %d step %d: %d open of %d disks", iter, step, len(next.Open), n)
			}
			calm := len(avoid) == 0 && len(a.Divert) == 0 && len(a.Compacting) == 0 // every open superchunk still writable
			if calm && len(prev) == 1 && len(es) == 1 && len(a.Open) > 1 && len(next.Open) == len(a.Open) && prev[0].Superchunk == es[0].Superchunk {
				t.Fatalf("iter %d step %d: two reservations in a row in superchunk %d with %v open", iter, step, es[0].Superchunk, a.Open)
			}
			prev, a = es, next
		}
	}
}
