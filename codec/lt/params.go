package lt

import (
	"fmt"

	"cairn/codec"
)

// Limits of the code.
const (
	MinK  = 16      // fewest source blocks
	MaxK  = 8192    // most source blocks
	MaxID = 1 << 24 // block IDs are 0 ≤ id < MaxID
	// BlockMultiple is what every block length must be a multiple of.
	BlockMultiple = 64
)

// numHDPC is H, the number of HDPC (GF(256)) constraint rows and symbols.
const numHDPC = 10

// numGroups is G, the number of XOR groups the HDPC rows are built on: the
// HDPC coefficient of intermediate symbol j in row r is D[r][g1(j)] ⊕
// D[r][g2(j)], so a row is evaluated as G XOR sums followed by H·G
// multiplications instead of L.
const numGroups = 24

// params is everything that defines the code for one (K, seed): the
// precode shape and the keys of the pseudo-random functions. See
// docs/design/lt.md for the exact definitions; any change here changes
// every repair block ever made.
type params struct {
	K int // source blocks
	S int // LDPC symbols / rows
	H int // HDPC symbols / rows
	P int // permanently inactive (PI) symbols, the last P intermediate symbols; includes the H HDPC symbols
	L int // intermediate symbols K+S+H
	W int // LT symbols: L−P; an LT row's main neighbours are in [0, W)
	B int // W−S: symbols covered by the LDPC rows
	G int // HDPC groups

	Wp, Pp int // smallest primes ≥ W and ≥ P

	seed    uint64
	J       uint32  // systematic index: the first J that makes the source rows invertible
	ltKey   uint64  // key of the LT rows (depends on seed, K, J)
	preKey  uint64  // key of the precode structure (depends on seed, K)
	hdpc    []byte  // H×G GF(256) group coefficients D, row-major, all nonzero
	groupOf []int32 // 2 per symbol j < L−H: the groups g1(j), g2(j)
	gStart  []int32 // CSR of the groups: members of g are gMem[gStart[g]:gStart[g+1]]
	gMem    []int32

	ldpcEnt   []int32 // the LDPC rows, built once (see appendLDPC)
	ldpcStart []int32
}

// shape fills the sizes for K; seed and J are not involved.
func shape(k int) params {
	x := 1
	for x*(x-1) < 2*k {
		x++
	}
	s := nextPrime((k+99)/100 + x)
	h := numHDPC
	extra := isqrt(k) // PI symbols beyond the HDPC ones
	p := params{K: k, S: s, H: h, P: h + extra}
	p.L = k + s + h
	p.W = p.L - p.P
	p.B = p.W - p.S
	p.G = numGroups
	p.Wp = nextPrime(p.W)
	p.Pp = nextPrime(p.P)
	return p
}

func newParams(k int, seed uint64, j uint32) *params {
	p := shape(k)
	p.seed = seed
	p.preKey = mix64(mix64(seed^0x6c742d7072650000) ^ uint64(k))
	p.setJ(j)
	p.hdpc = make([]byte, p.H*p.G)
	for r := range p.H {
		for g := range p.G {
			p.hdpc[r*p.G+g] = byte(1 + rnd(p.preKey, r, g)%255)
		}
	}
	n := p.L - p.H
	p.groupOf = make([]int32, 2*n)
	count := make([]int32, p.G+1)
	for j := range n {
		v := rnd(p.preKey, 1<<20+j, 0)
		g1 := int32(v % uint64(p.G))
		g2 := int32((v >> 32) % uint64(p.G-1))
		if g2 >= g1 {
			g2++
		}
		p.groupOf[2*j], p.groupOf[2*j+1] = g1, g2
		count[g1+1]++
		count[g2+1]++
	}
	for g := range p.G {
		count[g+1] += count[g]
	}
	p.ldpcEnt, p.ldpcStart = p.buildLDPC(nil, nil)
	p.gStart = count
	p.gMem = make([]int32, 2*n)
	fill := append([]int32(nil), count[:p.G]...)
	for j := range n {
		for _, g := range p.groupOf[2*j : 2*j+2] {
			p.gMem[fill[g]] = int32(j)
			fill[g]++
		}
	}
	return &p
}

func (p *params) setJ(j uint32) {
	p.J = j
	p.ltKey = mix64(mix64(mix64(p.seed^0x6c742d6c74000000)^uint64(p.K)) ^ uint64(j))
}

func checkK(k int) error {
	if k < MinK || k > MaxK {
		return fmt.Errorf("%w: K = %d source blocks, want %d..%d", codec.ErrInvalidParams, k, MinK, MaxK)
	}
	return nil
}

// mix64 is the SplitMix64 finalizer: a fixed bijection of 64-bit words.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// rnd is the code's pseudo-random function: word k (0..255) drawn for item
// x (0 ≤ x < 2^56) under key.
func rnd(key uint64, x, k int) uint64 {
	return mix64(key + (uint64(x)<<8|uint64(k))*0x9e3779b97f4a7c15)
}

// degreeCDF is the LT degree distribution: degree d has probability
// (degreeCDF[d] − degreeCDF[d−1]) / 2^20. It is RFC 6330's Deg table
// (mean degree 4.82, maximum 30).
var degreeCDF = [...]uint32{
	0, 5243, 529531, 704294, 791675, 844104, 879057, 904023, 922747, 937311, 948962,
	958494, 966438, 973160, 978921, 983914, 988283, 992138, 995565, 998631, 1001391,
	1003887, 1006157, 1008229, 1010129, 1011876, 1013490, 1014983, 1016370, 1017662, 1 << 20,
}

func degree(v uint32) int {
	for d := 1; d < len(degreeCDF); d++ {
		if v < degreeCDF[d] {
			return d
		}
	}
	return len(degreeCDF) - 1
}

// appendRow appends the neighbours of block id — the intermediate symbols
// whose XOR is the block — to dst. The first d are LT neighbours in
// [0, W), the rest PI neighbours in [W, L). All are distinct.
func (p *params) appendRow(dst []int32, id int) []int32 {
	d := min(degree(uint32(rnd(p.ltKey, id, 0)>>44)), p.W)
	a := 1 + int(rnd(p.ltKey, id, 1)%uint64(p.Wp-1))
	b := int(rnd(p.ltKey, id, 2) % uint64(p.Wp))
	for n := 0; n < d; {
		if b < p.W {
			dst = append(dst, int32(b))
			n++
		}
		b += a
		if b >= p.Wp {
			b -= p.Wp
		}
	}
	d1 := 2 // PI neighbours: 2 for degree 1 and 2, else 1 or 2
	if d > 2 {
		d1 = 1 + int(rnd(p.ltKey, id, 3)&1)
	}
	a = 1 + int(rnd(p.ltKey, id, 4)%uint64(p.Pp-1))
	b = int(rnd(p.ltKey, id, 5) % uint64(p.Pp))
	for n := 0; n < d1; {
		if b < p.P {
			dst = append(dst, int32(p.W+b))
			n++
		}
		b += a
		if b >= p.Pp {
			b -= p.Pp
		}
	}
	return dst
}

// appendLDPC appends the S LDPC constraint rows (each a set of intermediate
// symbols whose XOR is zero) to ent, with row starts in start.
func (p *params) appendLDPC(ent, start []int32) ([]int32, []int32) {
	base := int32(len(ent))
	for _, st := range p.ldpcStart {
		start = append(start, base+st)
	}
	return append(ent, p.ldpcEnt...), start
}

func (p *params) buildLDPC(ent, start []int32) ([]int32, []int32) {
	s := p.S
	// Count entries per row first so rows are contiguous.
	cnt := make([]int32, s)
	for j := range p.B {
		a := 1 + (j/s)%(s-1)
		b := j % s
		cnt[b]++
		cnt[(b+a)%s]++
		cnt[(b+2*a)%s]++
	}
	base := int32(len(ent))
	pos := make([]int32, s)
	off := base
	for r := range s {
		pos[r] = off
		off += cnt[r] + 3 // + the LDPC symbol itself + 2 PI symbols
		start = append(start, pos[r])
	}
	ent = append(ent, make([]int32, off-base)...)
	for j := range p.B {
		a := 1 + (j/s)%(s-1)
		b := j % s
		for range 3 {
			ent[pos[b]] = int32(j)
			pos[b]++
			b = (b + a) % s
		}
	}
	for r := range s {
		ent[pos[r]] = int32(p.B + r)
		ent[pos[r]+1] = int32(p.W + r%p.P)
		ent[pos[r]+2] = int32(p.W + (r+1)%p.P)
	}
	return ent, start
}

func nextPrime(n int) int {
	if n <= 2 {
		return 2
	}
	for ; ; n++ {
		prime := true
		for d := 2; d*d <= n; d++ {
			if n%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			return n
		}
	}
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}
