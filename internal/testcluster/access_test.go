package testcluster_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn/internal/testcluster"
)

// TestServerBucketPolicy is issue #16's acceptance on a real `cairn
// server`: a bucket policy granting anonymous s3:GetObject on public/*
// lets a plain unsigned GET (what curl sends) read public/x and refuses
// private/x; bob, a user the policy names, writes shared/. The policy,
// kept in etcd, still holds after the server restarts.
func TestServerBucketPolicy(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(users, []byte(`{"users":[{"name":"alice","access_key":"ALICEKEY","secret_key":"alice-secret"},`+
		`{"name":"bob","access_key":"BOBKEY","secret_key":"bob-secret"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testcluster.StartServer(t, "", "--users", users)
	as := func(ak, sk string) *s3.Client {
		return s3.New(s3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.S3), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(ak, sk, ""), Retryer: aws.NopRetryer{},
		})
	}
	ctx := context.Background()
	alice := as("ALICEKEY", "alice-secret")
	if _, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("www")}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"public/x", "private/x"} {
		if _, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("www"), Key: aws.String(k), Body: strings.NewReader("body of " + k)}); err != nil {
			t.Fatal(err)
		}
	}
	anon := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.S3 + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, _ := anon("/www/public/x"); st != http.StatusForbidden {
		t.Fatalf("anonymous GET before the policy: %d", st)
	}
	policy := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::www/public/*"},
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::www/shared/*"}]}`
	if _, err := alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("www"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		if st, body := anon("/www/public/x"); st != http.StatusOK || body != "body of public/x" {
			t.Fatalf("anonymous GET of public/x: %d %q", st, body)
		}
		if st, body := anon("/www/private/x"); st != http.StatusForbidden || !strings.Contains(body, "<Code>AccessDenied</Code>") {
			t.Fatalf("anonymous GET of private/x: %d %q", st, body)
		}
	}
	check()
	bob := as("BOBKEY", "bob-secret")
	if _, err := bob.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("www"), Key: aws.String("shared/b"), Body: strings.NewReader("b")}); err != nil {
		t.Fatalf("bob writing where the policy lets him: %v", err)
	}
	if _, err := bob.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("www"), Key: aws.String("public/b"), Body: strings.NewReader("b"),
		ACL: types.ObjectCannedACLPublicRead}); err == nil {
		t.Fatal("bob wrote outside shared/")
	}

	srv.Restart(t)
	alice = as("ALICEKEY", "alice-secret")
	check()
	if _, err := alice.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String("www")}); err != nil {
		t.Fatal(err)
	}
	if st, _ := anon("/www/public/x"); st != http.StatusForbidden {
		t.Fatalf("anonymous GET after the policy was deleted: %d", st)
	}
}
