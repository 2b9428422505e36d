package testcluster_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"cairn/internal/testcluster"
)

// cairn server serves S3: an SDK client puts and gets an object through the
// real process, the ETag is the MD5, and a wrong secret is refused.
func TestServerS3(t *testing.T) {
	srv := testcluster.StartServer(t, "")
	client := func(secret string) *s3.Client {
		return s3.New(s3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.S3), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, secret, ""),
			Retryer:     aws.NopRetryer{},
		})
	}
	c := client(srv.SecretKey)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	path, _ := writeFile(t, t.TempDir(), "obj", 20<<20, 7)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, io.SeekStart)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("2026/a b/obj"), Body: f})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"` + hex.EncodeToString(h.Sum(nil)) + `"`; aws.ToString(put.ETag) != want {
		t.Fatalf("ETag %s, want %s", aws.ToString(put.ETag), want)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("2026/a b/obj")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "got")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, got.Body); err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	out.Close()
	if !sameFile(t, path, out.Name()) {
		t.Fatal("GET returned different bytes")
	}
	// The CLI sees the same object.
	if ls := srv.CLI(t, "ls", "photos/2026/"); !strings.Contains(ls, "2026/a b/obj") {
		t.Fatalf("cairn ls does not show the S3 object:\n%s", ls)
	}
	_, err = client("wrong-secret-key").ListBuckets(ctx, &s3.ListBucketsInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "SignatureDoesNotMatch" {
		t.Fatalf("wrong secret: %v, want SignatureDoesNotMatch", err)
	}
}

// Users from --users: each sees only its own buckets; a user added to the
// file works after SIGHUP without a restart.
func TestServerS3Users(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users.json")
	write := func(body string) {
		if err := os.WriteFile(users, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"users":[{"name":"alice","access_key":"ALICEKEY","secret_key":"alice-secret"}]}`)
	srv := testcluster.StartServer(t, "", "--users", users)
	as := func(ak, sk string) *s3.Client {
		return s3.New(s3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.S3), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(ak, sk, ""), Retryer: aws.NopRetryer{},
		})
	}
	ctx := context.Background()
	alice, bob := as("ALICEKEY", "alice-secret"), as("BOBKEY", "bob-secret")
	if _, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alices")}); err != nil {
		t.Fatal(err)
	}
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return fmt.Sprint(err)
	}
	if _, err := bob.ListBuckets(ctx, &s3.ListBucketsInput{}); code(err) != "InvalidAccessKeyId" {
		t.Fatalf("bob before he is added: %v, want InvalidAccessKeyId", err)
	}
	write(`{"users":[{"name":"alice","access_key":"ALICEKEY","secret_key":"alice-secret"},{"name":"bob","access_key":"BOBKEY","secret_key":"bob-secret"}]}`)
	if err := srv.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := bob.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob after SIGHUP: %v", err)
		}
		// real time: a retry pause while the real server reloads its users.
		time.Sleep(50 * time.Millisecond)
	}
	out, err := bob.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(out.Buckets) != 0 {
		t.Fatalf("bob sees %v (%v), want no buckets", out, err)
	}
	_, err = bob.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("alices"), Key: aws.String("x"), Body: strings.NewReader("x")})
	if code(err) != "AccessDenied" {
		t.Fatalf("bob writing alice's bucket: %v, want AccessDenied", err)
	}
	root := as(srv.AccessKey, srv.SecretKey)
	all, err := root.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(all.Buckets) != 1 {
		t.Fatalf("root sees %v (%v), want alice's bucket", all, err)
	}
}
