// Package cold drives the cold tier's layout (layout/gp) on storage nodes:
// it exports batches of objects into a placement group's slots and codes
// their rows, reads objects back (pipelining the repair of pieces on a lost
// disk with sending the ones before), and rebuilds a lost disk of a group
// under a repair-weight budget. The export job (Exporter) and the group
// state it persists make it the COLD storage class's tier.
//
// # Vocabulary
//
// Group. A placement group of K data and M parity disks (Group.Disks, in
// group order) with its gp.PG state, its clay-K-M-D and rs-K-M codes and
// the nodes it talks to (Disks, which *node.Client satisfies).
//
// Slot shard. A slot of a bucket is one shard on the node: aligned slots
// map to the node's unit, so the node protocol needs no offset writes. Its
// name is cairn.ShardName of a version derived from the group, the bucket
// and the slot, and of the disk's position in the group.
//
// Small page. The small-size bucket of a disk is stored in pages of
// SmallPage bytes (zero-padded shards); an export rewrites the pages its
// fronts touch and re-encodes those pages' RS parity.
//
// State. A group as stored in the metadata store (docs/design/cold.md,
// "Persistence"): a header and free-slot bitmaps, saved by compare-and-swap
// (State.Save). Staged object. One stored in the warm tier with a cold
// policy, queued (StageOp, Stage) for the Exporter, the director's job
// that moves staged objects into groups, commits their cold manifests and
// recovers interrupted exports from their intents.
//
// # Caveats
//
//   - A group's disks are fixed when it is created and change only when the
//     export job rebuilds a lost one onto a spare (Exporter, repairGroups).
//   - Calls on one Group must not overlap: Export, Read and Rebuild share
//     the group's state without a lock. Run one Exporter at a time.
package cold
