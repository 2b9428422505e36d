package s3

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/tags"

	"cairn"
)

func (nopMeta) SetBucketTags(context.Context, string, map[string]string) error {
	return cairn.ErrNotFound
}
func (nopMeta) SetBucketCORS(context.Context, string, []cairn.CORSRule) error {
	return cairn.ErrNotFound
}
func (nopMeta) SetBucketLifecycle(context.Context, string, []cairn.LifecycleRule) error {
	return cairn.ErrNotFound
}
func (nopMeta) UpdateManifest(context.Context, *cairn.Manifest, *cairn.Manifest) error {
	return cairn.ErrNotFound
}

// sdkTags is n tags k0=v0 ... as the SDK takes them.
func sdkTags(n int) []types.Tag {
	out := make([]types.Tag, n)
	for i := range out {
		out[i] = types.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String(fmt.Sprintf("v%d", i))}
	}
	return out
}

// tagMap is a TagSet as a map.
func tagMap(ts []types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range ts {
		m[*t.Key] = *t.Value
	}
	return m
}

func TestObjectTagging(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("tagged")
	// x-amz-tagging on PUT; x-amz-tagging-count on GET and HEAD.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("hello"),
		Tagging: aws.String("color=blue&team=a%20b")}); err != nil {
		t.Fatal(err)
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k})
	if err != nil || aws.ToInt32(get.TagCount) != 2 {
		t.Fatalf("GetObject tag count: %v %v", get, err)
	}
	get.Body.Close()
	got, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: k})
	if err != nil || fmt.Sprint(tagMap(got.TagSet)) != "map[color:blue team:a b]" {
		t.Fatalf("GetObjectTagging: %v %v", got, err)
	}
	// PutObjectTagging replaces the set; the data stays.
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k,
		Tagging: &types.Tagging{TagSet: sdkTags(10)}}); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k})
	if err != nil || aws.ToInt32(head.TagCount) != 10 || aws.ToInt64(head.ContentLength) != 5 {
		t.Fatalf("HeadObject after PutObjectTagging: %+v %v", head, err)
	}
	// The errors S3 gives.
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k, Tagging: &types.Tagging{TagSet: sdkTags(11)}})
	wantCode(t, err, "BadRequest")
	for _, bad := range [][]types.Tag{
		{{Key: aws.String(strings.Repeat("k", 129)), Value: aws.String("v")}},
		{{Key: aws.String("k"), Value: aws.String(strings.Repeat("v", 257))}},
		{{Key: aws.String("k"), Value: aws.String("1")}, {Key: aws.String("k"), Value: aws.String("2")}},
		{{Key: aws.String(""), Value: aws.String("v")}},
		{{Key: aws.String("aws:reserved"), Value: aws.String("v")}},
		{{Key: aws.String("semi;colon"), Value: aws.String("v")}},
	} {
		_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k, Tagging: &types.Tagging{TagSet: bad}})
		wantCode(t, err, "InvalidTag")
	}
	// Unicode letters count as one character each: 128 of them are fine.
	long := []types.Tag{{Key: aws.String(strings.Repeat("ü", 128)), Value: aws.String(strings.Repeat("é", 256))}}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k, Tagging: &types.Tagging{TagSet: long}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("eleven"), Body: strings.NewReader("x"),
		Tagging: aws.String("a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11")})
	wantCode(t, err, "BadRequest")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("badenc"), Body: strings.NewReader("x"),
		Tagging: aws.String("a=%zz")})
	wantCode(t, err, "InvalidArgument")
	for _, key := range []string{"eleven", "badenc"} {
		if _, err := e.meta.Manifest(ctx, "bkt", key); err == nil {
			t.Fatalf("%s: refused PUT stored an object", key)
		}
	}
	// versionId: null names the object; another is refused, not ignored.
	if _, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: k, VersionId: aws.String("null")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k, VersionId: aws.String("0123"), Tagging: &types.Tagging{TagSet: sdkTags(1)}})
	wantCode(t, err, "InvalidArgument")
	_, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("missing")})
	wantCode(t, err, "NoSuchKey")
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: aws.String("missing"), Tagging: &types.Tagging{TagSet: sdkTags(1)}})
	wantCode(t, err, "NoSuchKey")

	// Copy: COPY (the default) keeps the source's tags, REPLACE takes
	// x-amz-tagging.
	src := aws.String("bkt/tagged")
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy1"), CopySource: src}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("copy1")}); err != nil || len(got.TagSet) != 1 || *got.TagSet[0].Key != strings.Repeat("ü", 128) {
		t.Fatalf("copied tags: %v %v", got, err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy2"), CopySource: src,
		TaggingDirective: types.TaggingDirectiveReplace, Tagging: aws.String("x=y")}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("copy2")}); err != nil || fmt.Sprint(tagMap(got.TagSet)) != "map[x:y]" {
		t.Fatalf("replaced tags: %v %v", got, err)
	}

	// DeleteObjectTagging empties the set; an overwrite drops the tags.
	if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: b, Key: aws.String("copy2")}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("copy2")}); err != nil || len(got.TagSet) != 0 {
		t.Fatalf("after DeleteObjectTagging: %v %v", got, err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("again")}); err != nil {
		t.Fatal(err)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k})
	if err != nil || head.TagCount != nil {
		t.Fatalf("tags after an overwrite: %v %v", head.TagCount, err)
	}

	// Multipart: x-amz-tagging on create tags the completed object.
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp"), Tagging: aws.String("mp=yes")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: cr.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("mp")}); err != nil || fmt.Sprint(tagMap(got.TagSet)) != "map[mp:yes]" {
		t.Fatalf("multipart tags: %v %v", got, err)
	}
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp2"),
		Tagging: aws.String("a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11")})
	wantCode(t, err, "BadRequest")

	// minio-go reads and writes the same tags.
	mc := e.minio(t)
	mt, err := tags.NewTags(map[string]string{"from": "minio"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.PutObjectTagging(ctx, "bkt", "mp", mt, minio.PutObjectTaggingOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := mc.GetObjectTagging(ctx, "bkt", "mp", minio.GetObjectTaggingOptions{}); err != nil || got.String() != "from=minio" {
		t.Fatalf("minio GetObjectTagging: %v %v", got, err)
	}
	if _, err := mc.PutObject(ctx, "bkt", "mput", bytes.NewReader([]byte("m")), 1, minio.PutObjectOptions{UserTags: map[string]string{"u": "v"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := mc.GetObjectTagging(ctx, "bkt", "mput", minio.GetObjectTaggingOptions{}); err != nil || got.String() != "u=v" {
		t.Fatalf("minio tags on PUT: %v %v", got, err)
	}
}

func TestBucketTagging(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b := aws.String("bkt")
	_, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: b})
	wantCode(t, err, "NoSuchTagSet")
	if _, err := c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: b, Tagging: &types.Tagging{TagSet: sdkTags(50)}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: b})
	if err != nil || len(got.TagSet) != 50 || tagMap(got.TagSet)["k49"] != "v49" {
		t.Fatalf("GetBucketTagging: %v %v", got, err)
	}
	_, err = c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: b, Tagging: &types.Tagging{TagSet: sdkTags(51)}})
	wantCode(t, err, "BadRequest")
	_, err = c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: b, Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("k"), Value: aws.String(strings.Repeat("v", 257))}}}})
	wantCode(t, err, "InvalidTag")
	_, err = c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("nope"), Tagging: &types.Tagging{TagSet: sdkTags(1)}})
	wantCode(t, err, "NoSuchBucket")
	if _, err := c.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: b})
	wantCode(t, err, "NoSuchTagSet")
	// A body that is not a Tagging document.
	st, body := do(t, e.signed(t, "PUT", "/bkt?tagging", []byte("<Tagging><TagSet>"), "", http.Header{}))
	if st != http.StatusBadRequest || !strings.Contains(body, "MalformedXML") {
		t.Fatalf("malformed tagging: %d %s", st, body)
	}
}
