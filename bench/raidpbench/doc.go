// Package raidpbench is the RAIDP paper's experiment (its §5: write
// throughput against 2- and 3-way replication, and the dual-failure
// rebuild against RAID-6) on real storage nodes: the same stream of
// objects written and read back under the policies raidp, rep-2, rep-3
// and rs-K-2 on the same modelled disks, then the time each needs to
// leave the critical state after two disks fail, and the single-failure
// re-mirroring with the matching receivers (raidp.Remirror) against
// random ones (raidp.RemirrorNaive).
//
// # Vocabulary
//
// Cluster. What a run measures on: a metadata store, node processes with
// one disk each (and, for raidp, an Lstor beside it), a node client whose
// connections are counted (Counter), and the nodes' disk counters
// (DiskIO, read from their metrics).
//
// User byte. One byte of object data a PUT carries. Disk, network and
// Lstor bytes are given per user byte: what the nodes' disk counters and
// the bench's connections counted during the writes, divided by the user
// bytes written. The Lstor's bytes (journal, parity, high-water marks)
// are counted apart from the disk's (raidp.data and the volume).
//
// Critical state. Data with no redundancy left: after two failures, the
// stripes of rs-K-2 and the blocks of rep-3 that lost two pieces, and
// raidp's one superchunk the two disks shared (its other superchunks keep
// a replica). The critical exit is the time until none is left: for
// raidp, the shared superchunk rebuilt from the Lstors and the mirrors
// into a target disk (raidprun.Rebuild of the raidp.Dual plan); for the
// others, the repair queue (package repair: Scan, then Work riskiest
// first) run until no task with two lost pieces remains, the scan
// included.
//
// Re-mirroring. A single failure: every superchunk of the lost disk
// copied from its surviving replica to a receiver. The matching gives
// every receiver at most one; the naive plan draws receivers at random,
// so a disk may receive two and the copies queue on it.
//
// # Caveats
//
//   - The raidp rebuild does not stop the failed disks' nodes: the plan
//     never reads their data, only their Lstors, which survive a disk
//     failure (the paper's assumption, and the failure cairn's raidp
//     design targets). The rs and rep disks are marked down in the
//     metadata store, as the director does, and their nodes keep running.
//   - A bench of the raidp critical exit stores no new group: the cluster
//     is thrown away after it.
package raidpbench
