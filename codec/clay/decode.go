package clay

import (
	"fmt"
	"sync"
	"sync/atomic"

	"cairn/codec/internal/gf"
)

// generator returns the n×K generator of the per-plane scalar code over the
// uncoupled symbols, K = k+ν, in internal node order: the identity for the
// k data and ν virtual nodes, then m Cauchy rows 1/((K+j) XOR c) for the
// parity nodes. Any K rows are independent (MDS).
func generator(g *geometry) [][]byte {
	kk := g.k + g.nu
	gen := make([][]byte, g.n)
	for i := range kk {
		gen[i] = make([]byte, kk)
		gen[i][i] = 1
	}
	for j := range g.m {
		row := make([]byte, kk)
		for c := range row {
			row[c] = gf.Inv(byte((kk + j) ^ c))
		}
		gen[kk+j] = row
	}
	return gen
}

// planeMatrix returns the matrix computing the uncoupled symbols of the
// outputs nodes from those of the K inputs nodes, in every plane.
func planeMatrix(gen [][]byte, inputs, outputs []int) ([][]byte, error) {
	span := gf.NewSpan(len(gen[0]))
	for _, i := range inputs {
		if !span.Add(gen[i]) {
			return nil, fmt.Errorf("clay: plane code rows %v are dependent (bug: the code must be MDS)", inputs)
		}
	}
	coeffs := make([][]byte, len(outputs))
	for r, o := range outputs {
		x, ok := span.Express(gen[o])
		if !ok {
			return nil, fmt.Errorf("clay: plane code row %d is not spanned by %v", o, inputs)
		}
		coeffs[r] = x
	}
	return coeffs, nil
}

// directMinBytes is the smallest run of planes (per node) that the direct
// path handles; below it, gathering many planes per kernel call wins.
const directMinBytes = 2 << 10

// decodePlan is the schedule of a layered decode
// (docs/codes.md#clay-layered-decode) for one set of erased nodes. It is
// immutable and shared, except for the direct kernels, which are built on
// first use.
type decodePlan struct {
	erased   []int  // E: internal nodes whose C is computed, ascending
	isErased []bool // by internal node
	inputs   []int  // S: the first K non-erased nodes, whose U feed the plane code
	coeffs   [][]byte
	kern     *kernel // U_E = coeffs · U_S, on gathered U's
	// levels lists the planes by intersection score IS(z) = number of
	// erased dots in z, lowest first, planes ascending within a level.
	levels [][]int32

	// runLen is q^f for the f trailing columns whose nodes are all erased:
	// their digits change neither a plane's score nor the uncoupling of
	// the inputs, so each aligned run of runLen planes shares one dot
	// pattern and reads contiguous sub-chunks.
	runLen int
	// direct holds, by dot pattern (z / runLen), the kernel that computes
	// U_E of a run straight from the stored C's; nil when the plan does not
	// use the direct path. Entries are built on first use under directMu.
	direct   []atomic.Pointer[directKernel]
	directMu sync.Mutex
}

// directKernel computes U of the erased nodes over one run of planes
// directly from coupled symbols: input j is node nodes[j]'s sub-chunks on
// planes z0+deltas[j] ... (+runLen), so the uncoupling is folded into the
// matrix and no uncoupled input is materialised.
type directKernel struct {
	nodes  []int
	deltas []int
	kern   *kernel
}

func newDecodePlan(g *geometry, gen [][]byte, erased []int) (*decodePlan, error) {
	p := &decodePlan{erased: erased, isErased: make([]bool, g.n)}
	for _, e := range erased {
		p.isErased[e] = true
	}
	kk := g.k + g.nu
	for i := 0; i < g.n && len(p.inputs) < kk; i++ {
		if !p.isErased[i] {
			p.inputs = append(p.inputs, i)
		}
	}
	if len(p.inputs) < kk {
		return nil, fmt.Errorf("clay: %d erasures exceed M=%d (bug: callers check)", len(erased), g.m)
	}
	coeffs, err := planeMatrix(gen, p.inputs, erased)
	if err != nil {
		return nil, err
	}
	p.coeffs = coeffs
	if p.kern, err = newKernel(coeffs); err != nil {
		return nil, err
	}
	score := make([]int, g.alpha)
	maxScore := 0
	for z := range g.alpha {
		for _, e := range erased {
			if g.isDot(e, z) {
				score[z]++
			}
		}
		maxScore = max(maxScore, score[z])
	}
	p.levels = make([][]int32, maxScore+1)
	for z, s := range score {
		p.levels[s] = append(p.levels[s], int32(z))
	}
	p.runLen = 1
	for y := g.t - 1; y >= 0; y-- {
		all := true
		for x := range g.q {
			all = all && p.isErased[y*g.q+x]
		}
		if !all {
			break
		}
		p.runLen *= g.q
	}
	return p, nil
}

// enableDirect lets the plan use the direct path.
func (p *decodePlan) enableDirect(g *geometry) {
	p.direct = make([]atomic.Pointer[directKernel], g.alpha/p.runLen)
}

// directKernel returns the direct kernel of the run starting at plane z0.
func (p *decodePlan) directKernel(g *geometry, tf *transform, z0 int) (*directKernel, error) {
	slot := &p.direct[z0/p.runLen]
	if dk := slot.Load(); dk != nil {
		return dk, nil
	}
	p.directMu.Lock()
	defer p.directMu.Unlock()
	if dk := slot.Load(); dk != nil {
		return dk, nil
	}
	dk := &directKernel{}
	var cols [][]byte // one column of coefficients per input
	for s, i := range p.inputs {
		col := make([]byte, len(p.erased))
		for r := range col {
			col[r] = p.coeffs[r][s]
		}
		scaled := func(c byte) []byte {
			out := make([]byte, len(col))
			for r, x := range col {
				out[r] = gf.Mul(x, c)
			}
			return out
		}
		// U_i = a·C_i + b·C_companion (a = 1, b = 0 for a dot).
		a, b := byte(1), byte(0)
		cs, zs, ok := g.companion(i, z0)
		if ok {
			a, b = tf.uncoupleCoef(side(i%g.q, cs%g.q))
		}
		if !g.virtual(i) {
			dk.nodes = append(dk.nodes, i)
			dk.deltas = append(dk.deltas, 0)
			cols = append(cols, scaled(a))
		}
		if ok && !g.virtual(cs) {
			dk.nodes = append(dk.nodes, cs)
			dk.deltas = append(dk.deltas, zs-z0)
			cols = append(cols, scaled(b))
		}
	}
	coeffs := make([][]byte, len(p.erased))
	for r := range coeffs {
		coeffs[r] = make([]byte, len(cols))
		for j, col := range cols {
			coeffs[r][j] = col[r]
		}
	}
	kern, err := newKernel(coeffs)
	if err != nil {
		return nil, err
	}
	dk.kern = kern
	slot.Store(dk)
	return dk, nil
}

// stripBytes is the width of the byte strips that large sub-chunks are
// processed in: every step of a decode or repair works byte by byte within
// sub-chunks, so a sub-chunk can be cut into strips that each run the whole
// algorithm, keeping scratch at (K+M)·stripBytes and batches in cache.
const stripBytes = 16 << 10

// view gives sub-chunk access to the coupled symbols of a stripe: bufs is
// indexed by internal node, nil for a node whose sub-chunks are all zero
// (virtual) or unknown. Sub-chunk z of a buffer starts at z·sc; with pos
// set, buffers are packed: plane z is at position pos[z] (the repair planes
// a helper sent). Work covers the strip [off, off+width) of each sub-chunk.
type view struct {
	bufs       [][]byte
	sc         int
	pos        []int32
	off, width int
}

func (v *view) sub(i, z int) []byte {
	b := v.bufs[i]
	if b == nil {
		return nil
	}
	if v.pos != nil {
		z = int(v.pos[z])
	}
	a := z*v.sc + v.off
	return b[a : a+v.width : a+v.width]
}

// span returns the strips of n consecutive planes from z as one slice: the
// sub-chunk itself when n is 1, else whole sub-chunks (only when the strip
// is the whole sub-chunk, v.width = v.sc, and buffers are not packed).
func (v *view) span(i, z, n int) []byte {
	if n == 1 {
		return v.sub(i, z)
	}
	return v.bufs[i][z*v.sc : (z+n)*v.sc]
}

// strips returns how many strips v's sub-chunks are processed in: one
// (the whole sub-chunk) when it is at most 2·stripBytes, else one per
// stripBytes.
func (v *view) strips() int {
	if v.sc <= 2*stripBytes {
		return 1
	}
	return (v.sc + stripBytes - 1) / stripBytes
}

// strip returns v restricted to strip k of its sub-chunks.
func (v *view) strip(k int) view {
	s := *v
	if v.sc <= 2*stripBytes {
		s.off, s.width = 0, v.sc
	} else {
		s.off = k * stripBytes
		s.width = min(stripBytes, v.sc-s.off)
	}
	return s
}

// decode runs the layered decode of plan p on the stripe in v: on return
// the buffers of the erased nodes hold their coupled symbols. Buffers of
// erased nodes are outputs (their contents on entry do not matter); all
// others are read only. Per intersection score, lowest first, and in
// batches of planes of that score:
//
//  1. uncouple: U of every input node in every plane of the batch, from C
//     of the node and of its companion (an erased companion's C comes from
//     a plane of lower score, already decoded);
//  2. one plane-code kernel call for the whole batch gives U of the erased
//     nodes (the batch is laid out node-major, so same-pattern planes are
//     one contiguous "shard" per node: docs/codes.md#clay-sub-chunk-size);
//  3. recouple: C of the erased nodes — dots C = U; companion known:
//     from U and C*; companion erased too: the pair is solved once both
//     of its planes (same score) are decoded.
//
// On the direct path (the encoder) steps 1 and 2 are one kernel call per
// batch of a run of same-pattern planes, reading the stored sub-chunks in
// place; batches are the largest power of q planes within the batch budget
// and the run, and the path is taken when they hold at least
// directMinBytes per node.
func (c *Code) decode(p *decodePlan, v *view, w *work) error {
	for k := range v.strips() {
		s := v.strip(k)
		if err := c.decodeStrip(p, &s, w); err != nil {
			return err
		}
	}
	return nil
}

func (c *Code) decodeStrip(p *decodePlan, v *view, w *work) error {
	g := &c.g
	sc := v.width // bytes per plane in this strip
	nb := 1
	if v.width == v.sc {
		nb = c.batchPlanes(sc)
	}
	direct := false
	if p.direct != nil {
		n := 1
		for n*g.q <= min(nb, p.runLen) {
			n *= g.q
		}
		if n*sc >= directMinBytes {
			direct, nb = true, n
		}
	}
	kk, ne := len(p.inputs), len(p.erased)
	var in, out [][]byte
	if !direct {
		in = w.bufs(kk, nb*sc)
		out = w.bufs2(ne, nb*sc)
	}
	done := w.flags(g.alpha)
	for _, level := range p.levels {
		for off := 0; off < len(level); off += nb {
			batch := level[off:min(off+nb, len(level))]
			size := len(batch) * sc
			z0 := int(batch[0])
			contiguous := int(batch[len(batch)-1])-z0 == len(batch)-1
			var ins, outs [][]byte
			kern := p.kern
			if direct {
				dk, err := p.directKernel(g, &c.tf, z0)
				if err != nil {
					return err
				}
				kern = dk.kern
				ins, outs = w.headers(len(dk.nodes), ne)
				for j, i := range dk.nodes {
					ins[j] = v.span(i, z0+dk.deltas[j], len(batch))
				}
			} else {
				ins, outs = w.headers(kk, ne)
				for j, z := range batch {
					for s, i := range p.inputs {
						dst := in[s][j*sc : (j+1)*sc]
						if cs, zs, ok := g.companion(i, int(z)); ok {
							c.tf.uncouple(dst, side(i%g.q, cs%g.q), v.sub(i, int(z)), v.sub(cs, zs))
						} else if ci := v.sub(i, int(z)); ci != nil {
							copy(dst, ci)
						} else {
							clear(dst)
						}
					}
				}
				for s := range kk {
					ins[s] = in[s][:size]
				}
			}
			for e, i := range p.erased {
				if contiguous {
					outs[e] = v.span(i, z0, len(batch))
				} else {
					outs[e] = out[e][:size]
				}
			}
			if err := kern.run(ins, outs, w); err != nil {
				return err
			}
			if !contiguous {
				for e, i := range p.erased {
					for j, z := range batch {
						copy(v.sub(i, int(z)), out[e][j*sc:(j+1)*sc])
					}
				}
			}
			for _, z := range batch {
				done[z] = true
				for _, i := range p.erased {
					cs, zs, ok := g.companion(i, int(z))
					switch {
					case !ok: // dot: C = U
					case !p.isErased[cs]:
						c.tf.recouple(v.sub(i, int(z)), side(i%g.q, cs%g.q), v.sub(cs, zs))
					case done[zs] && i < cs: // the pair's other plane is decoded too
						c.tf.recouplePair(v.sub(i, int(z)), v.sub(cs, zs))
					case done[zs]:
						c.tf.recouplePair(v.sub(cs, zs), v.sub(i, int(z)))
					}
				}
			}
		}
	}
	return nil
}
