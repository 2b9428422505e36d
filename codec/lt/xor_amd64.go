package lt

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Kernel selection; tests turn these off to check the portable path.
var (
	useAVX2   = cpu.X86.HasAVX2
	useAVX512 = cpu.X86.HasAVX512F
)

// xorAVX2 is xorSlots for n a positive multiple of 64: dst = ptrs[a[0]],
// sources ptrs[a[1]], …, ptrs[a[na−1]]. Each 128- (then 64-) byte column
// of every source is loaded before the destination column is stored, so
// the destination may be the first source.
//
//go:noescape
func xorAVX2(ptrs *unsafe.Pointer, a *int32, na int, n int)

// xorAVX512 is xorAVX2 with 256-byte columns; with nt the destination,
// which must then be 64-byte aligned, is written with non-temporal stores
// (see sfence).
//
//go:noescape
func xorAVX512(ptrs *unsafe.Pointer, a *int32, na int, n int, nt bool)

// prefetch asks for n bytes (a multiple of 64) at p to be brought into the
// L2 cache.
//
//go:noescape
func prefetch(p unsafe.Pointer, n int)

// sfence orders the non-temporal stores made so far before later stores.
func sfence()

func xorFast(ptrs []unsafe.Pointer, a []int32, n int, nt bool) bool {
	if n < 64 || n%64 != 0 {
		return false
	}
	if useAVX512 {
		xorAVX512(&ptrs[0], &a[0], len(a), n, nt && uintptr(ptrs[a[0]])%64 == 0)
		return true
	}
	if useAVX2 {
		xorAVX2(&ptrs[0], &a[0], len(a), n)
		return true
	}
	return false
}

func fence() {
	if useAVX512 {
		sfence()
	}
}
