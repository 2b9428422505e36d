package testcluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// s3AsCA returns an SDK client of the gateway at url signing as ak/sk,
// trusting the CA certificate in file ca ("": the system's CAs).
func s3AsCA(ca, url, ak, sk string) *s3.Client {
	hc := &http.Client{Timeout: time.Minute}
	if ca != "" {
		pool := x509.NewCertPool()
		if b, err := os.ReadFile(ca); err != nil || !pool.AppendCertsFromPEM(b) {
			panic(fmt.Sprintf("CA %s: %v", ca, err)) // a test's own file
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		hc.Transport = tr
	}
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(ak, sk, ""),
		Retryer:     aws.NopRetryer{},
		HTTPClient:  hc,
	})
}

// s3ErrCode is the S3 error code of err ("" for none, err's text if it
// is not an S3 error).
func s3ErrCode(err error) string {
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return err.Error()
}

var keysLine = regexp.MustCompile(`access key: (\S+)\nsecret key: (\S+)`)

// parseKeys finds the keys `cairn admin user add|rotate` printed.
func parseKeys(t *testing.T, out string) (ak, sk string) {
	t.Helper()
	m := keysLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no keys in:\n%s", out)
	}
	return m[1], m[2]
}

// usersSettle bounds how long a change takes to reach every gateway: the
// gateways' --users-refresh (1 s by default) plus a margin for a loaded
// machine.
const usersSettle = 20 * time.Second

// eventually polls f until it returns nil or usersSettle passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(usersSettle)
	for {
		err := f()
		if err == nil {
			t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after %v", what, err, usersSettle)
		}
		// real time: gateways in other processes re-read the users on their own clock.
		time.Sleep(100 * time.Millisecond)
	}
}

// checkSharedUsers is the shared-users step of issue #24, reusable by any
// test with two gateways of one cluster: admin runs `cairn admin user
// ARGS...` against the cluster (the administrator's path: the metadata
// store, docs/design/s3.md "Users and keys") and returns its output; gw
// are the two gateways' S3 URLs; rootAK/rootSK a root identity both
// serve. A user added by admin works through both gateways without a
// restart; its allow-list (the cluster's, then its own), a key rotation
// and its removal reach both.
// The bucket names start with prefix.
func checkSharedUsers(t *testing.T, admin func(args ...string) (string, error), gw [2]string, rootAK, rootSK, prefix, ca string) {
	t.Helper()
	ctx := context.Background()
	must := func(args ...string) string {
		t.Helper()
		out, err := admin(args...)
		if err != nil {
			t.Fatalf("cairn admin %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	name := prefix + "-user"
	ak, sk := parseKeys(t, must("user", "add", name))
	bucket, data := prefix+"-bkt", []byte("shared users: "+prefix)

	// Through the other gateway: the user appears there too.
	other := s3AsCA(ca, gw[1], ak, sk)
	eventually(t, "the new user on the second gateway", func() error {
		_, err := other.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		return err
	})
	if _, err := other.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	first := s3AsCA(ca, gw[0], ak, sk)
	eventually(t, "the new user on the first gateway", func() error {
		out, err := first.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		got, err := io.ReadAll(out.Body)
		if err == nil && !bytes.Equal(got, data) {
			t.Fatalf("read %q through the first gateway, wrote %q", got, data)
		}
		return err
	})
	root := s3AsCA(ca, gw[0], rootAK, rootSK)
	if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")}); err != nil {
		t.Fatalf("root reading the user's object: %v", err)
	}

	// The allow-list: rep-2 is not the user's until set-policy says so,
	// and then on both gateways.
	mbPolicy := func(c *s3.Client, b, p string) error {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}, func(o *s3.Options) {
			o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("X-Cairn-Policy", p))
		})
		return err
	}
	if err := mbPolicy(first, bucket+"-rep2", "rep-2"); s3ErrCode(err) != "AccessDenied" || !strings.Contains(err.Error(), "rs-4-2") {
		t.Fatalf("choosing rep-2 without an allow-list: %v, want AccessDenied naming rs-4-2", err)
	}
	// The cluster's list reaches the user (it has none of its own) on the
	// other gateway; cleared, rep-2 is refused again.
	must("user", "default-policy", "rep-2,rs-4-2")
	eventually(t, "the cluster's allow-list on gateway 2", func() error {
		return mbPolicy(other, bucket+"-dflt", "rep-2")
	})
	must("user", "default-policy", "--clear")
	eventually(t, "the cluster's allow-list cleared on gateway 2", func() error {
		if err := mbPolicy(other, bucket+"-dflt2", "rep-2"); s3ErrCode(err) != "AccessDenied" {
			return fmt.Errorf("choosing rep-2 after --clear: %v", err)
		}
		return nil
	})
	must("user", "set-policy", name, "rep-2,rs-4-2")
	for i, g := range gw {
		eventually(t, fmt.Sprintf("the allow-list on gateway %d", i+1), func() error {
			return mbPolicy(s3AsCA(ca, g, ak, sk), fmt.Sprintf("%s-rep2-%d", bucket, i), "rep-2")
		})
	}

	// Rotation: the new keys work on both gateways, the old ones on none.
	nak, nsk := parseKeys(t, must("user", "rotate", name))
	for i, g := range gw {
		eventually(t, fmt.Sprintf("the old keys refused by gateway %d", i+1), func() error {
			_, err := s3AsCA(ca, g, ak, sk).ListBuckets(ctx, &s3.ListBucketsInput{})
			if s3ErrCode(err) != "InvalidAccessKeyId" {
				return fmt.Errorf("the old keys: %v", err)
			}
			return nil
		})
		eventually(t, fmt.Sprintf("the new keys on gateway %d", i+1), func() error {
			_, err := s3AsCA(ca, g, nak, nsk).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")})
			return err
		})
	}
	if out := must("user", "list"); !strings.Contains(out, nak) || strings.Contains(out, nsk) || strings.Contains(out, ak) {
		t.Fatalf("user list after rotation:\n%s", out)
	}

	// Removal: the keys stop working on every gateway.
	must("user", "rm", name)
	for i, g := range gw {
		eventually(t, fmt.Sprintf("the removed user refused by gateway %d", i+1), func() error {
			_, err := s3AsCA(ca, g, nak, nsk).ListBuckets(ctx, &s3.ListBucketsInput{})
			if s3ErrCode(err) != "InvalidAccessKeyId" {
				return fmt.Errorf("the removed user's keys: %v", err)
			}
			return nil
		})
	}
	if _, err := root.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("the removed user's bucket: %v", err)
	}
}

// TestSharedUsers: two `cairn gateway` processes of one cluster share the
// users of the metadata store (issue #24). The second gateway has no root
// flags at all: its root is a user of the store too.
func TestSharedUsers(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{Nodes: 4, DisksPerNode: 2})
	out := c.CLI(t, "admin", "user", "add", "admin", "--root")
	rak, rsk := parseKeys(t, out)
	g1 := testcluster.StartProc(t, "gateway", "gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey)
	g2 := testcluster.StartProc(t, "gateway", "gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0")
	gws := [2]string{g1.Addr(proc.S3), g2.Addr(proc.S3)}
	t.Run("store", func(t *testing.T) {
		admin := func(args ...string) (string, error) {
			return c.TryCLI(context.Background(), append([]string{"admin"}, args...)...)
		}
		checkSharedUsers(t, admin, gws, rak, rsk, "store", "")
	})
	// The admin path of the first gateway, signed by the root of its flags
	// (no client.conf: the CLI holds no cluster secret); the user is used
	// through the second.
	t.Run("gateway", func(t *testing.T) {
		checkSharedUsers(t, gatewayAdmin(t, "", gws[0], testcluster.TestAccessKey, testcluster.TestSecretKey), gws, rak, rsk, "gw", "")
	})
	// Only root may use the admin path.
	_, err := gatewayAdmin(t, "", gws[1], "nobody-key", "nobody-secret")("user", "list")
	if err == nil {
		t.Fatal("the admin path served an unknown access key")
	}
}

// gatewayAdmin returns a checkSharedUsers admin that runs `cairn admin
// ARGS... --endpoint URL` signed as root ak/sk, without a cluster config,
// trusting the CA certificate in file ca ($AWS_CA_BUNDLE) unless "".
func gatewayAdmin(t *testing.T, ca, url, ak, sk string) func(args ...string) (string, error) {
	bin := testcluster.Binary(t)
	return func(args ...string) (string, error) {
		full := append([]string{"admin", args[0], args[1], "--endpoint", url, "--root-access-key", ak, "--root-secret-key", sk}, args[2:]...)
		cmd := exec.Command(bin, full...)
		cmd.Env = append(os.Environ(), "CAIRN_CONFIG=", "AWS_CA_BUNDLE="+ca)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}
