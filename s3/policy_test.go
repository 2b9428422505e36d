package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// withPolicy makes the SDK send x-cairn-policy: p (added before signing,
// so signed).
func withPolicy(p string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("X-Cairn-Policy", p))
	}
}

// wantDenied checks a 403 AccessDenied whose message holds every one of
// parts.
func wantDenied(t *testing.T, err error, parts ...string) {
	t.Helper()
	wantCode(t, err, "AccessDenied")
	var ae smithy.APIError
	errors.As(err, &ae)
	for _, p := range parts {
		if !strings.Contains(ae.ErrorMessage(), p) {
			t.Fatalf("AccessDenied message %q does not say %q", ae.ErrorMessage(), p)
		}
	}
}

// A bucket's (or an object's) policy chosen over S3 with a signed
// x-cairn-policy: root may choose any; a user with an allow-list of its
// own only from it; other users only from the gateway's allow-list (the
// default policy alone here). A refusal is a 403 naming the allowed
// policies; an invalid policy a 400; an unsigned header a 403.
func TestChoosePolicy(t *testing.T) {
	creds := RootCredentials(testAccess, testSecret)
	creds["AKALICE"] = Identity{Name: "alice", AccessKey: "AKALICE", SecretKey: "alice-secret"}
	creds["AKBOB"] = Identity{Name: "bob", AccessKey: "AKBOB", SecretKey: "bob-secret", Policies: []string{"rep-3", "rs-6-3"}}
	e := newEnvWith(t, creds)
	ctx := context.Background()
	alice, bob := e.aws("AKALICE", "alice-secret"), e.aws("AKBOB", "bob-secret")
	mb := func(c *s3.Client, name, policy string) error {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}, withPolicy(policy))
		return err
	}
	policyOf := func(name string) string {
		b, err := e.meta.Bucket(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return b.Policy
	}

	if err := mb(e.root(), "root-rep1", "rep-1"); err != nil {
		t.Fatalf("root choosing rep-1: %v", err)
	}
	if err := mb(alice, "alice-default", "rs-4-2"); err != nil {
		t.Fatalf("alice choosing the default policy: %v", err)
	}
	wantDenied(t, mb(alice, "alice-rep1", "rep-1"), "rep-1", "alice", "rs-4-2")
	if err := mb(bob, "bob-rep3", "rep-3/read=all"); err != nil {
		t.Fatalf("bob choosing rep-3 (read mode apart) from his list: %v", err)
	}
	wantDenied(t, mb(bob, "bob-rs42", "rs-4-2"), "rs-4-2", "rep-3, rs-6-3")
	wantCode(t, mb(alice, "alice-bad", "rs-nonsense"), "InvalidArgument")
	for name, want := range map[string]string{"root-rep1": "rep-1", "alice-default": "rs-4-2", "bob-rep3": "rep-3/read=all"} {
		if got := policyOf(name); got != want {
			t.Errorf("bucket %s has policy %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"alice-rep1", "bob-rs42", "alice-bad"} {
		if _, err := e.meta.Bucket(ctx, name); err == nil {
			t.Errorf("refused bucket %s exists", name)
		}
	}

	// Per object: PutObject and CreateMultipartUpload.
	_, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("alice-default"), Key: aws.String("k"),
		Body: bytes.NewReader([]byte("data"))}, withPolicy("rep-1"))
	wantDenied(t, err, "rep-1", "rs-4-2")
	_, err = bob.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bob-rep3"), Key: aws.String("k")},
		withPolicy("rs-6-3"))
	if err != nil {
		t.Fatalf("bob's upload with rs-6-3: %v", err)
	}
	_, err = bob.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bob-rep3"), Key: aws.String("k")},
		withPolicy("rep-1"))
	wantDenied(t, err, "rep-1")

	// Unsigned: the header is added after signing (a replayed request
	// with one more header), even by root.
	r := e.signed(t, "PUT", "/unsigned", nil, "", nil)
	r.Header.Set("X-Cairn-Policy", "rep-1")
	if st, body := do(t, r); st != http.StatusForbidden || !strings.Contains(body, "must be signed") {
		t.Fatalf("unsigned x-cairn-policy: %d %s", st, body)
	}
	if _, err := e.meta.Bucket(ctx, "unsigned"); err == nil {
		t.Fatal("a bucket was made with an unsigned x-cairn-policy")
	}
}

// Signature V2 signs no x-cairn-* header: a V2 request choosing a policy
// is refused, even root's; without the header it is served.
func TestChoosePolicySigV2(t *testing.T) {
	e := newEnv(t)
	v2 := func(bucket, policy string) *http.Request {
		r, err := http.NewRequest("PUT", e.srv.URL+"/"+bucket, nil)
		if err != nil {
			t.Fatal(err)
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		r.Header.Set("Date", date)
		if policy != "" {
			r.Header.Set("X-Cairn-Policy", policy)
		}
		sig := base64.StdEncoding.EncodeToString(hmacSHA1(testSecret, sigV2StringToSign(r, date, "/"+bucket)))
		r.Header.Set("Authorization", "AWS "+testAccess+":"+sig)
		return r
	}
	if st, body := do(t, v2("v2-plain", "")); st != http.StatusOK {
		t.Fatalf("V2 CreateBucket: %d %s", st, body)
	}
	if st, body := do(t, v2("v2-policy", "rep-1")); st != http.StatusForbidden || !strings.Contains(body, "must be signed") {
		t.Fatalf("V2 CreateBucket with x-cairn-policy: %d %s", st, body)
	}
}

// The gateway's allow-list is validated at start.
func TestAllowedPoliciesValidated(t *testing.T) {
	_, err := New(Config{Objects: nopObjects{}, Meta: nopMeta{}, Credentials: StaticCredentials{}, AllowedPolicies: []string{"rs-4-2", "bogus"}})
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("New with a bogus allowed policy: %v", err)
	}
}
