// Package repair brings lost redundancy back: it finds stripes with shards
// on unusable disks, queues them in the metadata store, and rebuilds them
// through the storage nodes with the schemes of package repair/plan
// (PUSH-Rep, PUSH-Sur, PULL-Rep, PULL-Sur), then moves the rebuilt shards
// into the manifest with a compare-and-swap.
//
// # Vocabulary
//
//   - stripe: the shard set of an object, or of one part of a multipart
//     object, or of one part of a multipart upload in progress (the task
//     names the upload: RepairTask.Upload; docs/design/repair.md, "Parts
//     of uploads in progress"). Shard i is one file (cairn.ShardName(version, i)) on one disk;
//     the codes are bytewise linear, so a shard file is rebuilt as a whole
//     from whole helper files, slice by slice.
//   - lost shard: a shard whose disk is down or out (the director or the
//     operator decided so), or that a repair, a scrub or a read found
//     missing or corrupt (a damage record, docs/design/scrub.md). A
//     disk that comes back makes its shards readable again: their tasks
//     are dropped (by Scan, or by Work's next round).
//   - moving shard: a shard on a draining disk, rebuilt elsewhere so the
//     disk empties, or one the rebalancer moves (RepairTask.Move:
//     Rebalance, decide.Balancer) onto a less used disk or a node the
//     stripe does not use yet; at most MaxMoves such tasks are queued at
//     a time, they run after the stripes that lost redundancy, and their
//     bytes are paced (Config.MoveRate, cairn.Disk.MoveRate).
//   - census: how many shards the manifests and multipart uploads place
//     on each disk, taken by every complete walk of Scan (Census); the
//     director returns a replaced disk, and ends a drain, when it finds
//     none left (docs/design/disks.md).
//   - task: one stripe to repair, a cairn.RepairTask in the queue (meta),
//     keyed by cairn.RepairTaskID. Scan adds tasks; Work runs them riskiest
//     first (least redundancy left). A task that fails is retried later
//     with a backoff and its error recorded; one failing task never stops
//     the others. The backoff doubles from 1 s after a transient error
//     (a node or the metadata store unreachable); after a permanent one
//     (cairn.IsPermanent: a rebuilt shard that differs from the manifest,
//     no disk with space) it is Config.MaxBackoff at once, and the error
//     is recorded as "permanent: …". No task is ever dropped for failing.
//     A target that fails (its disk missing, full or not writable) is not
//     the stripe's fault: the disk is avoided as a target for
//     Config.AvoidTarget and the same attempt re-plans onto another disk.
//   - target: the disk a lost shard is rebuilt onto. Targets are chosen on
//     the first attempt and stored in the task, so a retry or a new
//     director after a crash rewrites the same files (volume writes are
//     atomic renames) rather than leaving copies around — unless the
//     target failed and is avoided (decide.View.Avoid).
//   - lt task: a fountain-coded object's (or part's) task (lt.go,
//     docs/design/lt.md "Repair"): its lost blocks are not rebuilt; the
//     repairer decodes each affected coded stripe itself, writes fresh
//     blocks with IDs never handed out before (reserved in the manifest
//     first) within the per-disk and per-node bounds, and swaps them in.
//   - raidp task: a task with RAIDP set is one step of a RAIDP group's
//     stored recovery plan (a superchunk copy, a rebuild side, a zeroing;
//     raidp.go, docs/design/raidp.md "Through the repair queue"), queued
//     by the director's RAIDP duty phase by phase; it names no object, and
//     Scan leaves it alone.
//   - executor: the node side (*node.Client's Push and Pull, in the types
//     of package node/wire): the chain or the puller reads helper shards,
//     computes, and writes the target shards, returning their sizes and
//     CRC-32Cs.
//
// # Layout
//
// The decisions — which stripes need a task, what is lost, the targets,
// the scheme and the node calls — are pure functions in package
// repair/decide, golden-tested there. This package is the service that
// runs them: scan.go queues tasks, work.go runs them (rounds, retries,
// backoff) on the Executor, commit.go moves rebuilt shards into the
// manifest.
//
// # Safety
//
// A rebuilt shard is accepted only if its size and CRC-32C equal what the
// manifest recorded when the object was written; only then is the
// manifest updated, and only if it is still exactly the one the task
// read (meta.Store.UpdateManifest; for an upload's part,
// meta.Store.UpdateUploadPart, which also changes the upload's stamp so a
// completion reads the parts again). An object overwritten or deleted, or
// a part uploaded again, meanwhile drops the task and queues the rebuilt
// files for deletion; an upload aborted or completed drops it and leaves
// them to the orphan collector (the completed object's own task may
// rebuild the very same files). A
// helper found missing or corrupt during a repair becomes lost too, and
// the stripe is re-planned without it.
//
// # Scheme choice
//
// Config.Scheme is the preferred scheme (default PUSH-Sur). The -Sur
// schemes store the rebuilt shard on a surviving node of the stripe (a
// disk holding none of its shards), spreading the rebuilt data over the
// survivors by rotating per stripe; when no survivor has such a disk the
// task falls back to the -Rep form, whose target is a disk on a node
// holding nothing of the stripe if one exists.
package repair
