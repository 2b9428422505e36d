package clay

import (
	"cairn/codec"
	"cairn/codec/internal/gf"
)

// transform is the pairwise coupling of a coupled pair of vertices (paper
// §3.1, docs/codes.md#clay-coupling). Of the two members, lo is the one with
// the smaller x and hi the one with the larger; their stored (coupled)
// symbols C and virtual (uncoupled) symbols U satisfy
//
//	[U_lo]       [C_lo]
//	[U_hi] = M · [C_hi]
//
// for an invertible M with no zero entry, which is exactly the condition
// that any two of {C_lo, C_hi, U_lo, U_hi} give the other two. Every
// operation the decoders need is "dst = a·X + b·Y" with coefficients
// derived from M once, so the form is a parameter: cephForm (the default)
// or symmetricForm (the paper's [[1,γ],[γ,1]]).
type transform struct {
	m   [2][2]byte // forward: U = M·C, indices lo = 0, hi = 1
	inv [2][2]byte // M⁻¹: C = M⁻¹·U
}

// cephForm is Ceph's coupling: U_hi = C_hi ⊕ C_lo, U_lo = C_hi ⊕ 0x8f·C_lo
// (Ceph runs a jerasure reed_sol_van (2,2) code over (C_hi, C_lo)). Three
// of its four entries are 1, so most pair operations are plain XORs. Our
// per-plane scalar code is a Cauchy code, not Ceph's Vandermonde one, so
// parity is not byte-compatible with Ceph's clay plugin.
var cephForm = newTransform([2][2]byte{{0x8f, 1}, {1, 1}})

// symmetricForm is the paper's [[1,γ],[γ,1]] with γ = 2 (γ ∉ {0,1}).
var symmetricForm = newTransform([2][2]byte{{1, 2}, {2, 1}})

// newTransform derives the inverse of m. m must be invertible with no zero
// entry (TestTransformAnyTwoOfFour checks the forms we use).
func newTransform(m [2][2]byte) transform {
	det := gf.Mul(m[0][0], m[1][1]) ^ gf.Mul(m[0][1], m[1][0])
	di := gf.Inv(det)
	return transform{m: m, inv: [2][2]byte{
		{gf.Mul(di, m[1][1]), gf.Mul(di, m[0][1])},
		{gf.Mul(di, m[1][0]), gf.Mul(di, m[0][0])},
	}}
}

// side returns the index (lo 0, hi 1) of a member with coordinate x whose
// companion has coordinate xc.
func side(x, xc int) int {
	if x < xc {
		return 0
	}
	return 1
}

// uncoupleCoef returns (a, b) with U_s = a·C_s + b·C_o for the member on
// side s and its companion o.
func (t *transform) uncoupleCoef(s int) (a, b byte) { return t.m[s][s], t.m[s][1-s] }

// uncouple sets dst = U_s from (C_s, C_o). A nil sub-chunk is zero.
func (t *transform) uncouple(dst []byte, s int, cs, co []byte) {
	a, b := t.uncoupleCoef(s)
	lin2(dst, cs, a, co, b)
}

// uncoupleFromU sets dst = U_s from (C_s, U_o), used when the companion is
// aloof and only its U is known: C_o = (U_o + m_os·C_s)/m_oo, so
// U_s = (m_ss + m_so·m_os/m_oo)·C_s + (m_so/m_oo)·U_o.
func (t *transform) uncoupleFromU(dst []byte, s int, cs, uo []byte) {
	o := 1 - s
	r := gf.Div(t.m[s][o], t.m[o][o])
	lin2(dst, cs, t.m[s][s]^gf.Mul(r, t.m[o][s]), uo, r)
}

// recouple turns u, holding U_s, into C_s in place given the companion's
// C_o: C_s = (U_s + m_so·C_o)/m_ss.
func (t *transform) recouple(u []byte, s int, co []byte) {
	if co != nil {
		codec.MulAdd(u, co, t.m[s][1-s])
	}
	scaleInPlace(u, gf.Inv(t.m[s][s]))
}

// recouplePair turns a pair's (U_lo, U_hi), held in lo and hi, into
// (C_lo, C_hi) in place: first C_lo = inv00·U_lo + inv01·U_hi, then C_hi
// from (U_hi, C_lo) as in recouple.
func (t *transform) recouplePair(lo, hi []byte) {
	a, b := t.inv[0][0], t.inv[0][1]
	if a == b { // sum, then scale: XOR is the cheaper pass
		codec.MulAdd(lo, hi, 1)
		scaleInPlace(lo, a)
	} else {
		scaleInPlace(lo, a)
		codec.MulAdd(lo, hi, b)
	}
	t.recouple(hi, 1, lo)
}

// companionC sets dst = C_o from (C_s, U_s) of the other member:
// C_o = (U_s + m_ss·C_s)/m_so. A nil cs is zero.
func (t *transform) companionC(dst []byte, s int, us, cs []byte) {
	r := gf.Inv(t.m[s][1-s])
	lin2(dst, us, r, cs, gf.Mul(r, t.m[s][s]))
}

// scaleInPlace sets b = c·b.
func scaleInPlace(b []byte, c byte) {
	if c != 1 {
		codec.Mul(b, b, c)
	}
}

// lin2 sets dst = a·x + b·y; a nil x or y is zero.
func lin2(dst, x []byte, a byte, y []byte, b byte) {
	switch {
	case x == nil && y == nil:
		clear(dst)
	case x == nil:
		codec.Mul(dst, y, b)
	default:
		codec.Mul(dst, x, a)
		if y != nil {
			codec.MulAdd(dst, y, b)
		}
	}
}
