package client

import (
	"math/bits"

	"cairn/internal/bufpool"
)

// Stripe and shard memory is reused: a stripe of a PUT or the shards of a
// GET's window are hundreds of KiB to megabytes, and fresh ones cost page
// faults and zeroing on every object and bring the collector's next cycle
// sooner (docs/benchmarks.md: a CPU profile of 1 MiB GETs had about a
// quarter of their CPU there). Pooled buffers come in few sizes whatever
// the objects' sizes: powers of two from poolMin to poolUnit, then whole
// MiB up to poolMax; smaller and larger buffers are plain allocations.
// Pooled memory is not zeroed.
//
// A PUT gives its stripes back when their shards are written; a GET's
// reader gives a window's shard buffers back once it has handed out the
// window's bytes (window.free). A buffer whose owner cannot be sure no one
// writes it any more (a shard read that failed, or that a GET abandoned)
// is not given back: the collector takes it. Config.Memory bounds the
// buffers requests hold, as before; idle buffers in the pools are outside
// it, and sync.Pool lets the collector drop them within two cycles.
const (
	poolMin  = 32 << 10
	poolUnit = 1 << 20
	poolMax  = 64 << 20
)

var bufs bufpool.Pool

// poolCap returns the capacity of the pooled buffers that hold n bytes, or
// 0 if n is not pooled.
func poolCap(n int) int {
	switch {
	case n < poolMin || n > poolMax:
		return 0
	case n <= poolUnit:
		return 1 << bits.Len(uint(n-1))
	default:
		return (n + poolUnit - 1) / poolUnit * poolUnit
	}
}

// getBuf returns a buffer of length n, maybe pooled (its bytes are not
// zeroed: the caller writes all n before reading any).
func getBuf(n int) []byte {
	c := poolCap(n)
	if c == 0 {
		return make([]byte, n)
	}
	return *bufs.Get(n, c)
}

// putBuf returns b (from getBuf, no longer referenced) to its pool. The
// caller must not use b, or any slice of it, afterwards.
func putBuf(b []byte) {
	c := cap(b)
	if c == 0 || poolCap(c) != c {
		return // not a pooled size: the collector's
	}
	b = b[:c]
	bufs.Put(&b)
}

// putBufs gives back every buffer of bs (see putBuf).
func putBufs(bs [][]byte) {
	for _, b := range bs {
		putBuf(b)
	}
}
