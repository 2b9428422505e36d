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
	"github.com/minio/minio-go/v7"
)

func TestUploadPartCopy(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	e.mkBucket(t, "src")
	c := e.root()
	src := randBytes(90, 6*mib+333)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("big"), Body: bytes.NewReader(src)})
	if err != nil {
		t.Fatal(err)
	}
	b, k := aws.String("bkt"), aws.String("composed")
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	copyPart := func(n int32, rng string, mod func(*s3.UploadPartCopyInput)) (*s3.UploadPartCopyOutput, error) {
		in := &s3.UploadPartCopyInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(n), CopySource: aws.String("src/big")}
		if rng != "" {
			in.CopySourceRange = aws.String(rng)
		}
		if mod != nil {
			mod(in)
		}
		return c.UploadPartCopy(ctx, in)
	}
	// Part 1: all of the source, if its ETag still matches; part 2: a
	// range of it; part 3: an uploaded tail.
	p1, err := copyPart(1, "", func(in *s3.UploadPartCopyInput) { in.CopySourceIfMatch = put.ETag })
	if err != nil {
		t.Fatal(err)
	}
	if want := `"` + md5hex(src) + `"`; aws.ToString(p1.CopyPartResult.ETag) != want {
		t.Fatalf("part 1 ETag %s, want %s", aws.ToString(p1.CopyPartResult.ETag), want)
	}
	p2, err := copyPart(2, fmt.Sprintf("bytes=%d-%d", 100, 100+5*mib-1), nil)
	if err != nil {
		t.Fatal(err)
	}
	p3, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(3), Body: strings.NewReader("tail")})
	if err != nil {
		t.Fatal(err)
	}
	// The errors.
	_, err = copyPart(4, "", func(in *s3.UploadPartCopyInput) { in.CopySourceIfMatch = aws.String(`"0123"`) })
	wantCode(t, err, "PreconditionFailed")
	_, err = copyPart(4, "", func(in *s3.UploadPartCopyInput) { in.CopySourceIfNoneMatch = put.ETag })
	wantCode(t, err, "PreconditionFailed")
	_, err = copyPart(4, fmt.Sprintf("bytes=0-%d", len(src)), nil)
	wantCode(t, err, "InvalidArgument")
	_, err = copyPart(4, "bytes=5-", nil)
	wantCode(t, err, "InvalidArgument")
	_, err = copyPart(4, "", func(in *s3.UploadPartCopyInput) { in.CopySource = aws.String("src/missing") })
	wantCode(t, err, "NoSuchKey")
	_, err = copyPart(4, "", func(in *s3.UploadPartCopyInput) { in.CopySource = aws.String("nobucket/x") })
	wantCode(t, err, "NoSuchBucket")
	_, err = copyPart(4, "", func(in *s3.UploadPartCopyInput) { in.UploadId = aws.String("0123456789abcdef0123456789abcdef") })
	wantCode(t, err, "NoSuchUpload")

	parts := []types.CompletedPart{
		{PartNumber: aws.Int32(1), ETag: p1.CopyPartResult.ETag},
		{PartNumber: aws.Int32(2), ETag: p2.CopyPartResult.ETag},
		{PartNumber: aws.Int32(3), ETag: p3.ETag},
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, src...), src[100:100+5*mib]...), "tail"...)
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(get.Body)
	get.Body.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("composed object: %d bytes, want %d: %v", len(got), len(want), err)
	}

	// An upload with a checksum algorithm gets the copied bytes' checksum.
	cr2, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("summed"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("summed"), UploadId: cr2.UploadId, PartNumber: aws.Int32(1),
		CopySource: aws.String("src/big"), CopySourceRange: aws.String("bytes=7-1006")})
	if err != nil || aws.ToString(pc.CopyPartResult.ChecksumCRC32) != b64(crc32Sum(src[7:1007])) {
		t.Fatalf("copied part's checksum: %+v %v", pc, err)
	}

	// minio-go's ComposeObject copies parts the same way.
	mc := e.minio(t)
	if _, err := mc.ComposeObject(ctx, minio.CopyDestOptions{Bucket: "bkt", Object: "minio-composed"},
		minio.CopySrcOptions{Bucket: "src", Object: "big", MatchRange: true, Start: 0, End: 5*mib - 1},
		minio.CopySrcOptions{Bucket: "src", Object: "big", MatchRange: true, Start: 6 * mib, End: 6*mib + 332}); err != nil {
		t.Fatal(err)
	}
	obj, err := mc.GetObject(ctx, "bkt", "minio-composed", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(obj)
	obj.Close()
	if wantM := append(append([]byte{}, src[:5*mib]...), src[6*mib:]...); err != nil || !bytes.Equal(got, wantM) {
		t.Fatalf("minio composed object: %d bytes, want %d: %v", len(got), len(wantM), err)
	}
}
