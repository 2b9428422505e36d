package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/minio/minio-go/v7"
)

// TestConditionalPut: If-None-Match: * and If-Match on PutObject through a
// real gateway, as AWS S3 answers them.
func TestConditionalPut(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("k")
	put := func(body string, in s3.PutObjectInput) (*s3.PutObjectOutput, error) {
		in.Bucket, in.Key, in.Body = b, k, strings.NewReader(body)
		return c.PutObject(ctx, &in)
	}
	first, err := put("one", s3.PutObjectInput{IfNoneMatch: aws.String("*")})
	if err != nil {
		t.Fatalf("If-None-Match: * on a new key: %v", err)
	}
	_, err = put("two", s3.PutObjectInput{IfNoneMatch: aws.String("*")})
	wantCode(t, err, "PreconditionFailed")
	wantStatus(t, err, 412)
	_, err = put("two", s3.PutObjectInput{IfMatch: aws.String(`"00000000000000000000000000000000"`)})
	wantCode(t, err, "PreconditionFailed")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("missing"), Body: strings.NewReader("x"), IfMatch: first.ETag})
	wantCode(t, err, "NoSuchKey") // AWS: If-Match on a missing key is 404
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("nobkt"), Key: k, Body: strings.NewReader("x"), IfMatch: first.ETag})
	wantCode(t, err, "NoSuchBucket")
	second, err := put("two", s3.PutObjectInput{IfMatch: first.ETag})
	if err != nil {
		t.Fatalf("If-Match with the current ETag: %v", err)
	}
	// The old ETag no longer matches: a lost update is refused.
	_, err = put("three", s3.PutObjectInput{IfMatch: first.ETag})
	wantCode(t, err, "PreconditionFailed")
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	if aws.ToString(got.ETag) != aws.ToString(second.ETag) {
		t.Fatalf("ETag %s, want %s: a refused write replaced the object", aws.ToString(got.ETag), aws.ToString(second.ETag))
	}
	// Refused writes leave no shards: only k's remain, a small object's
	// 3 copies.
	if n := e.files(t); n != 3 {
		t.Fatalf("%d shard files, want 3", n)
	}
}

// TestConditionalPutRace: N concurrent If-None-Match: * PUTs of one key,
// through the gateway: exactly one creates the object, every other one is
// refused with 412, and the object is the winner's.
func TestConditionalPutRace(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	etags := make([]string, n)
	for i := range n {
		wg.Go(func() {
			out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
				Body: strings.NewReader(fmt.Sprintf("writer %d", i)), IfNoneMatch: aws.String("*")})
			errs[i] = err
			if err == nil {
				etags[i] = aws.ToString(out.ETag)
			}
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both created the key", winner, i)
			}
			winner = i
			continue
		}
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
			t.Fatalf("writer %d: %v, want PreconditionFailed", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer created the key")
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.ETag) != etags[winner] {
		t.Fatalf("object ETag %s, the winner's is %s", aws.ToString(h.ETag), etags[winner])
	}
}

// TestConditionalComplete: If-None-Match: * and If-Match on
// CompleteMultipartUpload. A refused completion leaves the upload in
// progress, so it can complete once the condition holds.
func TestConditionalComplete(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("k")
	upload := func(body string) (*string, []types.CompletedPart) { return onePartUpload(t, c, b, k, body) }
	complete := func(id *string, parts []types.CompletedPart, in s3.CompleteMultipartUploadInput) (*s3.CompleteMultipartUploadOutput, error) {
		return completeUpload(c, b, k, id, parts, in)
	}
	id, parts := upload("multipart one")
	_, err := complete(id, parts, s3.CompleteMultipartUploadInput{IfMatch: aws.String(`"0123"`)})
	wantCode(t, err, "NoSuchKey") // If-Match on a missing key
	first, err := complete(id, parts, s3.CompleteMultipartUploadInput{IfNoneMatch: aws.String("*")})
	if err != nil {
		t.Fatalf("If-None-Match: * on a new key: %v", err)
	}

	id, parts = upload("multipart two")
	_, err = complete(id, parts, s3.CompleteMultipartUploadInput{IfNoneMatch: aws.String("*")})
	wantCode(t, err, "PreconditionFailed")
	_, err = complete(id, parts, s3.CompleteMultipartUploadInput{IfMatch: aws.String(`"0123"`)})
	wantCode(t, err, "PreconditionFailed")
	_, err = complete(id, parts, s3.CompleteMultipartUploadInput{IfNoneMatch: aws.String(`"0123"`)})
	wantCode(t, err, "NotImplemented")
	// The refused completions left the upload in progress.
	second, err := complete(id, parts, s3.CompleteMultipartUploadInput{IfMatch: first.ETag})
	if err != nil {
		t.Fatalf("If-Match with the current ETag: %v", err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.ETag) != aws.ToString(second.ETag) {
		t.Fatalf("ETag %s, want the second upload's %s", aws.ToString(h.ETag), aws.ToString(second.ETag))
	}
	// CreateMultipartUpload and CopyObject do not check conditions: they
	// refuse the headers rather than ignore them.
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k}, func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("If-None-Match", "*"))
	})
	wantCode(t, err, "NotImplemented")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("bkt/k"), IfNoneMatch: aws.String("*")})
	wantCode(t, err, "NotImplemented")
}

// TestConditionalMinio: minio-go's conditional PUT options (If-None-Match
// and If-Match headers) and GetObjectOptions.PartNumber.
func TestConditionalMinio(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	mc := e.minio(t)
	put := func(body string, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
		return mc.PutObject(ctx, "bkt", "k", strings.NewReader(body), int64(len(body)), opts)
	}
	code := func(err error) string { return minio.ToErrorResponse(err).Code }
	var create minio.PutObjectOptions
	create.SetMatchETagExcept("*")
	first, err := put("one", create)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := put("two", create); code(err) != "PreconditionFailed" {
		t.Fatalf("create of an existing key: %v, want PreconditionFailed", err)
	}
	var stale, current, exists minio.PutObjectOptions
	stale.SetMatchETag("00000000000000000000000000000000")
	current.SetMatchETag(first.ETag)
	exists.SetMatchETag("*")
	if _, err := put("two", stale); code(err) != "PreconditionFailed" {
		t.Fatalf("If-Match of another ETag: %v, want PreconditionFailed", err)
	}
	if _, err := put("two", current); err != nil {
		t.Fatalf("If-Match of the current ETag: %v", err)
	}
	if _, err := put("three", exists); err != nil {
		t.Fatalf("If-Match: * of an existing key: %v", err)
	}
	if _, err := mc.PutObject(ctx, "bkt", "missing", strings.NewReader("x"), 1, exists); code(err) != "NoSuchKey" {
		t.Fatalf("If-Match: * of a missing key: %v, want NoSuchKey", err)
	}
	obj, err := mc.GetObject(ctx, "bkt", "k", minio.GetObjectOptions{PartNumber: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if body, err := io.ReadAll(obj); err != nil || string(body) != "three" {
		t.Fatalf("part 1 of a single-part object: %q, %v", body, err)
	}
}

// TestConditionalCompleteRace: N uploads of one key completed at once,
// each with If-None-Match: *: exactly one becomes the object, the others
// get 412 and stay in progress.
func TestConditionalCompleteRace(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("k")
	const n = 6
	ids := make([]*string, n)
	parts := make([][]types.CompletedPart, n)
	for i := range n {
		ids[i], parts[i] = onePartUpload(t, c, b, k, fmt.Sprintf("upload %d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = completeUpload(c, b, k, ids[i], parts[i], s3.CompleteMultipartUploadInput{IfNoneMatch: aws.String("*")})
		})
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		if err == nil {
			wins++
			continue
		}
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
			t.Fatalf("upload %d: %v, want PreconditionFailed", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d completions won, want exactly 1", wins)
	}
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
	if err != nil || len(lu.Uploads) != n-1 {
		t.Fatalf("uploads in progress: %d, %v; want the %d refused ones", len(lu.Uploads), err, n-1)
	}
}
