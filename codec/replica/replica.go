package replica

import (
	"bytes"
	"fmt"

	"cairn/codec"
	"cairn/codec/internal/linear"
)

// MaxCopies is the largest N accepted.
const MaxCopies = 256

// Code is rep-N. It implements codec.Code, codec.LinearRepairer and
// codec.Extensible (a spare row is one more copy).
type Code struct {
	n   int
	eng *linear.Engine
}

var (
	_ codec.Code           = (*Code)(nil)
	_ codec.LinearRepairer = (*Code)(nil)
	_ codec.Extensible     = (*Code)(nil)
)

// New returns rep-N for 1 ≤ n ≤ 256.
func New(n int) (*Code, error) {
	if n < 1 || n > MaxCopies {
		return nil, fmt.Errorf("%w: rep-%d: N (copies) must be between 1 and %d", codec.ErrInvalidParams, n, MaxCopies)
	}
	gen := make([][]byte, n)
	for i := range gen {
		gen[i] = []byte{1}
	}
	return &Code{n: n, eng: linear.New(gen)}, nil
}

// Params implements codec.Code.
func (c *Code) Params() codec.Params {
	return codec.Params{K: 1, M: c.n - 1, Alpha: 1, ShardMultiple: 1}
}

// Policy implements codec.Code.
func (c *Code) Policy() codec.Policy { return codec.Policy{Scheme: "rep", Args: []int{c.n}} }

// Encode implements codec.Code: it copies shard 0 into the others.
func (c *Code) Encode(shards [][]byte) error {
	if _, err := codec.PrepareEncode(c.Params(), shards); err != nil {
		return fmt.Errorf("rep encode: %w", err)
	}
	for _, s := range shards[1:] {
		copy(s, shards[0])
	}
	return nil
}

// Reconstruct implements codec.Code: it copies the lowest-numbered present
// shard.
func (c *Code) Reconstruct(shards [][]byte, want []int) error {
	if err := c.eng.Reconstruct(c.Params(), shards, want, nil); err != nil {
		return fmt.Errorf("rep reconstruct: %w", err)
	}
	return nil
}

// Verify implements codec.Code: all copies must be equal.
func (c *Code) Verify(shards [][]byte) (bool, error) {
	if _, err := codec.StripeSize(c.Params(), shards, true); err != nil {
		return false, fmt.Errorf("rep verify: %w", err)
	}
	for _, s := range shards[1:] {
		if !bytes.Equal(s, shards[0]) {
			return false, nil
		}
	}
	return true, nil
}

// CanReconstruct implements codec.Code: one copy suffices.
func (c *Code) CanReconstruct(present []bool) bool {
	if len(present) != c.n {
		return false
	}
	for _, p := range present {
		if p {
			return true
		}
	}
	return false
}

// RepairPlan implements codec.LinearRepairer: the first available copy,
// coefficient 1.
func (c *Code) RepairPlan(lost, available []int) (*codec.RepairPlan, error) {
	p, err := c.eng.Plan(lost, available)
	if err != nil {
		return nil, fmt.Errorf("rep repair plan: %w", err)
	}
	return p, nil
}

// MaxRows implements codec.Extensible: MaxCopies.
func (c *Code) MaxRows() int { return MaxCopies }

// MakeRow implements codec.Extensible: every row is a copy of the data
// shard.
func (c *Code) MakeRow(r int, data [][]byte, dst []byte) error {
	switch {
	case r < 0 || r >= MaxCopies:
		return fmt.Errorf("%w: rep-%d: row %d is outside 0..%d", codec.ErrShardIndex, c.n, r, MaxCopies-1)
	case len(data) != 1:
		return fmt.Errorf("%w: make row: got %d data shards, want 1", codec.ErrShardCount, len(data))
	case len(data[0]) != len(dst) || len(dst) == 0:
		return fmt.Errorf("%w: make row %d: data shard of %d bytes, dst %d", codec.ErrShardSize, r, len(data[0]), len(dst))
	}
	copy(dst, data[0])
	return nil
}

// ExtendTo implements codec.Extensible: rep-rows (N ≤ rows ≤ MaxCopies).
func (c *Code) ExtendTo(rows int) (codec.Code, error) {
	if rows < c.n {
		return nil, fmt.Errorf("%w: rep-%d: cannot extend to fewer copies (%d)", codec.ErrInvalidParams, c.n, rows)
	}
	return New(rows)
}
