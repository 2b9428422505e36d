// Package gp is the pure core of the cold tier: Geometric Partitioning
// (Shan et al., "Geometric Partitioning: Explore the Boundary of Optimal
// Erasure Code Repair", SOSP '21; docs/papers.md#geometric-partitioning)
// over a Clay code. It decides how an object is cut, where its pieces go in
// a placement group, what the per-group index records, in which order
// repairs run and how a degraded read is scheduled. It does no I/O and
// reads no clock; the data path that will drive it is not built yet
// (docs/design/cold.md says what is and is not).
//
// # Vocabulary
//
// Geometry. Chunk sizes s0·q^i for levels i = 0 … L−1, from s0 (the first
// chunk size) to Max (the chunk cap, the paper's 256 MB by default).
//
// Partition. An object of S bytes is cut by the paper's two-pass Algorithm
// 1: one chunk of each size s0, s0·q, … while they fit, then, from the
// largest size used down, as many chunks of each size as fit. What is left,
// S mod s0, is the front. Example (s0 = 4 MB, q = 2): 73.5 MB = 1.5 + 2×4 +
// 2×8 + 16 + 32 MB. Every level up to the largest has a chunk, so adjacent
// chunks differ by at most q in size and the number of chunks grows with
// log_q(S/s0) (plus S/Max beyond the cap).
//
// Small-size bucket. Fronts (and whole objects below s0) are appended to a
// per-disk small-size bucket, Reed–Solomon coded across the placement group
// (rs-K-M) row by row, so reading or rebuilding a front never reads more
// than its own bytes from each helper.
//
// Placement group (PG), bucket, slot. A PG is K data disks and M parity
// disks on distinct nodes. Each data disk has one bucket file per level,
// cut into aligned slots of that level's chunk size; slot j of level i on
// the K data disks and on the M parity disks is one Clay stripe (its
// "row"). All pieces of an object live on one data disk of its PG, the
// least used. Empty slots count as zeros in their row's parity.
//
// Index record. Per object: its disk, size, front offset, slot numbers and
// checksums; the chunk sizes follow from the size and the geometry, so they
// are not stored (docs/design/cold.md has the byte layout).
//
// Repair weight. A chunk's repair task weighs ⌈size/4 MiB⌉ (the paper:
// 4 MB = 1 … 256 MB = 64); the repairers run tasks in queue order while the
// running tasks' weights stay within a global budget (512 in the paper).
//
// Degraded read. The lost disk's pieces of one object are rebuilt one by
// one, smallest first, while the rebuilt ones are sent: chunk i+1 is
// repaired while chunk i is sent, so the first byte comes after the small
// front's repair, not the whole object's.
//
// # Usage
//
//	p, err := gp.ParsePolicy("clay-10-4-13/gp=4MiB:2")
//	part := p.Partition(size)          // front + chunk counts per level
//	for _, c := range part.Chunks(p.Geometry) { … }
//
// # Caveats
//
//   - s0 must be a multiple of the Clay code's sub-chunk unit, α·4 KiB
//     (1 MiB for clay-10-4-13), so sub-chunk reads are whole pages.
//   - A cap that is not s0·q^i is refused rather than rounded.
package gp
