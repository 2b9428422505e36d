package lt

import (
	"crypto/subtle"
	"unsafe"

	"github.com/klauspost/reedsolomon"
)

var lowLevel reedsolomon.LowLevel

// xorSlots computes slot a[0] = a[1] ⊕ a[2] ⊕ … on n bytes (a multiple of
// 64) of the slots' current columns. a[0] may equal a[1] (accumulate) but
// no other source. With one source it is a copy.
// With nt the destination is an output block that the plan does not read
// again, so the kernel may bypass the cache (call fence after the plan).
func xorSlots(ptrs []unsafe.Pointer, a []int32, n int, nt bool) {
	if !xorFast(ptrs, a, n, nt) {
		xorGeneric(ptrs, a, n)
	}
}

func xorGeneric(ptrs []unsafe.Pointer, a []int32, n int) {
	dst := unsafe.Slice((*byte)(ptrs[a[0]]), n)
	src := unsafe.Slice((*byte)(ptrs[a[1]]), n)
	if len(a) == 2 {
		copy(dst, src)
		return
	}
	subtle.XORBytes(dst, src, unsafe.Slice((*byte)(ptrs[a[2]]), n))
	for _, k := range a[3:] {
		lowLevel.GalMulSliceXor(1, unsafe.Slice((*byte)(ptrs[k]), n), dst)
	}
}
