// Package linear plans and runs decodes for any systematic scalar linear
// code given by its generator matrix: the shared engine behind rs, lrc and
// replica.
//
// Vocabulary: the generator G has one row per shard (n rows, k columns);
// shard i = Σ_c G[i][c]·data[c] byte by byte, and the first k rows are the
// identity (systematic). A pattern is (lost shards, available shards in
// order of preference). Its plan expresses each lost row as a combination of
// as few available rows as greedy selection finds: rows are taken in
// preference order while they raise the rank, until every lost row is in
// their span. Plans are cached per pattern and carry a fused SIMD kernel (a
// klauspost encoder whose matrix is the plan's coefficients).
package linear

import (
	"fmt"

	"cairn/codec"
	"cairn/codec/internal/gf"
	"cairn/codec/internal/patcache"

	"github.com/klauspost/reedsolomon"
)

// maxCached bounds the plan cache; when full it is emptied (patterns are few
// in practice: one per failure pattern of a stripe).
const maxCached = 4096

// Engine is safe for concurrent use.
type Engine struct {
	k, n int
	gen  [][]byte // n×k generator, read-only

	plans *patcache.Cache[*codec.RepairPlan]
}

// New returns an engine for the n×k generator gen. gen is retained and must
// not be modified.
func New(gen [][]byte) *Engine {
	return &Engine{k: len(gen[0]), n: len(gen), gen: gen, plans: patcache.New[*codec.RepairPlan](maxCached)}
}

// Row returns generator row i (read-only).
func (e *Engine) Row(i int) []byte { return e.gen[i] }

// Rank returns the rank of the rows of the given shards.
func (e *Engine) Rank(idx []int) int {
	s := gf.NewSpan(e.k)
	for _, i := range idx {
		s.Add(e.gen[i])
		if s.Rank() == e.k {
			break
		}
	}
	return s.Rank()
}

// Plan returns the repair plan for lost from available (preference order).
// Indices must be valid (checked); lost and available may overlap only if
// the caller wants a copy (a lost shard that is available is its own
// helper).
func (e *Engine) Plan(lost, available []int) (*codec.RepairPlan, error) {
	if err := codec.CheckIndices("lost", lost, e.n); err != nil {
		return nil, err
	}
	if err := codec.CheckIndices("available", available, e.n); err != nil {
		return nil, err
	}
	return e.plans.Get(patcache.Key(lost, available), func() (*codec.RepairPlan, error) {
		return e.plan(lost, available)
	})
}

func (e *Engine) plan(lost, available []int) (*codec.RepairPlan, error) {
	span := gf.NewSpan(e.k)
	var added []int
	var exprs [][]byte
	done := func() bool {
		exprs = exprs[:0]
		for _, l := range lost {
			x, ok := span.Express(e.gen[l])
			if !ok {
				return false
			}
			exprs = append(exprs, x)
		}
		return true
	}
	ok := len(lost) == 0 || done()
	for _, a := range available {
		if ok {
			break
		}
		if span.Add(e.gen[a]) {
			added = append(added, a)
		} else {
			added = append(added, -1) // keeps numbering aligned with span rows
			continue
		}
		ok = done()
	}
	if !ok {
		return nil, &codec.UndecodableError{Op: "repair", Want: append([]int(nil), lost...), Available: append([]int(nil), available...)}
	}
	// Keep only helpers with a non-zero coefficient somewhere.
	var helpers []int
	var cols []int
	for c, h := range added {
		if h < 0 {
			continue
		}
		for _, x := range exprs {
			if x[c] != 0 {
				helpers = append(helpers, h)
				cols = append(cols, c)
				break
			}
		}
	}
	coeffs := make([][]byte, len(lost))
	for j, x := range exprs {
		coeffs[j] = make([]byte, len(cols))
		for i, c := range cols {
			coeffs[j][i] = x[c]
		}
	}
	apply, err := fused(coeffs, len(helpers))
	if err != nil {
		return nil, err
	}
	return codec.NewRepairPlan(append([]int(nil), lost...), helpers, coeffs, apply), nil
}

// fused returns a function computing out[j] = Σ coeffs[j][i]·in[i] with
// klauspost's fused multi-input, multi-output kernels.
func fused(coeffs [][]byte, inputs int) (func(in, out [][]byte) error, error) {
	if len(coeffs) == 0 {
		return func(in, out [][]byte) error { return nil }, nil
	}
	if inputs == 0 {
		return func(in, out [][]byte) error {
			for _, o := range out {
				clear(o)
			}
			return nil
		}, nil
	}
	enc, err := reedsolomon.New(inputs, len(coeffs), reedsolomon.WithCustomMatrix(coeffs), reedsolomon.WithMaxGoroutines(1))
	if err != nil {
		return nil, fmt.Errorf("linear: building kernel for %d inputs, %d outputs: %w", inputs, len(coeffs), err)
	}
	return func(in, out [][]byte) error {
		all := make([][]byte, 0, len(in)+len(out))
		all = append(all, in...)
		all = append(all, out...)
		return enc.Encode(all)
	}, nil
}

// Reconstruct implements codec.Code.Reconstruct for a code with parameters p
// using this engine, choosing helpers from the present shards in the order
// given by prefer (nil: ascending index).
func (e *Engine) Reconstruct(p codec.Params, shards [][]byte, want []int, prefer func(present []int) []int) error {
	size, err := codec.StripeSize(p, shards, false)
	if err != nil {
		return err
	}
	if want != nil {
		if err := codec.CheckIndices("wanted", want, p.N()); err != nil {
			return err
		}
	}
	present := codec.Present(shards)
	var lost []int
	if want == nil {
		for i, s := range shards {
			if len(s) == 0 {
				lost = append(lost, i)
			}
		}
	} else {
		for _, i := range want {
			if len(shards[i]) == 0 {
				lost = append(lost, i)
			}
		}
	}
	if len(lost) == 0 {
		return nil
	}
	avail := present
	if prefer != nil {
		avail = prefer(present)
	}
	plan, err := e.Plan(lost, avail)
	if err != nil {
		if _, ok := err.(*codec.UndecodableError); ok {
			return &codec.UndecodableError{Op: "reconstruct", Want: lost, Available: present}
		}
		return err
	}
	in := make([][]byte, len(plan.Helpers))
	for i, h := range plan.Helpers {
		in[i] = shards[h]
	}
	out := make([][]byte, len(lost))
	for j, l := range lost {
		out[j] = codec.Buffer(shards[l], size)
	}
	if err := plan.Repair(in, out); err != nil {
		return err
	}
	for j, l := range lost {
		shards[l] = out[j]
	}
	return nil
}
