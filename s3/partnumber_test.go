package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestGetPartNumber: GET and HEAD ?partNumber= of multipart objects (plain
// and SSE-S3, whose parts are stored larger than their content) and of an
// object uploaded in one piece, as S3 answers them: 206 with the part's
// Content-Range within the object and x-amz-mp-parts-count.
func TestGetPartNumber(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b := aws.String("bkt")
	sizes := []int{5 * mib, 1000}
	var data []byte
	for i, n := range sizes {
		data = append(data, randBytes(uint64(300+i), n)...)
	}
	bounds := []int{0, sizes[0], sizes[0] + sizes[1]}
	// Parts 1 and 3: a part's number is the one it was uploaded as, and
	// there is no part 2.
	nums := []int32{1, 3}
	for _, sse := range []types.ServerSideEncryption{"", types.ServerSideEncryptionAes256} {
		k := aws.String("mp-" + string(sse))
		cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ServerSideEncryption: sse})
		if err != nil {
			t.Fatal(err)
		}
		var parts []types.CompletedPart
		for i := range sizes {
			up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(nums[i]),
				Body: bytes.NewReader(data[bounds[i]:bounds[i+1]])})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(nums[i]), ETag: up.ETag})
		}
		done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range sizes {
			pn := aws.Int32(nums[i])
			what := fmt.Sprintf("%s part %d", *k, nums[i])
			wantRange := fmt.Sprintf("bytes %d-%d/%d", bounds[i], bounds[i+1]-1, len(data))
			got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, PartNumber: pn})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			body, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !bytes.Equal(body, data[bounds[i]:bounds[i+1]]) {
				t.Fatalf("%s: %d bytes that differ from the part's %d", what, len(body), sizes[i])
			}
			if aws.ToString(got.ContentRange) != wantRange || aws.ToInt32(got.PartsCount) != 2 ||
				aws.ToInt64(got.ContentLength) != int64(sizes[i]) || aws.ToString(got.ETag) != aws.ToString(done.ETag) {
				t.Fatalf("%s: Content-Range %q, parts count %d, length %d, ETag %s; want %q, 2, %d, %s", what,
					aws.ToString(got.ContentRange), aws.ToInt32(got.PartsCount), aws.ToInt64(got.ContentLength), aws.ToString(got.ETag),
					wantRange, sizes[i], aws.ToString(done.ETag))
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, PartNumber: pn})
			if err != nil {
				t.Fatalf("HEAD %s: %v", what, err)
			}
			if aws.ToString(h.ContentRange) != wantRange || aws.ToInt32(h.PartsCount) != 2 || aws.ToInt64(h.ContentLength) != int64(sizes[i]) {
				t.Fatalf("HEAD %s: Content-Range %q, parts count %d, length %d", what,
					aws.ToString(h.ContentRange), aws.ToInt32(h.PartsCount), aws.ToInt64(h.ContentLength))
			}
		}
		for _, n := range []int32{2, 4} {
			_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(n)})
			wantCode(t, err, "InvalidPartNumber")
			wantStatus(t, err, 416)
			_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(n)})
			wantStatus(t, err, 416)
		}
	}

	// An object uploaded in one piece is its own part 1.
	k := aws.String("single")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("0123456789")}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(body) != "0123456789" || aws.ToString(got.ContentRange) != "bytes 0-9/10" || got.PartsCount != nil {
		t.Fatalf("single part 1: %q, Content-Range %q, parts count %v", body, aws.ToString(got.ContentRange), got.PartsCount)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(2)})
	wantCode(t, err, "InvalidPartNumber")
	for _, n := range []int32{0, 10001} {
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(n)})
		wantCode(t, err, "InvalidArgument")
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(1), Range: aws.String("bytes=0-1")})
	wantCode(t, err, "InvalidRequest")
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("missing"), PartNumber: aws.Int32(1)})
	wantCode(t, err, "NoSuchKey")
}
