package lt

import (
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"cairn/codec"
)

// A plan is the payload half of a decode or encode: a straight-line list of
// operations on slots, recorded by the symbolic solver and executed on any
// number of byte columns. Slots 0..nIn−1 are the input blocks (read only),
// nIn..nIn+nOut−1 the output blocks (written), and the rest scratch
// (intermediate symbols and temporaries). Plans are immutable once built
// and safe to share between goroutines.
type plan struct {
	ids       []int // block ID of each input slot (set by the code)
	nIn, nOut int
	nScratch  int
	ops       []op
	idx       []int32 // operand lists: for opXor [dst, src...]; for opMul/opMulAdd [dst, src]
	marks     []int   // op index at the end of each phase (for stats)

	// Prefetch schedule: before op i, the inputs pf[pfStart[i]:pfStart[i+1]]
	// (first read by a later op) are prefetched.
	pf      []int32
	pfStart []int32
}

// prefetchDistance is how many ops ahead inputs are prefetched.
const prefetchDistance = 8

// schedulePrefetch fills pf: each input slot is prefetched prefetchDistance
// ops before the op that first reads it.
func (pl *plan) schedulePrefetch() {
	first := make([]int32, pl.nIn)
	for i := range first {
		first[i] = -1
	}
	at := make([][]int32, len(pl.ops))
	for i, o := range pl.ops {
		a := pl.idx[o.s0:o.s1]
		for _, x := range a[1:] {
			if x >= 0 && int(x) < pl.nIn && first[x] < 0 {
				first[x] = int32(i)
				j := max(0, i-prefetchDistance)
				at[j] = append(at[j], x)
			}
		}
	}
	pl.pfStart = make([]int32, len(pl.ops)+1)
	pl.pf = pl.pf[:0]
	for i := range at {
		pl.pf = append(pl.pf, at[i]...)
		pl.pfStart[i+1] = int32(len(pl.pf))
	}
}

type opKind uint8

const (
	opXor    opKind = iota // dst = src1 ⊕ src2 ⊕ … (one or more sources; dst may be src1)
	opXorOut               // opXor into an output block nothing reads later
	opZero                 // dst = 0
	opMul                  // dst = coef·src
	opMulAdd               // dst ⊕= coef·src
)

type op struct {
	kind   opKind
	coef   byte
	s0, s1 int32 // operands: idx[s0:s1]
}

// stats counts a plan's work: block reads of XOR sources, GF(256) products
// and ops, for tests and the design note.
type stats struct {
	xorOps, xorReads, mulOps, zeroOps int
}

func (pl *plan) stats() stats {
	var st stats
	for _, o := range pl.ops {
		switch o.kind {
		case opXor, opXorOut:
			st.xorOps++
			st.xorReads += int(o.s1-o.s0) - 1
		case opZero:
			st.zeroOps++
		default:
			st.mulOps++
		}
	}
	return st
}

// builder records a plan from a finished solve.
type builder struct {
	pl  *plan
	tmp []int32
}

// xor emits dst = XOR of srcs, cancelling repeated slots and putting dst
// first if it is a source (the only aliasing the kernels allow).
func (b *builder) xor(dst int32, srcs []int32) {
	slices.Sort(srcs)
	n := 0
	for i := 0; i < len(srcs); {
		if i+1 < len(srcs) && srcs[i] == srcs[i+1] {
			i += 2 // x ⊕ x = 0
			continue
		}
		srcs[n] = srcs[i]
		n++
		i++
	}
	srcs = srcs[:n]
	pl := b.pl
	s0 := int32(len(pl.idx))
	if n == 0 {
		pl.idx = append(pl.idx, dst)
		pl.ops = append(pl.ops, op{kind: opZero, s0: s0, s1: s0 + 1})
		return
	}
	if i := slices.Index(srcs, dst); i > 0 {
		srcs[0], srcs[i] = srcs[i], srcs[0]
	}
	pl.idx = append(pl.idx, dst)
	pl.idx = append(pl.idx, srcs...)
	pl.ops = append(pl.ops, op{kind: opXor, s0: s0, s1: int32(len(pl.idx))})
}

// value returns a slot holding the XOR of srcs: −1 for none (zero), the
// source itself for one, else dst after emitting the XOR.
func (b *builder) value(dst int32, srcs []int32) int32 {
	switch len(srcs) {
	case 0:
		return -1
	case 1:
		return srcs[0]
	}
	b.xor(dst, srcs)
	return dst
}

func (b *builder) mul(dst, src int32, c byte, add bool) {
	pl := b.pl
	s0 := int32(len(pl.idx))
	pl.idx = append(pl.idx, dst, src)
	k := opMul
	if add {
		k = opMulAdd
	}
	pl.ops = append(pl.ops, op{kind: k, coef: c, s0: s0, s1: s0 + 2})
}

// buildPlan records the payload plan of the last dense(true) solve that
// returned 0. Input slot t is the block of the t-th ID given to load;
// outputs are the blocks with IDs outIDs, or with syms the intermediate
// symbols with those indices.
func (s *solver) buildPlan(outIDs []int, syms bool) *plan {
	p := s.p
	nIn := s.nrow - p.S
	nOut := len(outIDs)
	E := int32(nIn + nOut)        // scratch: intermediate symbol c is slot E+c
	R0 := E + int32(p.L)          // residuals of the basis rows
	G0 := R0 + int32(len(s.bPiv)) // HDPC group sums
	H0 := G0 + int32(p.G)         // HDPC right-hand sides
	pl := &plan{nIn: nIn, nOut: nOut, nScratch: int(H0-E) + len(s.hUsed)}
	b := &builder{pl: pl}
	rhs := func(dst []int32, r int32) []int32 {
		if int(r) >= p.S {
			dst = append(dst, r-int32(p.S))
		}
		return dst
	}
	keep := func(dst []int32, v int32) []int32 {
		if v >= 0 {
			dst = append(dst, v)
		}
		return dst
	}
	cur := make([]int32, p.L) // slot holding each symbol's current value, −1 = zero
	for c := range cur {
		cur[c] = -1
	}
	// Pass 1: u = the solved symbols with every inactive symbol taken as 0.
	for t, r := range s.prow {
		c := s.pcol[t]
		tmp := rhs(b.tmp[:0], r)
		for _, k := range s.row(r) {
			if k != c && s.state[k] == colSolved {
				tmp = keep(tmp, cur[k])
			}
		}
		cur[c] = b.value(E+c, tmp)
		b.tmp = tmp
	}
	pl.marks = append(pl.marks, len(pl.ops))
	curU := slices.Clone(cur)
	// Residuals of the basis rows: what their inactive part must equal.
	nb := len(s.bPiv)
	nw := s.nw
	res := make([]int32, nb)
	for bi, r := range s.bRow {
		tmp := rhs(b.tmp[:0], r)
		for _, k := range s.row(r) {
			if s.state[k] == colSolved {
				tmp = keep(tmp, cur[k])
			}
		}
		res[bi] = b.value(R0+int32(bi), tmp)
		b.tmp = tmp
	}
	pl.marks = append(pl.marks, len(pl.ops))
	// w: each binary-pivoted inactive symbol with the free ones taken as 0.
	w := make([]int32, nb)
	for bi := range nb {
		tmp := b.tmp[:0]
		for wi, x := range s.bComb[bi*nw : (bi+1)*nw] {
			for x != 0 {
				tmp = keep(tmp, res[wi*64+trailing(x)])
				x &= x - 1
			}
		}
		w[bi] = b.value(E+s.inact[s.bPiv[bi]], tmp)
		b.tmp = tmp
	}
	pl.marks = append(pl.marks, len(pl.ops))
	// HDPC rows solve the free inactive symbols.
	if len(s.free) > 0 {
		q := make([]int32, p.G)
		for g := range p.G {
			tmp := b.tmp[:0]
			for _, j := range p.gMem[p.gStart[g]:p.gStart[g+1]] {
				if s.state[j] == colSolved {
					tmp = keep(tmp, cur[j])
				}
			}
			q[g] = b.value(G0+int32(g), tmp)
			b.tmp = tmp
		}
		for t, r := range s.hUsed {
			dst := H0 + int32(t)
			first := true
			for g := range p.G {
				if q[g] < 0 {
					continue
				}
				b.mul(dst, q[g], p.hdpc[int(r)*p.G+g], !first)
				first = false
			}
			for bi := range nb {
				if c := s.red[int(r)*nb+bi]; c != 0 && w[bi] >= 0 {
					if first {
						b.mul(dst, w[bi], c, false)
						first = false
						continue
					}
					b.mul(dst, w[bi], c, true)
				}
			}
			if first {
				b.xor(dst, nil)
			}
		}
		for f, k := range s.free {
			c := s.inact[k]
			dst := E + c
			first := true
			for t, co := range s.hInv[f] {
				if co != 0 {
					b.mul(dst, H0+int32(t), co, !first)
					first = false
				}
			}
			if first {
				continue // zero
			}
			cur[c] = dst
		}
	}
	pl.marks = append(pl.marks, len(pl.ops))
	// The binary-pivoted inactive symbols get their free parts.
	for bi := range nb {
		c := s.inact[s.bPiv[bi]]
		tmp := keep(b.tmp[:0], w[bi])
		row := s.bBits[bi*nw : (bi+1)*nw]
		for _, k := range s.free {
			if row[k/64]>>(k%64)&1 != 0 {
				tmp = keep(tmp, cur[s.inact[k]])
			}
		}
		if len(tmp) == 1 && tmp[0] >= int32(nIn) && tmp[0] != E+c {
			// An alias to a temporary (maybe a u value that pass 2
			// overwrites): keep a copy.
			b.xor(E+c, tmp)
			cur[c] = E + c
		} else {
			cur[c] = b.value(E+c, tmp)
		}
		b.tmp = tmp
	}
	pl.marks = append(pl.marks, len(pl.ops))
	// Pass 2: the solved symbols, from their pivot row (A) or from u and
	// their inactive part (B), whichever reads fewer blocks. B needs u still
	// in place: in the symbol's own slot, an input, or zero.
	var tmpB []int32
	for t, r := range s.prow {
		c := s.pcol[t]
		tmp := rhs(b.tmp[:0], r)
		for _, k := range s.row(r) {
			if k != c {
				tmp = keep(tmp, cur[k])
			}
		}
		if u := curU[c]; u < int32(nIn) || u == E+c {
			tmpB = keep(tmpB[:0], u)
			for wi, x := range s.mv[t*nw : (t+1)*nw] {
				for x != 0 {
					tmpB = keep(tmpB, cur[s.inact[wi*64+trailing(x)]])
					x &= x - 1
				}
			}
			if len(tmpB) < len(tmp) {
				tmp, tmpB = tmpB, tmp
			}
		}
		cur[c] = b.value(E+c, tmp)
		b.tmp = tmp
	}
	pl.marks = append(pl.marks, len(pl.ops))
	// Outputs.
	var row []int32
	for o, id := range outIDs {
		if syms {
			row = append(row[:0], int32(id))
		} else {
			row = p.appendRow(row[:0], id)
		}
		tmp := b.tmp[:0]
		for _, k := range row {
			tmp = keep(tmp, cur[k])
		}
		b.xor(int32(nIn+o), tmp)
		if last := &pl.ops[len(pl.ops)-1]; last.kind == opXor {
			last.kind = opXorOut
		}
		b.tmp = tmp
	}
	pl.schedulePrefetch()
	return pl
}

// intermediatePlan builds, without a solve, the plan that makes blocks
// outIDs from the intermediate symbols given as inputs 0..L−1.
func (p *params) intermediatePlan(outIDs []int) *plan {
	pl := &plan{nIn: p.L, nOut: len(outIDs)}
	b := &builder{pl: pl}
	var row []int32
	for o, id := range outIDs {
		row = p.appendRow(row[:0], id)
		b.xor(int32(p.L+o), slices.Clone(row))
	}
	return pl
}

func trailing(x uint64) int { return bits.TrailingZeros64(x) }

// Column chunking: a plan runs on columns of the blocks, chunk bytes at a
// time, so its scratch (one chunk per slot) stays in the core's L2 cache.
var (
	scratchBudget = 1 << 20 // bytes of scratch per column pass
	minChunk      = 512
	maxChunk      = 16 << 10
)

func (pl *plan) chunk(size int) int {
	c := scratchBudget / max(pl.nScratch, 1)
	c = max(c, minChunk)
	c = min(c, maxChunk, size)
	return max(c/BlockMultiple*BlockMultiple, BlockMultiple)
}

// ntMin is the output size from which output blocks are written with
// non-temporal stores.
const ntMin = 16 << 20

var scratchPool sync.Pool

// run executes the plan on blocks of size bytes (a multiple of 64): in
// holds the input blocks (each at least size long where the plan reads it),
// out the output blocks (size long, overwritten).
func (pl *plan) run(in, out [][]byte, size int) {
	if size == 0 {
		return
	}
	chunk := pl.chunk(size)
	// Non-temporal stores pay off only for outputs much larger than the
	// cache, which the caller will not read back soon.
	nt := pl.nOut*size >= ntMin
	need := pl.nScratch * chunk
	var scratch []byte
	if v, ok := scratchPool.Get().(*[]byte); ok && cap(*v) >= need {
		scratch = (*v)[:need]
	} else {
		scratch = make([]byte, need)
	}
	defer func() { scratchPool.Put(&scratch) }()
	ext := pl.nIn + pl.nOut
	ptrs := make([]unsafe.Pointer, ext+pl.nScratch)
	for j := range pl.nScratch {
		ptrs[ext+j] = unsafe.Pointer(&scratch[j*chunk])
	}
	for off := 0; off < size; off += chunk {
		n := min(chunk, size-off)
		for i, b := range in {
			if len(b) >= off+n {
				ptrs[i] = unsafe.Pointer(&b[off])
			} else {
				ptrs[i] = nil
			}
		}
		for i, b := range out {
			ptrs[pl.nIn+i] = unsafe.Pointer(&b[off])
		}
		pl.exec(ptrs, n, nt)
	}
	if nt {
		fence()
	}
}

func (pl *plan) exec(ptrs []unsafe.Pointer, n int, nt bool) {
	pfOn := len(pl.pfStart) == len(pl.ops)+1
	for i, o := range pl.ops {
		if pfOn {
			for _, x := range pl.pf[pl.pfStart[i]:pl.pfStart[i+1]] {
				if p := ptrs[x]; p != nil {
					prefetch(p, n)
				}
			}
		}
		a := pl.idx[o.s0:o.s1]
		switch o.kind {
		case opXor:
			xorSlots(ptrs, a, n, false)
		case opXorOut:
			xorSlots(ptrs, a, n, nt)
		case opZero:
			clear(unsafe.Slice((*byte)(ptrs[a[0]]), n))
		case opMul:
			codec.Mul(unsafe.Slice((*byte)(ptrs[a[0]]), n), unsafe.Slice((*byte)(ptrs[a[1]]), n), o.coef)
		case opMulAdd:
			codec.MulAdd(unsafe.Slice((*byte)(ptrs[a[0]]), n), unsafe.Slice((*byte)(ptrs[a[1]]), n), o.coef)
		}
	}
}
