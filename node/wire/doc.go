// Package wire is the vocabulary of the node protocol: everything a client
// of a storage node needs to speak it, and nothing of the server. Package
// node serves it (node.Handler) and calls it (node.Client); package client
// and package repair name its types without importing the node server.
// docs/design/node-protocol.md is the specification.
//
// Terms:
//
//   - shard: a file on a disk, named cairn.ShardName(version, row). A PUT
//     answers with its ShardInfo (size and CRC-32C, as manifests record
//     them); LIST pages through ShardStats; STAT answers a DiskStat.
//   - Error: every failed call, whichever side found the failure. Op names
//     the call ("put", "get", "push", …), Disk and Shard what it was about
//     (for a push or pull: the culprit, which may be on another node than
//     the one called), Status and Code what the node answered, and Err a
//     chain holding a cairn sentinel (errors.Is(err, cairn.ErrNotFound)…).
//   - code: the protocol's name for a sentinel ("not_found", "corrupt", …).
//     EncodeError and DecodeError map between the two in one table; the
//     code, not the HTTP status, is the contract.
//   - repair spec: RepairSpec rebuilds f = len(Store) shards from helper
//     shards (Hops), each rebuilt shard a GF(2^8) combination of the
//     helpers with the hops' Coeffs, moving slice by slice (Unit bytes).
//     A push runs the hops as a chain; a pull has one node fetch them all.
//     It travels as a RepairRequest in the X-Cairn-Repair header.
//   - headers and trailers: X-Cairn-Size and X-Cairn-Crc32c describe a
//     stored shard; a GET body is followed by X-Cairn-Status ("ok" or a
//     code), X-Cairn-Error and X-Cairn-Body-Crc32c.
//
// Usage sketch (a consumer declares what it needs in these types, and
// *node.Client satisfies it):
//
//	type executor interface {
//		Push(ctx context.Context, spec wire.RepairSpec) ([]wire.ShardInfo, error)
//	}
//	var ne *wire.Error
//	if errors.As(err, &ne) && errors.Is(err, cairn.ErrCorrupt) { /* ne.Disk, ne.Shard is bad */ }
//
// Caveats: the package does no I/O; the structs whose names end in
// Request, Response or Body are the JSON of the wire format, and changing
// one changes the protocol (docs/design/node-protocol.md changes with it).
package wire
