package coldtier_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/cold"
	"cairn/internal/testcluster"
	"cairn/internal/testcluster/coldtier"
)

// TestColdMultipartStaysWarm pins what a multipart upload in the COLD
// class does today (docs/design/cold.md, "Multipart uploads"): it
// completes and reads back byte-exact, whole and by part number, stored in
// the warm tier with the staging policy (rep-3), never queued for the
// export job — which leaves it alone while it exports a single-part object
// of the same bucket.
func TestColdMultipartStaysWarm(t *testing.T) {
	ctx := t.Context()
	s := testcluster.StartServer(t, "", "--cold-every", "200ms", "--cold-groups", "1")
	c, store := connect(t, s, nil)
	defer store.Close()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp"),
		StorageClass: types.StorageClass("COLD")})
	if err != nil {
		t.Fatal(err)
	}
	const seed, part, size = 18, 5 << 20, 5<<20 + 12345
	var done []types.CompletedPart
	for n, off := int32(1), int64(0); off < size; n, off = n+1, off+part {
		body := coldtier.Stream(seed, size)
		if _, err := body.Seek(off, 0); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(io.LimitReader(body, part))
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("mp"), UploadId: up.UploadId,
			PartNumber: aws.Int32(n), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))})
		if err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("mp"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	// A single-part object beside it is exported; the multipart one is not.
	one := coldtier.Stream(7, 300<<10)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("one"), Body: one,
		ContentLength: aws.Int64(300 << 10), StorageClass: types.StorageClass("COLD")}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, time.Minute, "the export of the single-part object", func() bool {
		m, err := store.Manifest(ctx, bucket, "one")
		return err == nil && m.Cold != nil
	})
	m, err := store.Manifest(ctx, bucket, "mp")
	if err != nil {
		t.Fatal(err)
	}
	if m.Cold != nil || cairn.IsColdPolicy(m.Policy) || m.Policy != "rep-3" || len(m.Parts) != 2 {
		t.Fatalf("the multipart object: policy %s, %d parts, cold %v (want warm rep-3, 2 parts)", m.Policy, len(m.Parts), m.Cold)
	}
	if q, _, err := store.ColdPage(ctx, "staged/", "", 10); err != nil || len(q) != 0 {
		t.Fatalf("staging queue %v, %v (want empty)", q, err)
	}
	if p, err := cold.ReadProgress(ctx, store); err != nil || p.Exported != 1 {
		t.Fatalf("export progress %+v, %v (want the single-part object alone)", p, err)
	}
	if got, n := get(t, c, "warm", "mp", ""); got != coldtier.Sum(seed, size, 0, size) || n != size {
		t.Fatalf("the multipart object reads %d bytes, or they differ", n)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("mp"), PartNumber: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if aws.ToInt32(out.PartsCount) != 2 || aws.ToInt64(out.ContentLength) != size-part {
		t.Fatalf("part 2: %d parts, %d bytes", aws.ToInt32(out.PartsCount), aws.ToInt64(out.ContentLength))
	}
}
