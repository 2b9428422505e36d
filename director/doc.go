// Package director runs the cluster duties that exactly one process may
// perform at a time: it campaigns for leadership in the metadata store
// (etcd election) and, while leader, checks every Interval which disks
// changed state and runs its duties.
//
// Vocabulary:
//
//   - liveness: a node keeps a lease-backed entry in the store; when the
//     process dies or is cut off, the entry expires.
//   - fault: a node reports a disk whose directory vanished or that refuses
//     writes in the cluster map (cairn.Disk.Fault).
//   - suspect: an up disk whose node has no liveness entry, or whose node
//     reports a fault. Not written to.
//   - down: suspect for longer than the grace period; its shards need repair
//     (the repair duties turn them into tasks).
//   - back up: a suspect disk whose node is alive again and reports no
//     fault returns to up; a down disk stays down until an operator or the
//     repair engine decides.
//   - duty: a periodic job only the leader runs (Config.Duties), e.g. the
//     repair scan and work and the sweep of abandoned multipart uploads,
//     which internal/cli wires in. Its ctx ends with the leadership; a
//     Background duty runs in its own goroutine so it does not hold up
//     detection.
//
// Detect is the pure decision (time is an input); Director is the driver
// that reads the store, applies Detect's transitions, runs the duties that
// are due, and waits on a ticker between rounds.
package director
