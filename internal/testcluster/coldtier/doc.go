// Package coldtier tests the COLD storage class (docs/design/cold.md) on a
// real `cairn server` process: issue 18's crash tests and its end-to-end
// test. It lives beside internal/testcluster's tests, in a package of its
// own, so that `go test ./...` runs it in parallel with them.
//
// TestColdCrash kills the server with SIGKILL again and again — while the
// director's export job moves staged objects into the cold groups, and
// while it rebuilds a group's disk the operator took out — restarts it,
// and after every restart checks:
//
//   - no object lost or visible twice: the listing shows every key the
//     test wrote once, and each GET returns the bytes last acknowledged
//     (compared by SHA-256);
//   - no slot claimed by two objects: cold.Check of every group against
//     the cold manifests (the free-slot bitmaps, the membership records and
//     the index records agree);
//   - staged copies removed only after the cold manifest committed: every
//     shard file a staged (not yet exported) manifest names is on its disk.
//
// Vocabulary: an iteration is one workload (PUTs, overwrites, deletes, all
// acknowledged before the kill), one kill and one restart with its checks;
// its trigger is what chose the moment of the kill — a random delay, an
// export seen in flight (its intent record), or a disk rebuild under way.
//
// The seed of a run is logged; CAIRN_COLD_SEED=N replays the same choices
// (the timing of the real process still varies). CAIRN_COLD_CRASHES=N runs
// N iterations (default 100, 20 with -short).
package coldtier
