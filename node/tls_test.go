package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn"
)

// testCA is a throwaway certificate authority for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// leaf is a certificate for 127.0.0.1, for servers and clients alike.
func (ca *testCA) leaf(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsHTTPClient is a node HTTP client that trusts roots and presents certs.
func tlsHTTPClient(roots *x509.CertPool, certs ...tls.Certificate) *http.Client {
	hc := NewHTTPClient(DefaultTimeouts)
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots, Certificates: certs}
	return hc
}

// A node with TLS serves only clients with a certificate of the cluster
// CA: one with it is served, one without a certificate, with one of
// another CA or over plain HTTP is refused.
func TestServerMutualTLS(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	cert := ca.leaf(t)
	s, err := NewServer(Config{
		Node: "node1", Secret: testSecret,
		Disks: []DiskConfig{{ID: "node1/disk1", Path: t.TempDir()}},
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert,
			ClientCAs: ca.pool, MinVersion: tls.VersionTLS12},
		HTTPClient: tlsHTTPClient(ca.pool, cert),
		NoScrub:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.Addr(), "https://") {
		t.Fatalf("node with TLS advertises %s, want https://", s.Addr())
	}
	resolve := func(ctx context.Context, disk cairn.DiskID) (string, error) { return s.Addr(), nil }
	stat := func(hc *http.Client) error {
		_, err := NewClient(testSecret, resolve, hc).DiskStat(context.Background(), "node1/disk1")
		return err
	}
	if err := stat(tlsHTTPClient(ca.pool, cert)); err != nil {
		t.Fatalf("client with the cluster certificate: %v", err)
	}
	// Refused in the handshake: the node is unreachable for them.
	for name, hc := range map[string]*http.Client{
		"without a certificate":              tlsHTTPClient(ca.pool),
		"with a certificate of another CA":   tlsHTTPClient(ca.pool, other.leaf(t)),
		"that does not trust the cluster CA": tlsHTTPClient(other.pool, cert),
	} {
		if err := stat(hc); !errors.Is(err, cairn.ErrUnavailable) {
			t.Errorf("client %s: %v, want refused (ErrUnavailable)", name, err)
		}
	}
	plain := func(ctx context.Context, disk cairn.DiskID) (string, error) {
		return "http://" + strings.TrimPrefix(s.Addr(), "https://"), nil
	}
	_, err = NewClient(testSecret, plain, nil).DiskStat(context.Background(), "node1/disk1")
	if !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "400") {
		t.Fatalf("plain HTTP client: %v, want refused with 400", err)
	}
}

func TestServerTLSConfigChecked(t *testing.T) {
	ca := newTestCA(t)
	cert := ca.leaf(t)
	for name, c := range map[string]Config{
		"no client auth": {TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.pool}, HTTPClient: tlsHTTPClient(ca.pool, cert)},
		"no client CAs":  {TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert}, HTTPClient: tlsHTTPClient(ca.pool, cert)},
		"no certificate": {TLS: &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool}, HTTPClient: tlsHTTPClient(ca.pool, cert)},
		"no HTTP client": {TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool}},
	} {
		c.Node, c.Secret, c.Disks = "node1", testSecret, []DiskConfig{{ID: "node1/disk1", Path: t.TempDir()}}
		if _, err := NewServer(c); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
