package decide

import (
	"fmt"
	"slices"
	"testing"

	"cairn"
)

// view of nodes×disks up disks named nN/dM, every node with an address.
func balanceView(nodes, disks int) *View {
	var ns []cairn.Node
	var ds []cairn.Disk
	for n := 1; n <= nodes; n++ {
		id := cairn.NodeID(fmt.Sprintf("n%d", n))
		ns = append(ns, cairn.Node{ID: id, Addr: "a"})
		for d := 1; d <= disks; d++ {
			ds = append(ds, cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/d%d", id, d)), Node: id, State: cairn.DiskUp, Capacity: 100})
		}
	}
	return NewView(ns, ds)
}

func stripe(disks ...string) Stripe {
	st := Stripe{Version: "v"}
	for _, d := range disks {
		st.Shards = append(st.Shards, cairn.ShardLoc{Disk: cairn.DiskID(d), Size: 10})
	}
	return st
}

func TestBalancer(t *testing.T) {
	tests := []struct {
		name  string
		nodes int
		use   map[cairn.DiskID]int64
		st    Stripe
		spare int
		state map[cairn.DiskID]cairn.DiskState
		want  []Move
	}{
		{"balanced: nothing", 3, map[cairn.DiskID]int64{"n1/d1": 100, "n2/d1": 100, "n3/d1": 95},
			stripe("n1/d1", "n2/d1"), 1, nil, nil},
		{"onto the empty node", 3, map[cairn.DiskID]int64{"n1/d1": 100, "n2/d1": 100},
			stripe("n1/d1", "n2/d1"), 1, nil, []Move{{0, "n3/d1", "balance"}}},
		{"only below the mean, off the stripe's nodes", 3, map[cairn.DiskID]int64{"n1/d1": 100, "n2/d1": 100},
			stripe("n1/d1", "n3/d1"), 1, nil, nil},
		{"a disk the view does not know: nothing", 3, map[cairn.DiskID]int64{"n1/d1": 10, "n2/d1": 10, "n3/d1": 10},
			Stripe{Version: "v", Shards: []cairn.ShardLoc{{Disk: "n1/d1", Size: 10}, {Disk: "n2/d1", Size: 10}, {Disk: "n1/d2", Size: 10}}}, 1, nil,
			nil},
		{"a stripe with a shard on a draining disk is left to the drain", 3, map[cairn.DiskID]int64{"n1/d1": 100, "n2/d1": 100},
			stripe("n1/d1", "n2/d1"), 1, map[cairn.DiskID]cairn.DiskState{"n2/d1": cairn.DiskDraining}, nil},
		{"no spare: nothing", 3, map[cairn.DiskID]int64{"n1/d1": 100, "n2/d1": 100},
			stripe("n1/d1", "n2/d1"), 0, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := balanceView(tc.nodes, 1)
			for d, s := range tc.state {
				dd := v.Disks[d]
				dd.State = s
				v.Disks[d] = dd
			}
			b := NewBalancer(v, tc.use, 0.1, 0, 10)
			if got := b.Offer(tc.st, tc.spare); !slices.Equal(got, tc.want) {
				t.Fatalf("moves %+v, want %+v", got, tc.want)
			}
		})
	}
}

// With two disks per node, a stripe holding two shards on node n1 moves
// the later one to a node outside the stripe, the least used disk there.
func TestBalancerDomains(t *testing.T) {
	v := balanceView(3, 2)
	use := map[cairn.DiskID]int64{"n1/d1": 50, "n1/d2": 50, "n2/d1": 50, "n2/d2": 50, "n3/d1": 40, "n3/d2": 30}
	b := NewBalancer(v, use, 0.1, 0, 10)
	got := b.Offer(stripe("n1/d1", "n1/d2", "n2/d1"), 1)
	if want := []Move{{1, "n3/d2", "domains"}}; !slices.Equal(got, want) {
		t.Fatalf("moves %+v, want %+v", got, want)
	}
	// The limit: one move planned of one allowed.
	b = NewBalancer(v, use, 0.1, 0, 1)
	b.Offer(stripe("n1/d1", "n1/d2", "n2/d1"), 1)
	if !b.Full() || b.Offer(stripe("n1/d1", "n1/d2", "n2/d1"), 1) != nil {
		t.Fatal("a full Balancer planned more")
	}
}

// On a cluster with fewer nodes than a stripe has shards, a node may hold
// ⌈shards/nodes⌉ of it: the shards beyond move to a node with room, and a
// balance move may stay on the shard's own node.
func TestBalancerSmallCluster(t *testing.T) {
	v := balanceView(1, 4) // one server, a fourth disk added
	b := NewBalancer(v, map[cairn.DiskID]int64{"n1/d1": 100, "n1/d2": 100, "n1/d3": 100}, 0.1, 0, 10)
	if got, want := b.Offer(stripe("n1/d1", "n1/d2", "n1/d3"), 1), []Move{{0, "n1/d4", "balance"}}; !slices.Equal(got, want) {
		t.Fatalf("one node: moves %+v, want %+v", got, want)
	}
	v = balanceView(2, 3) // width 4 over 2 nodes: 2 per node
	use := map[cairn.DiskID]int64{"n1/d1": 10, "n1/d2": 10, "n1/d3": 10, "n2/d1": 10, "n2/d2": 10, "n2/d3": 5}
	b = NewBalancer(v, use, 0.5, 0, 10)
	if got, want := b.Offer(stripe("n1/d1", "n1/d2", "n1/d3", "n2/d1"), 2), []Move{{2, "n2/d3", "domains"}}; !slices.Equal(got, want) {
		t.Fatalf("two nodes: moves %+v, want %+v", got, want)
	}
}

// A spread under MinSpread bytes is not worth moving shards for.
func TestBalancerMinSpread(t *testing.T) {
	use := map[cairn.DiskID]int64{"n1/d1": 100, "n2/d1": 100}
	if b := NewBalancer(balanceView(3, 1), use, 0.1, 101, 10); !b.Balanced() || b.Offer(stripe("n1/d1", "n2/d1"), 1) != nil {
		t.Fatal("a spread of 100 bytes under a least of 101 was balanced")
	}
	if b := NewBalancer(balanceView(3, 1), use, 0.1, 100, 10); b.Balanced() || b.Offer(stripe("n1/d1", "n2/d1"), 1) == nil {
		t.Fatal("a spread of 100 bytes at a least of 100 was not balanced")
	}
}
