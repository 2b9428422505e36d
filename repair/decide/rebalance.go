package decide

import (
	"cmp"
	"slices"
	"time"

	"cairn"
)

// Balancer plans the rebalancer's moves (docs/design/rebalance.md): it is
// offered the stripes of one walk of the manifests, in walk order, and
// answers for each which shards to move where. It is pure and
// deterministic: the same use, view and order give the same moves.
//
// Two reasons move a shard, in this order:
//
//   - domains: a stripe holds more shards on one node than it needs to
//     (one when the cluster has as many nodes with target disks as the
//     stripe has shards; ⌈shards/nodes⌉ on a smaller one) while a target
//     disk on a node with room exists; the later shard moves there (the
//     least used such disk);
//   - balance: the use of the target disks (the bytes the manifests place
//     on each, over its capacity) is spread wider than Tolerance — the
//     least used is below (1−Tolerance) of the most used — and the shard
//     is on a disk above the mean; it moves to the least used disk below
//     the mean, on a node with room for it (or the shard's own node), if
//     that does not lift the disk above the mean.
//
// A move never leaves the mean's side it started on, so every move
// narrows the spread, and the plans of successive walks converge. Only
// stripes whose every shard is on an up disk are moved (full
// redundancy), at most Spare shards of a stripe at a time (the others
// rebuild them), and at most Max moves per walk.
type Balancer struct {
	v         *View
	use       map[cairn.DiskID]float64 // bytes placed ÷ capacity weight, updated by planned moves
	weight    map[cairn.DiskID]float64
	mean      float64
	max       int
	planned   int
	balanced  bool
	targets   []cairn.DiskID // disks v accepts as targets, by ID
	nodes     int            // nodes with target disks
	Tolerance float64
	// MinSpread is the least spread worth moving shards for, in bytes
	// (weighted as use): the disks count as balanced while the most used
	// holds less than MinSpread more than the least used.
	MinSpread float64
}

// Move is one shard the Balancer moves: shard Shard of the stripe onto
// disk To.
type Move struct {
	Shard int
	To    cairn.DiskID
	Why   string // "domains" or "balance"
}

// NewBalancer returns a Balancer over view v, with bytes the bytes the
// manifests place on each disk (a full walk's), moving at most limit
// shards, balanced once the least used target disk is within tolerance
// of the most used (e.g. 0.1) or less than minSpread bytes below it.
func NewBalancer(v *View, bytes map[cairn.DiskID]int64, tolerance float64, minSpread int64, limit int) *Balancer {
	b := &Balancer{v: v, use: map[cairn.DiskID]float64{}, weight: map[cairn.DiskID]float64{}, max: limit,
		Tolerance: tolerance, MinSpread: float64(minSpread)}
	var capMax int64 = 1
	for _, d := range v.List {
		capMax = max(capMax, d.Capacity)
	}
	var sum, wsum float64
	for _, d := range v.List {
		if !v.Target(d.ID) {
			continue
		}
		w := 1.0
		if d.Capacity > 0 {
			w = float64(d.Capacity) / float64(capMax)
		}
		b.weight[d.ID] = w
		b.use[d.ID] = float64(bytes[d.ID]) / w
		b.targets = append(b.targets, d.ID)
		sum += float64(bytes[d.ID])
		wsum += w
	}
	slices.Sort(b.targets)
	seen := map[cairn.NodeID]bool{}
	for _, d := range b.targets {
		seen[v.Disks[d].Node] = true
	}
	b.nodes = len(seen)
	if wsum > 0 {
		b.mean = sum / wsum
	}
	b.balanced = b.Balanced()
	return b
}

// Balanced reports whether the target disks' use is within Tolerance:
// the least used at least (1−Tolerance) of the most used, or less than
// MinSpread apart (true with fewer than two target disks or no use at
// all).
func (b *Balancer) Balanced() bool {
	lo, hi := 0.0, 0.0
	for i, d := range b.targets {
		u := b.use[d]
		if i == 0 || u < lo {
			lo = u
		}
		hi = max(hi, u)
	}
	return len(b.targets) < 2 || hi == 0 || lo >= (1-b.Tolerance)*hi || hi-lo < b.MinSpread
}

// Spread returns the least and most use of the target disks, in bytes
// over capacity weight (the largest disk's weight is 1).
func (b *Balancer) Spread() (lo, hi float64) {
	for i, d := range b.targets {
		u := b.use[d]
		if i == 0 || u < lo {
			lo = u
		}
		hi = max(hi, u)
	}
	return lo, hi
}

// Full reports whether the Balancer has planned its max moves.
func (b *Balancer) Full() bool { return b.planned >= b.max }

// Offer returns the moves for stripe st (spare: how many of its shards
// may move at once, the code's parity count) and counts them as done:
// later offers see the disks' use after them. None if the stripe is not
// wholly on up disks, or nothing calls for a move.
func (b *Balancer) Offer(st Stripe, spare int) []Move {
	if b.Full() || spare < 1 {
		return nil
	}
	nodes := map[cairn.NodeID]int{}
	for _, s := range st.Shards {
		d, ok := b.v.Disks[s.Disk]
		if !ok || d.State != cairn.DiskUp || !b.v.Usable(s.Disk) {
			return nil
		}
		nodes[d.Node]++
	}
	inStripe := func(id cairn.DiskID) bool {
		return slices.ContainsFunc(st.Shards, func(l cairn.ShardLoc) bool { return l.Disk == id })
	}
	// A node may hold perNode shards of the stripe: 1 when there are as
	// many nodes as shards, more on a smaller cluster.
	perNode := max(1, (len(st.Shards)+b.nodes-1)/max(b.nodes, 1))
	var out []Move
	// Domains: the shards of a node beyond perNode, the later ones.
	seen := map[cairn.NodeID]int{}
	for i, s := range st.Shards {
		n := b.v.Disks[s.Disk].Node
		if seen[n]++; seen[n] <= perNode {
			continue
		}
		if len(out) >= spare || b.Full() {
			break
		}
		to, ok := b.least(func(d cairn.DiskID) bool { return nodes[b.v.Disks[d].Node] < perNode && !inStripe(d) })
		if !ok {
			break // no node with room for it is left
		}
		out = append(out, b.plan(st, i, to, "domains", nodes))
	}
	if len(out) > 0 || b.balanced {
		return out
	}
	// Balance: one shard of a disk above the mean, to a disk below it on
	// its own node or a node with room for it.
	for i, s := range st.Shards {
		from := s.Disk
		if b.use[from] <= b.mean {
			continue
		}
		own := b.v.Disks[from].Node
		size := float64(s.Size)
		to, ok := b.least(func(d cairn.DiskID) bool {
			n := b.v.Disks[d].Node
			return (n == own || nodes[n] < perNode) && !inStripe(d) && b.use[d]+size/b.weight[d] <= b.mean
		})
		if !ok {
			continue
		}
		out = append(out, b.plan(st, i, to, "balance", nodes))
		break
	}
	return out
}

// least returns the least used target disk that ok accepts (ties to the
// lower ID).
func (b *Balancer) least(ok func(cairn.DiskID) bool) (cairn.DiskID, bool) {
	var best cairn.DiskID
	found := false
	for _, d := range b.targets {
		if ok(d) && (!found || cmp.Less(b.use[d], b.use[best])) {
			best, found = d, true
		}
	}
	return best, found
}

// plan records the move of shard i of st onto to.
func (b *Balancer) plan(st Stripe, i int, to cairn.DiskID, why string, nodes map[cairn.NodeID]int) Move {
	s := st.Shards[i]
	if w := b.weight[s.Disk]; w > 0 {
		b.use[s.Disk] -= float64(s.Size) / w
	}
	b.use[to] += float64(s.Size) / b.weight[to]
	nodes[b.v.Disks[s.Disk].Node]--
	nodes[b.v.Disks[to].Node]++
	b.planned++
	return Move{Shard: i, To: to, Why: why}
}

// MoveTask returns the task that makes moves of stripe st of m: they are
// its Lost and Move shards, their targets its Targets, and its risk the
// stripe's redundancy, risk (nothing is lost).
func MoveTask(m *cairn.Manifest, st Stripe, risk int, moves []Move, now time.Time) cairn.RepairTask {
	t := stripeTask(m, st, now)
	t.Risk = risk
	for _, mv := range moves {
		t.Lost = append(t.Lost, mv.Shard)
		t.Move = append(t.Move, mv.Shard)
		t.Targets = append(t.Targets, mv.To)
		t.Bytes += st.Shards[mv.Shard].Size
	}
	return t
}
