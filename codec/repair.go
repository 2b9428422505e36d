package codec

import "fmt"

// RepairPlan says how lost shards of a scalar linear code are computed from
// helper shards: for every byte offset o,
//
//	shard[Lost[j]][o] = Σ_i Coeffs[j][i] · shard[Helpers[i]][o]   (GF(2^8))
//
// Because the relation holds byte by byte, it holds on any byte range of the
// shards, so a repair can run slice by slice and helper by helper (a PUSH
// chain hop adds Coeffs[j][i]·slice of helper i into partial j).
//
// Plans are immutable once returned and safe to share.
type RepairPlan struct {
	Lost    []int    // shards rebuilt, in the caller's order
	Helpers []int    // shards read, no coefficient column all zero
	Coeffs  [][]byte // Coeffs[j][i]: weight of Helpers[i] in Lost[j]

	// apply computes all Lost shards from all Helpers at once with fused
	// kernels; set by the code that built the plan.
	apply func(helpers, lost [][]byte) error
}

// NewRepairPlan builds a plan from its coefficients. apply, if not nil, is
// a fused implementation of Repair; otherwise Repair uses MulAdd.
func NewRepairPlan(lost, helpers []int, coeffs [][]byte, apply func(helpers, lost [][]byte) error) *RepairPlan {
	return &RepairPlan{Lost: lost, Helpers: helpers, Coeffs: coeffs, apply: apply}
}

// Apply adds helper number i's contribution (i indexes Helpers) to the
// partial results: partial[j] ^= Coeffs[j][i]·src for every lost shard j.
// src and every partial[j] cover the same byte range of their shards; the
// partials must be at least len(src) long. Starting from zeroed partials and
// applying every helper once, in any order, yields the lost shards' bytes.
func (p *RepairPlan) Apply(partial [][]byte, i int, src []byte) {
	for j := range p.Lost {
		MulAdd(partial[j][:len(src)], src, p.Coeffs[j][i])
	}
}

// Repair computes the lost shards' bytes into lost (len(lost) ==
// len(p.Lost)) from the helpers' bytes (len(helpers) == len(p.Helpers)),
// all of one length: any byte range of the shards. lost is overwritten.
func (p *RepairPlan) Repair(helpers, lost [][]byte) error {
	if len(helpers) != len(p.Helpers) || len(lost) != len(p.Lost) {
		return fmt.Errorf("%w: repair: got %d helpers and %d outputs, plan has %d and %d",
			ErrShardCount, len(helpers), len(lost), len(p.Helpers), len(p.Lost))
	}
	size := -1
	for _, s := range append(helpers[:len(helpers):len(helpers)], lost...) {
		if size >= 0 && len(s) != size {
			return fmt.Errorf("%w: repair: buffers differ in length (%d and %d)", ErrShardSize, size, len(s))
		}
		size = len(s)
	}
	if size == 0 {
		return nil
	}
	if p.apply != nil {
		return p.apply(helpers, lost)
	}
	for j := range lost {
		clear(lost[j])
	}
	for i, h := range helpers {
		p.Apply(lost, i, h)
	}
	return nil
}
