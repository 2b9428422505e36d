package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

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
	meta   meta.Store
	data   *client.Client
	nodes  *node.Client
	damage *damageReporter // records what reads found damaged
	secret string          // the cluster secret (client.conf): seals the S3 users' secret keys; "" if the config holds only a node key
}

// clusterSecret is the cluster secret, or an error saying that what needs
// it cannot run from a config that holds only a node key.
func (c *cluster) clusterSecret(what string) (string, error) {
	if c.secret == "" {
		return "", fmt.Errorf("%w: %s needs the cluster secret; this config holds only the node key %s", ErrUsage, what, c.nodes.Key())
	}
	return c.secret, nil
}

// Close writes the damage reports still queued and closes the store.
func (c *cluster) Close() error {
	c.damage.Close()
	return c.meta.Close()
}

// clusterOptions shape a connection to a cluster. Zero values take the
// defaults.
type clusterOptions struct {
	metaTimeout time.Duration     // bounds every metadata call (etcdmeta.Options.CallTimeout)
	node        node.Timeouts     // bound the node calls
	memory      *client.Budget    // bounds the data path's buffers (nil: unbounded)
	log         *slog.Logger      // warnings (shards decoded around); required
	metrics     *procMetrics      // counts the metadata calls (nil: none)
	keys        client.KeyService // SSE-S3 master keys (nil: SSE-S3 refused)
	keepSlow    bool              // client.Config.KeepSlowDisks (--keep-slow-disks)
	// bucketCache turns the store's bucket cache on
	// (etcdmeta.Options.BucketCache; 0: off): for gateways, whose
	// every request reads its bucket.
	bucketCache time.Duration
	// raidpDeletes is client.Config.RAIDPDeletes (--raidp-deletes).
	raidpDeletes string
	// recordSecret records the secret's check value in a store without
	// one (checkSecret); a gateway does, CLI commands only compare.
	recordSecret bool
	// key is the principal whose key, derived from the config's secret,
	// signs the node calls (zero: cliKey). A config with a node key signs
	// with that key instead.
	key node.KeyID
	// local, if set, is the node handler of this process: the data path
	// reads and writes its disks' shards in process (node.Client.WithLocal).
	local *node.Handler
}

// gatewayKey is the principal of a gateway's node calls: gateway/HOST.
func gatewayKey() node.KeyID {
	host, _ := os.Hostname() // "" names the key "unnamed"
	return node.KeyID{Role: node.RoleGateway, Name: node.KeyName(host)}
}

// gatewayBucketCache is how stale a gateway may serve a bucket's record
// (policy, ACL, versioning, Object Lock, encryption) when its watch is
// cut without an error; with the watch working a change shows within
// milliseconds (docs/design/meta.md, "Bucket cache").
const gatewayBucketCache = 2 * time.Second

// cliKey is the principal of CLI commands run with the cluster secret.
var cliKey = node.KeyID{Role: node.RoleAdmin, Name: "cli"}

// openCluster connects to the metadata endpoints of cfg.
func openCluster(ctx context.Context, cfg ClientConfig, o clusterOptions) (*cluster, error) {
	mo, err := cfg.metaOptions()
	if err != nil {
		return nil, err
	}
	mo.CallTimeout, mo.ObserveCall, mo.BucketCache = o.metaTimeout, o.metrics.metaCalls(), o.bucketCache
	from := cfg.path
	if from == "" {
		from = "the cluster config"
	}
	store, err := etcdmeta.Open(ctx, cfg.Meta, mo)
	if err != nil {
		return nil, metaOpenError(err, cfg.Meta, mo, from)
	}
	key, err := clusterKey(ctx, store, cfg, from, o)
	if err != nil {
		store.Close()
		return nil, err
	}
	var tc *tls.Config
	if cfg.NodeTLS != nil {
		if tc, err = cfg.NodeTLS.clientConfig("node_tls"); err != nil {
			store.Close()
			return nil, fmt.Errorf("%s: %w", from, err)
		}
	}
	return newCluster(store, cfg.Secret, key, client.Config{Logger: o.log, Memory: o.memory, Keys: o.keys, KeepSlowDisks: o.keepSlow, RAIDPDeletes: o.raidpDeletes}, o.node, tc, o.local), nil
}

// clusterKey is the key that signs the node calls of a connection with
// cfg: o.key's derived from the secret (checked against the store's check
// value), or the config's node key (which only the nodes can check).
func clusterKey(ctx context.Context, store *etcdmeta.Store, cfg ClientConfig, from string, o clusterOptions) (node.Key, error) {
	if cfg.Secret == "" {
		if o.recordSecret {
			return node.Key{}, fmt.Errorf("%w: %s holds only a node key: a gateway needs the cluster secret (\"secret\")", ErrUsage, from)
		}
		k, err := node.ParseKey(cfg.NodeKey)
		if err != nil {
			return node.Key{}, fmt.Errorf("%s: %w", from, err)
		}
		return k, nil
	}
	if err := checkSecret(ctx, store, cfg.Secret, from, o.recordSecret); err != nil {
		return node.Key{}, err
	}
	id := o.key
	if id == (node.KeyID{}) {
		id = cliKey
	}
	return node.DeriveKey(cfg.Secret, id)
}

// newCluster wires the data path over store and the nodes. Every shard a
// read finds damaged is recorded for repair (damageReporter) unless ccfg
// has an OnDamage of its own. tc, if not nil, is the TLS client
// configuration of the node calls (mutual TLS). key signs the node calls;
// secret ("" if unknown) is kept for what else needs it. local, if not
// nil, is this process's node: shards of its disks are read and written in
// process.
func newCluster(store meta.Store, secret string, key node.Key, ccfg client.Config, t node.Timeouts, tc *tls.Config, local *node.Handler) *cluster {
	r := &resolver{store: store}
	nc := node.NewKeyClient(key, r.resolve, nodeHTTPClient(t, tc)).WithTimeouts(t).WithUnreachable(r.unreachable)
	if local != nil {
		nc = nc.WithLocal(local)
	}
	log := ccfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dr := newDamageReporter(store, log)
	if ccfg.OnDamage == nil {
		ccfg.OnDamage = dr.Report
	}
	return &cluster{meta: store, data: client.New(store, nc, ccfg), nodes: nc, damage: dr, secret: secret}
}

// nodeHTTPClient is node.NewHTTPClient(t), presenting tc's client
// certificate if tc is not nil.
func nodeHTTPClient(t node.Timeouts, tc *tls.Config) *http.Client {
	hc := node.NewHTTPClient(t)
	if tc != nil {
		hc.Transport.(*http.Transport).TLSClientConfig = tc
	}
	return hc
}

// resolverMaxAge is how long the resolver trusts the cluster map it read.
const resolverMaxAge = 30 * time.Second

// resolver maps disks to node addresses from the cluster map, re-reading
// it when a disk is unknown or the map is older than resolverMaxAge. One
// read runs at a time, under the context of the call that needs it, and
// never under mu; calls that need the map meanwhile wait for it (or for
// their own ctx). A map that cannot be re-read serves on while stale.
type resolver struct {
	store meta.Store

	mu      sync.Mutex
	addr    map[cairn.DiskID]string // guarded by mu
	read    time.Time               // when addr was read; guarded by mu
	reading chan struct{}           // closed when the read in flight ends; nil: none; guarded by mu
}

func (r *resolver) resolve(ctx context.Context, d cairn.DiskID) (string, error) {
	for {
		r.mu.Lock()
		a, ok := r.addr[d]
		if ok && time.Since(r.read) < resolverMaxAge {
			r.mu.Unlock()
			return a, nil
		}
		if wait := r.reading; wait != nil {
			r.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		done := make(chan struct{})
		r.reading = done
		r.mu.Unlock()

		addr, err := r.readMap(ctx)
		r.mu.Lock()
		if err == nil {
			r.addr, r.read = addr, time.Now()
		}
		r.reading = nil
		close(done)
		r.mu.Unlock()
		switch {
		case err != nil && ok:
			return a, nil // stale, but the best there is
		case err != nil:
			return "", err
		}
		if a := addr[d]; a != "" {
			return a, nil
		}
		return "", fmt.Errorf("disk %s: %w in the cluster map", d, cairn.ErrNotFound)
	}
}

// resolverRecheck is how old the map must be before a call that cannot
// connect makes the resolver read it again: a dead node costs at most one
// read of the map this often.
const resolverRecheck = time.Second

// unreachable hears that a call could not connect to addr for disk
// (node.Client.WithUnreachable): if the map still gives that address and
// is older than resolverRecheck, the next resolve reads it again — a node
// that restarted on another address is found at once, not after
// resolverMaxAge.
func (r *resolver) unreachable(d cairn.DiskID, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.addr[d] == addr && time.Since(r.read) > resolverRecheck {
		r.read = time.Time{}
	}
}

// readMap reads the address of every disk's node.
func (r *resolver) readMap(ctx context.Context) (map[cairn.DiskID]string, error) {
	nodes, err := r.store.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	disks, err := r.store.Disks(ctx)
	if err != nil {
		return nil, err
	}
	byNode := map[cairn.NodeID]string{}
	for _, n := range nodes {
		byNode[n.ID] = n.Addr
	}
	addr := map[cairn.DiskID]string{}
	for _, dk := range disks {
		addr[dk.ID] = byNode[dk.Node]
	}
	return addr, nil
}

// The node protocol's client is the data path's, the repairer's and the
// cleanup worker's transport as is.
var (
	_ client.Shards   = (*node.Client)(nil)
	_ repair.Executor = (*node.Client)(nil)
	_ node.Resolver   = (*resolver)(nil).resolve
)

// metaOpenError is the error of a failed etcdmeta.Open at endpoints with
// opts: a password etcd refuses is a wrong cluster secret (the password
// is derived from the secret from from); a refusal without a user says
// the config lacks one.
func metaOpenError(err error, endpoints []string, opts etcdmeta.Options, from string) error {
	if opts.Username != "" && errors.Is(err, rpctypes.ErrAuthFailed) {
		return fmt.Errorf("%w: the metadata store %v refuses etcd user %s's password, which is derived from the secret from %s: "+
			"the secret is not this cluster's; use the secret of the cluster's client.conf, as written by cairn init or cairn server",
			ErrWrongSecret, endpoints, opts.Username, from)
	}
	if opts.Username == "" && (errors.Is(err, rpctypes.ErrUserEmpty) || errors.Is(err, rpctypes.ErrPermissionDenied)) {
		return fmt.Errorf("connecting to the metadata store %v: it requires etcd authentication (a cluster set up by cairn init or cairn server --tls), "+
			"and %s gives no meta_user and meta_tls: use the client.conf cairn init or cairn server wrote: %w", endpoints, from, err)
	}
	return fmt.Errorf("connecting to the metadata store %v: %w", endpoints, err)
}
