package testcluster_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn"
	"cairn/internal/testcluster"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
)

// Everything on TLS (issue #15): the cluster of docs/running-a-cluster.md,
// which cairn init sets up with a cluster CA and one certificate per
// host, on real processes (3 metadata members, 4 nodes, 2 gateways on
// three hosts):
//   - S3 through aws-sdk-go-v2 trusting the cluster CA works on both
//     gateways (TestRunningACluster puts and gets through them); without
//     the CA the handshake fails, and plain HTTP is not served;
//   - every node serves mutual TLS: a host's certificate with a signed
//     request is served, a client without a certificate or with one of
//     another CA is refused in the handshake;
//   - every metadata member serves TLS with client certificates and etcd
//     authentication: user cairn with the password of meta-password is
//     served; no certificate, a certificate without a password, a wrong
//     password, or root without one are refused.
func TestAllTLS(t *testing.T) {
	d := testcluster.StartDocumented(t)
	if d.CA == "" {
		t.Fatal("cairn init as documented made no cluster CA")
	}
	pem, err := os.ReadFile(d.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", d.CA)
	}
	ctx := t.Context()
	initDir := filepath.Dir(d.Conf)
	var conf struct {
		Meta   []string `json:"meta"`
		Secret string   `json:"secret"`
	}
	if err := json.Unmarshal([]byte(readFile(t, d.Conf)), &conf); err != nil {
		t.Fatal(err)
	}
	stranger := otherCACert(t)

	// S3.
	for _, gw := range d.Gateways {
		if !strings.HasPrefix(gw, "https://") {
			t.Fatalf("gateway at %s, want https://", gw)
		}
		putGet(t, docS3Client(d, gw), "photos", "tls-"+strings.TrimPrefix(gw, "https://"))
		var unknown x509.UnknownAuthorityError
		if _, err := tlsS3Client(gw, x509.NewCertPool()).ListBuckets(ctx, &s3.ListBucketsInput{}); !errors.As(err, &unknown) {
			t.Fatalf("gateway %s without the cluster CA: %v, want an unknown-authority TLS error", gw, err)
		}
		if resp, err := http.Get("http://" + strings.TrimPrefix(gw, "https://") + "/photos/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("plain HTTP to gateway %s: %s, want 400", gw, resp.Status)
			}
		}
	}

	// Nodes.
	out, err := testcluster.RunCLI(ctx, d.Conf, "admin", "status", "--json")
	if err != nil {
		t.Fatalf("admin status: %v\n%s", err, out)
	}
	var st struct {
		Nodes []cairn.Node `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 4 {
		t.Fatalf("admin status lists %d nodes, want 4", len(st.Nodes))
	}
	for _, n := range st.Nodes {
		if !strings.HasPrefix(n.Addr, "https://") {
			t.Fatalf("node %s at %s, want https://", n.ID, n.Addr)
		}
		host := hostCert(t, initDir, addrHost(n.Addr))
		hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{host}}}}
		nc := node.NewClient(conf.Secret, func(context.Context, cairn.DiskID) (string, error) { return n.Addr, nil }, hc)
		if _, err := nc.DiskStat(ctx, cairn.DiskID(string(n.ID)+"/disk1")); err != nil {
			t.Fatalf("node %s with a host certificate: %v", n.ID, err)
		}
		for what, certs := range map[string][]tls.Certificate{"no client certificate": nil, "another CA's certificate": {stranger}} {
			c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
			resp, err := c.Get(n.Addr + "/v1/health")
			if err == nil {
				resp.Body.Close()
				t.Fatalf("node %s served a client with %s: %s", n.ID, what, resp.Status)
			}
			if !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("node %s, a client with %s: %v, want refused in the TLS handshake", n.ID, what, err)
			}
		}
	}

	// Metadata members.
	if len(conf.Meta) != 3 {
		t.Fatalf("client.conf names %d metadata endpoints, want 3", len(conf.Meta))
	}
	for _, ep := range conf.Meta {
		h := addrHost(ep)
		cert := hostCert(t, initDir, h)
		metaRefusals(t, ep, pool, cert)
		password := strings.TrimSpace(readFile(t, filepath.Join(initDir, h, "meta-password")))
		s, err := etcdmeta.Open(ctx, []string{ep}, etcdmeta.Options{DialTimeout: 5 * time.Second,
			TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}, Username: etcdmeta.User, Password: password})
		if err != nil {
			t.Fatalf("metadata member %s as %s with %s's certificate: %v", ep, etcdmeta.User, h, err)
		}
		if _, err := s.Bucket(ctx, "photos"); err != nil {
			t.Fatalf("metadata member %s: bucket photos: %v", ep, err)
		}
		s.Close()
		stray, err := etcdmeta.Open(ctx, []string{ep}, etcdmeta.Options{DialTimeout: 3 * time.Second,
			TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{stranger}}, Username: etcdmeta.User, Password: password})
		if err == nil {
			stray.Close()
			t.Fatalf("metadata member %s served another CA's certificate with the right password", ep)
		}
	}
}

// hostCert is the certificate and key cairn init made for host in the
// cluster directory dir.
func hostCert(t *testing.T, dir, host string) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(filepath.Join(dir, host, "tls", "host.pem"), filepath.Join(dir, host, "tls", "host-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// otherCACert is a certificate for 127.0.0.1 from a CA that is not the
// cluster's (self-signed), with the CommonName of etcd's user cairn: it
// must not pass for one.
func otherCACert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: etcdmeta.User},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
