package placement

import (
	"math/rand/v2"
	"slices"
)

// Arrange chooses which PG position each shard of a stripe takes, for PGs
// whose disks share failure domains (more shards than domains, e.g. an
// lrc-6-2-2 stripe of 10 shards on 6 nodes). For MDS codes every order is
// as good as any other; for codes that are not MDS (LRC) it matters which
// shards share a domain: two data shards of different local groups on one
// node cost a single global parity when the node dies, two of the same group
// cost two.
//
// domains[p] is the failure domain of PG position p; decodable reports
// whether a stripe with the shards marked present can be decoded. The
// result perm maps shard i to position perm[i]. Orders are scored by how
// many single-domain losses they survive, then how many two-domain losses;
// the identity is tried first, then up to tries seeded shuffles, stopping
// early at a perfect score. Arrange is deterministic for a given rng.
func Arrange(domains []string, decodable func(present []bool) bool, tries int, rng *rand.Rand) []int {
	n := len(domains)
	ident := make([]int, n)
	for i := range ident {
		ident[i] = i
	}
	names := slices.Compact(slices.Sorted(slices.Values(domains)))
	if len(names) <= 1 || len(names) == n {
		return ident // one domain, or one shard per domain: order is irrelevant
	}
	var subsets [][]string // single domains first, then pairs
	for _, a := range names {
		subsets = append(subsets, []string{a})
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			subsets = append(subsets, []string{a, b})
		}
	}
	singles := len(names)
	score := func(perm []int) (int, int) {
		s1, s2 := 0, 0
		present := make([]bool, n)
		for k, sub := range subsets {
			for i := range present {
				present[i] = !slices.Contains(sub, domains[perm[i]])
			}
			if decodable(present) {
				if k < singles {
					s1++
				} else {
					s2++
				}
			}
		}
		return s1, s2
	}
	best := ident
	b1, b2 := score(ident)
	perfect := func() bool { return b1 == singles && b2 == len(subsets)-singles }
	for range tries {
		if perfect() {
			break
		}
		perm := slices.Clone(ident)
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if s1, s2 := score(perm); s1 > b1 || s1 == b1 && s2 > b2 {
			best, b1, b2 = perm, s1, s2
		}
	}
	return best
}
