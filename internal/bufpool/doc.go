// Package bufpool reuses byte buffers of many sizes: one sync.Pool per
// capacity, so a buffer is only handed to a caller that asked for that
// capacity.
//
// Terms:
//
//   - capacity: the key of a buffer. The caller picks it, and so picks
//     how many pools exist: a few fixed sizes (a volume's block, its write
//     batches in powers of two of blocks), or sizes rounded up to a unit
//     (the client's stripes, in whole MiB).
//   - length: what Get returns the buffer sliced to (at most its
//     capacity); Put keys by capacity, whatever the length.
//
// Usage sketch:
//
//	var bufs bufpool.Pool
//	bp := bufs.Get(n, c) // len n, cap c
//	defer bufs.Put(bp)
//	buf := *bp
//
// Buffers travel as *[]byte so that Put does not allocate (sync.Pool
// holds pointers); a caller that keeps only the []byte may Put &b at the
// cost of one small allocation.
//
// Caveats: pooled memory is not zeroed. Pools live as long as the Pool
// (usually the process) and hold what the garbage collector has not
// reclaimed yet; a caller with unbounded sizes should round them to few
// capacities or not pool the outliers.
package bufpool
