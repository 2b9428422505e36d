// Package placement decides where shards go. It is pure: a cluster map in,
// placement groups out, with no I/O or clock, and randomness only from a
// *rand.Rand the caller passes (Arrange), so the same map always gives the
// same table (golden-tested in testdata/).
//
// Compute builds a PG table for one width; Recompute brings a stored
// table up to date with the cluster when nodes or disks join or leave,
// changing as few slots as it can; PGFor maps an object version to a PG
// of it; Check verifies a table's invariants. Arrange orders a stripe's
// shards over a PG whose disks share failure domains so that a code that is
// not MDS (LRC) survives as many domain losses as it can; NodeLosses counts
// the node losses a table's stripes survive. Spare picks a disk
// for a shard that cannot go where its PG put it (a down or lost disk).
//
// Vocabulary:
//
//   - failure domain: the set of disks that one fault can take out together.
//     The node is the smallest; "rack" and "zone" labels (on the node or the
//     disk) make bigger ones. A PG spreads its disks over distinct zones,
//     then racks, then nodes as far as the cluster allows.
//   - placement group (PG): n disks, one per shard index of a stripe. Many
//     PGs share each disk, so a failed disk's repair spreads over many peers.
//   - load: PGs on a disk divided by its capacity; each PG takes the least
//     loaded eligible disks, so disks fill in proportion to their size.
//
// When the cluster has fewer nodes than n (one `cairn server` with six
// disk directories), PGs use distinct disks on shared nodes and the table
// says DistinctNodes=false. What a code's stripes then survive depends on
// how many of a stripe's shards share a node: NodeLosses computes it
// exactly for a table (ArrangePG gives each stripe's shard order), e.g.
// rs-6-3 over 4 nodes holding 3/2/2/2 shards survives any one node loss
// but no pair, and Survival.String says so for `cairn admin status`.
//
//   - slot: one disk of one PG (a shard index). A recomputation changes a
//     slot only when its disk left, its PG holds more slots on its node
//     than it needs to, or its disk is over its quota (its capacity share
//     of all slots); docs/design/rebalance.md.
//   - epoch: a table's version, +1 per recomputation that changed it.
//
// Caveats: a recomputed table places new objects; the shards of objects
// already stored stay where their manifests say until the rebalancer
// moves them. A table never loses PGs (an object's PG keeps its ID).
package placement
