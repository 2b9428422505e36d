package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"cairn"
)

// ArrangePG returns the disks of pg in shard order for a code (decodable is
// its CanReconstruct): Arrange over the PG's nodes, seeded by the PG's ID,
// so every writer and every reader of the table derives the same order.
func ArrangePG(pg cairn.PG, nodeOf map[cairn.DiskID]cairn.NodeID, decodable func(present []bool) bool) []cairn.DiskID {
	domains := make([]string, len(pg.Disks))
	for i, d := range pg.Disks {
		domains[i] = string(nodeOf[d])
	}
	perm := Arrange(domains, decodable, 300, rand.New(rand.NewPCG(uint64(pg.ID), 0x61727261)))
	got := make([]cairn.DiskID, len(perm))
	for i, p := range perm {
		got[i] = pg.Disks[p]
	}
	return got
}

// Survival is how many node losses the stripes of one code in one PG
// table survive, computed exactly by NodeLosses.
type Survival struct {
	Nodes      int // distinct nodes the table uses
	MaxPerNode int // the most shards of one stripe on one node
	// Any is the largest x such that the stripes survive every loss of x
	// nodes at once (0: some single node loss loses data).
	Any int
	// Sets is how many sets of Any+1 nodes there are, and Survived how
	// many of them the stripes survive; Lost lists, sorted, up to
	// MaxListed of the others (nodes joined by "+"). All zero when
	// Any == Nodes (losing every node loses everything), or when counting
	// was cut short (Counted false).
	Sets, Survived int
	Lost           []string
	Counted        bool
	// MDS reports whether the code survives the loss of any M shards
	// (then "at most M shards of every stripe" describes the survivable
	// sets exactly); M is its parity count.
	MDS bool
	M   int
}

// MaxListed bounds Survival.Lost.
const MaxListed = 4

// maxChecks bounds the decodability checks NodeLosses makes (node sets
// times distinct stripe patterns), so a status of a large cluster stays
// fast; past it the count of Any+1 sets is left out.
const maxChecks = 2_000_000

// NodeLosses computes Survival for stripes, each the node of every shard
// position in shard order (ArrangePG), of a code with m parity shards
// whose CanReconstruct is decodable. A set of nodes is survivable if every
// stripe can be decoded without the shards on them.
func NodeLosses(stripes [][]cairn.NodeID, m int, decodable func(present []bool) bool) Survival {
	// Stripes with the same nodes in the same positions behave alike.
	var pats [][]cairn.NodeID
	seen := map[string]bool{}
	var names []cairn.NodeID
	s := Survival{M: m}
	for _, st := range stripes {
		key := fmt.Sprint(st)
		if !seen[key] {
			seen[key] = true
			pats = append(pats, st)
		}
		per := map[cairn.NodeID]int{}
		for _, n := range st {
			per[n]++
			s.MaxPerNode = max(s.MaxPerNode, per[n])
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	s.Nodes = len(names)
	if len(pats) == 0 {
		return s
	}
	s.MDS = isMDS(len(pats[0]), m, decodable)
	survives := func(lost []cairn.NodeID) bool {
		for _, p := range pats {
			present := make([]bool, len(p))
			for i, n := range p {
				present[i] = !slices.Contains(lost, n)
			}
			if !decodable(present) {
				return false
			}
		}
		return true
	}
	checks := 0
	for x := 1; x <= s.Nodes; x++ {
		sets, survived := 0, 0
		var lost []string
		complete := forSubsets(names, x, func(set []cairn.NodeID) bool {
			checks += len(pats)
			if checks > maxChecks {
				return false
			}
			sets++
			if survives(set) {
				survived++
			} else if len(lost) < MaxListed {
				lost = append(lost, joinNodes(set))
			}
			return true
		})
		if !complete {
			return s
		}
		if survived < sets {
			s.Sets, s.Survived, s.Lost, s.Counted = sets, survived, lost, true
			return s
		}
		s.Any = x
	}
	return s
}

// forSubsets calls f with every subset of names of size x, in
// lexicographic order, until f returns false; it reports whether it saw
// them all. f must not keep the slice.
func forSubsets(names []cairn.NodeID, x int, f func([]cairn.NodeID) bool) bool {
	idx := make([]int, x)
	for i := range idx {
		idx[i] = i
	}
	set := make([]cairn.NodeID, x)
	for {
		for i, j := range idx {
			set[i] = names[j]
		}
		if !f(set) {
			return false
		}
		i := x - 1
		for i >= 0 && idx[i] == len(names)-x+i {
			i--
		}
		if i < 0 {
			return true
		}
		idx[i]++
		for j := i + 1; j < x; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// isMDS reports whether every loss of m of n shards is decodable (checked
// up to 100,000 patterns; beyond that it reports false).
func isMDS(n, m int, decodable func([]bool) bool) bool {
	if m <= 0 || m >= n {
		return false
	}
	ids := make([]cairn.NodeID, n)
	for i := range ids {
		ids[i] = cairn.NodeID(fmt.Sprint(i))
	}
	count, ok := 0, true
	complete := forSubsets(ids, m, func(set []cairn.NodeID) bool {
		if count++; count > 100_000 {
			return false
		}
		present := make([]bool, n)
		for i := range present {
			present[i] = !slices.Contains(set, ids[i])
		}
		ok = decodable(present)
		return ok
	})
	return complete && ok
}

func joinNodes(set []cairn.NodeID) string {
	s := make([]string, len(set))
	for i, n := range set {
		s[i] = string(n)
	}
	return strings.Join(s, "+")
}

// String says what the stripes of policy survive, e.g. "rs-6-3 over 4
// nodes (up to 3 shards of a stripe on one node): survives any 1 node
// loss, but no 2 nodes at once without losing some stripes", or with
// more nodes "... and 3 of the 10 losses of 2 nodes at once (those holding
// at most 3 shards of every stripe; not n1+n2, n1+n3, n1+n4, n1+n5, …)".
func (s Survival) String(policy string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s over %s", policy, plural(s.Nodes, "node"))
	if s.MaxPerNode > 1 {
		fmt.Fprintf(&b, " (up to %d shards of a stripe on one node)", s.MaxPerNode)
	}
	switch {
	case s.Nodes <= 1 || s.Any == 0 && (!s.Counted || s.Survived == 0):
		b.WriteString(": cannot survive a node loss (only disk losses)")
		return b.String()
	case s.Any == s.Nodes:
		b.WriteString(": survives the loss of every node") // only a code that needs no shard
		return b.String()
	case s.Any == 0:
		fmt.Fprintf(&b, ": survives the loss of %d of its %d nodes alone", s.Survived, s.Sets)
		if len(s.Lost) > 0 {
			fmt.Fprintf(&b, " (not %s)", s.lostList())
		}
		return b.String()
	}
	fmt.Fprintf(&b, ": survives any %s", plural(s.Any, "node loss"))
	if !s.Counted {
		return b.String()
	}
	x := s.Any + 1
	if s.Survived == 0 {
		fmt.Fprintf(&b, ", but no %d nodes at once without losing some stripes", x)
		return b.String()
	}
	fmt.Fprintf(&b, ", and %d of the %d losses of %d nodes at once", s.Survived, s.Sets, x)
	var why []string
	if s.MDS {
		why = append(why, fmt.Sprintf("those holding at most %d shards of every stripe", s.M))
	}
	if len(s.Lost) > 0 {
		why = append(why, "not "+s.lostList())
	}
	if len(why) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(why, "; "))
	}
	return b.String()
}

// lostList lists the unsurvivable sets Lost names, "…" for the rest.
func (s Survival) lostList() string {
	l := strings.Join(s.Lost, ", ")
	if s.Sets-s.Survived > len(s.Lost) {
		l += ", …"
	}
	return l
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "s") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
