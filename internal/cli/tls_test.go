package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The development certificate names the S3 host and the loopback, is
// signed by the CA and is reused while it names the host; a new host gets
// a new certificate from the same CA.
func TestDevCert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Now()
	cf, kf, err := devCert(dir, "s3", now, "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	c, err := readCert(cf)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := readCert(filepath.Join(dir, devCAFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckSignatureFrom(ca); err != nil {
		t.Fatalf("certificate not signed by the CA: %v", err)
	}
	for _, h := range []string{"10.1.2.3", "127.0.0.1", "localhost", "::1"} {
		if err := c.VerifyHostname(h); err != nil {
			t.Errorf("certificate does not name %s: %v", h, err)
		}
	}
	if cn := c.Subject.CommonName; etcdUserCN(cn) || cn != "cairn s3 10.1.2.3" {
		t.Errorf("CommonName %q, want \"cairn s3 10.1.2.3\" (never an etcd user's name)", cn)
	}
	if c.VerifyHostname("10.9.9.9") == nil {
		t.Error("certificate names 10.9.9.9")
	}
	if st, err := os.Stat(kf); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v, mode %v; want 0600", kf, err, st.Mode())
	}
	before, _ := os.ReadFile(cf)
	if _, _, err := devCert(dir, "s3", now, "10.1.2.3"); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(cf); string(after) != string(before) {
		t.Fatal("the certificate was made again for the same host")
	}
	if _, _, err := devCert(dir, "s3", now, "db.example"); err != nil {
		t.Fatal(err)
	}
	if cf, _, err := devCert(dir, "any", now, "0.0.0.0"); err != nil {
		t.Fatal(err)
	} else if c, _ := readCert(cf); len(c.IPAddresses) != 2 || c.VerifyHostname("127.0.0.1") != nil {
		t.Fatalf("certificate for 0.0.0.0 names %v, want the loopback only", c.IPAddresses)
	}
	c2, _ := readCert(cf)
	ca2, _ := readCert(filepath.Join(dir, devCAFile))
	if c2.VerifyHostname("db.example") != nil || !ca2.Equal(ca) || c2.CheckSignatureFrom(ca) != nil {
		t.Fatal("a new host did not get a certificate from the same CA")
	}
}

func TestTLSFlagsErrors(t *testing.T) {
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	for _, f := range []tlsFlags{
		{cert: s("a.pem"), key: s("")},
		{cert: s(""), key: s("k.pem")},
		{cert: s("a.pem"), key: s("k.pem"), dev: b(true)},
		{cert: s("missing.pem"), key: s("missing-key.pem")},
	} {
		if _, err := f.config(t.TempDir(), "127.0.0.1"); !errors.Is(err, ErrUsage) {
			t.Errorf("%+v: %v, want a usage error", f, err)
		}
	}
	off := tlsFlags{cert: s(""), key: s(""), dev: b(false)}
	if c, err := off.config(t.TempDir(), "127.0.0.1"); c != nil || err != nil {
		t.Fatalf("no TLS flags: %v, %v; want plain HTTP", c, err)
	}
}

func TestPlainWarning(t *testing.T) {
	for addr, warn := range map[string]bool{
		"127.0.0.1:9000": false, "[::1]:9000": false, "localhost:9000": false,
		"0.0.0.0:9000": true, "10.0.0.1:9000": true, "[::]:9000": true,
	} {
		if got := plainWarning(addr); (got != "") != warn || (warn && !strings.Contains(got, "unencrypted")) {
			t.Errorf("plainWarning(%s) = %q, want a warning: %v", addr, got, warn)
		}
	}
}

// The node-protocol client files are checked: all three are needed, and
// each must hold what it names.
func TestNodeTLSFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	n, err := devNodeTLS(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if n.server.ClientCAs == nil || len(n.server.Certificates) != 1 || n.client.RootCAs == nil || len(n.client.Certificates) != 1 {
		t.Fatalf("node TLS %+v: want mutual TLS with the CA", n)
	}
	for name, f := range map[string]NodeTLSFiles{
		"no key":      {CA: n.files.CA, Cert: n.files.Cert},
		"CA is a key": {CA: n.files.Key, Cert: n.files.Cert, Key: n.files.Key},
		"key of CA":   {CA: n.files.CA, Cert: n.files.Cert, Key: filepath.Join(dir, devCAKeyFile)},
		"missing":     {CA: filepath.Join(dir, "nope.pem"), Cert: n.files.Cert, Key: n.files.Key},
	} {
		if _, err := f.clientConfig("node_tls"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := n.files.clientConfig("node_tls"); err != nil {
		t.Fatal(err)
	}
}
