// Package raidp is the pure core of RAIDP, cairn's warm tier: two replicas
// plus a per-disk local parity (the Lstor) that together survive any two
// disk failures (docs/design/raidp.md; the RAIDP paper, §3). It places
// superchunks, plans the re-mirroring after a failure and the rebuild after
// two; it does no I/O (the Lstor itself lives in node/lstor).
//
// Terms:
//
//   - group: N disks on distinct failure domains (nodes), indexed 0..N−1.
//     Each disk's RAIDP space is Slots slots of one superchunk size each.
//   - superchunk: a region of one slot's size, stored on exactly two disks
//     (1-mirroring), bit for bit: byte o of the superchunk is byte o of its
//     slot on both disks (the two slots may differ).
//   - 1-sharing: no two disks share more than one superchunk, so a dual
//     failure loses at most one superchunk, and a disk holds at most N−1.
//   - Lstor: a small device beside each disk holding the XOR of the disk's
//     superchunks (byte o of the Lstor is the XOR of byte o of every slot).
//   - re-mirroring: after a disk fails, each of its superchunks is copied
//     from its surviving replica (the sender) to a receiver; Remirror picks
//     the receivers by a min-cost bipartite matching (Hungarian algorithm)
//     that keeps 1-sharing and gives no receiver two superchunks.
//   - group state: Group, the value stored in the metadata store (disks with
//     their failure domains, the layout, a generation for compare-and-swap).
//   - dual failure: the one superchunk two failed disks shared is rebuilt as
//     Lstor ⊕ (the failed disk's other superchunks, read from their
//     mirrors), from either disk's Lstor or both in parallel, half each
//     (Dual); halves go to two targets (a split rebuild) that then exchange
//     them (Swap, ranged Transfers) and become its new pair; then both
//     disks' other superchunks are re-mirrored.
//   - stored plan: Recovery, a Remirror or Dual plan as steps (zero, rebuild,
//     copy) in phases with their progress, stored before any byte moves so
//     an interrupted recovery resumes with the same receivers
//     (PlanRecovery resumes it, or gives it up for other failed disks and
//     zeroes the slots it may have written).
//
// Invariants (Layout.Check; property-tested for N up to 64): 1-mirroring,
// 1-sharing, one superchunk per slot, at most N−1 superchunks per disk.
// A layout after Remirror or Dual still satisfies them.
//
// Usage sketch:
//
//	l, _ := raidp.New(8, 7, 3)             // 8 disks, 7 slots, 3 rows used
//	plan, _ := raidp.Remirror(l, []int{2}, nil) // disk 2 failed
//	for _, t := range plan.Transfers { copy t.From → t.To; fold into To's Lstor }
//	l = plan.After                          // store it by compare-and-swap
//
// Caveats: a complete layout (N−1 rows) leaves no receiver that keeps
// 1-sharing, so a group should use fewer rows than N−1 (the paper, §3.1:
// at most (N−f)(N−f−1) superchunks can be rearranged after f failures).
// The search for assignments without mutual transfers is exact but
// bounded (ErrNoAssignment past maxBranches). Stacked Lstors (k > 1) are
// not planned here yet. Nothing in cairn uses this package as a storage
// policy yet: it is internal until the data path lands.
package raidp
