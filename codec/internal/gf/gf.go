// Package gf is scalar arithmetic in GF(2^8) with the polynomial 0x11d (the
// field klauspost/reedsolomon uses) and the small dense linear algebra that
// codes need to plan a decode: inverting, ranking and solving matrices of at
// most 256×256. Bulk payload work does not belong here; it uses the SIMD
// kernels in package codec (MulAdd).
package gf

var (
	expTable [510]byte // expTable[i] = g^i, doubled so Mul needs no modulo
	logTable [256]int  // logTable[x] = i with g^i = x, x != 0
)

func init() {
	x := 1
	for i := range 255 {
		expTable[i] = byte(x)
		expTable[i+255] = byte(x)
		logTable[x] = i
		x <<= 1
		if x&0x100 != 0 {
			x ^= 0x11d
		}
	}
}

// Mul returns a·b.
func Mul(a, b byte) byte {
	if a == 0 || b == 0 {
		return 0
	}
	return expTable[logTable[a]+logTable[b]]
}

// Inv returns the inverse of a; Inv(0) is 0.
func Inv(a byte) byte {
	if a == 0 {
		return 0
	}
	return expTable[255-logTable[a]]
}

// Div returns a/b; b must not be 0.
func Div(a, b byte) byte {
	if a == 0 {
		return 0
	}
	return expTable[logTable[a]+255-logTable[b]]
}

// Exp returns g^e for the generator g = 2.
func Exp(e int) byte {
	e %= 255
	if e < 0 {
		e += 255
	}
	return expTable[e]
}
