// Package cold drives the cold tier's layout (layout/gp) on storage nodes:
// it exports batches of objects into a placement group's slots and codes
// their rows, reads objects back (pipelining the repair of pieces on a lost
// disk with sending the ones before), and rebuilds a lost disk of a group
// under a repair-weight budget. It is internal: no storage class uses it
// yet, and the group's state and index records live in the caller's memory
// (docs/design/cold.md says what the tier still needs).
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
// # Caveats
//
//   - Group state (slot allocation) and records are returned to the caller,
//     not persisted; a crash between an export's writes and its parity
//     updates is not recovered here (docs/design/cold.md, "Export batches
//     and row updates").
//   - Calls on one Group must not overlap: Export, Read and Rebuild share
//     the group's state without a lock.
package cold
