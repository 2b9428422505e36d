package benchcli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

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
}

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
	self, err := os.Executable()
	if err != nil {
		etcd.Close()
		return nil, err
	}
	var started []*proc.Proc
	stop := func() {
		for _, p := range started {
			p.Kill()
		}
		etcd.Close()
	}
	var procs []nodeProc
	addrs := map[cairn.DiskID]string{}
	for _, sp := range specs {
		args := append(proc.NodeArgs(sp.ID, etcd.Endpoints(), secretFile, sp.Disks), "--no-director")
		p, err := proc.Start(ctx, proc.Config{Name: "node " + sp.ID, Bin: self, Args: append(args, sp.Args...),
			Timeout: 30 * time.Second, DiscardOutput: true})
		if err != nil {
			stop()
			return nil, err
		}
		started = append(started, p)
		np := nodeProc{ID: sp.ID, Addr: p.Addr(proc.Node), CPU: p.CPU, Metrics: p.Addr(proc.Metrics)}
		for d := range sp.Disks {
			id := cairn.DiskID(fmt.Sprintf("%s/disk%d", sp.ID, d+1))
			np.Disks = append(np.Disks, id)
			addrs[id] = np.Addr
		}
		procs = append(procs, np)
	}
	resolve := func(_ context.Context, d cairn.DiskID) (string, error) {
		if a, ok := addrs[d]; ok {
			return a, nil
		}
		return "", fmt.Errorf("disk %s: %w", d, cairn.ErrNotFound)
	}
	return &nodeCluster{procs: procs, client: node.NewClient(secret, resolve, nil), resolve: resolve,
		meta: etcd.Endpoints(), secret: secret, stop: stop}, nil
}
