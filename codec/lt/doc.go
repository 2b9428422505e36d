// Package lt is cairn's rateless fountain code, the policy lt-K-X: a
// systematic Raptor-style code (an LT code over a precode, decoded by
// inactivation) for speculative writes, where fast disks take more blocks
// than slow ones and a write stops as soon as enough blocks are durable.
//
// # Vocabulary
//
// Source blocks are the K blocks of data of a stripe (16 ≤ K ≤ 8192), all
// of one size, a multiple of 64 bytes. Every coded block has a block ID
// (the ESI, encoding symbol ID, of the Raptor literature), 0 ≤ ID < 2^24.
// The code is systematic: block IDs 0..K−1 are the source blocks
// themselves; IDs from K up are repair blocks. A coded block is a pure
// function of the source blocks, the code (K and its seed) and its ID, so
// any node can make any block, in any order, at any time.
//
// Intermediate symbols are L = K+S+H hidden blocks from which every coded
// block is the XOR of a few: its neighbours. Block ID → neighbours is a
// fixed function (docs/design/lt.md specifies it bit for bit; Neighbours
// exposes it): a degree d from RFC 6330's distribution (mean 4.8, 2 to 30
// most often 2) picks d of the first W symbols along an arithmetic
// progression, plus one or two of the last P.
//
// The precode is a set of linear constraints among the intermediate
// symbols that makes a few lost ones recoverable: S LDPC rows (each
// symbol in three sparse XOR checks) and H = 10 HDPC rows, dense over
// GF(2^8), which make failure at K or K+1 received blocks rare. The
// intermediate symbols are the unique solution of the precode together
// with "block i is source block i" for i < K: encoding is itself a solve.
// The systematic index J is the first seed offset for which that system is
// nonsingular.
//
// Decoding is inactivation decoding. It is split into a symbolic part,
// which only sees block IDs, and a payload part. The symbolic part peels:
// a row with one unknown left determines it; when no such row is left, a
// column is inactivated (set aside as an unknown of the dense part). The
// last P symbols are permanently inactive from the start. What remains is
// a small dense system over the inactive symbols (≈ 70 at K = 1024),
// solved over GF(2) and finished with the HDPC rows over GF(2^8). Its
// result is a plan: a straight-line list of XOR and multiply-XOR
// operations on blocks, which is then executed column by column (a chunk
// of every block at a time, so the intermediate symbols of one chunk stay
// in the L2 cache) with fused multi-source XOR kernels.
//
// The reception overhead is how many blocks beyond K a decoder needs. For
// lt-K-3 (K = 128…1024) with blocks in random order it is 0 in about 99.5%
// of trials and more than 1 in about one trial in 10,000 (Overhead,
// OverheadTable, docs/design/lt.md).
//
// # Usage
//
// As a codec.Code, lt-K-X has K data shards (the source blocks) and
// (X−1)·K parity shards (repair blocks K..X·K−1):
//
//	c, _ := lt.New(1024, 3)
//	shards := codec.Split(c.Params(), data)
//	_ = c.Encode(shards)
//
// As a codec.Rateless, a writer makes blocks on demand and stops when the
// acknowledged IDs are decodable; a reader feeds blocks as they arrive:
//
//	enc, _ := c.NewEncoder(source)
//	_ = enc.EncodeBlocks([]int{5000, 5001}, dst)
//	if c.Decodable(acked) { /* stop writing */ }
//	dec, _ := c.NewDecoder(blockSize)
//	for done := false; !done; {
//		id, block := next()
//		done, _ = dec.Add(id, block)
//	}
//	_ = dec.Source(out)
//
// An update of one source block (PlanUpdate) says which coded blocks
// change and by which multiple of old ⊕ new.
//
// # Caveats
//
//   - Block IDs → neighbours and the precode are an on-disk format: any
//     change makes existing repair blocks undecodable. The golden test
//     pins them.
//   - Because the intermediate symbols depend densely on all source
//     blocks, an update touches almost every repair block (see Update).
//   - Reconstruct decodes all or nothing: it fails unless the present
//     shards determine the whole stripe.
//   - Plans for Encode and recent Reconstruct patterns are cached per
//     Code; other decodes pay a symbolic solve and plan (about 2 ms at
//     K = 1024; the rank check alone, as in Decodable, about 0.3 ms).
//   - Calls are single-threaded; run stripes in parallel for more
//     throughput.
package lt
