package lt

import (
	"crypto/subtle"
	"fmt"

	"cairn/codec"
)

// Update says how the coded blocks change when one source block changes
// (RobuSTore §3.2): with Δ = old ⊕ new source block, coded block IDs[i]
// becomes old block ⊕ Coefs[i]·Δ (GF(2^8)). Blocks not listed do not
// change.
//
// In this code a source block reaches the repair blocks through the
// intermediate symbols, which the precode solve makes dense functions of
// all source blocks: almost every repair block depends on every source
// block (measured: all but about 1/256 of them). So an update rewrites
// nearly all repair blocks of the range, unlike RobuSTore's non-systematic
// LT code (about 20 of 4096); what it saves is the encoding: one
// multiply-XOR of Δ per block instead of a full re-encode, and no other
// source block has to be read.
type Update struct {
	Source int    // the changed source block
	IDs    []int  // coded block IDs that change, ascending
	Coefs  []byte // nonzero coefficients, one per ID
}

// PlanUpdate returns the coded blocks with IDs in [lo, hi) that change
// when source block src changes, and by how much. Among IDs below K only
// src itself changes (coefficient 1).
func (c *Code) PlanUpdate(src, lo, hi int) (*Update, error) {
	if src < 0 || src >= c.k {
		return nil, fmt.Errorf("lt update: %w: source block %d is outside 0..%d", codec.ErrShardIndex, src, c.k-1)
	}
	if lo < 0 || hi > MaxID || lo > hi {
		return nil, fmt.Errorf("lt update: %w: ID range [%d, %d) is not within [0, %d)", codec.ErrShardIndex, lo, hi, MaxID)
	}
	// The intermediate symbols are a GF(2^8)-linear function of the
	// source blocks; feed the unit vector of src through the solve.
	unit := make([][]byte, c.k)
	zero := make([]byte, BlockMultiple)
	for i := range unit {
		unit[i] = zero
	}
	one := make([]byte, BlockMultiple)
	one[0] = 1
	unit[src] = one
	sym := make([][]byte, c.p.L)
	buf := make([]byte, c.p.L*BlockMultiple)
	for i := range sym {
		sym[i] = buf[i*BlockMultiple : (i+1)*BlockMultiple]
	}
	c.symbolPlan().run(unit, sym, BlockMultiple)
	u := &Update{Source: src}
	var row []int32
	for id := lo; id < hi; id++ {
		row = c.p.appendRow(row[:0], id)
		var x byte
		for _, k := range row {
			x ^= sym[k][0]
		}
		if x != 0 {
			u.IDs = append(u.IDs, id)
			u.Coefs = append(u.Coefs, x)
		}
	}
	return u, nil
}

// Dependents returns the IDs in [lo, hi) of the coded blocks that depend
// on source block src (see Update).
func (c *Code) Dependents(src, lo, hi int) ([]int, error) {
	u, err := c.PlanUpdate(src, lo, hi)
	if err != nil {
		return nil, err
	}
	return u.IDs, nil
}

// Apply updates the coded blocks in place: blocks[i] (block IDs[i]) ^=
// Coefs[i]·delta, where delta = old ⊕ new source block (see Delta). Every
// block must have delta's length.
func (u *Update) Apply(delta []byte, blocks [][]byte) error {
	if len(blocks) != len(u.IDs) {
		return fmt.Errorf("lt update: %w: %d blocks for %d IDs", codec.ErrShardCount, len(blocks), len(u.IDs))
	}
	for i, b := range blocks {
		if len(b) != len(delta) {
			return fmt.Errorf("lt update: %w: block %d has %d bytes, delta %d", codec.ErrShardSize, u.IDs[i], len(b), len(delta))
		}
	}
	for i, b := range blocks {
		codec.MulAdd(b, delta, u.Coefs[i])
	}
	return nil
}

// Delta writes old ⊕ new into dst (all of one length) and returns it; a
// nil dst is allocated.
func Delta(dst, old, new []byte) []byte {
	if dst == nil {
		dst = make([]byte, len(old))
	}
	subtle.XORBytes(dst, old, new)
	return dst
}
