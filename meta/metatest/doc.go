// Package metatest is the conformance suite of meta.Store: every
// implementation runs it from a few lines of test code,
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T) meta.Store { return mem.New() })
//	}
//
// It checks the contract written in meta.Store's doc comments: the
// cluster map (node and disk registration, PutDisk keeping a disk's state,
// reason and trusted volume, SetDiskState, ChangeDisk's compare-and-swap),
// placement-group tables (create-if-absent, and concurrent
// creators all getting the winner's table), buckets (create, exists,
// invalid names, delete of a non-empty bucket refused, delete), manifests
// (compare-and-swap create/replace/delete with stale, prefix and extended
// versions, idempotent re-commit, round trip of every field, no aliasing of
// caller or result, invalid keys), races (concurrent commits of one key:
// exactly one wins; concurrent deletes; DeleteBucket racing a commit: never
// both, never an orphaned manifest), listing (over 300 keys with "/",
// spaces, control bytes, multi-byte UTF-8 and 1024-byte keys, against a
// model, for many prefix/startAfter/limit combinations and full page
// walks; buckets whose names are prefixes of each other), liveness leases
// (renewal outlives the TTL, the entry vanishes after the holder stops, a
// re-announced holder survives its first renewal stopping), elections (a
// second campaigner blocks until the first resigns, a campaigner that gives
// up never wins, roles are independent) and Close (leaderships end, a
// blocked Campaign returns, every method returns meta.ErrClosed).
//
// Errors are checked with errors.Is against the sentinels of package
// cairn and meta.ErrClosed.
//
// Caveats: the lease test takes real time (about 4 s: the store's clock
// is not the suite's), and subtests run in parallel, so newStore must give
// each call its own namespace (mem: a new Store; etcd: a new key prefix).
package metatest
