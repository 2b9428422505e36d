//go:build !amd64

package lt

import "unsafe"

// There are no fused kernels on this architecture.
var useAVX2, useAVX512 = false, false

func xorFast(ptrs []unsafe.Pointer, a []int32, n int, nt bool) bool { return false }

func fence() {}

func prefetch(p unsafe.Pointer, n int) {}
