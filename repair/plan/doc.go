// Package plan decides how lost shards of a stripe are rebuilt, and
// predicts how long a node's repair takes under each scheme. It is pure:
// a stripe description in, a Plan value out, with no I/O, clock,
// goroutines or randomness, so the same input always gives the same plan
// (golden-tested in testdata/). Executors (node push step, director) run
// plans; this package only says who does what.
//
// It follows the PUSH paper (Huang et al., "PUSH: A Pipelined
// Reconstruction I/O for Erasure-Coded Storage Clusters", IEEE TPDS 2015;
// docs/papers.md#push) and applies to scalar linear codes, those that
// implement codec.LinearRepairer (rs, lrc, rep).
//
// # Vocabulary
//
//   - lost shard: a shard of the stripe to rebuild; f = len(Lost) per stripe.
//   - helper: an available shard (and its node) that the lost shards are
//     computed from. codec.LinearRepairer.RepairPlan picks them and gives
//     coefficients a with lost_j = Σ_i a_ji·helper_i byte by byte in
//     GF(2^8). RS needs k helpers; an LRC uses the lost shard's local group
//     when it can (fewer helpers), which RepairPlan already prefers.
//   - request unit, or slice: the Unit bytes a repair moves at a time
//     (the paper's S_block, 64 KiB–2 MiB). Because the code is bytewise,
//     slice s of every shard is itself a valid stripe, so a repair runs slice
//     by slice and pipelines.
//   - replacement node: a node that held nothing of the stripe and
//     receives a whole rebuilt shard (the -Rep schemes).
//   - survivor: a node of the cluster (by default one holding an
//     available shard of the stripe) that stores a share of the rebuilt
//     data (the -Sur schemes); a share is a contiguous run of slices, so
//     its writes are sequential. The director later migrates the shares or
//     records them in the manifest.
//   - chain, hop, partial block: in a PUSH chain SN₁→…→SN_k, hop i reads
//     its slice S_i, receives the partial block I_{i−1} (I₀ = 0), computes
//     I_i = a_i·S_i + I_{i−1} and forwards it; I_k is the rebuilt slice.
//     With f lost shards a hop carries f partials, one per lost shard
//     (its slice times f coefficients), so no node receives more than f
//     partials per slice position (Plan.MaxPartialsPerSlice).
//
// # The four schemes
//
//   - PULL-Rep: each replacement fetches every helper's slices and
//     decodes (its downlink carries k blocks per rebuilt block).
//   - PULL-Sur: the shard is cut into shares, one per survivor; each
//     survivor pulls the helpers' slices of its share and decodes. Every
//     survivor also serves k−1 peers, so its writes are mixed with random
//     reads (the paper's slow case).
//   - PUSH-Rep: one chain of helpers; the last hop sends the f finished
//     partials to the replacement(s). Every link carries one block's worth.
//   - PUSH-Sur: one chain per share, ending at the survivor that stores
//     the share (as the last hop if it is a helper, else one hop more).
//     Chain order, helper choice and share owners rotate with
//     Input.Rotate (e.g. the stripe number), so over many stripes every
//     node carries an equal share; Input.Weights shrinks slow nodes' shares.
//
// # Time models
//
// Model.Predict evaluates the paper's Eqs. 9–12 (and 14, PULL-Sur with f
// failures) in Prediction.Paper, with t_x the time of operation x on one
// request unit and S_node/S_block rows per failed node:
//
//	(9)  T_PULL-Rep = [Σ_{i=1..k} t_recv(S_i)] · S_node/S_block
//	(10) T_PULL-Sur = max_i t_write(D_i) · S_node/((k+r−1)·S_block)
//	(11) T_PUSH-Rep = max_{i=1..k} {t_recv(I_i), t_read(S_i)} · S_node/S_block
//	(12) T_PUSH-Sur = max{Σ_{i=1..k−1} t_recv(I_i), t_write(D)} · S_node/((k+r−1)·S_block)
//
// and, in Prediction.Seconds, the bottleneck model of the plans this
// package builds: each node's average work per row on each resource,
// timed at its own rates, the slowest binding. The two agree on the
// paper's testbed (reads faster than the network, random writes slow),
// where PULL-Rep/PUSH-Rep = k (Eq. 13); Seconds also covers cases the
// equations leave out (fast disks behind slow links, a slow node).
// Estimate gives the same bottleneck time from the summed Loads of real
// plans; tests check the two agree. Choose picks the scheme with the
// smallest Seconds, ties (within 1%) going to PUSH-Sur, then PUSH-Rep.
//
// RAIDPModel times the recovery plans of the RAIDP warm tier (package
// raidp, docs/design/raidp.md) with the same bottleneck rule: Remirror one
// single-failure re-mirroring step (every copy in parallel, one per
// receiver), Dual a dual failure — the rebuild of the shared superchunk
// (each side a PUSH chain through the mirrors ending at the failed disk's
// Lstor node), which ends the critical state, then the two re-mirroring
// steps.
//
// # Usage
//
//	p, err := plan.Build(plan.PushSur, plan.Input{Code: c, Lost: []int{2},
//		Nodes: nodesByShard, ShardSize: size, Unit: 1 << 20, Rotate: stripeNo})
//	for _, t := range p.Tasks { ... } // hand each task to its nodes
//
// Simulate runs a plan in memory on real shard bytes, as an executor would,
// so tests (here and in executors) can check a plan rebuilds the bytes.
//
// # Caveats
//
//   - Only scalar linear codes (Alpha 1); Clay's sub-chunk repair and LT
//     return ErrNotLinear.
//   - The -Sur schemes may store a rebuilt share on a node that already
//     holds a shard of the stripe (as in the paper); whether that is
//     acceptable for a failure domain is the director's call (it chooses
//     Survivors).
//   - A node holding several helper shards of one stripe gets adjacent
//     hops, but plans do not otherwise avoid them; the f-partials bound
//     assumes one shard per node.
//   - The models assume no TCP incast for PULL (the paper sets RTO to
//     200 ms) and equal shares for the -Sur schemes (Weights are ignored).
package plan
