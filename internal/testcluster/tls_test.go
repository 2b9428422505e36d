package testcluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn"
	"cairn/internal/proc"
	"cairn/internal/testcluster"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
)

// tlsS3Client is an S3 client of url that trusts the CAs in pool (nil: the
// system's).
func tlsS3Client(url string, pool *x509.CertPool) *s3.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(testcluster.TestAccessKey, testcluster.TestSecretKey, ""),
		Retryer:     aws.NopRetryer{},
		HTTPClient:  &http.Client{Transport: tr},
	})
}

// putGet puts an object through c and reads it back.
func putGet(t *testing.T, c *s3.Client, bucket, key string) {
	t.Helper()
	ctx := context.Background()
	body := bytes.Repeat([]byte("cairn over TLS "), 1000)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("PUT %s/%s: %v", bucket, key, err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GET %s/%s: %v", bucket, key, err)
	}
	b, err := io.ReadAll(got.Body)
	got.Body.Close()
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("GET %s/%s: %d bytes, %v; want the %d put", bucket, key, len(b), err, len(body))
	}
}

// cairn server --tls serves S3 over HTTPS only, with a certificate signed by
// a development CA under DIR/tls: a client that trusts the CA puts and gets
// objects, one that does not fails the handshake, and plain HTTP is not
// served. The node protocol is mutual TLS: the CLI and a gateway reach
// the node with the certificate client.conf names, a client without one is
// refused. The CA survives a restart. cairn gateway serves HTTPS with
// --tls-cert/--tls-key.
func TestServerTLS(t *testing.T) {
	dir := t.TempDir()
	srv := testcluster.StartServer(t, dir, "--tls")
	if !strings.HasPrefix(srv.S3, "https://") {
		t.Fatalf("S3 at %s with --tls, want https://", srv.S3)
	}
	caFile := filepath.Join(dir, "tls", "ca.pem")
	if out := srv.Output(); !strings.Contains(out, "AWS_CA_BUNDLE="+caFile) || !strings.Contains(out, "--endpoint-url "+srv.S3) {
		t.Fatalf("the start message does not say how to trust %s:\n%s", caFile, out)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	ctx := context.Background()
	c := tlsS3Client(srv.S3, pool)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("secure")}); err != nil {
		t.Fatal(err)
	}
	putGet(t, c, "secure", "over-tls-a")

	// Over TLS, SSE-C keys are accepted without --allow-insecure-ssec.
	k := newSSEC(9)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("secure"), Key: aws.String("sse-c"),
		Body: strings.NewReader("sealed"), SSECustomerAlgorithm: k.alg, SSECustomerKey: k.key, SSECustomerKeyMD5: k.md5}); err != nil {
		t.Fatalf("SSE-C PUT over TLS: %v", err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("secure"), Key: aws.String("sse-c"),
		SSECustomerAlgorithm: k.alg, SSECustomerKey: k.key, SSECustomerKeyMD5: k.md5})
	if err != nil {
		t.Fatalf("SSE-C GET over TLS: %v", err)
	}
	if b, err := io.ReadAll(got.Body); err != nil || string(b) != "sealed" {
		t.Fatalf("SSE-C GET over TLS: %q, %v", b, err)
	}
	got.Body.Close()

	// A client without the CA fails the handshake: the certificate is
	// not trusted (not a refusal by S3).
	_, err = tlsS3Client(srv.S3, x509.NewCertPool()).ListBuckets(ctx, &s3.ListBucketsInput{})
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("ListBuckets without the CA: %v, want an unknown-authority TLS error", err)
	}
	// Plain HTTP on the HTTPS port is not served.
	resp, err := http.Get("http://" + strings.TrimPrefix(srv.S3, "https://") + "/secure/over-tls-a")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP GET on the HTTPS listener: %s, want 400", resp.Status)
		}
	}

	// The node protocol is mutual TLS: the CLI (its client.conf names
	// the node certificate) is served; a client that trusts the CA and has
	// the secret but no client certificate is refused by the node.
	if ls := srv.CLI(t, "ls", "secure/"); !strings.Contains(ls, "over-tls-a") {
		t.Fatalf("cairn ls over node TLS does not show the object:\n%s", ls)
	}
	nodeURL := srv.Addr(proc.Node)
	if !strings.HasPrefix(nodeURL, "https://") {
		t.Fatalf("node at %s with --tls, want https://", nodeURL)
	}
	health := func(nodeURL string, certs ...tls.Certificate) error {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		req, _ := http.NewRequest("GET", nodeURL+"/v1/health", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}
	nodeCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls", "node.pem"), filepath.Join(dir, "tls", "node-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	// With the certificate, a signed request (node.Client signs each one;
	// docs/design/node-protocol.md "Authentication") is served: a disk's
	// stat, or not_found for a disk the node does not have — an answer,
	// not a refused handshake or 401.
	served := func(nodeURL string) error {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{nodeCert}}}}
		nc := node.NewClient(strings.TrimSpace(readFile(t, filepath.Join(dir, "secret"))),
			func(context.Context, cairn.DiskID) (string, error) { return nodeURL, nil }, hc)
		_, err := nc.DiskStat(t.Context(), "node1/disk1")
		if errors.Is(err, cairn.ErrNotFound) {
			return nil
		}
		return err
	}
	refused := func(nodeURL string) {
		t.Helper()
		if err := served(nodeURL); err != nil {
			t.Fatalf("node %s with the cluster certificate: %v", nodeURL, err)
		}
		if err := health(nodeURL); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("node %s health without a client certificate: %v, want refused in the TLS handshake", nodeURL, err)
		}
	}
	refused(nodeURL)
	// cairn node takes the node_tls of the client.conf it is given (or
	// --tls-ca/--tls-cert/--tls-key) and serves mutual TLS too.
	node2 := testcluster.StartProc(t, "node2", "node", "--config", srv.Conf, "--id", "node2", "--addr", "127.0.0.1:0",
		"--disk", filepath.Join(t.TempDir(), "d1"), "--no-director")
	if u := node2.Addr(proc.Node); !strings.HasPrefix(u, "https://") {
		t.Fatalf("cairn node with node_tls at %s, want https://", u)
	} else {
		refused(u)
	}

	// The metadata store (etcd) is TLS with client certificates and
	// authentication: the CLI above got through with client.conf's
	// meta_tls and user; a client without a certificate is refused in
	// the handshake, one with the certificate but no password or a wrong
	// one by etcd.
	metaRefusals(t, srv.Addr(proc.Meta), pool, nodeCert)
	// A wrong secret is a wrong etcd password: refused, and said so.
	var conf map[string]any
	if err := json.Unmarshal([]byte(readFile(t, srv.Conf)), &conf); err != nil {
		t.Fatal(err)
	}
	conf["secret"] = strings.Repeat("0", 64)
	bad := filepath.Join(t.TempDir(), "bad.conf")
	if b, err := json.Marshal(conf); err != nil || os.WriteFile(bad, b, 0o600) != nil {
		t.Fatal(err)
	}
	if out, err := testcluster.RunCLI(ctx, bad, "ls", "secure/"); err == nil || !strings.Contains(out, "wrong cluster secret") {
		t.Fatalf("cairn ls with another secret: %v\n%s\nwant refused as a wrong cluster secret", err, out)
	}

	// A restart reuses the CA: the same client trust still works.
	srv.Restart(t)
	if again, err := os.ReadFile(caFile); err != nil || !bytes.Equal(again, ca) {
		t.Fatalf("%s after a restart: changed or unreadable (%v)", caFile, err)
	}
	putGet(t, tlsS3Client(srv.S3, pool), "secure", "over-tls-b")

	// A gateway with --tls-cert/--tls-key serves HTTPS with that
	// certificate (here the server's, which names 127.0.0.1).
	gw := testcluster.StartProc(t, "gateway", "gateway", "--config", srv.Conf, "--s3-addr", "127.0.0.1:0",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey,
		"--tls-cert", filepath.Join(dir, "tls", "s3.pem"), "--tls-key", filepath.Join(dir, "tls", "s3-key.pem"))
	url := gw.Addr(proc.S3)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("gateway S3 at %s with --tls-cert, want https://", url)
	}
	putGet(t, tlsS3Client(url, pool), "secure", "over-tls-c")
	if _, err := tlsS3Client(url, nil).ListBuckets(ctx, &s3.ListBucketsInput{}); !errors.As(err, &unknown) {
		t.Fatalf("gateway ListBuckets with the system CAs: %v, want an unknown-authority TLS error", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metaRefusals checks that the etcd at endpoints (https, trusting pool's
// CA) refuses a client without a certificate, and one with cert but no
// password, a wrong one, or etcd's root without one.
func metaRefusals(t *testing.T, endpoints string, pool *x509.CertPool, cert tls.Certificate) {
	t.Helper()
	if !strings.HasPrefix(endpoints, "https://") {
		t.Fatalf("metadata at %s, want https://", endpoints)
	}
	eps := strings.Split(endpoints, ",")
	try := func(certs []tls.Certificate, user, password string) error {
		s, err := etcdmeta.Open(t.Context(), eps, etcdmeta.Options{DialTimeout: 3 * time.Second,
			TLS: &tls.Config{RootCAs: pool, Certificates: certs}, Username: user, Password: password})
		if err == nil {
			s.Close()
		}
		return err
	}
	if err := try(nil, "", ""); err == nil {
		t.Fatal("etcd served a client without a certificate")
	}
	for _, c := range []struct{ what, user, password string }{
		{"no password", "", ""},
		{"a wrong password", etcdmeta.User, "not-the-password"},
		{"root without a password", etcdmeta.RootUser, ""},
	} {
		if err := try([]tls.Certificate{cert}, c.user, c.password); !etcdmeta.IsAuthError(err) {
			t.Fatalf("etcd with the cluster certificate and %s: %v, want refused by etcd's authentication", c.what, err)
		}
	}
}
