package testcluster_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

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
