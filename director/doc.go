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
//   - suspect: an up or draining disk whose node has no liveness entry,
//     or whose node reports a fault. Read, not written.
//   - down: suspect for longer than the grace period, or replaced; its
//     shards are neither read nor used as helpers, and the repair duties
//     rebuild them elsewhere.
//   - replaced: the node reports a volume ID (cairn.Disk.Volume) other
//     than the one the cluster trusts (Disk.Trusted): the directory was
//     wiped and formatted again, so the shards manifests place on the disk
//     are gone. Down at once, from any state but out.
//   - back up: a suspect disk whose node is alive again and reports no
//     fault returns to up; a down disk returns once its node is alive,
//     reports no fault, the trusted volume and a passed check (returned
//     intact); a replaced disk returns, empty, trusting its new volume,
//     once the census finds no shard on it.
//   - census: how many shards the manifests and multipart uploads place on
//     each disk, from the repair scan's last complete walk
//     (Config.Census). A walk counts for a disk only if it started a
//     grace period after the disk entered its state.
//   - draining, out: the operator's states (Operate, for cairn admin
//     disk): a draining disk is read, not written, and its shards are
//     moved off by the repair duties; out once the census finds it empty.
//     Out is for good until the operator brings it in.
//   - node command: drain, remove or readmit a whole node (OperateNode,
//     for cairn admin node): the disk commands on each of its disks; a
//     node's state is read off its disks' (NodeState: up, draining,
//     removed, degraded).
//   - placement duty: recomputes the placement-group tables as nodes and
//     disks join or leave (PlacementDuty, placement.Recompute), swapping
//     them by epoch.
//   - duty: a periodic job only the leader runs (Config.Duties), e.g. the
//     repair scan and work and the sweep of abandoned multipart uploads,
//     which internal/cli wires in. Its ctx ends with the leadership; a
//     Background duty runs in its own goroutine so it does not hold up
//     detection.
//
// Detect is the pure decision (time is an input; golden scripts in
// testdata/ cover every transition), Operate the operator's; Director is
// the driver that reads the store, applies Detect's transitions as
// compare-and-swaps on the state and the reported volume
// (meta.Store.ChangeDisk, so an operator's change or a node's new volume
// in between wins), runs the duties that are due, and waits on a
// ticker between rounds. docs/design/disks.md draws the state diagram.
package director
