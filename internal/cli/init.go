package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cairn/internal/cmdline"
	etcdmeta "cairn/meta/etcd"
)

const initHelp = `Makes a new cluster's files in DIR (which must be new or empty): the
cluster secret, the root S3 credentials, the CLI's client.conf and one
config file per process, grouped by host, then prints the command that
starts each process on each host. It starts nothing and needs no network.

  cairn init ./mycluster --meta 10.0.0.1,10.0.0.2,10.0.0.3 \
      --nodes 10.0.0.1,10.0.0.2,10.0.0.3 --gateways 10.0.0.1,10.0.0.2

Each list names hosts as HOST or HOST:PORT, one entry per process:
--meta the metadata (etcd) members (1, 3 or 5; a member serves clients
on PORT, default 9379, and its peers on PORT+1), --nodes the storage
nodes (default port 9100; a host may run several on distinct ports),
--gateways the S3 gateways (default port 9000). Processes listen on the
HOST they are given, so give each host's address as the other hosts and
the clients reach it.

It writes:

  DIR/client.conf       metadata endpoints and the cluster secret, for the
                        cairn CLI (--config or $CAIRN_CONFIG)
  DIR/s3-credentials    the root S3 access and secret keys
  DIR/start.txt         what it prints: the commands, host by host
  DIR/HOST/             everything HOST needs: metaN.conf, nodeN.conf,
                        gatewayN.conf for its processes, client.conf,
                        tls/ and meta-password
  DIR/tls/              the cluster CA and the CLI's client certificate

Copy DIR/HOST/ to each HOST (every file there holds the secret: keep them
mode 0600) and run the printed commands in that directory: the metadata
members first (a new metadata cluster serves once most of its members run), then
the nodes, then the gateways. Data lives under --data on every host:
DATA/metaN for a member, DATA/nodeN/diskM for a node's disks. A node's
rack label is its HOST, so that placement spreads each stripe over the
hosts first (edit "rack" and add "zone" in the node configs to name real
racks and zones). The config files are JSON and hold the processes' flags
by name; a flag given on the command line wins (docs/running-a-cluster.md).

The root S3 credentials are made unless given (--access-key and
--secret-key, or $CAIRN_ACCESS_KEY and $CAIRN_SECRET_KEY).

TLS (unless --no-tls): every connection is TLS with certificates of a
cluster CA made here. DIR/tls holds the CA (ca-key.pem signs every
certificate: keep it on this machine, off the hosts) and the CLI's client
certificate; DIR/HOST/tls holds the CA certificate and HOST's own
certificate, which names HOST and serves S3, the node protocol and etcd
there and is their client certificate. Nodes and etcd take only clients
with a certificate of the CA; etcd also wants the password of its user
cairn, derived from the secret (DIR/HOST/meta-password, for the members).
S3 clients trust DIR/tls/ca.pem. A host added later gets its directory
from 'cairn init DIR --add-host HOST'.`

// Default ports of the processes cairn init places.
const (
	initMetaPort    = 9379 // a member's client port; its peer port is one more
	initNodePort    = 9100
	initGatewayPort = 9000
)

// hostPort is one process's place: a host and a port.
type hostPort struct {
	host string
	port int
}

func (h hostPort) String() string { return net.JoinHostPort(h.host, strconv.Itoa(h.port)) }

// initProc is one process of a planned cluster.
type initProc struct {
	role string   // "meta", "node" or "gateway"
	name string   // meta1, node2, gateway1: unique in the cluster
	at   hostPort // where it serves (a member: its client address)
}

// initPlan is a cluster cairn init lays out: pure data, checked by
// planCluster.
type initPlan struct {
	metas, nodes, gateways []initProc
	disks                  int    // disks per node
	data                   string // data root on every host
	tls                    bool   // TLS everywhere, etcd authentication (initTLS)
}

// hosts returns the plan's hosts in the order they first appear.
func (p initPlan) hosts() []string {
	var out []string
	for _, pr := range p.procs() {
		if !slices.Contains(out, pr.at.host) {
			out = append(out, pr.at.host)
		}
	}
	return out
}

// procs returns every process: members, nodes, gateways.
func (p initPlan) procs() []initProc {
	return slices.Concat(p.metas, p.nodes, p.gateways)
}

// scheme is the metadata URLs' scheme: https with TLS.
func (p initPlan) scheme() string {
	if p.tls {
		return "https://"
	}
	return "http://"
}

// metaEndpoints returns the members' client URLs.
func (p initPlan) metaEndpoints() []string {
	var out []string
	for _, m := range p.metas {
		out = append(out, p.scheme()+m.at.String())
	}
	return out
}

// The TLS files cairn init writes (docs/running-a-cluster.md, "TLS"),
// relative to DIR and to each DIR/HOST: the cluster CA, its key (in DIR
// only), the CLI's client certificate (DIR), and each host's certificate
// (DIR/HOST), for every server and client on the host; and the etcd
// password of user cairn for the hosts of metadata members.
const (
	initTLSDir       = "tls"
	initCACert       = "tls/ca.pem"
	initCAKey        = "tls/ca-key.pem"
	initClientCert   = "tls/client.pem"
	initClientKey    = "tls/client-key.pem"
	initHostCert     = "tls/host.pem"
	initHostKey      = "tls/host-key.pem"
	initPasswordFile = "meta-password"
)

// clientConfig is the client config of the cluster for files in a
// directory whose certificate is cert and key (relative to the config).
func (p initPlan) clientConfig(secret, cert, key string) ClientConfig {
	c := ClientConfig{Meta: p.metaEndpoints(), Secret: secret}
	if p.tls {
		f := NodeTLSFiles{CA: initCACert, Cert: cert, Key: key}
		c.NodeTLS, c.MetaTLS, c.MetaUser = &f, &f, etcdmeta.User
	}
	return c
}

// peer returns a member's peer address: the client port plus one.
func peer(m initProc) hostPort { return hostPort{m.at.host, m.at.port + 1} }

// parseHostList parses a comma-separated list of HOST or HOST:PORT for
// flag, giving entries without a port defPort.
func parseHostList(flag, list string, defPort int) ([]hostPort, error) {
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("%w: --%s: no hosts given", ErrUsage, flag)
	}
	var out []hostPort
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		bad := func(why string) ([]hostPort, error) {
			return nil, fmt.Errorf("%w: --%s: %q: %s (want HOST or HOST:PORT)", ErrUsage, flag, e, why)
		}
		host, port := e, defPort
		if strings.HasPrefix(e, "[") || strings.Count(e, ":") == 1 {
			h, ps, err := net.SplitHostPort(e)
			if err != nil {
				return bad("not HOST:PORT")
			}
			n, err := strconv.Atoi(ps)
			if err != nil || n < 1 || n > 65535 {
				return bad("the port must be a number from 1 to 65535")
			}
			host, port = h, n
		}
		switch {
		case host == "":
			return bad("no host")
		case strings.ContainsAny(host, " \t/\\=[]"):
			return bad("not a host name or address")
		}
		out = append(out, hostPort{host, port})
	}
	return out, nil
}

// planCluster checks cairn init's lists and counts and names the
// processes. Every listen address must be distinct, a member's peer port
// included.
func planCluster(metas, nodes, gateways string, disks int, data string) (initPlan, error) {
	p := initPlan{disks: disks, data: data}
	if disks < 1 {
		return p, fmt.Errorf("%w: --disks %d: a node needs at least one disk", ErrUsage, disks)
	}
	if data == "" {
		return p, fmt.Errorf("%w: --data: no data directory", ErrUsage)
	}
	type role struct {
		flag, name string
		list       string
		port       int
		into       *[]initProc
	}
	for _, r := range []role{
		{"meta", "meta", metas, initMetaPort, &p.metas},
		{"nodes", "node", nodes, initNodePort, &p.nodes},
		{"gateways", "gateway", gateways, initGatewayPort, &p.gateways},
	} {
		hps, err := parseHostList(r.flag, r.list, r.port)
		if err != nil {
			return p, err
		}
		for i, hp := range hps {
			*r.into = append(*r.into, initProc{role: r.name, name: fmt.Sprintf("%s%d", r.name, i+1), at: hp})
		}
	}
	if n := len(p.metas); n != 1 && n != 3 && n != 5 {
		return p, fmt.Errorf("%w: --meta names %d members: want 1, 3 or 5 (a majority must stay up: 3 survive the loss of one, 5 of two)", ErrUsage, n)
	}
	used := map[string]string{} // listen address → who listens there
	claim := func(at hostPort, who string) error {
		if other, ok := used[at.String()]; ok {
			return fmt.Errorf("%w: %s and %s would both listen on %s: give one another port (HOST:PORT)", ErrUsage, other, who, at)
		}
		used[at.String()] = who
		return nil
	}
	for _, pr := range p.procs() {
		if err := claim(pr.at, pr.name); err != nil {
			return p, err
		}
		if pr.role == "meta" {
			pp := peer(pr)
			if pp.port > 65535 {
				return p, fmt.Errorf("%w: --meta %s: the peer port (the client port plus one) would be %d", ErrUsage, pr.at, pp.port)
			}
			if err := claim(pp, pr.name+" (peer)"); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// roleConfigs returns each process's config file contents by process name
// (docs/running-a-cluster.md, "Config files"): a member's flags; a node's
// and a gateway's flags with the client config (meta, secret).
func (p initPlan) roleConfigs(secret string, creds s3Creds) map[string]map[string]any {
	var initial []string
	for _, m := range p.metas {
		initial = append(initial, m.name+"="+p.scheme()+peer(m).String())
	}
	// A node's and a gateway's config is its host's client config plus
	// its flags.
	client := func(flags map[string]any) map[string]any {
		b, err := json.Marshal(p.clientConfig(secret, initHostCert, initHostKey))
		if err != nil {
			panic(err) // a ClientConfig always marshals
		}
		var c map[string]any
		if err := json.Unmarshal(b, &c); err != nil {
			panic(err)
		}
		maps.Copy(c, flags)
		return c
	}
	out := map[string]map[string]any{}
	for _, m := range p.metas {
		out[m.name] = map[string]any{
			"name": m.name, "data": filepath.Join(p.data, m.name),
			"client-addr": m.at.String(), "peer-addr": peer(m).String(),
			"initial-cluster": strings.Join(initial, ","),
			"secret-check":    secretCheckValue(secret),
		}
		if p.tls {
			maps.Copy(out[m.name], map[string]any{"tls-ca": initCACert, "tls-cert": initHostCert, "tls-key": initHostKey,
				"cairn-password-file": initPasswordFile})
		}
	}
	for _, n := range p.nodes {
		var disks []string
		for d := 1; d <= p.disks; d++ {
			disks = append(disks, filepath.Join(p.data, n.name, fmt.Sprintf("disk%d", d)))
		}
		// The host is the failure domain a node shares with the others on
		// it: as the rack label, it makes placement spread a stripe over
		// hosts first, so a host that runs two nodes does not take more
		// shards of a stripe with it than over hosts evenly.
		out[n.name] = client(map[string]any{"id": n.name, "addr": n.at.String(), "disk": disks, "rack": n.at.host})
	}
	for _, g := range p.gateways {
		out[g.name] = client(map[string]any{"s3-addr": g.at.String(), "access-key": creds.AccessKey, "secret-key": creds.SecretKey})
		if p.tls {
			maps.Copy(out[g.name], map[string]any{"tls-cert": initHostCert, "tls-key": initHostKey})
		}
	}
	return out
}

// startText is what cairn init prints: the files, the root credentials,
// and the commands host by host, members first on each.
func (p initPlan) startText(dir string, creds s3Creds) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cairn init: a new cluster in %s: %d metadata members, %d nodes with %d disks each, %d gateways, on %d hosts\n\n",
		dir, len(p.metas), len(p.nodes), p.disks, len(p.gateways), len(p.hosts()))
	files := [][2]string{
		{filepath.Join(dir, "client.conf"), "metadata endpoints and the cluster secret, for the cairn CLI"},
		{filepath.Join(dir, "s3-credentials"), "the root S3 credentials"},
		{filepath.Join(dir, "HOST") + string(filepath.Separator), "each host's files: copy the directory to HOST"},
	}
	if p.tls {
		files = append(files, [2]string{filepath.Join(dir, initTLSDir) + string(filepath.Separator),
			"the cluster CA (ca-key.pem stays on this machine) and the CLI's client certificate"})
	}
	w := len(files[1][0])
	for _, f := range files {
		fmt.Fprintf(&b, "  %-*s  %s\n", w, f[0], f[1])
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Root S3 credentials:\n  access key  %s\n  secret key  %s\n\n", creds.AccessKey, creds.SecretKey)
	if p.tls {
		fmt.Fprintf(&b, "TLS everywhere: S3 clients trust %s, e.g.\n  AWS_CA_BUNDLE=%s aws --endpoint-url https://%s s3 ls\n\n",
			filepath.Join(dir, initCACert), filepath.Join(dir, initCACert), p.gateways[0].at)
	}
	b.WriteString("On each host, in the directory its files were copied to, run each command as a service\n" +
		"(or in its own terminal): the metadata members on every host first, then the nodes,\n" +
		"then the gateways.\n")
	for _, h := range p.hosts() {
		fmt.Fprintf(&b, "\nOn %s (files: %s):\n", h, filepath.Join(dir, h)+string(filepath.Separator))
		for _, pr := range p.procs() {
			if pr.at.host == h {
				fmt.Fprintf(&b, "  cairn %s --config %s.conf\n", pr.role, pr.name)
			}
		}
	}
	fmt.Fprintf(&b, "\nThen, from this machine, wait until every node is alive and every disk up:\n  cairn admin status --wait 2m --config %s\n", filepath.Join(dir, "client.conf"))
	if w := len(p.nodes) * p.disks; w < 6 {
		fmt.Fprintf(&b, "\nNote: %d disks in all; the default policy %s needs 6. Give buckets a narrower policy (cairn mb --policy).\n", w, DefaultPolicy)
	}
	return b.String()
}

// ErrClusterExists is returned by cairn init for a directory that holds
// files already: it makes a new secret, and would orphan the old one.
var ErrClusterExists = errors.New("directory is not empty")

// checkInitDir refuses a DIR that exists and is not empty.
func checkInitDir(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrUsage, dir, err)
	case len(ents) == 0:
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "client.conf")); err == nil {
		return fmt.Errorf("%w: %s holds a cluster already (client.conf): cairn init makes a new cluster with a new secret; give a new directory, or delete this one if its cluster is gone: %w",
			ErrUsage, dir, ErrClusterExists)
	}
	return fmt.Errorf("%w: %s: %w (%s, ...): cairn init writes into a new or empty directory", ErrUsage, dir, ErrClusterExists, ents[0].Name())
}

// writeJSONFile writes v as indented JSON to path with mode 0600.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

func runInit(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn init", flag.ContinueOnError)
	metas := fs.String("meta", "", "metadata members, HOST[:PORT] comma-separated: 1, 3 or 5 (default port 9379, peers on PORT+1) (required)")
	nodes := fs.String("nodes", "", "storage nodes, HOST[:PORT] comma-separated, one entry per node (default port 9100) (required)")
	gateways := fs.String("gateways", "", "S3 gateways, HOST[:PORT] comma-separated (default port 9000) (required)")
	disks := fs.Int("disks", 3, "disk directories per node, DATA/nodeN/disk1 … diskM; edit a node's config to point them at mount points")
	data := fs.String("data", "/var/lib/cairn", "data directory on every host: DATA/metaN for members, DATA/nodeN/diskM for disks")
	noTLS := fs.Bool("no-tls", false, "plain HTTP everywhere and no etcd authentication (a trusted network, or a try-out); default: TLS everywhere")
	addHost := fs.String("add-host", "", "instead of a new cluster: write DIR/HOST/ for a host added to the cluster in DIR later (its certificate and client.conf)")
	creds := credFlags(fs)
	cmdline.Usage(fs, "cairn init DIR --meta HOSTS --nodes HOSTS --gateways HOSTS [--disks N] [--data PATH] [--no-tls]\n       cairn init DIR --add-host HOST", initHelp)
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, true); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: cairn init takes 1 argument (the new cluster's DIR), got %d", ErrUsage, fs.NArg())
	}
	dir := fs.Arg(0)
	if *addHost != "" {
		return initAddHost(dir, *addHost, stdout)
	}
	plan, err := planCluster(*metas, *nodes, *gateways, *disks, *data)
	if err != nil {
		return err
	}
	plan.tls = !*noTLS
	c, given, err := creds()
	if err != nil {
		return err
	}
	if err := checkInitDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	secret, err := newSecret() // it lives in client.conf and every config
	if err != nil {
		return err
	}
	credsPath := filepath.Join(dir, "s3-credentials")
	if given {
		if err := writeJSONFile(credsPath, c); err != nil {
			return err
		}
	} else if c, _, err = loadOrMakeCreds(credsPath); err != nil {
		return err
	}
	if err := writeClientConfig(filepath.Join(dir, "client.conf"), plan.clientConfig(secret, initClientCert, initClientKey)); err != nil {
		return err
	}
	if plan.tls {
		if err := writeInitTLS(dir, plan, secret, time.Now()); err != nil {
			return err
		}
	}
	confs := plan.roleConfigs(secret, c)
	for _, h := range plan.hosts() {
		hd := filepath.Join(dir, h)
		if err := os.MkdirAll(hd, 0o700); err != nil {
			return err
		}
		if err := writeClientConfig(filepath.Join(hd, "client.conf"), plan.clientConfig(secret, initHostCert, initHostKey)); err != nil {
			return err
		}
		for _, pr := range plan.procs() {
			if pr.at.host != h {
				continue
			}
			if err := writeJSONFile(filepath.Join(hd, pr.name+".conf"), confs[pr.name]); err != nil {
				return err
			}
		}
	}
	text := plan.startText(dir, c)
	if err := os.WriteFile(filepath.Join(dir, "start.txt"), []byte(text), 0o600); err != nil {
		return err
	}
	_, err = io.WriteString(stdout, text)
	return err
}

// writeInitTLS makes the cluster CA in DIR/tls, the CLI's client
// certificate beside it, each host's certificate in DIR/HOST/tls, and the
// etcd password file on the hosts of metadata members.
func writeInitTLS(dir string, p initPlan, secret string, now time.Time) error {
	if err := os.MkdirAll(filepath.Join(dir, initTLSDir), 0o700); err != nil {
		return err
	}
	ca, caKey, err := loadOrMakeCA(filepath.Join(dir, initTLSDir), "cairn cluster CA", now)
	if err != nil {
		return err
	}
	if err := issueCert(filepath.Join(dir, initClientCert), filepath.Join(dir, initClientKey), ca, caKey, "client", nil, now); err != nil {
		return err
	}
	for _, h := range p.hosts() {
		if err := writeHostCert(dir, h, ca, caKey, now); err != nil {
			return err
		}
		if slices.ContainsFunc(p.metas, func(m initProc) bool { return m.at.host == h }) {
			if err := os.WriteFile(filepath.Join(dir, h, initPasswordFile), []byte(metaPassword(secret)+"\n"), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeHostCert writes DIR/HOST/tls: the CA certificate and HOST's
// certificate and key, signed by ca.
func writeHostCert(dir, host string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) error {
	hd := filepath.Join(dir, host)
	if err := os.MkdirAll(filepath.Join(hd, initTLSDir), 0o700); err != nil {
		return err
	}
	pemCA, err := os.ReadFile(filepath.Join(dir, initCACert))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(hd, initCACert), pemCA, 0o644); err != nil {
		return err
	}
	return issueCert(filepath.Join(hd, initHostCert), filepath.Join(hd, initHostKey), ca, caKey, "host", []string{host}, now)
}

// initAddHost writes DIR/HOST for a host added to the cluster of DIR
// later: its client.conf and, if the cluster has TLS, its certificate
// from the cluster CA and the etcd password file.
func initAddHost(dir, host string, stdout io.Writer) error {
	if _, err := parseHostList("add-host", host, 0); err != nil || strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return fmt.Errorf("%w: --add-host %q: want a host name or address", ErrUsage, host)
	}
	cc, err := loadClientConfig(filepath.Join(dir, "client.conf"))
	if err != nil {
		return fmt.Errorf("%w: --add-host needs the directory cairn init made: %w", ErrUsage, err)
	}
	hd := filepath.Join(dir, host)
	if _, err := os.Stat(hd); err == nil {
		return fmt.Errorf("%w: %s exists already", ErrUsage, hd)
	}
	hc := ClientConfig{Meta: cc.Meta, Secret: cc.Secret, MetaUser: cc.MetaUser}
	if cc.MetaTLS != nil || cc.NodeTLS != nil {
		kp, err := tls.LoadX509KeyPair(filepath.Join(dir, initCACert), filepath.Join(dir, initCAKey))
		if err != nil {
			return fmt.Errorf("the cluster CA: %w", err)
		}
		ca, err := x509.ParseCertificate(kp.Certificate[0])
		key, ok := kp.PrivateKey.(*ecdsa.PrivateKey)
		if err != nil || !ok || !ca.IsCA {
			return fmt.Errorf("%s is not a cairn cluster CA", filepath.Join(dir, initCACert))
		}
		if err := writeHostCert(dir, host, ca, key, time.Now()); err != nil {
			return err
		}
		f := NodeTLSFiles{CA: initCACert, Cert: initHostCert, Key: initHostKey}
		hc.NodeTLS, hc.MetaTLS = &f, &f
		// For a metadata member added on the host (cairn admin meta add);
		// whoever holds the secret of client.conf can derive it anyway.
		if err := os.WriteFile(filepath.Join(hd, initPasswordFile), []byte(metaPassword(cc.Secret)+"\n"), 0o600); err != nil {
			return err
		}
	} else if err := os.Mkdir(hd, 0o700); err != nil {
		return err
	}
	if err := writeClientConfig(filepath.Join(hd, "client.conf"), hc); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "cairn init: %s holds %s's files: copy it to %s and start its processes there with --config client.conf\n",
		hd+string(filepath.Separator), host, host)
	return err
}
