package lt

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"cairn/codec"
	"cairn/codec/internal/patcache"
)

// Code is the fountain code lt-K-X: K source blocks and, as a codec.Code, a
// stripe of X·K shards (the source blocks and repair blocks K..X·K−1). As a
// codec.Rateless it makes any block ID below MaxID.
//
// A Code is safe for concurrent use.
type Code struct {
	k, x int
	p    *params

	solvers sync.Pool // *solver

	encOnce sync.Once
	enc     *plan // source blocks → repair blocks K..X·K−1
	symOnce sync.Once
	sym     *plan // source blocks → intermediate symbols

	plans *patcache.Cache[*plan] // Reconstruct plans by pattern
}

var (
	_ codec.Code     = (*Code)(nil)
	_ codec.Rateless = (*Code)(nil)
)

// maxCachedPlans bounds the Reconstruct plan cache; when full it is emptied.
const maxCachedPlans = 64

// New returns lt-K-X with code seed 0, the code the policy string names.
// It needs MinK ≤ k ≤ MaxK, x ≥ 2 and x·k ≤ MaxID; the error wraps
// codec.ErrInvalidParams.
func New(k, x int) (*Code, error) { return NewWithSeed(k, x, 0) }

// NewWithSeed returns lt-K-X with the given code seed. Codes with different
// seeds make different repair blocks; every node must use the same seed for
// a stripe.
func NewWithSeed(k, x int, seed uint64) (*Code, error) {
	if err := checkK(k); err != nil {
		return nil, fmt.Errorf("lt-%d-%d: %w", k, x, err)
	}
	if x < 2 || x > MaxID/k {
		return nil, fmt.Errorf("%w: lt-%d-%d: X (expansion) must be between 2 and %d", codec.ErrInvalidParams, k, x, MaxID/k)
	}
	p, err := paramsFor(k, seed)
	if err != nil {
		return nil, fmt.Errorf("lt-%d-%d: %w", k, x, err)
	}
	return &Code{k: k, x: x, p: p, plans: patcache.New[*plan](maxCachedPlans)}, nil
}

type paramsKey struct {
	k    int
	seed uint64
}

var paramsCache sync.Map // paramsKey → *params; params are immutable

// maxJ bounds the search for the systematic index. For seed 0 and every K
// in 16..8192, J is 0 for 8139 values of K and 1 for the other 38: the
// source rows are singular about 0.5% of the time.
const maxJ = 1000

// paramsFor returns the parameters for (k, seed), searching the systematic
// index J: the first J ≥ 0 for which the rows of blocks 0..K−1 together
// with the precode rows are nonsingular.
func paramsFor(k int, seed uint64) (*params, error) {
	key := paramsKey{k, seed}
	if v, ok := paramsCache.Load(key); ok {
		return v.(*params), nil
	}
	p := newParams(k, seed, 0)
	s := newSolver(p)
	ids := codec.Data(k)
	for j := uint32(0); ; j++ {
		if j == maxJ {
			return nil, fmt.Errorf("%w: no systematic index below %d for K=%d seed %d", codec.ErrInvalidParams, maxJ, k, seed)
		}
		p.setJ(j)
		if s.deficit(ids) == 0 {
			break
		}
	}
	v, _ := paramsCache.LoadOrStore(key, p)
	return v.(*params), nil
}

func (c *Code) solver() *solver {
	if s, ok := c.solvers.Get().(*solver); ok {
		return s
	}
	return newSolver(c.p)
}

// Params implements codec.Code.
func (c *Code) Params() codec.Params {
	return codec.Params{K: c.k, M: (c.x - 1) * c.k, Alpha: 1, ShardMultiple: BlockMultiple}
}

// Policy implements codec.Code.
func (c *Code) Policy() codec.Policy { return codec.Policy{Scheme: "lt", Args: []int{c.k, c.x}} }

// Seed returns the code seed.
func (c *Code) Seed() uint64 { return c.p.seed }

// SourceBlocks implements codec.Rateless.
func (c *Code) SourceBlocks() int { return c.k }

// MaxBlockID implements codec.Rateless: IDs are below 2^24.
func (c *Code) MaxBlockID() int { return MaxID }

// BlockMultiple implements codec.Rateless.
func (c *Code) BlockMultiple() int { return BlockMultiple }

// encodePlan is the plan of Encode, built on first use.
func (c *Code) encodePlan() *plan {
	c.encOnce.Do(func() {
		out := make([]int, (c.x-1)*c.k)
		for i := range out {
			out[i] = c.k + i
		}
		c.enc = c.sourcePlan(out, false)
	})
	return c.enc
}

// symbolPlan computes the L intermediate symbols from the source blocks.
func (c *Code) symbolPlan() *plan {
	c.symOnce.Do(func() { c.sym = c.sourcePlan(codec.Data(c.p.L), true) })
	return c.sym
}

// sourcePlan plans out from the source blocks, which paramsFor made
// decodable by choosing J.
func (c *Code) sourcePlan(out []int, syms bool) *plan {
	pl, _ := c.plan(codec.Data(c.k), out, syms)
	return pl
}

// plan solves rows (block IDs) and returns the plan making out (block IDs,
// or intermediate symbols with syms), or the rank deficit.
func (c *Code) plan(rows, out []int, syms bool) (*plan, int) {
	s := c.solver()
	defer c.solvers.Put(s)
	s.load(rows)
	s.peel()
	if d := s.dense(true); d != 0 {
		return nil, d
	}
	pl := s.buildPlan(out, syms)
	pl.ids = slices.Clone(rows)
	return pl, 0
}

// Deficit returns 0 if blocks with these IDs (distinct, in range)
// determine the source blocks, else a lower bound on how many more
// distinct blocks are needed. It looks at IDs only.
func (c *Code) Deficit(ids []int) int {
	s := c.solver()
	defer c.solvers.Put(s)
	return s.deficit(ids)
}

// Decodable implements codec.Rateless.
func (c *Code) Decodable(ids []int) bool {
	ids, ok := c.cleanIDs(ids)
	return ok && len(ids) >= c.k && c.Deficit(ids) == 0
}

// cleanIDs drops repeated IDs (keeping the first) and reports whether all
// are in range.
func (c *Code) cleanIDs(ids []int) ([]int, bool) {
	seen := make(map[int]bool, len(ids))
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= MaxID {
			return nil, false
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, true
}

// choose returns a decodable prefix of present (block IDs in order of
// preference): it starts from K+8 blocks and adds at least as many as the
// rank deficit says are missing, so it usually solves once.
func (c *Code) choose(present []int) ([]int, bool) {
	if len(present) < c.k {
		return nil, false
	}
	s := c.solver()
	defer c.solvers.Put(s)
	n := min(len(present), c.k+8)
	for {
		d := s.deficit(present[:n])
		if d == 0 {
			return present[:n], true
		}
		if n == len(present) {
			return nil, false
		}
		n = min(len(present), n+max(d, 8))
	}
}

// Encode implements codec.Code: it makes repair blocks K..X·K−1.
func (c *Code) Encode(shards [][]byte) error {
	size, err := codec.PrepareEncode(c.Params(), shards)
	if err != nil {
		return fmt.Errorf("lt encode: %w", err)
	}
	c.encodePlan().run(shards[:c.k], shards[c.k:], size)
	return nil
}

// Reconstruct implements codec.Code. It decodes from the lowest-numbered
// present shards that suffice (source blocks first). Decoding is all or
// nothing: it returns an *UndecodableError unless the present shards
// determine the whole stripe, even if a wanted shard alone would be
// determined.
func (c *Code) Reconstruct(shards [][]byte, want []int) error {
	p := c.Params()
	size, err := codec.StripeSize(p, shards, false)
	if err != nil {
		return fmt.Errorf("lt reconstruct: %w", err)
	}
	if want == nil {
		want = codec.Data(p.N())
	} else if err := codec.CheckIndices("wanted", want, p.N()); err != nil {
		return fmt.Errorf("lt reconstruct: %w", err)
	}
	var lost []int
	for _, i := range want {
		if len(shards[i]) == 0 {
			lost = append(lost, i)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	present := codec.Present(shards)
	pl, ok := c.cachedPlan(present, lost)
	if !ok {
		return fmt.Errorf("lt reconstruct: %w", &codec.UndecodableError{Op: "reconstruct", Want: lost, Available: present})
	}
	in := make([][]byte, len(pl.ids))
	for i, id := range pl.ids {
		in[i] = shards[id]
	}
	out := make([][]byte, len(lost))
	for i, id := range lost {
		out[i] = codec.Buffer(shards[id], size)
	}
	pl.run(in, out, size)
	for i, id := range lost {
		shards[id] = out[i]
	}
	return nil
}

// errNoPlan: the present blocks cannot decode (not cached).
var errNoPlan = errors.New("lt: no decode plan")

func (c *Code) cachedPlan(present, lost []int) (*plan, bool) {
	pl, err := c.plans.Get(patcache.Key(present, lost), func() (*plan, error) {
		rows, ok := c.choose(present)
		if !ok {
			return nil, errNoPlan
		}
		pl, def := c.plan(rows, lost, false)
		if def != 0 {
			return nil, errNoPlan // unreachable: choose checked the rank
		}
		return pl, nil
	})
	return pl, err == nil
}

// verifyWindow is how many bytes of each shard Verify re-encodes at a time.
const verifyWindow = 4 << 10

// Verify implements codec.Code: it re-encodes the repair blocks, a window
// of columns at a time, and compares.
func (c *Code) Verify(shards [][]byte) (bool, error) {
	size, err := codec.StripeSize(c.Params(), shards, true)
	if err != nil {
		return false, fmt.Errorf("lt verify: %w", err)
	}
	pl := c.encodePlan()
	m := len(shards) - c.k
	tmp := make([][]byte, m)
	buf := make([]byte, m*min(verifyWindow, size))
	in := make([][]byte, c.k)
	for off := 0; off < size; off += verifyWindow {
		w := min(verifyWindow, size-off)
		for i := range in {
			in[i] = shards[i][off : off+w]
		}
		for j := range tmp {
			tmp[j] = buf[j*w : (j+1)*w]
		}
		pl.run(in, tmp, w)
		for j, t := range tmp {
			if !bytes.Equal(t, shards[c.k+j][off:off+w]) {
				return false, nil
			}
		}
	}
	return true, nil
}

// CanReconstruct implements codec.Code with the symbolic rank check.
func (c *Code) CanReconstruct(present []bool) bool {
	if len(present) != c.k*c.x {
		return false
	}
	var ids []int
	for i, ok := range present {
		if ok {
			ids = append(ids, i)
		}
	}
	_, ok := c.choose(ids)
	return ok
}

// Layout is the precode shape of a code: the sizes of docs/design/lt.md.
type Layout struct {
	K int    // source blocks
	S int    // LDPC symbols and rows
	H int    // HDPC symbols and rows
	P int    // permanently inactive symbols (the last P, including the H HDPC ones)
	L int    // intermediate symbols, K+S+H
	W int    // LT symbols, L−P
	J uint32 // systematic index
}

// Layout returns the code's precode shape.
func (c *Code) Layout() Layout {
	p := c.p
	return Layout{K: p.K, S: p.S, H: p.H, P: p.P, L: p.L, W: p.W, J: p.J}
}

// Neighbours returns the intermediate symbols whose XOR is block id (0 ≤
// id < MaxID): the function docs/design/lt.md specifies. The first ones are
// LT neighbours (below W), the last one or two PI neighbours.
func (c *Code) Neighbours(id int) ([]int, error) {
	if id < 0 || id >= MaxID {
		return nil, fmt.Errorf("%w: block ID %d is outside 0..%d", codec.ErrShardIndex, id, MaxID-1)
	}
	var out []int
	for _, k := range c.p.appendRow(nil, id) {
		out = append(out, int(k))
	}
	return out, nil
}
