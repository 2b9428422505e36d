package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	etcdmeta "cairn/meta/etcd"
)

// cairn init refuses bad lists, counts and addresses with the reason.
func TestInitValidates(t *testing.T) {
	tests := []struct {
		name                  string
		metas, nodes, gateway string
		disks                 int
		want                  string // in the error
	}{
		{"no meta", "", "h1", "h1", 3, "--meta: no hosts given"},
		{"two members", "h1,h2", "h1", "h1", 3, "names 2 members: want 1, 3 or 5"},
		{"four members", "h1,h2,h3,h4", "h1", "h1", 3, "names 4 members"},
		{"no nodes", "h1", "", "h1", 3, "--nodes: no hosts given"},
		{"no gateways", "h1", "h1", " ", 3, "--gateways: no hosts given"},
		{"zero disks", "h1", "h1", "h1", 0, "--disks 0: a node needs at least one disk"},
		{"bad port", "h1", "h1:99999", "h1", 3, `--nodes: "h1:99999": the port must be a number from 1 to 65535`},
		{"port word", "h1", "h1:web", "h1", 3, `"h1:web": the port must be a number`},
		{"empty entry", "h1", "h1,,h2", "h1", 3, `--nodes: "": no host`},
		{"no host", "h1", ":9100", "h1", 3, `":9100": no host`},
		{"path for host", "h1", "h1/x", "h1", 3, `"h1/x": not a host name or address`},
		{"two nodes on one port", "h1", "h1,h2,h1", "h1", 3, "node1 and node3 would both listen on h1:9100"},
		{"node on a member's peer port", "h1", "h1:9380", "h1", 3, "meta1 (peer) and node1 would both listen on h1:9380"},
		{"gateway on a node's port", "h1", "h1", "h1:9100", 3, "node1 and gateway1 would both listen on h1:9100"},
		{"peer port past 65535", "h1:65535", "h1", "h1", 3, "the peer port (the client port plus one) would be 65536"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := planCluster(tc.metas, tc.nodes, tc.gateway, tc.disks, "/data")
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("planCluster: %v, want a usage error with %q", err, tc.want)
			}
		})
	}
}

// A good plan names the processes in list order, gives the default ports,
// and groups them by host in the order hosts first appear.
func TestInitPlan(t *testing.T) {
	p, err := planCluster("10.0.0.1,10.0.0.2,10.0.0.3", "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.3:9101", "10.0.0.1,[::1]:8000", 2, "/d")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range p.procs() {
		got = append(got, pr.name+"@"+pr.at.String())
	}
	want := []string{"meta1@10.0.0.1:9379", "meta2@10.0.0.2:9379", "meta3@10.0.0.3:9379",
		"node1@10.0.0.1:9100", "node2@10.0.0.2:9100", "node3@10.0.0.3:9100", "node4@10.0.0.3:9101",
		"gateway1@10.0.0.1:9000", "gateway2@[::1]:8000"}
	if !slices.Equal(got, want) {
		t.Fatalf("processes %v, want %v", got, want)
	}
	if h := p.hosts(); !slices.Equal(h, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "::1"}) {
		t.Fatalf("hosts %v", h)
	}
	confs := p.roleConfigs("s3cr3t", s3Creds{AccessKey: "AK", SecretKey: "SK"})
	if c := confs["meta2"]; c["peer-addr"] != "10.0.0.2:9380" || c["data"] != "/d/meta2" ||
		c["initial-cluster"] != "meta1=http://10.0.0.1:9380,meta2=http://10.0.0.2:9380,meta3=http://10.0.0.3:9380" {
		t.Fatalf("meta2's config %v", c)
	}
	if c := confs["meta1"]; c["secret-check"] != secretCheckValue("s3cr3t") || !validSecretCheck(c["secret-check"].(string)) {
		t.Fatalf("meta1's secret check %v", c["secret-check"])
	}
	if c := confs["node4"]; c["addr"] != "10.0.0.3:9101" || !slices.Equal(c["disk"].([]string), []string{"/d/node4/disk1", "/d/node4/disk2"}) || c["secret"] != "s3cr3t" || c["rack"] != "10.0.0.3" {
		t.Fatalf("node4's config %v", c)
	}
	if c := confs["gateway2"]; c["s3-addr"] != "[::1]:8000" || c["access-key"] != "AK" || c["secret-key"] != "SK" {
		t.Fatalf("gateway2's config %v", c)
	}
}

// cairn init writes the files its help names, each process's config is
// accepted by its command's flags, and a second init into the same
// directory is refused.
func TestInitWritesAndRefusesAnExistingCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	out, _, err := run(t, "init", dir, "--meta", "h1", "--nodes", "h1,h2", "--gateways", "h2", "--disks", "2", "--data", "/srv/cairn",
		"--access-key", "ROOTKEY", "--secret-key", "rootsecret")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"On h1 (", "  cairn meta --config meta1.conf\n  cairn node --config node1.conf\n",
		"On h2 (", "  cairn node --config node2.conf\n  cairn gateway --config gateway1.conf\n", "access key  ROOTKEY",
		"the default policy rs-4-2 needs 6"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"client.conf", "s3-credentials", "start.txt", "h1/client.conf", "h1/meta1.conf", "h1/node1.conf", "h2/node2.conf", "h2/gateway1.conf",
		"tls/ca-key.pem", "tls/client-key.pem", "h1/tls/host-key.pem", "h2/tls/host-key.pem", "h1/meta-password"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	cc, err := loadClientConfig(filepath.Join(dir, "h2", "client.conf"))
	if err != nil || !slices.Equal(cc.Meta, []string{"https://h1:9379"}) || len(cc.Secret) != 64 || cc.MetaUser != etcdmeta.User {
		t.Fatalf("client.conf %+v, %v", cc, err)
	}
	// TLS: the files named in h2/client.conf are h2's, relative to it; the
	// host's certificate names the host, is the CA's, and has a
	// CommonName that is no etcd user's.
	if cc.MetaTLS == nil || *cc.MetaTLS != *cc.NodeTLS || cc.MetaTLS.Cert != filepath.Join(dir, "h2", "tls", "host.pem") {
		t.Fatalf("h2/client.conf TLS files %+v", cc.MetaTLS)
	}
	if _, err := cc.metaOptions(); err != nil {
		t.Fatal(err)
	}
	ca, err := readCert(filepath.Join(dir, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"h1", "h2"} {
		c, err := readCert(filepath.Join(dir, h, "tls", "host.pem"))
		if err != nil {
			t.Fatal(err)
		}
		if c.VerifyHostname(h) != nil || c.CheckSignatureFrom(ca) != nil || etcdUserCN(c.Subject.CommonName) {
			t.Fatalf("%s's certificate %q: names %v, signed by the CA: %v", h, c.Subject.CommonName, c.DNSNames, c.CheckSignatureFrom(ca))
		}
	}
	if pw, err := os.ReadFile(filepath.Join(dir, "h1", "meta-password")); err != nil || strings.TrimSpace(string(pw)) != metaPassword(cc.Secret) {
		t.Fatalf("h1/meta-password %q, %v; want the password derived from the secret", pw, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "h2", "meta-password")); err == nil {
		t.Fatal("h2, which runs no member, got the etcd password")
	}
	// Each config sets only flags its command has.
	for conf, define := range map[string]func(*flag.FlagSet){
		"h1/meta1.conf": func(fs *flag.FlagSet) {
			for _, f := range []string{"name", "data", "client-addr", "peer-addr", "initial-cluster", "secret-check", "tls-ca", "tls-cert", "tls-key", "cairn-password-file"} {
				fs.String(f, "", "")
			}
		},
		"h1/node1.conf": func(fs *flag.FlagSet) {
			fs.String("id", "", "")
			fs.String("addr", "", "")
			fs.String("meta", "", "")
			fs.String("rack", "", "")
			fs.Var(&multiFlag{}, "disk", "")
		},
		"h2/gateway1.conf": func(fs *flag.FlagSet) {
			for _, f := range []string{"s3-addr", "access-key", "secret-key", "tls-cert", "tls-key"} {
				fs.String(f, "", "")
			}
		},
	} {
		fs := flag.NewFlagSet(conf, flag.ContinueOnError)
		define(fs)
		if _, err := applyRoleConfig(fs, filepath.Join(dir, conf), clientConfigKeys...); err != nil {
			t.Errorf("%s: %v", conf, err)
		}
		if f := fs.Lookup("tls-cert"); f != nil && f.Value.String() != filepath.Join(dir, filepath.Dir(conf), "tls", "host.pem") {
			t.Errorf("%s: tls-cert %s, want the host's certificate beside the config", conf, f.Value)
		}
	}
	// A host added later gets its certificate and client.conf.
	if out, _, err := run(t, "init", dir, "--add-host", "h9"); err != nil || !strings.Contains(out, "h9") {
		t.Fatalf("init --add-host h9: %v\n%s", err, out)
	}
	if c, err := loadClientConfig(filepath.Join(dir, "h9", "client.conf")); err != nil || c.Secret != cc.Secret || c.MetaTLS == nil {
		t.Fatalf("h9/client.conf %+v, %v", c, err)
	} else if hc, err := readCert(c.MetaTLS.Cert); err != nil || hc.VerifyHostname("h9") != nil || hc.CheckSignatureFrom(ca) != nil {
		t.Fatalf("h9's certificate: %v", err)
	}
	if pw, err := os.ReadFile(filepath.Join(dir, "h9", "meta-password")); err != nil || strings.TrimSpace(string(pw)) != metaPassword(cc.Secret) {
		t.Fatalf("h9/meta-password %q, %v", pw, err)
	}
	if _, _, err := run(t, "init", dir, "--add-host", "h9"); !errors.Is(err, ErrUsage) {
		t.Fatalf("init --add-host h9 again: %v, want refused", err)
	}
	// --no-tls: plain endpoints, no certificates.
	plain := filepath.Join(t.TempDir(), "p")
	if _, _, err := run(t, "init", plain, "--no-tls", "--meta", "h1", "--nodes", "h1", "--gateways", "h1"); err != nil {
		t.Fatal(err)
	}
	if c, err := loadClientConfig(filepath.Join(plain, "client.conf")); err != nil || !slices.Equal(c.Meta, []string{"http://h1:9379"}) || c.MetaTLS != nil || c.MetaUser != "" {
		t.Fatalf("--no-tls client.conf %+v, %v", c, err)
	}
	if _, err := os.Stat(filepath.Join(plain, "tls")); err == nil {
		t.Fatal("--no-tls made certificates")
	}
	if st, err := os.ReadFile(filepath.Join(dir, "start.txt")); err != nil || string(st) != out {
		t.Fatalf("start.txt is not what init printed (%v)", err)
	}

	_, _, err = run(t, "init", dir, "--meta", "h1", "--nodes", "h1", "--gateways", "h1")
	if !errors.Is(err, ErrClusterExists) || !strings.Contains(err.Error(), "holds a cluster already (client.conf)") {
		t.Fatalf("second init: %v, want ErrClusterExists naming client.conf", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes"), nil, 0o600)
	if _, _, err = run(t, "init", other, "--meta", "h1", "--nodes", "h1", "--gateways", "h1"); !errors.Is(err, ErrClusterExists) || !strings.Contains(err.Error(), "notes") {
		t.Fatalf("init into a non-empty directory: %v", err)
	}
	if _, _, err = run(t, "init", "--meta", "h1", "--nodes", "h1", "--gateways", "h1"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "takes 1 argument") {
		t.Fatalf("init without DIR: %v", err)
	}
	if _, _, err = run(t, "init", t.TempDir(), "--meta", "h1", "--nodes", "h1", "--gateways", "h1", "--access-key", "A"); !errors.Is(err, ErrUsage) {
		t.Fatalf("init with half the credentials: %v", err)
	}
}

// --help says what init writes and what goes to which host.
func TestInitHelpTeaches(t *testing.T) {
	out, _, err := run(t, "init", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DIR/client.conf", "DIR/s3-credentials", "DIR/HOST/", "Copy DIR/HOST/ to each HOST", "metadata\nmembers first", "--meta", "--nodes", "--gateways", "TLS"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}

// A role config sets the flags the command line did not, lists only for
// repeatable flags, and names the file and key of a bad entry.
func TestApplyRoleConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(v any) string {
		p := filepath.Join(dir, "x.conf")
		b, _ := json.Marshal(v)
		os.WriteFile(p, b, 0o600)
		return p
	}
	fs := flag.NewFlagSet("cairn node", flag.ContinueOnError)
	id := fs.String("id", "", "")
	addr := fs.String("addr", "", "")
	n := fs.Int("n", 0, "")
	on := fs.Bool("on", false, "")
	var disks multiFlag
	fs.Var(&disks, "disk", "")
	if err := fs.Parse([]string{"--addr", "cmdline:1"}); err != nil {
		t.Fatal(err)
	}
	given, err := applyRoleConfig(fs, write(map[string]any{"id": "node7", "addr": "conf:2", "n": 5, "on": true,
		"disk": []string{"/a", "/b"}, "meta": []string{"ignored"}}), "meta")
	if err != nil {
		t.Fatal(err)
	}
	if *id != "node7" || *addr != "cmdline:1" || *n != 5 || !*on || !slices.Equal(disks, multiFlag{"/a", "/b"}) || !given["addr"] || given["id"] {
		t.Fatalf("id %q addr %q n %d on %v disks %v given %v", *id, *addr, *n, *on, disks, given)
	}
	for _, tc := range []struct {
		conf any
		want string
	}{
		{map[string]any{"rack": "r1"}, "cairn node has no flag --rack"},
		{map[string]any{"config": "x"}, "cairn node has no flag --config"},
		{map[string]any{"id": []string{"a"}}, `"id": a list, but --id takes one value`},
		{map[string]any{"n": "many"}, `"n": parse error`},
		{map[string]any{"id": map[string]any{}}, `want a string, number, boolean or list of strings`},
		{[]string{"id"}, "want a JSON object of flags"},
	} {
		fs := flag.NewFlagSet("cairn node", flag.ContinueOnError)
		fs.String("id", "", "")
		fs.Int("n", 0, "")
		fs.String("config", "", "")
		p := write(tc.conf)
		if _, err := applyRoleConfig(fs, p); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("config %v: %v, want an error naming %s with %q", tc.conf, err, p, tc.want)
		}
	}
}

// The check value is an HMAC of a fixed string: fixed for a secret,
// different for another, and not the secret.
func TestSecretCheckValue(t *testing.T) {
	a, b := secretCheckValue("one secret"), secretCheckValue("another")
	if a != secretCheckValue("one secret") || a == b || strings.Contains(a, "one secret") || !validSecretCheck(a) {
		t.Fatalf("check values %q %q", a, b)
	}
	// HMAC-SHA256 of "cairn secret check v1" keyed with "key", computed
	// with Python's hmac module: the format of docs/design/meta.md.
	if got := secretCheckValue("key"); got != "hmac-sha256:47d7723cc897d657b94621d2ecbe3f10ecb6582b946a4c52f815a1c09e710bd6" {
		t.Fatalf("secretCheckValue(\"key\") = %s", got)
	}
	for _, bad := range []string{"", "hmac-sha256:", "hmac-sha256:zz" + strings.Repeat("0", 62), "sha1:" + strings.Repeat("0", 64), "hmac-sha256:" + strings.Repeat("0", 63)} {
		if validSecretCheck(bad) {
			t.Errorf("validSecretCheck(%q) = true", bad)
		}
	}
}
