package client

import (
	"fmt"

	"cairn/codec"
)

// Small objects. An object of at most Config.SmallObject bytes is stored
// as t+1 replicas (the code rep-(t+1)) instead of N shard files of its
// policy, where t is how many lost shards every stripe of the policy
// survives: the same promise counted in lost disks (rs-4-2 and
// clay-4-2-5: 3 replicas; rs-10-4: 5; lrc-12-2-2: 4), with fewer files,
// writes and fsyncs (docs/design/manifest.md, "Small objects"). The
// manifest keeps the policy and names the code of its shards
// (cairn.Layout.Code).

// DefaultSmallObject is Config.SmallObject's default: at most 16 KiB,
// where each data shard of rs-4-2 would be no more than one 4 KiB page.
const DefaultSmallObject = 16 << 10

// maxPatterns bounds the loss patterns tolerance checks for a code
// that is not MDS.
const maxPatterns = 1 << 16

// tolerance returns t, the most lost shards every stripe of code
// survives: M for an MDS code (rs, clay, rep), and for a code with local
// groups (lrc, which is not MDS) the largest t ≤ M such that every
// pattern of t lost shards is decodable (CanReconstruct), or 0 when
// there are too many patterns to check.
func tolerance(code codec.Code) int {
	p := code.Params()
	if _, local := code.(codec.LocalGroups); !local {
		return p.M
	}
	t := 0
	for f := 1; f <= p.M; f++ {
		if binomial(p.N(), f) > maxPatterns {
			return 0
		}
		if !everyPattern(code, f) {
			break
		}
		t = f
	}
	return t
}

// everyPattern reports whether every pattern of f lost shards of code
// is decodable.
func everyPattern(code codec.Code, f int) bool {
	n := code.Params().N()
	present := make([]bool, n)
	lost := make([]int, f) // the lost shards, ascending: the pattern
	for i := range lost {
		lost[i] = i
	}
	for {
		for i := range present {
			present[i] = true
		}
		for _, i := range lost {
			present[i] = false
		}
		if !code.CanReconstruct(present) {
			return false
		}
		// The next pattern in lexicographic order.
		i := f - 1
		for i >= 0 && lost[i] == n-f+i {
			i--
		}
		if i < 0 {
			return true
		}
		lost[i]++
		for j := i + 1; j < f; j++ {
			lost[j] = lost[j-1] + 1
		}
	}
}

func binomial(n, k int) int {
	r := 1
	for i := range k {
		r = r * (n - i) / (i + 1)
	}
	return r
}

// smallCode returns the code a small object of code is stored with: the
// policy of rep-(t+1) (tolerance), if that makes fewer shard files than
// code's N. ok is false for a code it would not improve (replication
// itself, or a code that survives no loss).
func smallCode(code codec.Code) (policy string, ok bool) {
	t := tolerance(code)
	if t < 1 || t+1 >= code.Params().N() {
		return "", false
	}
	return fmt.Sprintf("rep-%d", t+1), true
}

// smallCodeFor returns the code for a small object of policy, cached
// (nil if the policy has none: smallCode).
func (c *Client) smallCodeFor(policy string, code codec.Code) (codec.Code, error) {
	c.mu.Lock()
	sc, ok := c.small[policy]
	c.mu.Unlock()
	if ok {
		return sc, nil
	}
	if sp, ok := smallCode(code); ok {
		var err error
		if sc, err = c.code(sp); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	c.small[policy] = sc
	c.mu.Unlock()
	return sc, nil
}
