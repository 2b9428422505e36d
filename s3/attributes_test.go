package s3

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestGetObjectAttributes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b := aws.String("bkt")
	data := randBytes(70, 3000)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("one"), Body: bytes.NewReader(data),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, StorageClass: types.StorageClassReducedRedundancy}); err != nil {
		t.Fatal(err)
	}
	all := []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts,
		types.ObjectAttributesStorageClass, types.ObjectAttributesObjectSize}
	out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("one"), ObjectAttributes: all})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.ETag) != md5hex(data) || aws.ToInt64(out.ObjectSize) != 3000 || out.StorageClass != types.StorageClassReducedRedundancy ||
		out.Checksum == nil || aws.ToString(out.Checksum.ChecksumCRC32) != b64(crc32Sum(data)) || out.Checksum.ChecksumType != types.ChecksumTypeFullObject ||
		out.ObjectParts != nil || out.LastModified == nil {
		t.Fatalf("attributes of a single-part object: %+v", out)
	}
	// Only what is asked for.
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("one"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}})
	if err != nil || out.ETag != nil || out.Checksum != nil || aws.ToInt64(out.ObjectSize) != 3000 {
		t.Fatalf("ObjectSize alone: %+v %v", out, err)
	}

	// A multipart object's parts, paged.
	k := aws.String("mp")
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{5 * mib, 5 * mib, 10}
	var done []types.CompletedPart
	for i, n := range sizes {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(int32(i + 1)),
			Body: bytes.NewReader(randBytes(uint64(80+i), n)), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag, ChecksumSHA256: up.ChecksumSHA256})
	}
	cm, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil {
		t.Fatal(err)
	}
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: k, ObjectAttributes: all, MaxParts: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	op := out.ObjectParts
	if op == nil || aws.ToInt32(op.TotalPartsCount) != 3 || !aws.ToBool(op.IsTruncated) || len(op.Parts) != 2 || aws.ToString(op.NextPartNumberMarker) != "2" ||
		aws.ToInt64(op.Parts[1].Size) != 5*mib || aws.ToString(op.Parts[0].ChecksumSHA256) != aws.ToString(done[0].ChecksumSHA256) ||
		aws.ToString(out.Checksum.ChecksumSHA256) != aws.ToString(cm.ChecksumSHA256) || !strings.HasSuffix(aws.ToString(out.Checksum.ChecksumSHA256), "-3") ||
		aws.ToString(out.ETag) != strings.Trim(aws.ToString(cm.ETag), `"`) || aws.ToInt64(out.ObjectSize) != 10*mib+10 || out.StorageClass != types.StorageClassStandard {
		t.Fatalf("attributes of a multipart object: %+v parts %+v", out, op)
	}
	out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: k, ObjectAttributes: all, PartNumberMarker: op.NextPartNumberMarker})
	if err != nil || len(out.ObjectParts.Parts) != 1 || aws.ToInt32(out.ObjectParts.Parts[0].PartNumber) != 3 || aws.ToBool(out.ObjectParts.IsTruncated) ||
		aws.ToInt64(out.ObjectParts.Parts[0].Size) != 10 {
		t.Fatalf("second page: %+v %v", out.ObjectParts, err)
	}

	// Errors.
	_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("missing"), ObjectAttributes: all})
	wantCode(t, err, "NoSuchKey")
	_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("nope"), Key: k, ObjectAttributes: all})
	wantCode(t, err, "NoSuchBucket")
	st, body := do(t, e.signed(t, "GET", "/bkt/one?attributes", nil, "", http.Header{"X-Amz-Object-Attributes": {"ETag,Colour"}}))
	if st != http.StatusBadRequest || !strings.Contains(body, "InvalidArgument") {
		t.Fatalf("unknown attribute: %d %s", st, body)
	}
	st, body = do(t, e.signed(t, "GET", "/bkt/one?attributes", nil, "", http.Header{}))
	if st != http.StatusBadRequest || !strings.Contains(body, "InvalidRequest") {
		t.Fatalf("no attributes: %d %s", st, body)
	}
}
