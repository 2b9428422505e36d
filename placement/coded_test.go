package placement

import (
	"fmt"
	"testing"

	"cairn"
)

// nodesOf returns nodeOf for disks spread over nodes as counts says:
// counts[i] disks on node i.
func nodesOf(counts ...int) []cairn.NodeID {
	var out []cairn.NodeID
	for i, c := range counts {
		for range c {
			out = append(out, cairn.NodeID(fmt.Sprintf("n%d", i)))
		}
	}
	return out
}

func TestCodedBounds(t *testing.T) {
	tests := []struct {
		name  string
		k, n  int
		nodes []cairn.NodeID
		want  BlockBounds
	}{
		// (48−16−2)/2 = 15 per domain: any two lost leave 18 = K+2.
		{"many nodes", 16, 48, nodesOf(1, 1, 1, 1, 1, 1, 1, 1), BlockBounds{15, 15}},
		{"many disks, many nodes", 16, 48, nodesOf(4, 4, 4, 4), BlockBounds{15, 15}},
		// Three nodes cannot hold 48 at 15 each: the even spread, 16.
		{"three nodes", 16, 48, nodesOf(4, 4, 4), BlockBounds{15, 16}},
		// One node of one disk: it can take only PerDisk, so the disks
		// of the other nodes take more.
		{"a small node", 16, 48, nodesOf(1, 1, 10), BlockBounds{16, 16}},
		{"one node", 16, 48, nodesOf(6), BlockBounds{15, 48}},
		{"one disk", 16, 48, nodesOf(1), BlockBounds{48, 48}},
		{"rs-like n=k+1", 16, 17, nodesOf(1, 1, 1), BlockBounds{6, 6}},
		{"lt-1024-3 over 64 disks of 16 nodes", 1024, 3072, nodesOf(4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4), BlockBounds{1023, 1023}},
		{"no disk", 16, 48, nil, BlockBounds{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CodedBounds(tc.k, tc.n, CodedMargin, tc.nodes)
			if got != tc.want {
				t.Fatalf("CodedBounds(%d, %d, %v) = %+v, want %+v", tc.k, tc.n, tc.nodes, got, tc.want)
			}
		})
	}
}

// TestCodedBoundsHold checks the promise on every small shape: n blocks
// fit, PerDisk ≤ PerNode, and when the domains are many enough, losing any
// two of them leaves k+margin blocks.
func TestCodedBoundsHold(t *testing.T) {
	for _, k := range []int{16, 32} {
		for _, x := range []int{2, 3} {
			n := k * x
			for nodes := 1; nodes <= 8; nodes++ {
				for per := 1; per <= 4; per++ {
					counts := make([]int, nodes)
					for i := range counts {
						counts[i] = 1 + (i*per)%4 // uneven disks per node
					}
					nodeOf := nodesOf(counts...)
					b := CodedBounds(k, n, CodedMargin, nodeOf)
					disksOn := map[cairn.NodeID]int{}
					for _, nd := range nodeOf {
						disksOn[nd]++
					}
					if c := b.capacity(disksOn); c < n {
						t.Errorf("k=%d n=%d nodes %v: %+v holds %d blocks, want %d", k, n, counts, b, c, n)
					}
					if b.PerDisk > b.PerNode || b.PerDisk < 1 {
						t.Errorf("k=%d n=%d nodes %v: %+v", k, n, counts, b)
					}
					if c := (n - k - CodedMargin) / 2; c*nodes >= n && 2*b.PerNode > n-k-CodedMargin {
						t.Errorf("k=%d n=%d nodes %v: %+v: losing two nodes may leave fewer than k+%d", k, n, counts, b, CodedMargin)
					}
				}
			}
		}
	}
}
