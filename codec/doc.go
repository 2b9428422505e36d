// Package codec defines the erasure codes cairn stores data with: one
// interface for systematic linear codes over GF(2^8), optional capability
// interfaces found by type assertion, the policy strings that name codes,
// and the SIMD multiply-accumulate primitive repair is built from.
//
// Vocabulary:
//
//   - stripe: K data shards followed by M parity shards, all of one length
//     (a shard). Data shard i holds bytes [i·s, (i+1)·s) of the stripe's data.
//   - systematic: data shards are stored as they are; only parity is computed.
//   - missing shard: a zero-length slice in a stripe. Reconstruct fills
//     missing shards that are wanted; present shards are never modified.
//   - sub-packetization α: array codes (Clay) cut each shard into α
//     sub-chunks and couple sub-chunks across shards; scalar codes have α=1
//     and shard lengths only need to be a multiple of Params.ShardMultiple.
//   - policy: a string naming a code and its parameters, "rs-10-4",
//     "lrc-12-2-2", "rep-3". codec/all turns one into a Code.
//   - repair plan: for a scalar code, the helper shards and GF(2^8)
//     coefficients with lost = Σ cᵢ·helperᵢ byte by byte. Because it holds
//     per byte, it holds on any byte range, so a PUSH repair chain applies it
//     slice by slice and hop by hop (RepairPlan.Apply, MulAdd).
//
// Capabilities beyond Code, found by type assertion (a caller checks for
// the one it needs; no code stubs out the others):
//
//   - LinearRepairer (rs, lrc, rep): RepairPlan, the helpers and
//     coefficients that rebuild lost shards byte by byte.
//   - Extensible (rs, rep): parity rows beyond the stripe made one at a time on
//     demand (MakeRow), and the code extended to decode them (ExtendTo).
//   - LocalGroups (lrc): the local groups; any one shard of a group is the
//     XOR of the others.
//   - SubChunkRepairer (clay): SubChunkPlan, which rebuilds one shard from
//     a fraction of the sub-chunks of each helper.
//   - Rateless (lt): coded blocks made by ID on demand (NewEncoder), an
//     incremental decoder (NewDecoder), and Decodable, which judges a set of
//     block IDs without their payload.
//
// docs/codes.md says what each code is, what it tolerates and what its
// repair costs.
//
// Usage:
//
//	c, err := all.New("rs-10-4")
//	shards := codec.Split(c.Params(), data)
//	err = c.Encode(shards)
//	shards[2] = nil // lost
//	err = c.Reconstruct(shards, nil)
//	err = codec.Join(w, c.Params(), shards, len(data))
//
// Caveats: codes do no I/O and start no goroutines; every call runs on the
// caller's goroutine, so throughput scales by running stripes in parallel.
// Errors wrap the sentinels below (test with errors.Is); an impossible
// decode is an *UndecodableError naming the wanted and available shards.
package codec
