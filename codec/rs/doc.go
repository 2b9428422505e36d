// Package rs is systematic Reed–Solomon over GF(2^8): the policy rs-K-M,
// K data shards and M parity shards, any K of the K+M shards rebuild the
// rest (MDS), K+M ≤ 256.
//
// Vocabulary: parity row i (0 ≤ i < 256−K) is the i-th parity shard's
// coefficients. The matrix is a Cauchy matrix under the identity
// (row i, column c: 1/((K+i) XOR c)), the layout klauspost/reedsolomon's
// WithCauchyMatrix builds, whose bulk kernels do the encoding.
//
// Prefix-stable parity: rows do not depend on M, so rs-K-M and rs-K-M' (M' >
// M) agree on their first M parity shards. A writer can make parity row i
// later, on demand (MakeParity), for a spare disk, and a reader decodes any K
// of rows 0..i with New(K, i+1) (or Extend). This is what makes RS
// "rateless up to 256−K" for speculative writes
// (docs/codes.md#prefix-stable-parity).
//
// Usage:
//
//	c, _ := rs.New(10, 4)
//	shards := codec.Split(c.Params(), data) // 14 shards, parity allocated
//	_ = c.Encode(shards)
//	shards[3], shards[7] = nil, nil // lose two
//	_ = c.Reconstruct(shards, nil)
//
// Caveats: calls are single-threaded; run stripes in parallel for more
// throughput.
package rs
