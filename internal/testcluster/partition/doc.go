// Package partition cuts real network links between cairn processes:
// issue 14's "Partitions on real hosts". Its test (TestPartition) gives
// every metadata member and every storage node its own Linux network
// namespace, joined to a bridge in the test's namespace by a veth pair —
// one host each, with its own address — and starts the processes inside
// them with `ip netns exec`. The gateway runs in the test's namespace,
// on the bridge, as the clients' side of the network.
//
// Vocabulary:
//
//   - lab: the bridge and the namespaces of one test run; their names
//     carry a random run ID, so runs side by side do not meet, and
//     t.Cleanup deletes them however the test ends.
//   - host: one namespace with its veth pair and address (10.A.B.H/24 on
//     the bridge, .1 being the bridge itself).
//   - cut: the host's veth end on the bridge is set down, so nothing
//     reaches it or leaves it (packets are dropped, not refused: a peer
//     sees a timeout, as with a pulled cable); heal sets it up again.
//
// It needs root (namespaces, links) and iproute2's ip; elsewhere it skips
// with a message. Unix sockets are not namespaced by the network, so the
// metadata members here talk over TCP on their hosts' addresses, unlike
// internal/testcluster's.
package partition
