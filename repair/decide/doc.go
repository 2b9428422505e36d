// Package decide holds the repair service's decisions as pure functions:
// which stripes need a task, which of their shards are lost, which disks
// the lost shards are rebuilt onto, which scheme rebuilds them, and the
// repair specs the storage nodes run. Each takes a View of the cluster
// (disks, their states and nodes, node addresses) and a manifest's stripe,
// and returns values; package repair reads the metadata store, calls
// these, and carries out what they return (node calls, manifest updates).
// Nothing here reads the clock, the network or files (internal/lint checks
// it), so the decisions are golden-tested in testdata/ (decide_test.go
// runs the scripts there; -rewrite regenerates them).
//
// # Vocabulary
//
//   - View: the cluster map a decision is made against. A disk is usable
//     as a helper when it is up or draining and its node has an address;
//     writable (a target) when it is also up.
//   - Stripe: one shard set of a manifest — the object's (part 0) or a
//     part's. Shard i holds code row i, or a spare parity row
//     (cairn.ShardLoc.Row) that names its file instead; StripeCode is the
//     code extended to the spare rows it holds.
//   - lost shard: a shard on a down or out disk, or on a disk the View
//     does not know, or one a task found missing or corrupt (the task's
//     Bad) — unless an earlier attempt already moved it to its target
//     (LostShards). A shard lost only because its disk was down is not
//     lost once the disk is back: its task has nothing left to do.
//   - moving shard: a shard on a draining disk (Moving): rebuilt
//     elsewhere like a lost one, but no loss (it does not lower the
//     task's Risk), and kept as a helper when the stripe cannot be
//     rebuilt without it; a task of moving shards only is a drain's
//     (OnlyMoves).
//   - task: a cairn.RepairTask (NewTask), riskiest first: Risk is how many
//     more shards the stripe can lose.
//   - target: the disk a lost shard is rebuilt onto: writable, outside the
//     stripe, preferably on a node holding nothing of it, then on a node
//     not chosen for another of its lost shards (Targets). Targets chosen
//     by an earlier attempt are kept while they stay writable, so a retry
//     rewrites the same files. A disk in View.Avoid (a target that failed
//     a repair lately: package repair) is not chosen, nor kept. A lost shard with no disk left waits
//     (target ""); when none has one, Targets fails with ErrNoTarget.
//   - round: one pass of a task's repair (Round): the lost shards, their
//     targets and the scheme; the shards with a target are rebuilt now
//     (Round.Placed), the rest in a later attempt.
//   - scheme: the preferred one (plan.PushSur by default) turned into its
//     -Rep form when the targets are not all on one survivor (a node
//     holding a shard of the stripe), then, with measured rates, the PUSH
//     or PULL form the time models predict faster (Choose). Codes that
//     repair from a local group (LRC) keep the scheme.
//   - job: one node call of a round (Jobs): a push chain, a pull, or, for
//     an empty shard, a create; its wire.RepairSpec names helpers and
//     targets by disk, shard file and node address.
//
// # Usage
//
//	v := decide.NewView(nodes, disks)
//	rd, err := decide.Round(task, st, code, v, plan.PushSur)
//	now, onto := rd.Placed()
//	scheme := decide.Choose(rd.Scheme, code, len(now), st.Shards[now[0]].Size, rates, unit)
//	jobs, err := decide.Jobs(task, now, onto, st, rd.Code, scheme, v, unit)
//
// # Caveats
//
// Decisions are only as fresh as the View: a disk that failed after the
// View was read is found by the node calls (their errors name it), and
// package repair re-plans. Jobs fails rather than splitting a shard into
// shares (cairn stores whole shards). -Rep targets that do not line up
// with plan.Input.Replacements (the j-th lost shard to the (j mod n)th
// replacement) never fail: RepGroups splits them into sets that fit, one
// plan each, run in the same round (testdata/no-fit.txt,
// testdata/stuck-rs-6-3.txt; docs/design/repair.md).
package decide
