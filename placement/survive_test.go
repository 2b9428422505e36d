package placement_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"cairn"
	"cairn/codec/all"
	"cairn/placement"
)

// spread is one stripe of width sum(counts) with counts[i] shards on node
// n(i+1), in node order.
func spread(counts ...int) []cairn.NodeID {
	var s []cairn.NodeID
	for i, c := range counts {
		for range c {
			s = append(s, cairn.NodeID(fmt.Sprintf("n%d", i+1)))
		}
	}
	return s
}

func TestNodeLosses(t *testing.T) {
	tests := []struct {
		policy  string
		stripes [][]cairn.NodeID
		any     int
		sets    int
		surv    int
		want    string
	}{
		// The case: rs-6-3 on 4 nodes, 3/2/2/2 shards per node.
		{"rs-6-3", [][]cairn.NodeID{spread(3, 2, 2, 2)}, 1, 6, 0,
			"rs-6-3 over 4 nodes (up to 3 shards of a stripe on one node): survives any 1 node loss, but no 2 nodes at once without losing some stripes"},
		// PGs rotate which node holds 3: no pair is safe for every stripe.
		{"rs-6-3", [][]cairn.NodeID{spread(3, 2, 2, 2), spread(2, 3, 2, 2)}, 1, 6, 0,
			"survives any 1 node loss, but no 2 nodes at once without losing some stripes"},
		// 9 shards on 5 nodes 3/3/1/1/1: pairs of the small nodes survive.
		{"rs-6-3", [][]cairn.NodeID{spread(3, 3, 1, 1, 1)}, 1, 10, 3,
			"rs-6-3 over 5 nodes (up to 3 shards of a stripe on one node): survives any 1 node loss, and 3 of the 10 losses of 2 nodes at once (those holding at most 3 shards of every stripe; not n1+n2, n1+n3, n1+n4, n1+n5, …)"},
		// rs-4-2 on 4 nodes 2/2/1/1: one pair (n3+n4) survives.
		{"rs-4-2", [][]cairn.NodeID{spread(2, 2, 1, 1)}, 1, 6, 1,
			"rs-4-2 over 4 nodes (up to 2 shards of a stripe on one node): survives any 1 node loss, and 1 of the 6 losses of 2 nodes at once (those holding at most 2 shards of every stripe; not n1+n2, n1+n3, n1+n4, n2+n3, …)"},
		// Distinct nodes: the code's full tolerance, and no set of m+1.
		{"rs-4-2", [][]cairn.NodeID{spread(1, 1, 1, 1, 1, 1)}, 2, 20, 0,
			"rs-4-2 over 6 nodes: survives any 2 node losses, but no 3 nodes at once without losing some stripes"},
		{"rs-6-3", [][]cairn.NodeID{spread(9)}, 0, 1, 0,
			"rs-6-3 over 1 node (up to 9 shards of a stripe on one node): cannot survive a node loss (only disk losses)"},
		// 6 and 3 shards on 2 nodes: only the loss of the small one is survivable.
		{"rs-6-3", [][]cairn.NodeID{spread(6, 3)}, 0, 2, 1,
			"rs-6-3 over 2 nodes (up to 6 shards of a stripe on one node): survives the loss of 1 of its 2 nodes alone (not n1)"},
		{"rs-6-3", [][]cairn.NodeID{spread(5, 4), spread(4, 5)}, 0, 2, 0,
			"cannot survive a node loss (only disk losses)"},
		{"rep-3", [][]cairn.NodeID{spread(1, 1, 1)}, 2, 1, 0,
			"rep-3 over 3 nodes: survives any 2 node losses, but no 3 nodes at once without losing some stripes"},
		// LRC is not MDS: the count comes from the code, not from shards per node.
		{"lrc-4-2-1", [][]cairn.NodeID{spread(1, 1, 1, 1, 1, 1, 1)}, 2, 35, 27,
			"lrc-4-2-1 over 7 nodes: survives any 2 node losses, and 27 of the 35 losses of 3 nodes at once (not n1+n2+n5, n1+n2+n7, n1+n5+n7, n2+n5+n7, …)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.policy, tt.stripes), func(t *testing.T) {
			code, err := all.New(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			s := placement.NodeLosses(tt.stripes, code.Params().M, code.CanReconstruct)
			if s.Any != tt.any || s.Sets != tt.sets || s.Survived != tt.surv {
				t.Errorf("any %d, %d of %d sets survived; want any %d, %d of %d (%+v)", s.Any, s.Survived, s.Sets, tt.any, tt.surv, tt.sets, s)
			}
			if got := s.String(tt.policy); !strings.Contains(got, tt.want) {
				t.Errorf("message\n %q\nwant it to contain\n %q", got, tt.want)
			}
		})
	}
}

// A brute-force check of NodeLosses on MDS codes: a set of nodes is
// survivable exactly when it holds at most m shards of every stripe.
func TestNodeLossesMatchesShardCounts(t *testing.T) {
	for _, policy := range []string{"rs-4-2", "rs-6-3", "rs-10-4"} {
		code, err := all.New(policy)
		if err != nil {
			t.Fatal(err)
		}
		n, m := code.Params().N(), code.Params().M
		for nodes := 2; nodes <= n; nodes++ {
			stripe := make([]cairn.NodeID, n)
			for i := range stripe {
				stripe[i] = cairn.NodeID(fmt.Sprintf("n%02d", i%nodes))
			}
			s := placement.NodeLosses([][]cairn.NodeID{stripe}, m, code.CanReconstruct)
			if !s.MDS {
				t.Fatalf("%s is not MDS", policy)
			}
			// Worst case for x nodes: the x fullest.
			per := map[cairn.NodeID]int{}
			for _, nd := range stripe {
				per[nd]++
			}
			var counts []int
			for _, c := range per {
				counts = append(counts, c)
			}
			slices.Sort(counts)
			slices.Reverse(counts)
			want, sum := 0, 0
			for _, c := range counts {
				if sum += c; sum > m {
					break
				}
				want++
			}
			if s.Any != want {
				t.Errorf("%s over %d nodes: survives any %d, want %d", policy, nodes, s.Any, want)
			}
		}
	}
}
