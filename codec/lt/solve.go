package lt

import (
	"math/bits"

	"cairn/codec/internal/gf"
)

// Column states during peeling.
const (
	colActive   = 0 // not yet determined
	colSolved   = 1 // determined by a pivot row (in terms of earlier pivots and inactive columns)
	colInactive = 2 // left to the dense solve
)

// solver is the symbolic half of inactivation decoding: it works on the
// indices of the rows (LDPC rows, then received blocks), never on payload.
// A solver is reused across solves to keep allocations down; it is not safe
// for concurrent use.
//
// Rows 0..S−1 are the LDPC constraints, rows S.. the received blocks in the
// order given. The H HDPC rows are handled in the dense phase only.
type solver struct {
	p *params

	ent   []int32 // row entries (intermediate symbol indices)
	start []int32 // row r is ent[start[r]:start[r+1]]
	nrow  int

	// Peeling.
	deg    []int32 // active columns left in each row
	xr     []int32 // XOR of the active columns left in each row
	used   []bool  // row is a pivot
	colDeg []int32 // unused rows containing each active column
	cstart []int32 // rows of column c < W: cent[cstart[c]:cstart[c+1]]
	cent   []int32
	fill   []int32
	state  []uint8
	prow   []int32 // pivot rows, in order
	pcol   []int32 // pivot columns, in order
	stack  []int32
	tmp    []int32

	// Dense phase.
	inact []int32 // inactive columns; a column's index here is its dense index
	inIdx []int32 // dense index of each column, or −1
	cpos  []int32 // pivot position of each solved column, or −1
	nw    int     // words per dense bit vector
	mv    []uint64
	vec   []uint64

	// Binary basis in reduced row echelon form.
	bBits []uint64 // rows of nw words
	bComb []uint64 // rows of nw words: combination of selected check rows (plan only)
	bPiv  []int32  // dense pivot index of each basis row
	bRow  []int32  // check row each basis row was selected as
	isPiv []bool   // per dense index

	// HDPC phase.
	free  []int32  // dense indices not pivoted by the binary basis
	hv    []byte   // H rows of i bytes
	red   []byte   // H rows of len(bPiv): coefficient of basis row b subtracted from HDPC row r
	aug   []byte   // H rows of nF+H: reduced HDPC rows restricted to free, and the transform
	hUsed []int32  // HDPC rows chosen, one per free column
	hInv  [][]byte // hInv[f][t]: z_free[f] = Σ_t hInv[f][t] · s'_{hUsed[t]}
}

func newSolver(p *params) *solver { return &solver{p: p} }

// load sets the rows: the LDPC rows and one row per block ID.
func (s *solver) load(ids []int) {
	p := s.p
	s.ent = s.ent[:0]
	s.start = s.start[:0]
	s.ent, s.start = p.appendLDPC(s.ent, s.start)
	for _, id := range ids {
		s.start = append(s.start, int32(len(s.ent)))
		s.ent = p.appendRow(s.ent, id)
	}
	s.start = append(s.start, int32(len(s.ent)))
	s.nrow = len(s.start) - 1
}

func (s *solver) row(r int32) []int32 { return s.ent[s.start[r]:s.start[r+1]] }

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// peel runs the sparse phase: it solves columns from rows with one active
// column left and, when stuck, inactivates columns. On return every column
// is solved or inactive.
func (s *solver) peel() {
	p := s.p
	n := s.nrow
	s.deg = grow(s.deg, n)
	s.xr = grow(s.xr, n)
	s.used = grow(s.used, n)
	s.colDeg = grow(s.colDeg, p.W)
	s.cstart = grow(s.cstart, p.W+1)
	s.state = grow(s.state, p.L)
	s.inIdx = grow(s.inIdx, p.L)
	s.inact = s.inact[:0]
	s.prow = s.prow[:0]
	s.pcol = s.pcol[:0]
	s.stack = s.stack[:0]
	for c := range p.L {
		s.inIdx[c] = -1
	}
	for c := p.W; c < p.L; c++ {
		s.state[c] = colInactive
		s.inIdx[c] = int32(len(s.inact))
		s.inact = append(s.inact, int32(c))
	}
	for r := range n {
		var d, x int32
		for _, c := range s.row(int32(r)) {
			if int(c) < p.W {
				d++
				x ^= c
				s.cstart[c+1]++
			}
		}
		s.deg[r], s.xr[r] = d, x
		if d == 1 {
			s.stack = append(s.stack, int32(r))
		}
	}
	for c := range p.W {
		s.colDeg[c] = s.cstart[c+1]
		s.cstart[c+1] += s.cstart[c]
	}
	s.cent = grow(s.cent, int(s.cstart[p.W]))
	s.fill = grow(s.fill, p.W)
	copy(s.fill, s.cstart[:p.W])
	for r := range n {
		for _, c := range s.row(int32(r)) {
			if int(c) < p.W {
				s.cent[s.fill[c]] = int32(r)
				s.fill[c]++
			}
		}
	}

	remaining := p.W
	drop := func(c int32) { // column c leaves the active set
		for _, r := range s.cent[s.cstart[c]:s.cstart[c+1]] {
			if s.used[r] {
				continue
			}
			s.deg[r]--
			s.xr[r] ^= c
			if s.deg[r] == 1 {
				s.stack = append(s.stack, r)
			}
		}
	}
	scan := 0 // rows before scan have no active column left or are used
	for remaining > 0 {
		for len(s.stack) > 0 {
			r := s.stack[len(s.stack)-1]
			s.stack = s.stack[:len(s.stack)-1]
			if s.used[r] || s.deg[r] != 1 {
				continue
			}
			c := s.xr[r]
			s.used[r] = true
			s.state[c] = colSolved
			s.prow = append(s.prow, r)
			s.pcol = append(s.pcol, c)
			remaining--
			for _, k := range s.row(r) {
				if int(k) < p.W && s.state[k] == colActive {
					s.colDeg[k]--
				}
			}
			drop(c)
		}
		if remaining == 0 {
			break
		}
		// Stuck: take an unused row with the fewest active columns (at
		// least 2), keep its active column that is in the fewest other
		// rows and inactivate the rest.
		best, bestDeg := int32(-1), int32(1<<30)
		for r := scan; r < n; r++ {
			d := s.deg[r]
			if s.used[r] || d == 0 {
				if r == scan {
					scan++
				}
				continue
			}
			if d < bestDeg {
				best, bestDeg = int32(r), d
				if d == 2 {
					break
				}
			}
		}
		if best < 0 {
			// No row reaches the remaining columns: leave them to the
			// dense phase (the HDPC rows may still determine them).
			for c := range p.W {
				if s.state[c] == colActive {
					s.inactivate(int32(c))
					remaining--
				}
			}
			break
		}
		s.tmp = s.tmp[:0]
		keep := int32(-1)
		for _, c := range s.row(best) {
			if int(c) < p.W && s.state[c] == colActive {
				s.tmp = append(s.tmp, c)
				if keep < 0 || s.colDeg[c] < s.colDeg[keep] {
					keep = c
				}
			}
		}
		for _, c := range s.tmp {
			if c != keep {
				s.inactivate(c)
				remaining--
				drop(c)
			}
		}
	}
}

func (s *solver) inactivate(c int32) {
	s.state[c] = colInactive
	s.inIdx[c] = int32(len(s.inact))
	s.inact = append(s.inact, c)
}

// dense runs the dense phase on the inactive columns: it expresses every
// solved column and every unused row in terms of the inactive columns
// (bit vectors), eliminates over GF(2) with the unused rows, and finishes
// the columns left over with the GF(256) HDPC rows. It returns the rank
// deficit: 0 when the rows determine every intermediate symbol, else a
// lower bound on the number of further blocks needed. With comb set it
// records what the payload plan needs.
func (s *solver) dense(comb bool) int {
	p := s.p
	ni := len(s.inact)
	nw := (ni + 63) / 64
	s.nw = nw
	s.cpos = grow(s.cpos, p.L)
	for c := range s.cpos {
		s.cpos[c] = -1
	}
	np := len(s.prow)
	s.mv = grow(s.mv, np*nw)
	s.vec = grow(s.vec, nw)
	// M vectors of solved columns, in pivot order.
	for t, r := range s.prow {
		c := s.pcol[t]
		s.cpos[c] = int32(t)
		m := s.mv[t*nw : (t+1)*nw]
		for _, k := range s.row(r) {
			if k == c {
				continue
			}
			s.addCol(m, k)
		}
	}
	// Binary elimination over the unused rows: received rows first (they
	// are light), then LDPC rows.
	s.bBits = s.bBits[:0]
	s.bComb = s.bComb[:0]
	s.bPiv = s.bPiv[:0]
	s.bRow = s.bRow[:0]
	s.isPiv = grow(s.isPiv, ni)
	order := func(yield func(int32) bool) {
		for r := p.S; r < s.nrow; r++ {
			if !s.used[r] && !yield(int32(r)) {
				return
			}
		}
		for r := range p.S {
			if !s.used[r] && !yield(int32(r)) {
				return
			}
		}
	}
	var cv []uint64
	if comb {
		cv = make([]uint64, nw)
	}
	for r := range order {
		if len(s.bPiv) == ni {
			break
		}
		v := s.vec
		clear(v)
		for _, k := range s.row(r) {
			s.addCol(v, k)
		}
		nb := len(s.bPiv)
		if comb {
			clear(cv)
			cv[nb/64] |= 1 << (nb % 64)
		}
		for b := range nb {
			pv := s.bPiv[b]
			if v[pv/64]>>(pv%64)&1 != 0 {
				xorWords(v, s.bBits[b*nw:(b+1)*nw])
				if comb {
					xorWords(cv, s.bComb[b*nw:(b+1)*nw])
				}
			}
		}
		pv := int32(-1)
		for w, x := range v {
			if x != 0 {
				pv = int32(w*64 + bits.TrailingZeros64(x))
				break
			}
		}
		if pv < 0 {
			continue
		}
		for b := range nb {
			row := s.bBits[b*nw : (b+1)*nw]
			if row[pv/64]>>(pv%64)&1 != 0 {
				xorWords(row, v)
				if comb {
					xorWords(s.bComb[b*nw:(b+1)*nw], cv)
				}
			}
		}
		s.bBits = append(s.bBits, v...)
		if comb {
			s.bComb = append(s.bComb, cv...)
		}
		s.bPiv = append(s.bPiv, pv)
		s.bRow = append(s.bRow, r)
		s.isPiv[pv] = true
	}
	s.free = s.free[:0]
	for k := range ni {
		if !s.isPiv[k] {
			s.free = append(s.free, int32(k))
		}
	}
	nf := len(s.free)
	s.hUsed = s.hUsed[:0]
	if nf == 0 {
		return 0
	}
	if nf > p.H {
		// Undecodable whatever the HDPC rows do: count only.
		return nf - p.H + s.hdpcDeficit(p.H, false)
	}
	return s.hdpcDeficit(nf, comb)
}

// hdpcDeficit reduces the HDPC rows to the free columns and returns how
// many of the free columns they leave undetermined (beyond need).
func (s *solver) hdpcDeficit(need int, comb bool) int {
	p := s.p
	ni := len(s.inact)
	nw := s.nw
	nb := len(s.bPiv)
	nf := len(s.free)
	s.hv = grow(s.hv, p.H*ni)
	// Group vectors, spread into the HDPC rows with their coefficients.
	for g := range p.G {
		v := s.vec
		clear(v)
		for _, j := range s.p.gMem[p.gStart[g]:p.gStart[g+1]] {
			s.addCol(v, j)
		}
		for w, x := range v {
			for x != 0 {
				k := w*64 + bits.TrailingZeros64(x)
				x &= x - 1
				for r := range p.H {
					s.hv[r*ni+k] ^= p.hdpc[r*p.G+g]
				}
			}
		}
	}
	for r := range p.H {
		s.hv[r*ni+int(s.inIdx[p.L-p.H+r])] ^= 1
	}
	if comb {
		s.red = grow(s.red, p.H*nb)
	}
	for r := range p.H {
		h := s.hv[r*ni : (r+1)*ni]
		for b := range nb {
			c := h[s.bPiv[b]]
			if c == 0 {
				continue
			}
			if comb {
				s.red[r*nb+b] = c
			}
			row := s.bBits[b*nw : (b+1)*nw]
			for w, x := range row {
				for x != 0 {
					h[w*64+bits.TrailingZeros64(x)] ^= c
					x &= x - 1
				}
			}
		}
	}
	// GF(256) elimination on [HDPC restricted to free | I_H].
	wd := nf + p.H
	s.aug = grow(s.aug, p.H*wd)
	for r := range p.H {
		for f, k := range s.free {
			s.aug[r*wd+f] = s.hv[r*ni+int(k)]
		}
		s.aug[r*wd+nf+r] = 1
	}
	rowOf := make([]int, 0, nf) // aug row that pivots free column f
	taken := make([]bool, p.H)
	rank := 0
	for f := range nf {
		pr := -1
		for r := range p.H {
			if !taken[r] && s.aug[r*wd+f] != 0 {
				pr = r
				break
			}
		}
		if pr < 0 {
			rowOf = append(rowOf, -1)
			continue
		}
		taken[pr] = true
		rank++
		rowOf = append(rowOf, pr)
		prow := s.aug[pr*wd : (pr+1)*wd]
		inv := gf.Inv(prow[f])
		for c := range prow {
			prow[c] = gf.Mul(prow[c], inv)
		}
		for r := range p.H {
			if r == pr {
				continue
			}
			row := s.aug[r*wd : (r+1)*wd]
			m := row[f]
			if m == 0 {
				continue
			}
			for c := range row {
				row[c] ^= gf.Mul(m, prow[c])
			}
		}
	}
	if rank < need || !comb {
		return need - min(rank, need)
	}
	// z_free[f] = Σ_r aug[rowOf[f]][nf+r] · s'_r over the HDPC rows r with
	// a nonzero coefficient; record the rows used.
	use := make([]int32, p.H)
	for r := range use {
		use[r] = -1
	}
	s.hInv = s.hInv[:0]
	for f := range nf {
		for r, c := range s.aug[rowOf[f]*wd+nf : (rowOf[f]+1)*wd] {
			if c != 0 && use[r] < 0 {
				use[r] = int32(len(s.hUsed))
				s.hUsed = append(s.hUsed, int32(r))
			}
		}
	}
	for f := range nf {
		row := s.aug[rowOf[f]*wd+nf : (rowOf[f]+1)*wd]
		coefs := make([]byte, len(s.hUsed))
		for r, c := range row {
			if c != 0 {
				coefs[use[r]] = c
			}
		}
		s.hInv = append(s.hInv, coefs)
	}
	return 0
}

// addCol adds column k's expression in the inactive columns to v.
func (s *solver) addCol(v []uint64, k int32) {
	if i := s.inIdx[k]; i >= 0 {
		v[i/64] ^= 1 << (i % 64)
		return
	}
	t := int(s.cpos[k])
	xorWords(v, s.mv[t*s.nw:(t+1)*s.nw])
}

func xorWords(dst, src []uint64) {
	for i := range dst {
		dst[i] ^= src[i]
	}
}

// deficit loads ids and returns the rank deficit (0: decodable).
func (s *solver) deficit(ids []int) int {
	s.load(ids)
	s.peel()
	return s.dense(false)
}
