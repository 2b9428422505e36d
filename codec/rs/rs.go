package rs

import (
	"fmt"
	"sync"

	"cairn/codec"
	"cairn/codec/internal/gf"
	"cairn/codec/internal/linear"

	"github.com/klauspost/reedsolomon"
)

// MaxShards is the largest stripe width (data + parity) RS supports.
const MaxShards = 256

// Code is rs-K-M. It implements codec.Code and codec.LinearRepairer.
type Code struct {
	k, m int
	enc  reedsolomon.Encoder
	eng  *linear.Engine

	mu   sync.Mutex
	rows map[int]reedsolomon.Encoder // MakeParity kernels by row; guarded by mu
}

var (
	_ codec.Code           = (*Code)(nil)
	_ codec.LinearRepairer = (*Code)(nil)
	_ codec.Extensible     = (*Code)(nil)
)

// New returns rs-K-M. It needs 1 ≤ k, 1 ≤ m and k+m ≤ 256; the error wraps
// codec.ErrInvalidParams.
func New(k, m int) (*Code, error) {
	switch {
	case k < 1:
		return nil, fmt.Errorf("%w: rs-%d-%d: K (data shards) must be at least 1", codec.ErrInvalidParams, k, m)
	case m < 1:
		return nil, fmt.Errorf("%w: rs-%d-%d: M (parity shards) must be at least 1", codec.ErrInvalidParams, k, m)
	case k+m > MaxShards:
		return nil, fmt.Errorf("%w: rs-%d-%d: K+M = %d exceeds %d shards", codec.ErrInvalidParams, k, m, k+m, MaxShards)
	}
	enc, err := reedsolomon.New(k, m, reedsolomon.WithCauchyMatrix(), reedsolomon.WithMaxGoroutines(1))
	if err != nil {
		return nil, fmt.Errorf("rs-%d-%d: %w", k, m, err)
	}
	gen := make([][]byte, k+m)
	for i := range k {
		gen[i] = make([]byte, k)
		gen[i][i] = 1
	}
	for j := range m {
		gen[k+j] = ParityRow(k, j)
	}
	return &Code{k: k, m: m, enc: enc, eng: linear.New(gen), rows: make(map[int]reedsolomon.Encoder)}, nil
}

// ParityRow returns the coefficients of parity row i of an RS code with k
// data shards: row[c] = 1/((k+i) XOR c). It needs 0 ≤ i < 256−k.
func ParityRow(k, i int) []byte {
	row := make([]byte, k)
	for c := range row {
		row[c] = gf.Inv(byte((k + i) ^ c))
	}
	return row
}

// Params implements codec.Code.
func (c *Code) Params() codec.Params {
	return codec.Params{K: c.k, M: c.m, Alpha: 1, ShardMultiple: 1}
}

// Policy implements codec.Code.
func (c *Code) Policy() codec.Policy { return codec.Policy{Scheme: "rs", Args: []int{c.k, c.m}} }

// Encode implements codec.Code.
func (c *Code) Encode(shards [][]byte) error {
	if _, err := codec.PrepareEncode(c.Params(), shards); err != nil {
		return fmt.Errorf("rs encode: %w", err)
	}
	return c.enc.Encode(shards)
}

// Reconstruct implements codec.Code. It reads the lowest-numbered present
// shards (data first).
func (c *Code) Reconstruct(shards [][]byte, want []int) error {
	if err := c.eng.Reconstruct(c.Params(), shards, want, nil); err != nil {
		return fmt.Errorf("rs reconstruct: %w", err)
	}
	return nil
}

// Verify implements codec.Code.
func (c *Code) Verify(shards [][]byte) (bool, error) {
	if _, err := codec.StripeSize(c.Params(), shards, true); err != nil {
		return false, fmt.Errorf("rs verify: %w", err)
	}
	return c.enc.Verify(shards)
}

// CanReconstruct implements codec.Code: any K shards suffice.
func (c *Code) CanReconstruct(present []bool) bool {
	if len(present) != c.k+c.m {
		return false
	}
	n := 0
	for _, p := range present {
		if p {
			n++
		}
	}
	return n >= c.k
}

// RepairPlan implements codec.LinearRepairer: the first K available shards
// that are not lost are the helpers.
func (c *Code) RepairPlan(lost, available []int) (*codec.RepairPlan, error) {
	p, err := c.eng.Plan(lost, available)
	if err != nil {
		return nil, fmt.Errorf("rs repair plan: %w", err)
	}
	return p, nil
}

// Extend returns rs-K-M2 (M2 ≥ M): the same code with more parity rows,
// whose first M parity shards are byte-identical to this code's. Use it to
// decode a stripe that has spare parity made by MakeParity.
func (c *Code) Extend(m2 int) (*Code, error) {
	if m2 < c.m {
		return nil, fmt.Errorf("%w: rs-%d-%d: cannot extend to fewer parity shards (%d)", codec.ErrInvalidParams, c.k, c.m, m2)
	}
	return New(c.k, m2)
}

// MaxRows implements codec.Extensible: 256 (MaxShards).
func (c *Code) MaxRows() int { return MaxShards }

// MakeRow implements codec.Extensible: row r < K is data shard r itself,
// row r ≥ K parity row r−K (MakeParity).
func (c *Code) MakeRow(r int, data [][]byte, dst []byte) error {
	if r >= 0 && r < c.k {
		if len(data) != c.k || len(data[r]) != len(dst) {
			return fmt.Errorf("%w: make row %d: want %d data shards of %d bytes", codec.ErrShardSize, r, c.k, len(dst))
		}
		copy(dst, data[r])
		return nil
	}
	return c.MakeParity(r-c.k, data, dst)
}

// ExtendTo implements codec.Extensible: rs-K-(rows−K).
func (c *Code) ExtendTo(rows int) (codec.Code, error) {
	e, err := c.Extend(rows - c.k)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// MakeParity writes parity row i (0 ≤ i < 256−K, not limited to M) of the
// given K data shards into dst, which must have their length. Parity row i
// equals shard K+i of any rs-K-M' with M' > i.
func (c *Code) MakeParity(i int, data [][]byte, dst []byte) error {
	if i < 0 || c.k+i >= MaxShards {
		return fmt.Errorf("%w: rs-%d-%d: parity row %d is outside 0..%d", codec.ErrShardIndex, c.k, c.m, i, MaxShards-c.k-1)
	}
	if len(data) != c.k {
		return fmt.Errorf("%w: make parity: got %d data shards, want %d", codec.ErrShardCount, len(data), c.k)
	}
	for j, d := range data {
		if len(d) != len(dst) || len(d) == 0 {
			return fmt.Errorf("%w: make parity: data shard %d has %d bytes, dst %d", codec.ErrShardSize, j, len(d), len(dst))
		}
	}
	c.mu.Lock()
	enc, ok := c.rows[i]
	if !ok {
		var err error
		enc, err = reedsolomon.New(c.k, 1, reedsolomon.WithCustomMatrix([][]byte{ParityRow(c.k, i)}), reedsolomon.WithMaxGoroutines(1))
		if err != nil {
			c.mu.Unlock()
			return fmt.Errorf("rs make parity %d: %w", i, err)
		}
		c.rows[i] = enc
	}
	c.mu.Unlock()
	all := make([][]byte, 0, c.k+1)
	all = append(all, data...)
	return enc.Encode(append(all, dst))
}
