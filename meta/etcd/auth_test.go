package etcdmeta_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	etcdmeta "cairn/meta/etcd"
)

// testCA is a CA made for a test, with the certificates it signs.
type testCA struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate, PEM
}

func newTestCA(t *testing.T, dir string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{t: t, dir: dir, cert: cert, key: key, file: filepath.Join(dir, "ca.pem")}
	if err := os.WriteFile(ca.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca
}

// issue makes a certificate for 127.0.0.1 with CommonName cn, for server
// and client use, and returns its files.
func (ca *testCA) issue(name, cn string) etcdmeta.TLSFiles {
	t := ca.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := etcdmeta.TLSFiles{CA: ca.file, Cert: filepath.Join(ca.dir, name+".pem"), Key: filepath.Join(ca.dir, name+"-key.pem")}
	if err := os.WriteFile(f.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// client is the TLS configuration of a client that trusts f.CA and
// presents f's certificate (none if f.Cert is empty).
func tlsClient(t *testing.T, f etcdmeta.TLSFiles) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if f.Cert != "" {
		kp, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c
}

// An embedded member with TLS serves only clients with a certificate of
// its CA; with authentication on (EnableAuth), only those that also give
// the cairn user's password. A certificate whose CommonName is not a
// user (every certificate cairn makes) grants nothing by itself; one
// named after a user is that user.
// EnableAuth is idempotent, survives a restart and tells a wrong password.
func TestTLSAndAuth(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	server := ca.issue("meta", "cairn-meta 127.0.0.1")
	client := ca.issue("client", "cairn-client")
	start := func() *etcdmeta.Server {
		srv, err := etcdmeta.StartEmbedded(t.Context(), etcdmeta.EmbedConfig{
			Dir: filepath.Join(dir, "data"), ClientURL: "https://127.0.0.1:0", PeerURL: "https://127.0.0.1:0",
			TickMs: 50, ElectionMs: 500, UnsafeNoFsync: true, TLS: &server,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		return srv
	}
	srv := start()
	ep := srv.Endpoints()
	if !strings.HasPrefix(ep[0], "https://") {
		t.Fatalf("endpoints %v with TLS, want https", ep)
	}
	ctx := t.Context()
	openWith := func(tc *tls.Config, user, password string) (*etcdmeta.Store, error) {
		return etcdmeta.Open(ctx, ep, etcdmeta.Options{TLS: tc, Username: user, Password: password, DialTimeout: 3 * time.Second})
	}
	// TLS alone (authentication not on yet): a client certificate of the
	// CA is needed.
	s, err := openWith(tlsClient(t, client), "", "")
	if err != nil {
		t.Fatalf("open with the client certificate: %v", err)
	}
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "before", Policy: "rep-1"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := openWith(tlsClient(t, etcdmeta.TLSFiles{CA: ca.file}), "", ""); err == nil {
		s.Close()
		t.Fatal("open without a client certificate succeeded")
	}
	other := newTestCA(t, t.TempDir()).issue("stranger", "cairn-client")
	stranger := tlsClient(t, other)
	stranger.RootCAs = tlsClient(t, client).RootCAs // trusts the server, presents another CA's certificate
	if s, err := openWith(stranger, "", ""); err == nil {
		s.Close()
		t.Fatal("open with another CA's client certificate succeeded")
	}

	const password = "0123456789abcdef"
	if err := etcdmeta.EnableAuth(ctx, ep, tlsClient(t, client), password, 0); err != nil {
		t.Fatalf("EnableAuth: %v", err)
	}
	if err := etcdmeta.EnableAuth(ctx, ep, tlsClient(t, client), password, 0); err != nil {
		t.Fatalf("EnableAuth again: %v", err)
	}
	refused := func(what string, tc *tls.Config, user, pw string) {
		t.Helper()
		s, err := openWith(tc, user, pw)
		if err == nil {
			s.Close()
			t.Fatalf("%s: open succeeded, want refused", what)
		}
		if !etcdmeta.IsAuthError(err) {
			t.Fatalf("%s: %v, want etcd's refusal of the credentials", what, err)
		}
	}
	refused("a valid certificate, no password", tlsClient(t, client), "", "")
	refused("a valid certificate, a wrong password", tlsClient(t, client), etcdmeta.User, "wrong")
	refused("a valid certificate, root without a password", tlsClient(t, client), etcdmeta.RootUser, "")
	if err := etcdmeta.EnableAuth(ctx, ep, tlsClient(t, client), "wrong", 0); !errors.Is(err, etcdmeta.ErrAuthMismatch) {
		t.Fatalf("EnableAuth with another password: %v, want ErrAuthMismatch", err)
	}

	// etcd takes a request's client certificate's CommonName as its user
	// when it carries no token: a certificate of the CA named "cairn"
	// needs no password. This is why no certificate cairn makes has a
	// user's CommonName.
	named := ca.issue("named-cairn", etcdmeta.User)
	if s, err := openWith(tlsClient(t, named), "", ""); err != nil {
		t.Fatalf("a certificate with CommonName %q, no password: %v; etcd used to take it as the user (the CommonName rule rests on it)", etcdmeta.User, err)
	} else {
		s.Close()
	}

	s, err = openWith(tlsClient(t, client), etcdmeta.User, password)
	if err != nil {
		t.Fatalf("open as %s: %v", etcdmeta.User, err)
	}
	if _, err := s.Bucket(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	// The cairn user can do what cairn's admin commands do.
	m, err := s.Members(ctx, 3*time.Second)
	if err != nil || m.Up != 1 {
		t.Fatalf("Members as %s: %+v, %v", etcdmeta.User, m, err)
	}
	s.Close()

	// After a restart authentication stays on.
	srv.Close()
	srv = start()
	ep = srv.Endpoints()
	if err := etcdmeta.EnableAuth(ctx, ep, tlsClient(t, client), password, 0); err != nil {
		t.Fatalf("EnableAuth after a restart: %v", err)
	}
	refused("after a restart, no password", tlsClient(t, client), "", "")
	s, err = openWith(tlsClient(t, client), etcdmeta.User, password)
	if err != nil {
		t.Fatalf("open as %s after a restart: %v", etcdmeta.User, err)
	}
	s.Close()
}

func TestEmbedConfigTLSValidate(t *testing.T) {
	f := &etcdmeta.TLSFiles{CA: "ca.pem", Cert: "c.pem", Key: "k.pem"}
	for _, c := range []etcdmeta.EmbedConfig{
		{Dir: "d", ClientURL: "http://127.0.0.1:1", PeerURL: "https://127.0.0.1:2", TLS: f},
		{Dir: "d", ClientURL: "https://127.0.0.1:1", PeerURL: "unix://a:1", TLS: f},
		{Dir: "d", ClientURL: "https://127.0.0.1:1", PeerURL: "http://127.0.0.1:2"},
		{Dir: "d", ClientURL: "https://127.0.0.1:1", PeerURL: "https://127.0.0.1:2", TLS: &etcdmeta.TLSFiles{CA: "ca.pem"}},
	} {
		if err := c.Validate(); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", c, err)
		}
	}
}
