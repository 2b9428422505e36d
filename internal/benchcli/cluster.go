package benchcli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/internal/proc"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
)

// nodeSpec is one node process of an experiment: its ID, its --disk
// specs (PATH[,options]) and any further flags.
type nodeSpec struct {
	ID    string
	Disks []string
	Args  []string
}

// nodeProc is a running node process.
type nodeProc struct {
	ID    string
	Addr  string
	Disks []cairn.DiskID // ID/disk1, ID/disk2, … in --disk order
	CPU   func() time.Duration
	// Metrics is the address of its metrics ("" unless started with
	// --metrics-addr).
	Metrics string
}

// startNodes starts an embedded etcd and one node process per spec (this
// program run as `node`, without a director), and returns them with a node
// client that resolves their disks, and a stop function.
func startNodes(ctx context.Context, dir string, specs []nodeSpec) ([]nodeProc, *node.Client, func(), error) {
	c, err := startCluster(ctx, dir, specs)
	if err != nil {
		return nil, nil, nil, err
	}
	return c.procs, c.client, c.stop, nil
}

// nodeCluster is what startCluster started.
type nodeCluster struct {
	procs   []nodeProc
	client  *node.Client
	resolve node.Resolver // the disks' node addresses
	meta    []string      // the etcd's client endpoints
	secret  string        // the nodes' shared secret
	stop    func()

	self       string // the program the nodes run
	secretFile string
	mu         sync.Mutex
	started    []*proc.Proc            // by spec; guarded by mu
	addrs      map[cairn.DiskID]string // guarded by mu
}

// nodeProgram names the program the node processes run: this one (cairn-bench
// serves as a node); tests set the cairn binary.
var nodeProgram = os.Executable

// startCluster is startNodes, returning also what a data path needs to
// talk to the cluster.
func startCluster(ctx context.Context, dir string, specs []nodeSpec) (*nodeCluster, error) {
	etcd, err := etcdmeta.StartEmbedded(ctx, etcdmeta.EmbedConfig{Name: "bench", Dir: filepath.Join(dir, "meta"),
		ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	secretB := make([]byte, 16)
	rand.Read(secretB)
	secret := hex.EncodeToString(secretB)
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		etcd.Close()
		return nil, err
	}
	self, err := nodeProgram()
	if err != nil {
		etcd.Close()
		return nil, err
	}
	c := &nodeCluster{meta: etcd.Endpoints(), secret: secret, self: self, secretFile: secretFile,
		procs: make([]nodeProc, len(specs)), started: make([]*proc.Proc, len(specs)), addrs: map[cairn.DiskID]string{}}
	c.stop = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range c.started {
			if p != nil {
				p.Kill()
			}
		}
		etcd.Close()
	}
	if err := c.launch(ctx, specs); err != nil {
		c.stop()
		return nil, err
	}
	c.resolve = func(_ context.Context, d cairn.DiskID) (string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a, ok := c.addrs[d]; ok {
			return a, nil
		}
		return "", fmt.Errorf("disk %s: %w", d, cairn.ErrNotFound)
	}
	c.client = node.NewClient(secret, c.resolve, nil)
	return c, nil
}

// startNode starts the i-th node process of spec sp and points its disks'
// addresses at it.
func (c *nodeCluster) startNode(ctx context.Context, i int, sp nodeSpec) (nodeProc, error) {
	args := append(proc.NodeArgs(sp.ID, c.meta, c.secretFile, sp.Disks), "--no-director")
	p, err := proc.Start(ctx, proc.Config{Name: "node " + sp.ID, Bin: c.self, Args: append(args, sp.Args...),
		Timeout: 30 * time.Second, DiscardOutput: true})
	if err != nil {
		return nodeProc{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started[i] = p
	np := nodeProc{ID: sp.ID, Addr: p.Addr(proc.Node), CPU: p.CPU, Metrics: p.Addr(proc.Metrics)}
	for d := range sp.Disks {
		id := cairn.DiskID(fmt.Sprintf("%s/disk%d", sp.ID, d+1))
		np.Disks = append(np.Disks, id)
		c.addrs[id] = np.Addr
	}
	return np, nil
}

// restart stops every node process and starts it again with specs (the
// same IDs and disk paths, in the same order; other disk options), so a
// setup can run on fast disks and the measurement on throttled ones. The
// client resolves the disks to the new processes.
func (c *nodeCluster) restart(ctx context.Context, specs []nodeSpec) error {
	if len(specs) != len(c.procs) {
		return fmt.Errorf("%w: restarting %d nodes with %d specs", cairn.ErrInvalid, len(c.procs), len(specs))
	}
	c.mu.Lock()
	old := c.started
	c.started = make([]*proc.Proc, len(specs))
	c.mu.Unlock()
	for _, p := range old {
		if p != nil { // a launch that failed part way
			p.Kill()
		}
	}
	return c.launch(ctx, specs)
}

// launch starts the node processes of specs, a few at once (each
// opens its disks and registers before it is ready), into c.procs.
func (c *nodeCluster) launch(ctx context.Context, specs []nodeSpec) error {
	var eg errgroup.Group
	eg.SetLimit(4)
	for i, sp := range specs {
		eg.Go(func() error {
			np, err := c.startNode(ctx, i, sp)
			c.procs[i] = np
			return err
		})
	}
	return eg.Wait()
}
