package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
	"cairn/repair"
)

// cluster is an open connection to a cluster: its metadata store and the
// data path over the node protocol.
type cluster struct {
	meta  meta.Store
	data  *client.Client
	nodes *node.Client
}

func (c *cluster) Close() error { return c.meta.Close() }

// openCluster connects to the metadata endpoints of cfg.
// Warnings (shards decoded around) go to stderr.
func openCluster(ctx context.Context, cfg ClientConfig, stderr io.Writer) (*cluster, error) {
	store, err := etcdmeta.Open(ctx, cfg.Meta, etcdmeta.Options{})
	if err != nil {
		return nil, fmt.Errorf("connecting to the metadata store %v: %w", cfg.Meta, err)
	}
	return newCluster(store, cfg.Secret, client.Config{Logger: logger(stderr, false)}), nil
}

func newCluster(store meta.Store, secret string, ccfg client.Config) *cluster {
	r := &resolver{store: store}
	nc := node.NewClient(secret, r.resolve, &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		WriteBufferSize:     256 << 10,
		ReadBufferSize:      256 << 10,
		IdleConnTimeout:     90 * time.Second,
	}})
	return &cluster{meta: store, data: client.New(store, nc, ccfg), nodes: nc}
}

// resolver maps disks to node addresses from the cluster map, re-reading
// it when a disk is unknown.
type resolver struct {
	store meta.Store
	mu    sync.Mutex
	addr  map[cairn.DiskID]string // guarded by mu
	read  time.Time               // guarded by mu
}

func (r *resolver) resolve(d cairn.DiskID) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.addr[d]; ok && time.Since(r.read) < 30*time.Second {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := r.store.Nodes(ctx)
	if err != nil {
		return "", err
	}
	disks, err := r.store.Disks(ctx)
	if err != nil {
		return "", err
	}
	byNode := map[cairn.NodeID]string{}
	for _, n := range nodes {
		byNode[n.ID] = n.Addr
	}
	r.addr = map[cairn.DiskID]string{}
	for _, dk := range disks {
		r.addr[dk.ID] = byNode[dk.Node]
	}
	r.read = time.Now()
	a, ok := r.addr[d]
	if !ok || a == "" {
		return "", fmt.Errorf("disk %s: %w in the cluster map", d, cairn.ErrNotFound)
	}
	return a, nil
}

// The node protocol's client is the data path's and the repairer's
// transport as is.
var (
	_ client.Shards   = (*node.Client)(nil)
	_ repair.Executor = (*node.Client)(nil)
)
