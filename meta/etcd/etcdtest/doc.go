// Package etcdtest starts a real etcd member, embedded in the test
// process, and opens a metadata store on it: for tests of packages above
// the store that want real etcd (its transactions, limits and latencies)
// rather than the in-memory store. The member has no fsync (a test's data
// need not survive a power cut) and short raft timers, and both it and the
// store close when the test ends.
package etcdtest
