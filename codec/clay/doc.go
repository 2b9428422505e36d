// Package clay is the Clay code (Vajha et al., "Clay Codes: Moulding MDS
// Codes to Yield an MSR Code", FAST'18): policy clay-K-M-D. Like
// Reed–Solomon it stores K data and M parity shards and any K of them
// rebuild the stripe (MDS); unlike Reed–Solomon, one lost shard is rebuilt
// from D helpers that each send only 1/q of their shard, q = D−K+1: D/q
// shards' worth of traffic instead of K (clay-10-4-13: 3.25 instead of 10).
// That is the minimum possible (minimum-storage regenerating, MSR).
//
// # Vocabulary
//
// Nodes. The code works on n = K+M+ν internal nodes arranged in a q×t grid:
// node i has coordinates x = i mod q and y = i div q. The t columns are
// y-sections of q nodes. Data shard j is node j, parity shard j is node
// j+ν, and the ν nodes in between are virtual (see shortening).
//
// Planes and sub-chunks. Every shard is cut into α = q^t equal sub-chunks
// (Params().Alpha, which shard sizes must be a multiple of). Sub-chunk z of
// all nodes forms plane z (the paper's layer). A plane index z has t base-q
// digits z_0 … z_{t−1}, z_0 most significant; digit z_y belongs to
// y-section y.
//
// Dots and companions. In plane z, node (x, y) is a dot when z_y = x: one
// dot per y-section per plane. Every other vertex (x, y, z) is paired with
// its companion (z_y, y) in plane z' = z with digit y set to x — a
// column-mate, in another plane. Pairing is symmetric.
//
// Coupled and uncoupled symbols. What is stored is the coupled symbol
// C(i, z). Each plane also has virtual uncoupled symbols U(i, z), and
// (U(0, z), …, U(n−1, z)) is a codeword of one scalar [n, K+ν] MDS code (a
// Cauchy Reed–Solomon code from klauspost/reedsolomon) in every plane. A
// dot has U = C; a pair is coupled by an invertible 2×2 transform of which
// any two of the four values (C, C*, U, U*) give the other two. We use
// Ceph's transform, U_hi = C_hi ⊕ C_lo and U_lo = C_hi ⊕ 0x8f·C_lo (hi is
// the member with the larger x); most pair operations are then plain XORs.
//
// Decoding (and encoding) is layered. For erased nodes E, the
// intersection score of a plane is its number of erased dots. Planes are
// decoded by score, lowest first: uncouple the known nodes (an erased
// companion's C is known from a lower score), run one scalar decode per
// plane, then recouple the erased nodes. Encoding is the decode of the M
// parity nodes.
//
// Repair. To rebuild node L = (x0, y0), every helper sends the sub-chunks
// of the repair planes, those with z_{y0} = x0: β = α/q of them, lying in
// q^{y0} contiguous runs. The helpers must include every column-mate of L
// (their U cannot be computed without L); the other available shards not
// chosen are aloof, decoded like erasures on the repair planes in order of
// how many aloof dots a plane has. Each column-mate's (C, U) on a repair
// plane then yields L's sub-chunk on a plane outside the repair set, so β
// planes × q nodes = α sub-chunks: the whole shard.
//
// Shortening. When q does not divide K+M, ν = q − (K+M) mod q virtual nodes
// are added after the data nodes. They are all zero, never stored or read,
// and count as neither helpers nor erasures.
//
// Batching. Per-plane work is many small decodes of sub-chunk size. Planes
// with the same erasure pattern go through one kernel call together: the
// uncoupled symbols of a batch of planes are gathered node-major so that
// each node is one contiguous "shard" of the klauspost kernel (about 16 KiB
// per node per call). The encoder goes further: runs of planes that differ
// only in the digits of all-parity y-sections share their dot pattern, so a
// per-pattern kernel reads the stored sub-chunks in place, with the
// uncoupling folded into its matrix. Kernels have at most 10 inputs (wider
// ones are split and summed): beyond that klauspost leaves its GFNI/AVX2
// fused path. Every step works byte by byte within sub-chunks, so
// sub-chunks over 32 KiB are processed in 16 KiB strips, which bounds
// scratch memory and keeps batches in cache.
//
// # Usage
//
//	c, _ := clay.New(10, 4, 13)            // α = 256: shards a multiple of 256 bytes
//	shards := codec.Split(c.Params(), data) // 14 shards
//	_ = c.Encode(shards)
//
//	// Repair shard 3 from the others, reading 3.25 shards' worth.
//	plan, _ := c.SubChunkPlan(3, available, len(shards[0]))
//	reads := make([][]byte, len(plan.Helpers))
//	for i, h := range plan.Helpers {
//		reads[i] = h.Gather(nil, shards[h.Shard]) // on the helper: read plan runs, send
//	}
//	_ = plan.Repair(reads, out)
//
// # Caveats
//
//   - Sub-chunks are shard/α bytes; keep them ≥ 4 KiB (shards ≥ 4 KiB·α,
//     1 MiB for clay-10-4-13), or the per-plane work and the helpers'
//     scattered small reads dominate (docs/codes.md#clay-sub-chunk-size).
//   - α = q^t grows fast: New refuses α > MaxAlpha (4096) and more than
//     MaxNodes (254) nodes.
//   - Reconstruct of a single shard uses the sub-chunk repair when its
//     column-mates and D shards are present (it reads D·β sub-chunks and
//     decodes β of the α planes); any other pattern runs the full layered
//     decode over K whole shards.
//   - Parity is not byte-compatible with Ceph's clay plugin: the coupling
//     is Ceph's, but the per-plane scalar code is Cauchy, not jerasure's
//     Vandermonde code.
//   - Calls are single-threaded; run stripes in parallel for throughput.
package clay
