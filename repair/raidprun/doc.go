// Package raidprun runs the recovery plans of the RAIDP warm tier (package
// raidp; docs/design/raidp.md) on the disks of a group: it copies
// superchunks for a re-mirroring and rebuilds the superchunk two failed
// disks shared from an Lstor and the mirrors, chunk by chunk, with bounded
// parallelism. It is the executor; the plans are pure and come from raidp.
//
// Terms:
//
//   - Disk: what the executor needs of one group disk (its slots and its
//     Lstor parity), declared here as the consumer; node/lstor.Store has
//     this shape, and a remote disk would implement it over the node
//     protocol.
//   - chunk: the bytes one step moves (Config.Chunk); a superchunk is
//     copied or rebuilt chunk by chunk, in order per transfer, transfers in
//     parallel (one per receiver, as the plans guarantee). Within a
//     transfer two chunks are read at once while two are written, reads
//     and writes each started in chunk order (pipeline: at most four chunk
//     buffers), and a rebuild reads a chunk's Lstor range and mirror
//     ranges all at once.
//
// Every step is idempotent: a transfer or rebuild interrupted by a crash
// is simply run again (the receiver's Lstor is folded by its own
// journaled writes, so it stays the XOR of its slots at every point).
// Resume runs a stored plan (raidp.Recovery) step by step, skipping the
// steps done and reporting each one finished so the caller records it;
// RunStep runs one step (a copy, a rebuild side, or the zeroing of a slot
// a given-up plan wrote, which needs the Zeroer capability).
//
// Usage sketch:
//
//	plan, _ := raidp.Dual(layout, a, b, size, [2]bool{true, true}, nil)
//	err := raidprun.Dual(ctx, plan, disks, raidprun.Config{Size: size})
//	// store plan.After by compare-and-swap; resync a and b's Lstors once
//	// their disks are replaced
//
// Caveats: Remote reaches a group's disks over the node protocol; the
// caller (client.RecoverRAIDP) stores the plan and diverts writes from the
// superchunks being recovered — this package does neither. Recover plans
// afresh each time and is for disks in one process.
package raidprun
