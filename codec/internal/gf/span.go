package gf

// Span incrementally builds a basis of row vectors of one width and
// expresses further vectors in terms of the rows added so far. It is how a
// code finds the helpers and coefficients of a repair: add helper rows of
// the generator matrix until the lost rows are in their span.
//
// The zero value is not usable; use NewSpan.
type Span struct {
	width int
	n     int      // rows added
	basis [][]byte // reduced rows, each with a leading 1 at pivots[i]
	exprs [][]byte // exprs[i]: basis[i] as a combination of added rows
	piv   []int
}

// NewSpan returns an empty span of vectors of the given width.
func NewSpan(width int) *Span { return &Span{width: width} }

// Rank returns the dimension of the span.
func (s *Span) Rank() int { return len(s.basis) }

// Added returns the number of rows added with Add.
func (s *Span) Added() int { return s.n }

// reduce eliminates v against the basis and returns the remainder and the
// combination e of added rows with v = remainder + Σ e[i]·row_i. v is not
// modified.
func (s *Span) reduce(v []byte, grow int) (rem, expr []byte) {
	rem = append([]byte(nil), v...)
	expr = make([]byte, s.n+grow)
	for i, b := range s.basis {
		f := rem[s.piv[i]]
		if f == 0 {
			continue
		}
		for c := range rem {
			rem[c] ^= Mul(f, b[c])
		}
		for c, x := range s.exprs[i] {
			expr[c] ^= Mul(f, x)
		}
	}
	return rem, expr
}

// Add adds row v (the next row, number Added()) and reports whether it
// increased the rank. Rows that do not are still counted, so expressions
// keep their numbering.
func (s *Span) Add(v []byte) bool {
	rem, expr := s.reduce(v, 1)
	// rem = v - Σ expr·rows, so rem is v's own row minus expr.
	idx := s.n
	s.n++
	for i := range s.exprs {
		s.exprs[i] = append(s.exprs[i], 0)
	}
	p := -1
	for c, x := range rem {
		if x != 0 {
			p = c
			break
		}
	}
	if p < 0 {
		return false
	}
	// new basis row = rem / rem[p]; as a combination: (row_idx - Σ expr) / rem[p]
	inv := Inv(rem[p])
	for c := range rem {
		rem[c] = Mul(rem[c], inv)
	}
	for c := range expr {
		expr[c] = Mul(expr[c], inv)
	}
	expr[idx] = inv // subtraction is XOR, so -Σ expr == Σ expr
	// Keep the basis reduced: clear column p from the other rows.
	for i, b := range s.basis {
		f := b[p]
		if f == 0 {
			continue
		}
		for c := range b {
			b[c] ^= Mul(f, rem[c])
		}
		for c := range s.exprs[i] {
			s.exprs[i][c] ^= Mul(f, expr[c])
		}
	}
	s.basis = append(s.basis, rem)
	s.exprs = append(s.exprs, expr)
	s.piv = append(s.piv, p)
	return true
}

// Express returns coefficients e with v = Σ e[i]·row_i over the rows added
// so far, or ok=false if v is not in the span.
func (s *Span) Express(v []byte) (e []byte, ok bool) {
	rem, expr := s.reduce(v, 0)
	for _, x := range rem {
		if x != 0 {
			return nil, false
		}
	}
	return expr, true
}

// Rank returns the rank of the given rows.
func Rank(rows [][]byte) int {
	if len(rows) == 0 {
		return 0
	}
	s := NewSpan(len(rows[0]))
	for _, r := range rows {
		s.Add(r)
	}
	return s.Rank()
}
