package coldtier_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
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
	etcdmeta "cairn/meta/etcd"
)

// putParts uploads the content of seed and size (coldtier.Stream) to key
// in parts of part bytes (the last one the rest) through S3 in the COLD
// class, with CRC32 checksums if crc is set, and completes the upload.
func putParts(ctx context.Context, c *s3.Client, key string, seed uint64, size, part int64, crc bool, sse types.ServerSideEncryption) error {
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		StorageClass: types.StorageClass("COLD"), ServerSideEncryption: sse}
	if crc {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	up, err := c.CreateMultipartUpload(ctx, in)
	if err != nil {
		return err
	}
	var done []types.CompletedPart
	for n, off := int32(1), int64(0); off < size || n == 1; n, off = n+1, off+part {
		body := coldtier.Stream(seed, size)
		if _, err := body.Seek(off, io.SeekStart); err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(body, part)) // seekable, for the SDK's checksum
		if err != nil {
			return err
		}
		pin := &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(n), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}
		if crc {
			pin.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
		}
		out, err := c.UploadPart(ctx, pin)
		if err != nil {
			return fmt.Errorf("part %d: %w", n, err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	return err
}

// startStill starts a `cairn server` whose export job runs only at a
// start (--cold-every 1h), waits for its first pass, so that objects PUT
// next stay staged until a restart, and creates the tests' bucket.
func startStill(t *testing.T) (*testcluster.Server, *s3.Client, *etcdmeta.Store) {
	t.Helper()
	s := testcluster.StartServer(t, "", "--cold-every", "1h", "--cold-groups", "1", "--cleanup-grace", "1s", "--cleanup-every", "1s")
	c, store := connect(t, s, nil)
	testcluster.WaitFor(t, time.Minute, "the export job's first pass", func() bool {
		p, err := cold.ReadProgress(t.Context(), store)
		return err == nil && p.Passes > 0
	})
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		store.Close()
		t.Fatal(err)
	}
	return s, c, store
}

// TestColdMultipart: an upload in parts in the COLD class is staged at
// Complete and exported by the job, as a single PUT is
// (docs/design/cold.md, "Multipart uploads"). Through S3, before and
// after the export: the same ETag (MD5-of-MD5s "-3") and composite
// checksum, each part by ?partNumber= (GET and HEAD, with the parts'
// count), GetObjectAttributes' part list with each part's checksum, and
// the whole object. After the export the warm parts' shard files are
// deleted. An SSE-S3 upload is exported too and reads back whole, in a
// range across a part's end and by part. An upload in progress lists in
// the COLD class.
func TestColdMultipart(t *testing.T) {
	ctx := t.Context()
	s, c, store := startStill(t)
	defer func() { store.Close() }()
	// An upload in progress lists in the class it was created in.
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("open"),
		StorageClass: types.StorageClass("COLD")})
	if err != nil {
		t.Fatal(err)
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil || len(ups.Uploads) != 1 || ups.Uploads[0].StorageClass != "COLD" {
		t.Fatalf("ListMultipartUploads %+v, %v; want the upload, in COLD", ups, err)
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String("open"), UploadId: up.UploadId})
	if err != nil || lp.StorageClass != "COLD" {
		t.Fatalf("ListParts %+v, %v; want class COLD", lp, err)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("open"), UploadId: up.UploadId}); err != nil {
		t.Fatal(err)
	}
	const seed, part, size = 18, 5 << 20, 10<<20 + 12345
	if err := putParts(ctx, c, "mp", seed, size, part, true, ""); err != nil {
		t.Fatal(err)
	}
	if err := putParts(ctx, c, "enc", seed+1, size, part, false, types.ServerSideEncryptionAes256); err != nil {
		t.Fatal(err)
	}
	staged, err := store.Manifest(ctx, bucket, "mp")
	if err != nil {
		t.Fatal(err)
	}
	if staged.Cold != nil || !cairn.IsColdPolicy(staged.Policy) || staged.Code != "rep-3" || len(staged.Parts) != 3 {
		t.Fatalf("completed as policy %s code %s, %d parts, cold %v; want staged, 3 parts in rep-3", staged.Policy, staged.Code, len(staged.Parts), staged.Cold)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("mp"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	checkParts(t, c, "staged", seed, size, part, head)

	// A restart runs the export job at once.
	s.Restart(t)
	c, store = connect(t, s, store)
	testcluster.WaitFor(t, time.Minute, "the export of the multipart object", func() bool {
		m, err := store.Manifest(ctx, bucket, "mp")
		return err == nil && m.Cold != nil
	})
	checkParts(t, c, "exported", seed, size, part, head)
	testcluster.WaitFor(t, time.Minute, "the export of the SSE-S3 multipart object", func() bool {
		m, err := store.Manifest(ctx, bucket, "enc")
		return err == nil && m.Cold != nil && m.Encryption != nil
	})
	if got, n := get(t, c, "exported", "enc", ""); got != coldtier.Sum(seed+1, size, 0, size) || n != size {
		t.Fatalf("the SSE-S3 multipart object reads %d bytes, or they differ", n)
	}
	// A range across the first part boundary, and part 2 by number.
	if got, n := get(t, c, "exported", "enc", fmt.Sprintf("bytes=%d-%d", part-10, part+9)); got != coldtier.Sum(seed+1, size, part-10, 20) || n != 20 {
		t.Fatalf("the SSE-S3 multipart object: the range across part 1's end reads %d bytes, or they differ", n)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("enc"), PartNumber: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || int64(len(b)) != part || sha256.Sum256(b) != coldtier.Sum(seed+1, size, part, part) {
		t.Fatalf("the SSE-S3 multipart object's part 2: %d bytes, or they differ (%v)", len(b), err)
	}
	testcluster.WaitFor(t, time.Minute, "the deletion of the staged parts' files", func() bool {
		files := shardFiles(t, s, "after the export")
		for _, f := range staged.Files() {
			if files[f] {
				return false
			}
		}
		return true
	})
}

// checkParts reads multipart object "mp" (seed, size, parts of part
// bytes) through S3 whole and by part, and checks its ETag, checksum and
// part list against head, its HEAD when staged.
func checkParts(t *testing.T, c *s3.Client, when string, seed uint64, size, part int64, head *s3.HeadObjectOutput) {
	t.Helper()
	ctx := t.Context()
	if got, n := get(t, c, when, "mp", ""); got != coldtier.Sum(seed, size, 0, size) || n != size {
		t.Fatalf("%s: mp reads %d bytes, or they differ", when, n)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("mp"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.ETag) != aws.ToString(head.ETag) || aws.ToString(h.ChecksumCRC32) != aws.ToString(head.ChecksumCRC32) ||
		aws.ToInt64(h.ContentLength) != size || h.StorageClass != "COLD" {
		t.Fatalf("%s: HEAD ETag %s checksum %s, %d bytes, class %s; want %s %s, %d, COLD", when, aws.ToString(h.ETag),
			aws.ToString(h.ChecksumCRC32), aws.ToInt64(h.ContentLength), h.StorageClass, aws.ToString(head.ETag), aws.ToString(head.ChecksumCRC32), size)
	}
	attrs, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String(bucket), Key: aws.String("mp"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts, types.ObjectAttributesEtag}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.ObjectParts == nil || aws.ToInt32(attrs.ObjectParts.TotalPartsCount) != 3 || len(attrs.ObjectParts.Parts) != 3 {
		t.Fatalf("%s: GetObjectAttributes parts %+v; want 3", when, attrs.ObjectParts)
	}
	for i, n := int32(1), int64(0); n < size; i, n = i+1, n+part {
		pn := min(part, size-n)
		ap := attrs.ObjectParts.Parts[i-1]
		if aws.ToInt32(ap.PartNumber) != i || aws.ToInt64(ap.Size) != pn || aws.ToString(ap.ChecksumCRC32) == "" {
			t.Fatalf("%s: GetObjectAttributes part %d: number %d, %d bytes, checksum %q", when, i, aws.ToInt32(ap.PartNumber), aws.ToInt64(ap.Size), aws.ToString(ap.ChecksumCRC32))
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("mp"), PartNumber: aws.Int32(i)})
		if err != nil {
			t.Fatalf("%s: part %d: %v", when, i, err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			t.Fatalf("%s: part %d: %v", when, i, err)
		}
		if int64(len(b)) != pn || sha256.Sum256(b) != coldtier.Sum(seed, size, n, pn) || aws.ToInt32(out.PartsCount) != 3 {
			t.Fatalf("%s: part %d: %d bytes (want %d), %d parts, or they differ", when, i, len(b), pn, aws.ToInt32(out.PartsCount))
		}
		ph, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("mp"), PartNumber: aws.Int32(i)})
		if err != nil || aws.ToInt64(ph.ContentLength) != pn || aws.ToInt32(ph.PartsCount) != 3 {
			t.Fatalf("%s: HEAD part %d: %+v, %v", when, i, ph, err)
		}
	}
}
