// Package lrc is the Azure-style Local Reconstruction Code LRC(k, l, r)
// (Huang et al., "Erasure Coding in Windows Azure Storage", ATC'12), the
// policy lrc-K-L-R.
//
// Vocabulary and layout of a stripe (k+l+r shards):
//
//	0 … k−1          data shards; data shard i is in local group i/(k/l)
//	k … k+l−1        local parities; shard k+g is the XOR of group g's data
//	k+l … k+l+r−1    global parities; global j is Σ_c (2^c)^(j+1)·data[c]
//
// A local group is its k/l data shards plus its local parity: any one of
// them is the XOR of the others, so one lost data or local-parity shard is
// rebuilt from k/l reads instead of k. A global parity is rebuilt from the
// k data shards.
//
// Decodability: the code is not MDS. A failure pattern is decodable iff the
// surviving shards' generator rows have rank k; CanReconstruct computes
// exactly that. For a maximally recoverable (MR) LRC this equals the rule
// Σ_groups max(0, e_g − 1) ≤ r − (lost global parities), with e_g the
// failures among group g's data and local parity; the tests check that our
// coefficients are MR for (6,2,2), (12,2,2) and (14,2,2) over every pattern
// (and CanReconstruct stays exact for parameters where they are not, e.g.
// some r ≥ 3).
// LRC(12,2,2) decodes every 3-failure pattern and 86.2 % of the 4-failure
// patterns (docs/codes.md#lrc).
//
// Reconstruct and RepairPlan prefer, in this order: the lost shards' own
// groups, other data shards, other local parities, global parities; so
// single failures use their group and reads stay minimal.
package lrc
