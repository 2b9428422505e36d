// Package replica is N-way replication as a degenerate linear code (rep-N):
// one data shard and N−1 parity shards that are copies of it. It exists so
// every policy looks alike to the data path: the same stripe, encode,
// reconstruct and repair-plan calls work for replication as for RS.
//
// A stripe is N equal shards; any one present shard rebuilds the rest, and
// a repair plan reads one helper with coefficient 1. Replication is
// trivially prefix-stable (codec.Extensible): a spare row is one more
// copy, so a writer replaces a failed or straggling copy the way it
// replaces an RS shard.
package replica
