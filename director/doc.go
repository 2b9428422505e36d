// Package director runs the cluster duties that exactly one process may
// perform at a time: it campaigns for leadership in the metadata store
// (etcd election) and, while leader, watches node liveness and marks disks.
//
// Vocabulary:
//
//   - liveness: a node keeps a lease-backed entry in the store; when the
//     process dies or is cut off, the entry expires.
//   - suspect: a disk whose node has no liveness entry. Not written to.
//   - down: suspect for longer than the grace period; its shards need repair
//     (the repair engine turns them into tasks).
//   - back up: a suspect disk whose node is alive again returns to up; a
//     down disk stays down until an operator or the repair engine decides.
//
// Detect is the pure decision (time is an input); Director is the driver
// that reads the store, applies Detect's transitions, and sleeps.
package director
