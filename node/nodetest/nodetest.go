// Package nodetest starts storage nodes for tests of the packages that
// use them: each node is a real node.Server on a loopback socket serving
// one in-memory disk, closed when the test ends.
package nodetest

import (
	"context"
	"sync"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node"
)

// Secret is the nodes' shared secret.
const Secret = "nodetest"

// Nodes is a set of running nodes and a client that reaches them.
type Nodes struct {
	Client  *node.Client
	mu      sync.Mutex
	servers map[cairn.DiskID]*node.Server // guarded by mu
	addrs   map[cairn.DiskID]string       // guarded by mu
	cfgs    map[cairn.DiskID]node.Config  // guarded by mu: each node's, for Replace
}

// New returns an empty set whose Client resolves the disks of the nodes
// Start adds.
func New() *Nodes {
	n := &Nodes{servers: map[cairn.DiskID]*node.Server{}, addrs: map[cairn.DiskID]string{}, cfgs: map[cairn.DiskID]node.Config{}}
	n.Client = node.NewClient(Secret, func(_ context.Context, d cairn.DiskID) (string, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.addrs[d], nil
	}, nil)
	return n
}

// Start starts node id with one in-memory disk, id/disk1, and returns the
// disk. The node stops when t ends (or at Stop).
func (n *Nodes) Start(t testing.TB, id string) cairn.DiskID {
	t.Helper()
	disk := cairn.DiskID(id + "/disk1")
	return n.start(t, node.Config{Node: cairn.NodeID(id), Secret: Secret,
		Disks: []node.DiskConfig{{ID: disk, Path: "/" + id, FS: vfs.NewMem()}}})
}

// StartRAIDP is Start with the disk served with an Lstor (in memory too)
// of RAIDP superchunks of size bytes in slots slots. It returns the disk.
func (n *Nodes) StartRAIDP(t testing.TB, id string, size int64, slots int) cairn.DiskID {
	t.Helper()
	disk := cairn.DiskID(id + "/disk1")
	fsys := vfs.NewMem()
	return n.start(t, node.Config{Node: cairn.NodeID(id), Secret: Secret, RAIDPSize: size, RAIDPSlots: slots,
		Disks: []node.DiskConfig{{ID: disk, Path: "/" + id, FS: fsys, Lstor: "/lstor-" + id, LstorFS: fsys}}})
}

// start starts a node of one disk and returns the disk.
func (n *Nodes) start(t testing.TB, cfg node.Config) cairn.DiskID {
	t.Helper()
	disk := cfg.Disks[0].ID
	srv, err := node.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	n.mu.Lock()
	n.servers[disk], n.addrs[disk], n.cfgs[disk] = srv, srv.Addr(), cfg
	n.mu.Unlock()
	return disk
}

// Replace stops the node serving disk, deletes the disk's directory (its
// Lstor, elsewhere, stays) and starts the node again on an empty disk: a
// disk lost and replaced.
func (n *Nodes) Replace(t testing.TB, disk cairn.DiskID) {
	t.Helper()
	n.Stop(disk)
	n.mu.Lock()
	cfg := n.cfgs[disk]
	n.mu.Unlock()
	if err := vfs.RemoveAll(cfg.Disks[0].FS, cfg.Disks[0].Path); err != nil {
		t.Fatal(err)
	}
	n.start(t, cfg)
}

// Stop stops the node serving disk, as a failed disk or node would.
func (n *Nodes) Stop(disk cairn.DiskID) {
	n.mu.Lock()
	srv := n.servers[disk]
	n.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}
