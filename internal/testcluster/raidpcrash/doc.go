// Package raidpcrash kills the processes of a RAIDP (raidp policy, the warm
// tier) cluster with SIGKILL at random points and checks what issue 17's
// acceptance asks: after the journals are replayed every disk's Lstor is
// the XOR of its superchunks (`cairn admin raidp verify`, run as the real
// command, proves it), and every acknowledged object reads back
// byte-exact — from both replicas on disk and through `cairn get`. It
// lives in a package of its own so that `go test ./...` runs it in
// parallel with internal/testcluster's tests.
//
// Vocabulary:
//
//   - iteration: one crash. Its kind is drawn at random:
//   - put/node: a `cairn put --policy raidp` runs and a node holding a
//     replica of the superchunk it appends to is killed mid-PUT (the
//     node's journal record may be durable, half-applied or absent);
//   - put/client: the `cairn put` process itself (the gateway's role:
//     it packs the object and writes both replicas) is killed mid-PUT,
//     leaving its reservation written on none, one or both replicas;
//   - put/gateway: the same through the gateway's S3 API (storage class
//     WARM), the gateway process killed mid-PUT and started again;
//   - remirror: a disk's node is killed for good and `cairn admin raidp
//     recover DISK` runs; the recover process, or a node taking part, is
//     killed mid-way; then the recovery is run again to its end;
//   - dual: two disks sharing a superchunk lose their data (their
//     raidp.data is removed, their Lstors kept, as a disk replacement
//     does), and `cairn admin raidp recover A B` — the rebuild of the
//     shared superchunk from the Lstors, then both re-mirrorings — is
//     killed the same way and run again.
//   - epoch: the life of one group's data. The group record, the
//     allocation record and every disk's RAIDP files are reset (nodes
//     stopped, files removed, the records rewritten) when the group is
//     nearly full and before every recovery (a recovered group has disks
//     out and cannot lose two more).
//   - acknowledged: `cairn put` exited 0. A PUT killed or failed is in
//     doubt: its key reads as absent or byte-exact, never anything else.
//
// After each iteration every node is stopped, `cairn admin raidp verify`
// runs over the group's live disks (with --rows while the group has its
// first layout, so the replicas of every superchunk are compared too), the
// replicas of every acknowledged object are compared on disk with what was
// PUT, the nodes are started again and the objects are read back.
//
// Caveats: a PUT killed between its two replica writes, or whose
// undo (zeroing its chunks on both replicas) cannot reach a dead node,
// leaves the two replicas of its dead bytes different — the open risk that
// docs/design/raidp.md describes (the remote acknowledgement is not
// built). The test reports such divergence (it counts it per iteration)
// instead of failing on it; what it requires is the per-disk invariant and
// the acknowledged bytes on both replicas. Each recovery starts from a
// fresh epoch, so a rebuild never meets dead bytes that differ.
//
// CAIRN_RAIDP_CRASH=N runs N iterations (default 100, the acceptance's
// count; 12 with -short); CAIRN_RAIDP_CRASH_SEED=S replays the choices of
// kinds, victims, sizes and kill delays of a logged run (the timing of
// real processes still varies).
package raidpcrash
