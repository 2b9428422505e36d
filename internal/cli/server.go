package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cairn"
	"cairn/client"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/internal/proc"
	"cairn/internal/units"
	"cairn/internal/vfs"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
	"cairn/node/lstor"
)

const serverHelp = `Runs a whole cairn cluster in one process: an embedded metadata store
(etcd, one member), a storage node serving D disk directories, the
director, and the S3 API on 127.0.0.1:9000. With no flags it keeps
everything under ./cairn-data.

Ports: S3 on 9000, the web console on 9001 (--console-addr off: none),
the node on 9100, etcd on 9379 (clients) and 9380 (peers): the block
--port-base moves. A second server on the same machine
needs its own --data and block:

  cairn server --data ./cairn2 --port-base 10000     # S3 on 127.0.0.1:10000

Disks and the default policy: buckets made without a policy (over S3, or
cairn mb without --policy) store objects as ` + DefaultPolicy + `: 4 data + 2 parity
shards, 1.5x the data, any 2 shards can be lost. Each stripe takes 6 of
the disks; the default of 8 leaves 2 outside every stripe, so after two
disks are lost writes go on with the full redundancy and the lost shards
are rebuilt onto the disks their stripes do not use. With 6 disks, a
stripe that lost a shard has nowhere to rebuild it and the default policy
cannot write with a disk down.

S3 credentials: --access-key/--secret-key or $CAIRN_ACCESS_KEY and
$CAIRN_SECRET_KEY; otherwise they are made on first start, kept in
DIR/s3-credentials and printed once.

Encryption at rest: SSE-S3 (x-amz-server-side-encryption: AES256, or a
bucket's default encryption) seals each object's data key with the master
key in --kms-key-file, or else DIR/kms.json, made on first start (SIGHUP
reloads it after 'cairn admin keys rotate'). SSE-C
keys are accepted over HTTPS only (or from a TLS proxy that sets
X-Forwarded-Proto: https), unless --allow-insecure-ssec.

TLS: S3 is plain HTTP unless --tls-cert FILE --tls-key FILE (a
certificate for the S3 host) or --tls: then it serves HTTPS only. --tls
(for development) makes a self-signed CA and a certificate for the S3
host under DIR/tls, reused on restart, and turns on mutual TLS for the
node protocol (a node certificate from the same CA, named in
DIR/client.conf for the CLI and gateways) and for etcd, which also turns
its authentication on (user cairn, with a password derived from the
cluster secret: docs/design/meta.md); clients trust DIR/tls/ca.pem:

  AWS_CA_BUNDLE=DIR/tls/ca.pem aws --endpoint-url https://127.0.0.1:9000 s3 ls

It writes DIR/client.conf (metadata endpoints and the cluster secret, mode
0600) for the CLI:

  cairn mb --config DIR/client.conf photos
  cairn put --config DIR/client.conf ./cat.jpg photos/cat.jpg

One node cannot survive its own loss: objects survive lost disks (up to the
code's tolerance), and 'cairn admin status' says so. A cluster of several
hosts starts from 'cairn init' (its --help, and docs/running-a-cluster.md).`

// DefaultDisks is the number of disk directories cairn server makes: the
// default policy's width plus 2, so that a server that lost two disks
// still writes the default policy and has disks to rebuild onto (the help
// above says why).
const DefaultDisks = 8

// placementEvery is how often the director recomputes the placement-group
// tables from the cluster map.
const placementEvery = 5 * time.Second

func runServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn server", flag.ContinueOnError)
	data := fs.String("data", "cairn-data", "data directory: metadata, disk directories, secret and client.conf")
	disks := fs.Int("disks", DefaultDisks, "number of disk directories (DIR/disk1 … DIR/diskN) when --disk is not given")
	var diskPaths multiFlag
	fs.Var(&diskPaths, "disk", diskSpecHelp+"; default DIR/disk1 … DIR/diskN, each with its Lstor in DIR/lstor/diskN")
	raidpGeo := addRAIDPFlags(fs)
	portBase := fs.Int("port-base", DefaultPortBase, portBaseHelp)
	addrs := map[string]*string{}
	for _, p := range serverPorts {
		addrs[p.flag] = fs.String(p.flag, "", portHelp(p))
	}
	nodeID := fs.String("node-id", "node1", "this node's ID")
	users := fs.String("users", "", usersHelp)
	noLocal := fs.Bool("no-local-io", false, "the S3 gateway reads and writes this node's shards over the node protocol, as a gateway in another process does, rather than through its volumes in process (for comparisons: cairn bench s3 --local-io)")
	creds := credFlags(fs)
	grace := fs.Duration("grace", 30*time.Second, "how long a disk is suspect before it is marked down")
	rep := repairFlags(fs)
	scr := scrubFlags(fs)
	auth := addAuthFlags(fs)
	serve := addServeFlags(fs)
	tlsf := addTLSFlags(fs, true)
	clean := addCleanupFlags(fs)
	lcf := addLifecycleFlags(fs)
	mf := addMetricsFlags(fs, true)
	logf := addLogFlags(fs)
	coldf := addColdFlags(fs, "auto")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: cairn server [flags]\n\n%s\n\nFlags:\n", serverHelp)
		fs.PrintDefaults()
	}
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	if *disks < 1 && len(diskPaths) == 0 {
		return fmt.Errorf("%w: --disks must be at least 1", ErrUsage)
	}
	geo, err := raidpGeo()
	if err != nil {
		return err
	}
	// Explicit disks are checked before anything starts. (The default
	// layout puts each Lstor in DIR/lstor/diskN, on the disks' file
	// system by design: one directory holds the whole server.)
	if err := checkDiskSpecs(diskPaths, stderr); err != nil {
		return err
	}
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if a, ok := addrs[f.Name]; ok {
			set[f.Name] = *a
		}
	})
	at, err := portAddrs(*portBase, set)
	if err != nil {
		return err
	}
	taken := func(err error, flags ...string) error {
		var las []listenAddr
		for _, p := range serverPorts {
			if slices.Contains(flags, p.flag) {
				las = append(las, listenAddr{what: p.what, addr: at[p.flag], flag: p.flag})
			}
		}
		return listenError(err, las, "or move every port with --port-base")
	}
	log, err := logf.logger(stderr)
	if err != nil {
		return err
	}
	lim, err := serve.limits(log)
	if err != nil {
		return err
	}
	if err := clean.validate(); err != nil {
		return err
	}
	if err := lcf.validate(); err != nil {
		return err
	}
	if err := scr.validate(); err != nil {
		return err
	}
	if err := auth.validate(); err != nil {
		return err
	}
	pm, metricsAt, stopMetrics, err := mf.start(ctx, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	lim.metrics, lim.cluster.metrics = pm, pm
	if err := os.MkdirAll(*data, 0o700); err != nil {
		return err
	}
	secret, err := loadOrMakeSecret(filepath.Join(*data, "secret"))
	if err != nil {
		return err
	}
	s3Host, _, err := net.SplitHostPort(at["s3-addr"])
	if err != nil {
		return fmt.Errorf("%w: --s3-addr %q: %w", ErrUsage, at["s3-addr"], err)
	}
	tlsDir := filepath.Join(*data, "tls")
	if lim.tls, err = tlsf.config(tlsDir, s3Host); err != nil {
		return err
	}
	var ntls *nodeTLS // --tls: the node protocol too, mutual TLS
	if *tlsf.dev {
		nodeHost, _, err := net.SplitHostPort(at["node-addr"])
		if err != nil {
			return fmt.Errorf("%w: --node-addr %q: %w", ErrUsage, at["node-addr"], err)
		}
		if ntls, err = devNodeTLS(tlsDir, nodeHost); err != nil {
			return err
		}
	}
	// The flags are checked before anything starts.
	if len(diskPaths) == 0 {
		for i := 1; i <= *disks; i++ {
			diskPaths = append(diskPaths, filepath.Join(*data, fmt.Sprintf("disk%d", i))+",lstor="+filepath.Join(*data, "lstor", fmt.Sprintf("disk%d", i)))
		}
	}
	coldPolicy, err := coldf.resolve(len(diskPaths))
	if err != nil {
		return err
	}
	ecfg := etcdmeta.EmbedConfig{
		Name: "meta1", Dir: filepath.Join(*data, "meta"),
		ClientURL: "http://" + at["meta-addr"], PeerURL: peerURL(at["meta-peer-addr"]), Logger: log,
	}
	if ntls != nil {
		// --tls: etcd serves TLS to clients and its peers, and takes only
		// the cluster's certificates and user cairn's password.
		if ecfg.TLS, err = devMetaTLS(tlsDir, at["meta-addr"], at["meta-peer-addr"]); err != nil {
			return err
		}
		ecfg.ClientURL, ecfg.PeerURL = "https://"+at["meta-addr"], "https://"+at["meta-peer-addr"]
	}
	etcd, err := etcdmeta.StartEmbedded(ctx, ecfg)
	if err != nil {
		return fmt.Errorf("starting the metadata store: %w", taken(err, "meta-addr", "meta-peer-addr"))
	}
	defer etcd.Close()
	ccfg := ClientConfig{Meta: etcd.Endpoints(), Secret: secret}
	if ntls != nil {
		ccfg.NodeTLS, ccfg.MetaTLS, ccfg.MetaUser = &ntls.files, &ntls.files, etcdmeta.User
		if err := etcdmeta.EnableAuth(ctx, etcd.Endpoints(), ntls.client, metaPassword(secret), 0); err != nil {
			return fmt.Errorf("the metadata store: %w", err)
		}
	}
	metaOpts, err := ccfg.metaOptions()
	if err != nil {
		return err
	}
	nodeAt, nodeHandler, stop, err := startNode(ctx, nodeOptions{
		id: *nodeID, addr: at["node-addr"], meta: etcd.Endpoints(), metaOpts: metaOpts, secret: secret, from: filepath.Join(*data, "secret"), disks: diskPaths,
		director: true, grace: *grace, repair: rep, scrub: scr, cleanup: clean, lifecycle: lcf, auth: auth, log: log, tls: ntls, metrics: pm, raidp: geo,
		coldPolicy: coldPolicy, coldEvery: *coldf.every, coldGroups: *coldf.groups,
	})
	if err != nil {
		return taken(err, "node-addr")
	}
	defer stop()
	conf := filepath.Join(*data, "client.conf")
	if err := writeClientConfig(conf, ccfg); err != nil {
		return fmt.Errorf("writing %s: %w", conf, err)
	}
	c, given, err := creds()
	if err != nil {
		return err
	}
	fresh := false
	if !given {
		if c, fresh, err = loadOrMakeCreds(filepath.Join(*data, "s3-credentials")); err != nil {
			return err
		}
	}
	keysFresh := false
	if lim.keys == nil {
		path := filepath.Join(*data, "kms.json")
		k, fresh, err := loadOrMakeKeyring(path)
		if err != nil {
			return err
		}
		lim.keys, keysFresh = newLiveKeys(path, k), fresh
		lim.cluster.keys = lim.keys
	}
	lim.keys.watch(ctx, log)
	lim.cluster.log = log
	lim.cluster.key = gatewayKey()
	lim.s3.StorageClasses = coldClasses(coldPolicy)
	if !*noLocal {
		lim.cluster.local = nodeHandler // the gateway reads and writes the node's shards in process
	}
	cl, err := openCluster(ctx, ccfg, lim.cluster)
	if err != nil {
		return err
	}
	defer cl.Close()
	s3At, consoleAt, stopS3, err := startS3(ctx, cl, at["s3-addr"], at["console-addr"], c, *users, lim, log)
	if err != nil {
		return taken(err, "s3-addr", "console-addr")
	}
	defer stopS3()
	fmt.Fprintf(stdout, "  s3        %s\n", s3URL(s3At, lim.tls))
	if consoleAt != "" {
		fmt.Fprintf(stdout, "  console   %s (log in with the S3 credentials)\n", consoleAt)
	}
	fmt.Fprintf(stdout, "  metadata  %s\n  node      %s (%s) with %d disks under %s\n  client    --config %s\n",
		strings.Join(etcd.Endpoints(), ","), nodeAt, *nodeID, len(diskPaths), *data, conf)
	switch {
	case *tlsf.dev:
		fmt.Fprintf(stdout, "  tls       development CA %s; trust it, e.g.\n    AWS_CA_BUNDLE=%s aws --endpoint-url %s s3 ls\n",
			filepath.Join(tlsDir, devCAFile), filepath.Join(tlsDir, devCAFile), s3URL(s3At, lim.tls))
	case lim.tls == nil:
		fmt.Fprint(stdout, plainWarning(s3At))
	}
	if fresh {
		fmt.Fprintf(stdout, "  S3 credentials (made now, kept in %s):\n    access key  %s\n    secret key  %s\n",
			filepath.Join(*data, "s3-credentials"), c.AccessKey, c.SecretKey)
	}
	if keysFresh {
		fmt.Fprintf(stdout, "  SSE-S3 master key (made now, kept in %s)\n", filepath.Join(*data, "kms.json"))
	}
	ready := map[string]string{proc.S3: s3URL(s3At, lim.tls), proc.Meta: strings.Join(etcd.Endpoints(), ","), proc.Node: nodeAt}
	if consoleAt != "" {
		ready[proc.Console] = consoleAt
	}
	fmt.Fprintln(stdout, proc.Ready{Role: "server", Addrs: readyAddrs(ready, metricsAt)})
	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "cairn server stopping")
		return nil
	case err := <-etcd.Err():
		return fmt.Errorf("metadata store failed: %w", err)
	}
}

type nodeOptions struct {
	id, addr string
	meta     []string
	metaOpts etcdmeta.Options // TLS and user of the metadata client
	secret   string
	from     string // where the secret came from, for errors (checkSecret)
	disks    []string
	labels   cairn.Labels
	director bool
	noFormat bool
	grace    time.Duration
	linkRate int64 // bytes/s each way, 0 = unlimited
	repair   *repairOptions
	scrub    *scrubOptions
	cleanup  *cleanupFlags // the director's cleanup duty
	// lifecycle configures the director's lifecycle runner (nil: defaults).
	lifecycle *lifecycleFlags
	auth      *authFlags // the node's signature window and replay cache
	tls       *nodeTLS   // nil: plain HTTP
	log       *slog.Logger
	metrics   *procMetrics // nil: none
	raidp     raidpGeometry
	// coldPolicy, if set, makes the director run the cold export job
	// (cold.go) every coldEvery over coldGroups groups.
	coldPolicy string
	coldEvery  time.Duration
	coldGroups int
}

// startNode opens the metadata store, starts a storage node (and a director
// candidate) and returns the node's bound address and the function that
// stops them.
func startNode(ctx context.Context, o nodeOptions) (addr string, h *node.Handler, stop func(), err error) {
	if err := o.scrub.validate(); err != nil {
		return "", nil, nil, err
	}
	if err := o.repair.validate(); err != nil {
		return "", nil, nil, err
	}
	if err := o.auth.validate(); err != nil {
		return "", nil, nil, err
	}
	mo := o.metaOpts
	mo.Logger, mo.ObserveCall = o.log, o.metrics.metaCalls()
	store, err := etcdmeta.Open(ctx, o.meta, mo)
	if err != nil {
		return "", nil, nil, metaOpenError(err, o.meta, mo, o.from)
	}
	if err := checkSecret(ctx, store, o.secret, o.from, true); err != nil {
		store.Close()
		return "", nil, nil, err
	}
	var dcs []node.DiskConfig
	for i, spec := range o.disks {
		dc, err := o.diskConfig(cairn.DiskID(fmt.Sprintf("%s/disk%d", o.id, i+1)), spec)
		if err != nil {
			store.Close()
			return "", nil, nil, err
		}
		dcs = append(dcs, dc)
	}
	var serverTLS, clientTLS *tls.Config
	var hc *http.Client // nil: the node's default
	if o.tls != nil {
		serverTLS, clientTLS = o.tls.server, o.tls.client
		hc = nodeHTTPClient(node.DefaultTimeouts, clientTLS)
	}
	srv, err := node.NewServer(node.Config{
		Node: cairn.NodeID(o.id), Secret: o.secret, Disks: dcs, Labels: o.labels,
		Listen: o.addr, Registry: store, Logger: o.log, LinkRate: o.linkRate, RepairRate: o.repair.rateBytes,
		Scrub: o.scrub.cfg, NoScrub: *o.scrub.off, TLS: serverTLS, HTTPClient: hc,
		Skew: o.auth.skewOr0(), ReplayEntries: o.auth.replayOr0(), RAIDPSize: o.raidp.size, RAIDPSlots: o.raidp.slots,
	})
	if err != nil {
		store.Close()
		return "", nil, nil, err
	}
	if err := srv.Start(ctx); err != nil {
		store.Close()
		return "", nil, nil, fmt.Errorf("starting node %s: %w", o.id, err)
	}
	o.metrics.node(srv)
	var dir *director.Director
	var cl *cluster  // the director's data path
	var exp *cluster // the cold export job's (a gateway's key)
	if o.director {
		key, err := node.DeriveKey(o.secret, node.KeyID{Role: node.RoleDirector, Name: node.KeyName(o.id)})
		if err != nil {
			srv.Close()
			store.Close()
			return "", nil, nil, err
		}
		cl = newCluster(store, o.secret, key, client.Config{Logger: o.log}, node.Timeouts{}, clientTLS, srv.Handler())
		data := cl.data
		duties := []director.Duty{{
			Name: "sweep abandoned multipart uploads", Every: time.Hour,
			Run: func(ctx context.Context, now time.Time) error {
				n, err := data.SweepUploads(ctx, now, client.DefaultUploadMaxAge)
				if n > 0 {
					o.log.Warn("aborted abandoned multipart uploads", "count", n, "older_than", client.DefaultUploadMaxAge)
				}
				return err
			},
		}}
		repairs, census := o.repair.duties(store, cl.nodes, o.id, o.log, o.metrics)
		duties = append(duties, repairs...)
		duties = append(duties, o.cleanup.duty(cl, o.log, o.metrics))
		duties = append(duties, o.lifecycle.duty(store, o.log, o.coldPolicy, data.FreeRAIDP))
		duties = append(duties, raidpDuty(data, store, o.log))
		duties = append(duties, o.cleanup.raidp.duty(data, o.log))
		// The placement-group tables follow the cluster as nodes and disks
		// join or leave (docs/design/rebalance.md).
		duties = append(duties, director.PlacementDuty(store, placementEvery, o.log))
		if o.coldPolicy != "" {
			// The export job reads and writes shards as a gateway does:
			// the director's own key GETs no shard.
			gwKey, err := node.DeriveKey(o.secret, node.KeyID{Role: node.RoleGateway, Name: node.KeyName("cold-export-" + o.id)})
			if err != nil {
				srv.Close()
				store.Close()
				return "", nil, nil, err
			}
			exp = newCluster(store, o.secret, gwKey, client.Config{Logger: o.log}, node.Timeouts{}, clientTLS, srv.Handler())
			d, err := coldDuty(exp, o.coldPolicy, o.coldEvery, o.coldGroups, o.log)
			if err != nil {
				srv.Close()
				store.Close()
				return "", nil, nil, err
			}
			duties = append(duties, d)
		}
		dir = director.Start(store, director.Config{ID: o.id, Grace: o.grace, Logger: o.log, Duties: duties, Census: census})
	}
	return srv.Addr(), srv.Handler(), func() {
		if dir != nil {
			dir.Close()
		}
		if cl != nil {
			cl.damage.Close()
		}
		if exp != nil {
			exp.damage.Close()
		}
		srv.Close()
		store.Close()
	}, nil
}

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn node", flag.ContinueOnError)
	id := fs.String("id", "", "this node's ID, unique in the cluster (required)")
	metaEP := fs.String("meta", "", "metadata endpoints, comma-separated (e.g. http://10.0.0.1:9379) (required)")
	addr := fs.String("addr", "127.0.0.1:9100", "node protocol listen address (port 0: one the kernel picks)")
	secretFile := fs.String("secret-file", "", "file holding the cluster secret (default $CAIRN_SECRET)")
	rack := fs.String("rack", "", "rack label (failure domain)")
	zone := fs.String("zone", "", "zone label (failure domain)")
	noDirector := fs.Bool("no-director", false, "do not stand for director")
	noFormat := fs.Bool("no-format", false, "refuse to format a missing or empty disk directory (for mount points: an unmounted device is not silently replaced by an empty disk)")
	grace := fs.Duration("grace", 30*time.Second, "director: how long a disk is suspect before it is marked down")
	linkRate := fs.String("link-rate", "", "limit this node's network traffic to SIZE per second in each direction (for experiments, e.g. 10MiB; default unlimited)")
	rep := repairFlags(fs)
	scr := scrubFlags(fs)
	auth := addAuthFlags(fs)
	clean := addCleanupFlags(fs)
	coldf := addColdFlags(fs, "")
	lcf := addLifecycleFlags(fs)
	mf := addMetricsFlags(fs, false)
	logf := addLogFlags(fs)
	var nt NodeTLSFiles
	fs.StringVar(&nt.CA, "tls-ca", "", "serve the node protocol over mutual TLS: the cluster CA (PEM) whose certificates clients must present; needs --tls-cert and --tls-key (default: the config's node_tls)")
	fs.StringVar(&nt.Cert, "tls-cert", "", "the node's certificate (PEM, signed by --tls-ca, for server and client use): it serves the node and is presented to other nodes")
	fs.StringVar(&nt.Key, "tls-key", "", "the private key (PEM) of --tls-cert")
	var disks multiFlag
	fs.Var(&disks, "disk", diskSpecHelp+"; required. The order names the disks: the i-th is ID/disk<i>")
	raidpGeo := addRAIDPFlags(fs)
	config := fs.String("config", "", roleConfigHelp+`; its "meta" (a list) and "secret" are the cluster's, as in client.conf`)
	cmdline.Usage(fs, "cairn node --config NODE.CONF | --id ID --meta ENDPOINTS --disk PATH [--disk PATH ...]",
		"Runs a storage node: serves its disk directories over the node protocol, registers them in\nthe cluster map, keeps a liveness lease, and stands for director. `cairn init` writes a\nnode's config (--config); the secret comes from --secret-file, else the config, else $CAIRN_SECRET.")
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	secret, from := os.Getenv("CAIRN_SECRET"), "$CAIRN_SECRET"
	var metaCfg ClientConfig // the metadata client's TLS and user
	if *config != "" {
		given, err := applyRoleConfig(fs, *config, clientConfigKeys...)
		if err != nil {
			return err
		}
		var cc ClientConfig
		if err := readJSONFile(*config, &cc); err != nil {
			return err
		}
		cc.resolvePaths(filepath.Dir(*config))
		if !given["meta"] && len(cc.Meta) > 0 {
			*metaEP = strings.Join(cc.Meta, ",")
		}
		if cc.Secret != "" {
			secret, from = cc.Secret, *config
		}
		if cc.NodeTLS != nil && nt == (NodeTLSFiles{}) {
			nt = *cc.NodeTLS
		}
		metaCfg.MetaTLS, metaCfg.MetaUser = cc.MetaTLS, cc.MetaUser
	}
	var ntls *nodeTLS
	if nt != (NodeTLSFiles{}) {
		var err error
		if ntls, err = nt.nodeTLS(); err != nil {
			return fmt.Errorf("%w: --tls-ca/--tls-cert/--tls-key: %w", ErrUsage, err)
		}
	}
	if *id == "" || *metaEP == "" || len(disks) == 0 {
		return fmt.Errorf("%w: cairn node needs --id, --meta and at least one --disk (or a --config that gives them)", ErrUsage)
	}
	geo, err := raidpGeo()
	if err != nil {
		return err
	}
	if err := checkDiskSpecs(disks, stderr); err != nil {
		return err
	}
	if err := clean.validate(); err != nil {
		return err
	}
	if err := lcf.validate(); err != nil {
		return err
	}
	if err := scr.validate(); err != nil {
		return err
	}
	if err := auth.validate(); err != nil {
		return err
	}
	if *secretFile != "" {
		from = *secretFile
		b, err := os.ReadFile(*secretFile)
		if err != nil {
			return err
		}
		secret = strings.TrimSpace(string(b))
	}
	if secret == "" {
		return fmt.Errorf("%w: no cluster secret: pass --secret-file or a --config with one, or set CAIRN_SECRET", ErrUsage)
	}
	metaCfg.Meta, metaCfg.Secret = strings.Split(*metaEP, ","), secret
	if metaCfg.MetaTLS == nil && strings.HasPrefix(*metaEP, "https://") && ntls != nil {
		// Metadata over TLS without a meta_tls: the node's certificate,
		// of the same CA, and user cairn (as cairn server --tls sets up).
		metaCfg.MetaTLS, metaCfg.MetaUser = &ntls.files, cmp.Or(metaCfg.MetaUser, etcdmeta.User)
	}
	if err := metaCfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	metaOpts, err := metaCfg.metaOptions()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	labels := cairn.Labels{}
	if *rack != "" {
		labels[cairn.LabelRack] = *rack
	}
	if *zone != "" {
		labels[cairn.LabelZone] = *zone
	}
	var rate int64
	if *linkRate != "" {
		var err error
		if rate, err = units.ParseSize(*linkRate); err != nil || rate <= 0 {
			return fmt.Errorf("%w: --link-rate: want a positive size per second", ErrUsage)
		}
	}
	log, err := logf.logger(stderr)
	if err != nil {
		return err
	}
	pm, metricsAt, stopMetrics, err := mf.start(ctx, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	coldPolicy, err := coldf.resolve(0) // "" unless given
	if err != nil {
		return err
	}
	at, _, stop, err := startNode(ctx, nodeOptions{id: *id, linkRate: rate, addr: *addr, meta: metaCfg.Meta, metaOpts: metaOpts, secret: secret, from: from,
		disks: disks, labels: labels, director: !*noDirector, noFormat: *noFormat, grace: *grace, repair: rep, scrub: scr, cleanup: clean, lifecycle: lcf, auth: auth, log: log, tls: ntls,
		metrics: pm, raidp: geo, coldPolicy: coldPolicy, coldEvery: *coldf.every, coldGroups: *coldf.groups})
	if err != nil {
		return listenError(err, []listenAddr{{"node", *addr, "addr"}}, "")
	}
	defer stop()
	fmt.Fprintf(stdout, "cairn node %s serving %d disks on %s\n", *id, len(disks), at)
	fmt.Fprintln(stdout, proc.Ready{Role: "node", Addrs: readyAddrs(map[string]string{proc.Node: at}, metricsAt)})
	<-ctx.Done()
	return nil
}

func runMeta(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn meta", flag.ContinueOnError)
	name := fs.String("name", "meta1", "member name, unique in the metadata cluster")
	data := fs.String("data", "", "member data directory (required)")
	clientAddr := fs.String("client-addr", "127.0.0.1:9379", "client address (port 0: one the kernel picks)")
	peerAddr := fs.String("peer-addr", "127.0.0.1:9380", "peer address (port 0: one the kernel picks, for a single member only), or unix://NAME:PORT: a unix socket named NAME:PORT in the working directory, where every member runs")
	initial := fs.String("initial-cluster", "", "all members as name=http://peer-addr (or name=unix://NAME:PORT), comma-separated (default: just this one)")
	state := fs.String("initial-cluster-state", "new", "new, or existing when joining a running cluster")
	check := fs.String("secret-check", "", "the cluster secret's check value, as cairn init writes it in each member's config: recorded in the metadata at start, so that a node, gateway or CLI command with another secret is refused from the first (docs/design/meta.md, \"Secret check\")")
	mf := addMetricsFlags(fs, false)
	logf := addLogFlags(fs)
	var mt etcdmeta.TLSFiles
	fs.StringVar(&mt.CA, "tls-ca", "", "serve clients and peers over TLS only: the cluster CA (PEM) whose certificates clients and peers must present; needs --tls-cert and --tls-key")
	fs.StringVar(&mt.Cert, "tls-cert", "", "the member's certificate (PEM, signed by --tls-ca, for server and client use, naming the hosts of --client-addr and --peer-addr)")
	fs.StringVar(&mt.Key, "tls-key", "", "the private key (PEM) of --tls-cert")
	passwordFile := fs.String("cairn-password-file", "", "turn etcd authentication on (needs TLS): the file holding the password of etcd user cairn, as cairn init writes it (meta-password); clients authenticate with it, derived from the cluster secret")
	config := fs.String("config", "", roleConfigHelp)
	cmdline.Usage(fs, "cairn meta --config META.CONF | --name N --data DIR [--initial-cluster ...]",
		"Runs one member of the metadata cluster (an embedded etcd server). 1, 3 or 5 members form the\ncluster; start each with the same --initial-cluster. `cairn init` writes each member's config\n(--config). A new metadata cluster serves once most of its members run: start them all.\n\n"+
			"To add a member to a running cluster, first run 'cairn admin meta add NAME PEER-ADDR': it\n"+
			"registers the member and prints this command with the --initial-cluster to use; start the\n"+
			"member with it and --initial-cluster-state existing, on an empty --data directory.\n"+
			"'cairn admin meta remove NAME' removes one; docs/meta-members.md replaces one step by step.\n"+
			"SIGTERM or Ctrl-C stops a member cleanly (its clients move to the other members).")
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	if *config != "" {
		if _, err := applyRoleConfig(fs, *config); err != nil {
			return err
		}
	}
	if *data == "" {
		return fmt.Errorf("%w: cairn meta needs --data", ErrUsage)
	}
	if *check != "" && !validSecretCheck(*check) {
		return fmt.Errorf("%w: --secret-check %q: want hmac-sha256: and 64 hex digits, as cairn init writes it", ErrUsage, *check)
	}
	log, err := logf.logger(stderr)
	if err != nil {
		return err
	}
	_, metricsAt, stopMetrics, err := mf.start(ctx, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	ecfg := etcdmeta.EmbedConfig{Name: *name, Dir: *data,
		ClientURL: "http://" + *clientAddr, PeerURL: peerURL(*peerAddr),
		InitialCluster: *initial, InitialClusterState: *state, Logger: log}
	var metaCfg ClientConfig // this member's own client: the secret check and authentication
	var password string
	if mt != (etcdmeta.TLSFiles{}) {
		files := NodeTLSFiles{CA: mt.CA, Cert: mt.Cert, Key: mt.Key}
		if _, err := files.clientConfig("--tls-ca/--tls-cert/--tls-key"); err != nil {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		ecfg.TLS, metaCfg.MetaTLS = &mt, &files
		ecfg.ClientURL, ecfg.PeerURL = "https://"+*clientAddr, tlsPeerURL(*peerAddr)
	}
	if *passwordFile != "" {
		if ecfg.TLS == nil {
			return fmt.Errorf("%w: --cairn-password-file needs TLS (--tls-ca, --tls-cert, --tls-key): the password would cross the network in the clear", ErrUsage)
		}
		b, err := os.ReadFile(*passwordFile)
		if err != nil {
			return fmt.Errorf("%w: --cairn-password-file: %w", ErrUsage, err)
		}
		if password = strings.TrimSpace(string(b)); password == "" {
			return fmt.Errorf("%w: --cairn-password-file %s is empty", ErrUsage, *passwordFile)
		}
	}
	mo, err := metaCfg.metaOptions()
	if err != nil {
		return err
	}
	if password != "" {
		mo.Username, mo.Password = etcdmeta.User, password
	}
	srv, err := etcdmeta.StartEmbedded(ctx, ecfg)
	if err != nil {
		err = listenError(err, []listenAddr{{"client", *clientAddr, "client-addr"}, {"peer", *peerAddr, "peer-addr"}}, "")
		return fmt.Errorf("starting metadata member %s: %w", *name, err)
	}
	defer srv.Close()
	if password != "" {
		if err := etcdmeta.EnableAuth(ctx, srv.Endpoints(), mo.TLS, password, 0); err != nil {
			return fmt.Errorf("metadata member %s: %w", *name, err)
		}
	}
	if *check != "" {
		if err := recordSecretCheck(ctx, srv.Endpoints(), mo, *check, cmp.Or(*config, "--secret-check")); err != nil {
			return fmt.Errorf("metadata member %s: %w", *name, err)
		}
	}
	fmt.Fprintf(stdout, "cairn meta %s serving clients on %s\n", *name, strings.Join(srv.Endpoints(), ","))
	fmt.Fprintln(stdout, proc.Ready{Role: "meta", Addrs: readyAddrs(map[string]string{
		proc.Meta: strings.Join(srv.Endpoints(), ","), proc.Peer: strings.Join(srv.PeerURLs(), ",")}, metricsAt)})
	select {
	case <-ctx.Done():
		return nil
	case err := <-srv.Err():
		return err
	case <-srv.Stopped():
		if srv.Removed() {
			fmt.Fprintf(stdout, "cairn meta %s: removed from the metadata cluster; stopped (delete %s before using it again)\n", *name, *data)
			return nil
		}
		return fmt.Errorf("metadata member %s stopped", *name)
	}
}

// peerURL is the etcd peer URL of a peer address flag: HOST:PORT over
// http, or a unix://NAME:PORT URL as given.
func peerURL(addr string) string {
	if strings.HasPrefix(addr, "unix://") {
		return addr
	}
	return "http://" + addr
}

// tlsPeerURL is the etcd peer URL of a peer address flag over TLS:
// https://HOST:PORT (a unix socket address is refused by
// etcdmeta.EmbedConfig.Validate).
func tlsPeerURL(addr string) string {
	if strings.HasPrefix(addr, "unix://") {
		return addr
	}
	return "https://" + addr
}

// loadOrMakeSecret reads the cluster secret from path, creating a random
// one (mode 0600) on first start.
func loadOrMakeSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("%s is empty: delete it to make a new cluster secret", path)
		}
		return s, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	s, err := newSecret()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", err
	}
	return s, nil
}

// newSecret makes a random cluster secret: 32 bytes in hex.
func newSecret() (string, error) {
	var r [32]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(r[:]), nil
}

// diskSpecHelp documents PATH[,options] of --disk.
const diskSpecHelp = "a disk directory to serve, PATH[,lstor=LPATH][,bw=SIZE][,lat=DURATION][,seek=DURATION][,wb=SIZE][,bg=DURATION:SIZE][,bgseed=N] (repeatable). " +
	"lstor=LPATH serves the disk's RAIDP slots too, with their Lstor (parity and journal) in LPATH, not on or inside PATH " +
	"(docs/design/raidp.md). The other options slow the disk down for experiments: bw bytes per second, lat per request, seek per request that " +
	"does not continue the previous one (a spinning disk), wb bytes of writes that may run ahead of the disk until a sync " +
	"(a page cache; default none), and a competing " +
	"background request of SIZE every DURATION — at random times, DURATION apart on average, with bgseed=N " +
	"(e.g. /d1,bw=10MiB,lat=2ms,bg=100ms:64KiB,bgseed=7). The disk's raidp.data is on the disk's throttle; the Lstor has its own, " +
	"given by the same options prefixed with l (lbw, llat, lseek, lwb): another device"

// raidpGeometry is the RAIDP superchunk size and slots of a node's disks
// with an Lstor (0: the node's defaults).
type raidpGeometry struct {
	size  int64
	slots int
}

// addRAIDPFlags adds --raidp-size and --raidp-slots.
func addRAIDPFlags(fs *flag.FlagSet) func() (raidpGeometry, error) {
	size := fs.String("raidp-size", units.FormatSize(node.DefaultRAIDPSize), "RAIDP superchunk size of the disks with an Lstor (a multiple of 64KiB; the same on every node of a group)")
	slots := fs.Int("raidp-slots", node.DefaultRAIDPSlots, "RAIDP superchunk slots of each disk with an Lstor")
	return func() (raidpGeometry, error) {
		n, err := units.ParseSize(*size)
		if err != nil || n <= 0 || n%lstor.BlockSize != 0 || *slots < 1 {
			return raidpGeometry{}, fmt.Errorf("%w: --raidp-size %q, --raidp-slots %d: want a positive multiple of 64KiB and at least 1 slot", ErrUsage, *size, *slots)
		}
		return raidpGeometry{size: n, slots: *slots}, nil
	}
}

// diskConfig is the disk id given by spec (--disk): its volume on the
// disk's throttle (if any) and, with lstor=, its RAIDP data on the same
// throttle and its Lstor on the Lstor's own, each counted by the metrics
// (the Lstor as disk "ID/lstor").
func (o nodeOptions) diskConfig(id cairn.DiskID, spec string) (node.DiskConfig, error) {
	spec, lspec, err := splitLstor(spec)
	if err != nil {
		return node.DiskConfig{}, err
	}
	p, throttle, err := parseDiskSpec(spec)
	if err != nil {
		return node.DiskConfig{}, err
	}
	dc := node.DiskConfig{ID: id, Path: p, NoFormat: o.noFormat}
	if throttle.Enabled() {
		dc.FS = vfs.Throttle(vfs.Default, throttle)
	}
	dc.FS = o.metrics.diskFS(dc.ID, dc.FS)
	if lspec != "" {
		lpath, lthrottle, err := parseDiskSpec(lspec)
		if err != nil {
			return node.DiskConfig{}, err
		}
		var lfs vfs.FS
		if lthrottle.Enabled() {
			lfs = vfs.Throttle(vfs.Default, lthrottle)
		}
		lfs = o.metrics.diskFS(dc.ID+"/lstor", lfs)
		dc.Lstor = lpath
		if dc.FS != nil || lfs != nil {
			dc.LstorFS = vfs.Split(orDefault(dc.FS), lpath, orDefault(lfs))
		}
	}
	return dc, nil
}

func orDefault(fsys vfs.FS) vfs.FS {
	if fsys == nil {
		return vfs.Default
	}
	return fsys
}

// splitLstor takes the option lstor=LPATH and the Lstor's throttle
// options (lbw=, llat=, lseek=, lwb=) out of a --disk spec: the rest of
// the spec and the Lstor's own spec, LPATH[,bw=...] for parseDiskSpec (""
// without one), refused on or inside the disk's path.
func splitLstor(spec string) (rest, lspec string, err error) {
	parts := strings.Split(spec, ",")
	kept := parts[:1]
	var lpath string
	var lopts []string
	for _, opt := range parts[1:] {
		switch k, _, _ := strings.Cut(opt, "="); k {
		case "lbw", "llat", "lseek", "lwb":
			lopts = append(lopts, opt[1:])
			continue
		}
		if v, ok := strings.CutPrefix(opt, "lstor="); ok {
			if lpath != "" || v == "" {
				return "", "", fmt.Errorf("%w: --disk %q: lstor= given twice or empty", ErrUsage, spec)
			}
			lpath = v
			continue
		}
		kept = append(kept, opt)
	}
	if lpath == "" {
		if len(lopts) > 0 {
			return "", "", fmt.Errorf("%w: --disk %q: Lstor options without lstor=", ErrUsage, spec)
		}
		return strings.Join(kept, ","), "", nil
	}
	if err := lstor.CheckPaths(parts[0], lpath); err != nil {
		return "", "", fmt.Errorf("%w: --disk %q: %w", ErrUsage, spec, err)
	}
	return strings.Join(kept, ","), strings.Join(append([]string{lpath}, lopts...), ","), nil
}

// checkDiskSpecs validates --disk specs before a node starts: a malformed
// spec, or an Lstor on, inside or containing its disk's path
// (lstor.ErrSamePath), is a usage error; an Lstor on the same file system
// as its disk (judged by the nearest existing directories) is legal but
// draws a warning on stderr: one device failure would lose both.
func checkDiskSpecs(specs []string, stderr io.Writer) error {
	for _, spec := range specs {
		rest, lpath, err := splitLstor(spec)
		if err != nil {
			return err
		}
		p, _, err := parseDiskSpec(rest)
		if err != nil {
			return err
		}
		if lpath == "" {
			continue
		}
		if same, err := sameDevice(existingDir(p), existingDir(lpath)); err == nil && same {
			fmt.Fprintf(stderr, "warning: disk %s and its Lstor %s are on the same file system: one device failure loses both (docs/design/raidp.md)\n", p, lpath)
		}
	}
	return nil
}

// existingDir is path, or its nearest ancestor that exists (a disk or
// Lstor directory is made at its first start).
func existingDir(path string) string {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || filepath.Dir(p) == p {
			return p
		}
	}
}

// parseDiskSpec parses PATH[,bw=SIZE][,lat=DURATION][,seek=DURATION][,wb=SIZE][,bg=DURATION:SIZE][,bgseed=N].
func parseDiskSpec(spec string) (string, vfs.ThrottleConfig, error) {
	parts := strings.Split(spec, ",")
	var c vfs.ThrottleConfig
	bad := func(why string) (string, vfs.ThrottleConfig, error) {
		return "", c, fmt.Errorf("%w: --disk %q: %s (want PATH[,bw=SIZE][,lat=DURATION][,seek=DURATION][,wb=SIZE][,bg=DURATION:SIZE][,bgseed=N])", ErrUsage, spec, why)
	}
	if parts[0] == "" {
		return bad("no path")
	}
	for _, opt := range parts[1:] {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "bw":
			n, err := units.ParseSize(v)
			if err != nil || n <= 0 {
				return bad("bw needs a positive size per second")
			}
			c.Bandwidth = n
		case "lat":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return bad("lat needs a duration")
			}
			c.Latency = d
		case "seek":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return bad("seek needs a duration")
			}
			c.Seek = d
		case "wb":
			n, err := units.ParseSize(v)
			if err != nil || n <= 0 {
				return bad("wb needs a positive size")
			}
			c.WriteBehind = n
		case "bg":
			ds, ss, ok := strings.Cut(v, ":")
			d, err1 := time.ParseDuration(ds)
			n, err2 := units.ParseSize(ss)
			if !ok || err1 != nil || err2 != nil || d <= 0 || n <= 0 {
				return bad("bg needs DURATION:SIZE")
			}
			c.BackgroundEvery, c.BackgroundBytes = d, n
		case "bgseed":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				return bad("bgseed needs a positive integer")
			}
			c.BackgroundSeed = n
		default:
			return bad(fmt.Sprintf("unknown option %q", k))
		}
	}
	return parts[0], c, nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
