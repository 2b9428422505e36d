package s3

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
)

// TestDeleteBucketTakesUploads: a bucket deleted with a multipart upload
// in progress takes the upload with it (S3 deletes such a bucket too), so
// another user who re-creates the name can neither list, read, extend nor
// complete anything of the first owner's, and no shard file of it is left.
func TestDeleteBucketTakesUploads(t *testing.T) {
	e := newEnvWith(t, StaticCredentials{
		"AKIAALICE": {Name: "alice", AccessKey: "AKIAALICE", SecretKey: "alice-secret"},
		"AKIABOB":   {Name: "bob", AccessKey: "AKIABOB", SecretKey: "bob-secret"},
	})
	ctx := context.Background()
	alice, bob := e.aws("AKIAALICE", "alice-secret"), e.aws("AKIABOB", "bob-secret")
	const name, key = "reused-name", "secret.bin"
	data := randBytes(15, 3*stripe+100)

	_, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := alice.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(name), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	part, err := alice.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(name), Key: aws.String(key),
		UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.files(t); n == 0 {
		t.Fatal("the part stored no shard files")
	}

	if _, err := alice.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("DeleteBucket with an upload in progress: %v", err)
	}
	if n := e.files(t); n != 0 {
		t.Fatalf("%d shard files of the deleted bucket's upload left after cleanup", n)
	}
	if us, err := e.meta.Uploads(ctx, name); err != nil || len(us) != 0 {
		t.Fatalf("uploads of the deleted bucket: %+v, %v", us, err)
	}
	if ts, _, err := e.meta.RepairTaskPage(ctx, "", 100); err != nil || len(ts) != 0 {
		t.Fatalf("repair tasks left: %+v, %v", ts, err)
	}

	// Bob takes the name.
	if _, err := bob.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	lu, err := bob.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(lu.Uploads) != 0 {
		t.Fatalf("bob lists alice's uploads: %+v", lu.Uploads)
	}
	_, err = bob.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(name), Key: aws.String(key), UploadId: mp.UploadId})
	wantCode(t, err, "NoSuchUpload")
	_, err = bob.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(name), Key: aws.String(key),
		UploadId: mp.UploadId, PartNumber: aws.Int32(2), Body: bytes.NewReader([]byte("x"))})
	wantCode(t, err, "NoSuchUpload")
	_, err = bob.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(name), Key: aws.String(key),
		UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{
			Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
	wantCode(t, err, "NoSuchUpload")
	_, err = bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String(key)})
	wantCode(t, err, "NoSuchKey")
	lo, err := bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(lo.Contents) != 0 {
		t.Fatalf("bob lists objects %+v", lo.Contents)
	}
	if ms, _, err := e.meta.ListManifests(ctx, name, "", "", 0); err != nil || len(ms) != 0 {
		t.Fatalf("manifests in the re-created bucket: %d, %v", len(ms), err)
	}
	if tally, err := e.meta.BucketUsage(ctx, name); err != nil || tally != (cairn.Tally{}) {
		t.Fatalf("re-created bucket's usage %+v, %v; want zero", tally, err)
	}
	_, err = alice.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(name), Key: aws.String(key), UploadId: mp.UploadId})
	if err == nil {
		t.Fatal("alice aborts an upload in bob's bucket")
	}
}
