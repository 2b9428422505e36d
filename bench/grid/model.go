package grid

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"cairn"
	"cairn/codec"
)

// MovedRatio is the data a write of a file moves to the nodes ÷ the
// file's size for a code: N/K — the paper's n/k for striping, and the
// number of copies for replication (rep-N has K = 1).
func MovedRatio(p codec.Params) float64 { return float64(p.N()) / float64(p.K) }

// ShardTime is the model of one shard's transfer over its link: its
// bytes at the link's rate, plus one round trip.
func ShardTime(bytes int64, l Link) time.Duration {
	if l.Rate <= 0 {
		return l.RTT
	}
	return l.RTT + time.Duration(float64(bytes)/float64(l.Rate)*float64(time.Second))
}

// UploadModel is a write's time if only the links limit it: every shard
// (size/K bytes each) goes to its own link at once, and the write ends
// with the slowest.
func UploadModel(size int64, k int, links []Link) time.Duration {
	var t time.Duration
	for _, l := range links {
		t = max(t, ShardTime(size/int64(k), l))
	}
	return t
}

// DownloadModel is a read's time if only the links limit it: the reader
// asks the first ask shards (K+δ; cairn asks the data shards first) at
// once and decodes when the K-th arrives. links are the shards' in shard
// order.
func DownloadModel(size int64, k, ask int, links []Link) time.Duration {
	ask = min(ask, len(links))
	if k > ask || k <= 0 {
		return 0
	}
	ts := make([]time.Duration, ask)
	for i := range ask {
		ts[i] = ShardTime(size/int64(k), links[i])
	}
	slices.Sort(ts)
	return ts[k-1]
}

// Stripes is a placement as the Monte-Carlo sees it: for every placement
// group, the node (failure domain) of each of its shards, by index into
// a list of nodes.
type Stripes [][]int

// StripesOf maps a PG table to Stripes over the nodes of the disks.
// Errors if a PG names a disk not in disks.
func StripesOf(t cairn.PGTable, disks []cairn.Disk) (Stripes, []cairn.NodeID, error) {
	nodeOf := map[cairn.DiskID]cairn.NodeID{}
	for _, d := range disks {
		nodeOf[d.ID] = d.Node
	}
	var nodes []cairn.NodeID
	index := map[cairn.NodeID]int{}
	var out Stripes
	for _, pg := range t.PGs {
		var s []int
		for _, d := range pg.Disks {
			n, ok := nodeOf[d]
			if !ok {
				return nil, nil, fmt.Errorf("grid: PG %d: disk %s is not in the cluster map", pg.ID, d)
			}
			i, ok := index[n]
			if !ok {
				i = len(nodes)
				index[n] = i
				nodes = append(nodes, n)
			}
			s = append(s, i)
		}
		out = append(out, s)
	}
	return out, nodes, nil
}

// Readable estimates by Monte-Carlo the probability that a file is
// readable when each of nodes nodes is down at random, independently,
// with probability down: each trial draws which nodes are down and the
// file's PG (files spread evenly over the PGs, as placement.PGFor
// spreads them), and counts the file readable if the shards on up nodes
// decode (decodable, the code's CanReconstruct). Deterministic for a
// given rng state.
func Readable(st Stripes, nodes int, decodable func(present []bool) bool, down float64, trials int, rng *rand.Rand) float64 {
	if len(st) == 0 || trials <= 0 {
		return 0
	}
	isDown := make([]bool, nodes)
	ok := 0
	for range trials {
		for i := range isDown {
			isDown[i] = rng.Float64() < down
		}
		pg := st[rng.IntN(len(st))]
		present := make([]bool, len(pg))
		for j, n := range pg {
			present[j] = !isDown[n]
		}
		if decodable(present) {
			ok++
		}
	}
	return float64(ok) / float64(trials)
}

// ReadableExact is the probability that at least k of n shards on n
// distinct nodes are up when each node is down with probability down:
// Σ_{j=k..n} C(n,j)·(1−down)^j·down^(n−j). It is what Readable converges
// to for an MDS code (RS, replication) whose PGs use distinct nodes.
func ReadableExact(k, n int, down float64) float64 {
	var p float64
	for j := k; j <= n; j++ {
		p += binom(n, j) * math.Pow(1-down, float64(j)) * math.Pow(down, float64(n-j))
	}
	return p
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
