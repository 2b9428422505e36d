package lrc

import (
	"fmt"
	"slices"

	"cairn/codec"
	"cairn/codec/internal/gf"
	"cairn/codec/internal/linear"

	"github.com/klauspost/reedsolomon"
)

// Code is lrc-K-L-R. It implements codec.Code, codec.LinearRepairer and
// codec.LocalGroups.
type Code struct {
	k, l, r int
	enc     reedsolomon.Encoder
	eng     *linear.Engine
	groups  [][]int // groups[g]: data shards then local parity
	groupOf []int   // groupOf[i]: group of shard i, or -1 for globals
}

var (
	_ codec.Code           = (*Code)(nil)
	_ codec.LinearRepairer = (*Code)(nil)
	_ codec.LocalGroups    = (*Code)(nil)
)

// New returns lrc-K-L-R: k ≥ 1 data shards in l ≥ 1 groups (l divides k),
// r ≥ 0 global parities, k+l+r ≤ 256. Errors wrap codec.ErrInvalidParams.
func New(k, l, r int) (*Code, error) {
	name := fmt.Sprintf("lrc-%d-%d-%d", k, l, r)
	switch {
	case k < 1:
		return nil, fmt.Errorf("%w: %s: K (data shards) must be at least 1", codec.ErrInvalidParams, name)
	case l < 1:
		return nil, fmt.Errorf("%w: %s: L (local groups) must be at least 1", codec.ErrInvalidParams, name)
	case r < 0:
		return nil, fmt.Errorf("%w: %s: R (global parities) must not be negative", codec.ErrInvalidParams, name)
	case l > k:
		return nil, fmt.Errorf("%w: %s: L (local groups) must not exceed K (data shards)", codec.ErrInvalidParams, name)
	case k%l != 0:
		return nil, fmt.Errorf("%w: %s: L (local groups) must divide K (data shards) evenly; %d/%d is not whole", codec.ErrInvalidParams, name, k, l)
	case k+l+r > 256:
		return nil, fmt.Errorf("%w: %s: K+L+R = %d exceeds 256 shards", codec.ErrInvalidParams, name, k+l+r)
	}
	size := k / l
	n := k + l + r
	gen := make([][]byte, n)
	groups := make([][]int, l)
	groupOf := make([]int, n)
	for i := range k {
		gen[i] = make([]byte, k)
		gen[i][i] = 1
		groupOf[i] = i / size
		groups[i/size] = append(groups[i/size], i)
	}
	for g := range l {
		row := make([]byte, k)
		for c := g * size; c < (g+1)*size; c++ {
			row[c] = 1
		}
		gen[k+g] = row
		groupOf[k+g] = g
		groups[g] = append(groups[g], k+g)
	}
	for j := range r {
		gen[k+l+j] = globalRow(k, j)
		groupOf[k+l+j] = -1
	}
	enc, err := reedsolomon.New(k, l+r, reedsolomon.WithCustomMatrix(gen[k:]), reedsolomon.WithMaxGoroutines(1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Code{k: k, l: l, r: r, enc: enc, eng: linear.New(gen), groups: groups, groupOf: groupOf}, nil
}

// globalRow returns global parity j's coefficients: g_c^(j+1) for data
// column c, with g_c = 2^c. For r = 2 this is Azure's shape (α_i, α_i²):
// decoding two failures in each of two groups needs the pair sums
// g_a+g_b of different groups to differ, which distinct powers of 2 give
// for the parameters we test (TestMaximallyRecoverable). A Cauchy row is
// not enough: it fails LRC(6,2,2) on the pattern {0,1,4,5}.
func globalRow(k, j int) []byte {
	row := make([]byte, k)
	for c := range row {
		row[c] = gf.Exp(c * (j + 1))
	}
	return row
}

// Params implements codec.Code.
func (c *Code) Params() codec.Params {
	return codec.Params{K: c.k, M: c.l + c.r, Alpha: 1, ShardMultiple: 1}
}

// Policy implements codec.Code.
func (c *Code) Policy() codec.Policy {
	return codec.Policy{Scheme: "lrc", Args: []int{c.k, c.l, c.r}}
}

// Groups implements codec.LocalGroups.
func (c *Code) Groups() [][]int { return c.groups }

// Encode implements codec.Code.
func (c *Code) Encode(shards [][]byte) error {
	if _, err := codec.PrepareEncode(c.Params(), shards); err != nil {
		return fmt.Errorf("lrc encode: %w", err)
	}
	return c.enc.Encode(shards)
}

// Reconstruct implements codec.Code.
func (c *Code) Reconstruct(shards [][]byte, want []int) error {
	var lost []int
	if want != nil {
		lost = want
	} else {
		for i, s := range shards {
			if len(s) == 0 {
				lost = append(lost, i)
			}
		}
	}
	prefer := func(present []int) []int { return c.order(lost, present) }
	if err := c.eng.Reconstruct(c.Params(), shards, want, prefer); err != nil {
		return fmt.Errorf("lrc reconstruct: %w", err)
	}
	return nil
}

// order sorts available shards by preference for rebuilding lost: members
// of the lost shards' groups, other data, other local parities, globals;
// the caller's order breaks ties.
func (c *Code) order(lost, available []int) []int {
	hit := make([]bool, c.l)
	for _, i := range lost {
		if i >= 0 && i < len(c.groupOf) && c.groupOf[i] >= 0 {
			hit[c.groupOf[i]] = true
		}
	}
	tier := func(i int) int {
		if i < 0 || i >= len(c.groupOf) {
			return 4 // invalid; the engine reports it
		}
		switch g := c.groupOf[i]; {
		case g >= 0 && hit[g]:
			return 0
		case i < c.k:
			return 1
		case g >= 0:
			return 2
		}
		return 3
	}
	out := slices.Clone(available)
	slices.SortStableFunc(out, func(a, b int) int { return tier(a) - tier(b) })
	return out
}

// Verify implements codec.Code.
func (c *Code) Verify(shards [][]byte) (bool, error) {
	if _, err := codec.StripeSize(c.Params(), shards, true); err != nil {
		return false, fmt.Errorf("lrc verify: %w", err)
	}
	return c.enc.Verify(shards)
}

// CanReconstruct implements codec.Code: the present shards' generator rows
// must have rank K.
func (c *Code) CanReconstruct(present []bool) bool {
	if len(present) != c.k+c.l+c.r {
		return false
	}
	var idx []int
	for i, p := range present {
		if p {
			idx = append(idx, i)
		}
	}
	return len(idx) >= c.k && c.eng.Rank(idx) == c.k
}

// RepairPlan implements codec.LinearRepairer. A lost data or local-parity
// shard whose group is otherwise available is rebuilt from its group alone.
func (c *Code) RepairPlan(lost, available []int) (*codec.RepairPlan, error) {
	if err := codec.CheckIndices("lost", lost, c.k+c.l+c.r); err != nil {
		return nil, fmt.Errorf("lrc repair plan: %w", err)
	}
	p, err := c.eng.Plan(lost, c.order(lost, available))
	if err != nil {
		return nil, fmt.Errorf("lrc repair plan: %w", err)
	}
	return p, nil
}
