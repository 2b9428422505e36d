package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
)

func getBytes(t *testing.T, c *s3.Client, bucket, key, version string) ([]byte, *s3.GetObjectOutput) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	out, err := c.GetObject(context.Background(), in)
	if err != nil {
		t.Fatalf("GET %s version %q: %v", key, version, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, out
}

// respHeader returns a header of a failed request's response.
func respHeader(err error, name string) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get(name)
	}
	return ""
}

// allVersions lists every version and delete marker of a bucket, pages
// of max at a time, as "key@id" in listing order; markers as "key@id!".
func allVersions(t *testing.T, c *s3.Client, bucket string, max int32) (ids []string, latest []string) {
	t.Helper()
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(max)}
	for range 100 {
		out, err := c.ListObjectVersions(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		// The SDK keeps versions and markers apart; the order within
		// each is the listing's.
		for _, v := range out.Versions {
			ids = append(ids, *v.Key+"@"+*v.VersionId)
			if aws.ToBool(v.IsLatest) {
				latest = append(latest, *v.Key+"@"+*v.VersionId)
			}
		}
		for _, m := range out.DeleteMarkers {
			ids = append(ids, *m.Key+"@"+*m.VersionId+"!")
			if aws.ToBool(m.IsLatest) {
				latest = append(latest, *m.Key+"@"+*m.VersionId+"!")
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return ids, latest
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
	t.Fatal("ListObjectVersions does not end")
	return nil, nil
}

func withoutMarkers(ids []string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s[len(s)-1] == '!' })
}

// TestVersionedBucket is the acceptance of issue #16's versioning: three
// versions of a key, a delete → a marker, the listing shows all, GET of
// each version is byte-exact, deleting the marker restores the latest.
func TestVersionedBucket(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkBucket(t, "vers")
	e.mkBucket(t, "plain")

	st, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("plain")})
	if err != nil || st.Status != "" {
		t.Fatalf("never versioned bucket: status %q, %v", st.Status, err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vers"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	st, err = c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("vers")})
	if err != nil || st.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("status %q, %v", st.Status, err)
	}

	data := [][]byte{randBytes(1, 10), randBytes(2, 3*stripe+7), randBytes(3, 100)}
	var ids []string
	for _, d := range data {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), Body: bytes.NewReader(d)})
		if err != nil {
			t.Fatal(err)
		}
		id := aws.ToString(out.VersionId)
		if id == "" || id == "null" || slices.Contains(ids, id) {
			t.Fatalf("PUT answered version id %q (before: %v)", id, ids)
		}
		ids = append(ids, id)
	}
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	marker := aws.ToString(del.VersionId)
	if !aws.ToBool(del.DeleteMarker) || marker == "" || slices.Contains(ids, marker) {
		t.Fatalf("DELETE made no delete marker: %+v", del)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("k")})
	wantCode(t, err, "NoSuchKey")
	if respHeader(err, "X-Amz-Delete-Marker") != "true" || respHeader(err, "X-Amz-Version-Id") != marker {
		t.Fatalf("GET under a marker: x-amz-delete-marker %q, x-amz-version-id %q", respHeader(err, "X-Amz-Delete-Marker"), respHeader(err, "X-Amz-Version-Id"))
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vers"), Key: aws.String("k")})
	wantStatus(t, err, http.StatusNotFound)
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("vers")})
	if err != nil || len(lo.Contents) != 0 {
		t.Fatalf("ListObjectsV2 under a marker: %+v, %v", lo.Contents, err)
	}

	want := []string{"k@" + ids[2], "k@" + ids[1], "k@" + ids[0], "k@" + marker + "!"}
	for _, max := range []int32{1, 2, 1000} {
		got, latest := allVersions(t, c, "vers", max)
		if max == 1 { // one entry a page: the listing's order, the marker (latest) first
			want := append([]string{want[3]}, want[:3]...)
			if !slices.Equal(got, want) {
				t.Fatalf("ListObjectVersions (pages of 1): %q, want %q", got, want)
			}
		}
		if !slices.Equal(withoutMarkers(got), want[:3]) || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) ||
			!slices.Equal(latest, []string{"k@" + marker + "!"}) {
			t.Fatalf("ListObjectVersions (pages of %d): %q latest %q, want %q", max, got, latest, want)
		}
	}
	for i, id := range ids {
		got, out := getBytes(t, c, "vers", "k", id)
		if !bytes.Equal(got, data[i]) || aws.ToString(out.VersionId) != id {
			t.Fatalf("GET version %d: %d bytes, version %q", i, len(got), aws.ToString(out.VersionId))
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String(id)})
		if err != nil || aws.ToInt64(h.ContentLength) != int64(len(data[i])) {
			t.Fatalf("HEAD version %d: %+v, %v", i, h, err)
		}
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String(marker)})
	wantCode(t, err, "MethodNotAllowed")
	if respHeader(err, "X-Amz-Delete-Marker") != "true" {
		t.Fatal("GET of a marker by version: no x-amz-delete-marker")
	}

	// Deleting the marker restores the latest version.
	d2, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String(marker)})
	if err != nil || !aws.ToBool(d2.DeleteMarker) || aws.ToString(d2.VersionId) != marker {
		t.Fatalf("DELETE of the marker: %+v, %v", d2, err)
	}
	got, out := getBytes(t, c, "vers", "k", "")
	if !bytes.Equal(got, data[2]) || aws.ToString(out.VersionId) != ids[2] {
		t.Fatalf("GET after deleting the marker: %d bytes, version %q", len(got), aws.ToString(out.VersionId))
	}

	// Copy from a version; a version of a multipart upload.
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("vers"), Key: aws.String("copy"),
		CopySource: aws.String("vers/k?versionId=" + ids[1])})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != ids[1] || aws.ToString(cp.VersionId) == "" {
		t.Fatalf("CopyObject from a version: %+v, %v", cp, err)
	}
	if got, _ := getBytes(t, c, "vers", "copy", ""); !bytes.Equal(got, data[1]) {
		t.Fatal("copy of a version: other bytes")
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("vers"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("vers"), Key: aws.String("k"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(data[0])})
	if err != nil {
		t.Fatal(err)
	}
	co, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("vers"), Key: aws.String("k"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
	if err != nil || aws.ToString(co.VersionId) == "" || slices.Contains(ids, aws.ToString(co.VersionId)) {
		t.Fatalf("CompleteMultipartUpload: %+v, %v", co, err)
	}
	if got, _ := getBytes(t, c, "vers", "k", ids[2]); !bytes.Equal(got, data[2]) {
		t.Fatal("the version a multipart upload replaced: other bytes")
	}

	// UploadPartCopy from a version.
	pu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("vers"), Key: aws.String("pc")})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("vers"), Key: aws.String("pc"), UploadId: pu.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String("vers/k?versionId=" + ids[1])})
	if err != nil || aws.ToString(pc.CopySourceVersionId) != ids[1] {
		t.Fatalf("UploadPartCopy from a version: %+v, %v", pc, err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("vers"), Key: aws.String("pc"), UploadId: pu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: pc.CopyPartResult.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := getBytes(t, c, "vers", "pc", ""); !bytes.Equal(got, data[1]) {
		t.Fatal("UploadPartCopy of a version: other bytes")
	}

	// Multi-delete with versions: one version for good, one key by a marker.
	md, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("vers"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: aws.String(ids[0])}, {Key: aws.String("copy")}}}})
	if err != nil || len(md.Errors) != 0 || len(md.Deleted) != 2 {
		t.Fatalf("DeleteObjects: %+v, %v", md, err)
	}
	if aws.ToString(md.Deleted[0].VersionId) != ids[0] || !aws.ToBool(md.Deleted[1].DeleteMarker) || aws.ToString(md.Deleted[1].DeleteMarkerVersionId) == "" {
		t.Fatalf("DeleteObjects results: %+v", md.Deleted)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String(ids[0])})
	wantCode(t, err, "NoSuchVersion")

	// minio-go lists versions too.
	var mv []string
	for o := range e.minio(t).ListObjects(ctx, "vers", minio.ListObjectsOptions{WithVersions: true, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		mv = append(mv, o.Key+"@"+o.VersionID)
	}
	if len(mv) != 6 { // copy: marker + version; k: multipart, ids[2], ids[1]; pc
		t.Fatalf("minio-go ListObjects WithVersions: %q", mv)
	}

	// The bucket cannot go while versions are left.
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("vers")})
	wantCode(t, err, "BucketNotEmpty")
}

// TestVersioningErrors: malformed and unknown version IDs, bad
// configurations, and Suspended buckets' null version.
func TestVersioningErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkBucket(t, "vers")
	_, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vers"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: "On"}})
	wantCode(t, err, "IllegalVersioningConfigurationException")
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("nope"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
	wantCode(t, err, "NoSuchBucket")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), Body: bytes.NewReader([]byte("null one"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vers"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	v1, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), Body: bytes.NewReader([]byte("v1"))})
	if err != nil {
		t.Fatal(err)
	}
	const unknown = "0123456789abcdef0123456789abcdef"
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String(unknown)})
	wantCode(t, err, "NoSuchVersion")
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String(unknown)})
	wantStatus(t, err, http.StatusNotFound)
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String("not-a-version")})
	wantMessage(t, err, "InvalidArgument", "Invalid version id specified")
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String("not-a-version")})
	wantCode(t, err, "InvalidArgument")
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String("")})
	wantMessage(t, err, "InvalidArgument", "Version id cannot be the empty string")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("vers"), Key: aws.String("c"), CopySource: aws.String("vers/k?versionId=" + unknown)})
	wantCode(t, err, "NoSuchVersion")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("vers"), Key: aws.String("c"), CopySource: aws.String("vers/k?versionId=bad")})
	wantCode(t, err, "InvalidArgument")
	_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), KeyMarker: aws.String("k"), VersionIdMarker: aws.String("bad")})
	wantMessage(t, err, "InvalidArgument", "Invalid version id specified")
	md, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("vers"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: aws.String("bad")}}}})
	if err != nil || len(md.Errors) != 1 || aws.ToString(md.Errors[0].Code) != "InvalidArgument" {
		t.Fatalf("DeleteObjects of a malformed version: %+v, %v", md, err)
	}
	// Deleting a version that does not exist succeeds, as S3.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String(unknown)}); err != nil {
		t.Fatal(err)
	}

	// The null version written before versioning is still there.
	if got, _ := getBytes(t, c, "vers", "k", "null"); string(got) != "null one" {
		t.Fatalf("null version: %q", got)
	}
	// Suspended: new writes are the null version, replacing the old null.
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vers"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	files := e.files(t)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), Body: bytes.NewReader([]byte("null two"))}); err != nil {
		t.Fatal(err)
	}
	if got, _ := getBytes(t, c, "vers", "k", "null"); string(got) != "null two" {
		t.Fatalf("null version after a suspended PUT: %q", got)
	}
	if got, _ := getBytes(t, c, "vers", "k", aws.ToString(v1.VersionId)); string(got) != "v1" {
		t.Fatalf("versioned version after a suspended PUT: %q", got)
	}
	if n := e.files(t); n != files {
		t.Fatalf("a null version replaced the null one: %d shard files, before %d (the old null's must go)", n, files)
	}
	ids, latest := allVersions(t, c, "vers", 1000)
	if len(ids) != 2 || !slices.Equal(latest, []string{"k@null"}) {
		t.Fatalf("suspended listing: %q, latest %q", ids, latest)
	}
	// A delete in a Suspended bucket is a null marker, replacing the null version.
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) != "null" {
		t.Fatalf("suspended DELETE: %+v, %v", del, err)
	}
	ids, _ = allVersions(t, c, "vers", 1)
	if !slices.Equal(ids, []string{"k@null!", "k@" + aws.ToString(v1.VersionId)}) {
		t.Fatalf("after a suspended DELETE: %q", ids)
	}
	// Removing every version removes its shards (through the cleanup queue).
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: v1.VersionId}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("k"), VersionId: aws.String("null")}); err != nil {
		t.Fatal(err)
	}
	if n := e.files(t); n != 0 {
		t.Fatalf("%d shard files left after deleting every version", n)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("vers")}); err != nil {
		t.Fatal(err)
	}
}

func cmpEntry(a, b struct{ key, id string }) int {
	return strings.Compare(a.key+"@"+a.id, b.key+"@"+b.id)
}

// TestListObjectVersionsPaging: over keys with several versions and
// markers, every page size, prefix and delimiter gives the same entries
// as one unpaged listing rolled up by hand, resuming from
// NextKeyMarker/NextVersionIdMarker (a version's ID, a marker's, or none
// after a common prefix).
func TestListObjectVersionsPaging(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkBucket(t, "pages")
	put := func(key string) {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("pages"), Key: aws.String(key), Body: bytes.NewReader([]byte(key))}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(key string) {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("pages"), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	put("a")
	put("b/1") // a null version, before versioning
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("pages"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b/1", "b/1", "b/2", "b/c/3", "c", "d/x", "d/x"} {
		put(k)
	}
	del("c")
	del("b/2")
	put("b/2")
	del("e-never")

	// One page of everything: the model.
	type entry = struct{ key, id string }
	full, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("pages")})
	if err != nil || aws.ToBool(full.IsTruncated) {
		t.Fatal(err)
	}
	var all []entry
	for _, v := range full.Versions {
		all = append(all, entry{*v.Key, *v.VersionId})
	}
	for _, m := range full.DeleteMarkers {
		all = append(all, entry{*m.Key, *m.VersionId})
	}
	// The listing's own order: one entry a page (the SDK splits a
	// page's versions from its markers).
	ids, _ := allVersions(t, c, "pages", 1)
	var ordered []entry
	for _, id := range ids {
		k, v, _ := strings.Cut(strings.TrimSuffix(id, "!"), "@")
		ordered = append(ordered, entry{k, v})
	}
	if !slices.Equal(slices.SortedFunc(slices.Values(all), cmpEntry), slices.SortedFunc(slices.Values(ordered), cmpEntry)) {
		t.Fatalf("pages of 1 list %v, one page %v", ordered, all)
	}
	all = ordered
	if len(all) != 14 {
		t.Fatalf("%d versions and markers, want 14: %v", len(all), all)
	}
	for _, tc := range []struct{ prefix, delim string }{{"", ""}, {"", "/"}, {"b/", "/"}, {"b", ""}, {"d", "/"}} {
		var wantV, wantP []string
		for _, en := range all {
			if !strings.HasPrefix(en.key, tc.prefix) {
				continue
			}
			if i := strings.Index(en.key[len(tc.prefix):], tc.delim); tc.delim != "" && i >= 0 {
				if cp := en.key[:len(tc.prefix)+i+1]; !slices.Contains(wantP, cp) {
					wantP = append(wantP, cp)
				}
				continue
			}
			wantV = append(wantV, en.key+"@"+en.id)
		}
		for _, size := range []int32{1, 2, 3, 1000} {
			var gotV, gotP []string
			in := &s3.ListObjectVersionsInput{Bucket: aws.String("pages"), Prefix: aws.String(tc.prefix), Delimiter: aws.String(tc.delim), MaxKeys: aws.Int32(size)}
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatalf("%+v pages of %d: no end", tc, size)
				}
				out, err := c.ListObjectVersions(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				var page []entry
				for _, v := range out.Versions {
					page = append(page, entry{*v.Key, *v.VersionId})
				}
				for _, m := range out.DeleteMarkers {
					page = append(page, entry{*m.Key, *m.VersionId})
				}
				if n := len(page) + len(out.CommonPrefixes); n > int(size) {
					t.Fatalf("%+v: a page of %d entries, max-keys %d", tc, n, size)
				}
				for _, en := range page {
					gotV = append(gotV, en.key+"@"+en.id)
				}
				for _, cp := range out.CommonPrefixes {
					gotP = append(gotP, *cp.Prefix)
				}
				if !aws.ToBool(out.IsTruncated) {
					break
				}
				in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
			}
			sv := slices.Sorted(slices.Values(gotV))
			if size < 1000 { // within a page the SDK splits versions from markers: compare sets
				if !slices.Equal(sv, slices.Sorted(slices.Values(wantV))) || !slices.Equal(gotP, wantP) {
					t.Fatalf("%+v pages of %d:\n%q %q\nwant\n%q %q", tc, size, gotV, gotP, wantV, wantP)
				}
			} else if !slices.Equal(sv, slices.Sorted(slices.Values(wantV))) || !slices.Equal(gotP, wantP) {
				t.Fatalf("%+v one page: %q %q, want %q %q", tc, gotV, gotP, wantV, wantP)
			}
			if size == 1 && !slices.Equal(gotV, wantV) { // one entry a page: the listing's order
				t.Fatalf("%+v pages of 1: order %q, want %q", tc, gotV, wantV)
			}
		}
	}
}

// TestTaggingAndAttributesByVersion: ?tagging and GetObjectAttributes
// with a versionId answer for that version; PUT/DELETE ?tagging of a
// version that is not the current one is refused (NotImplemented), never
// applied to the current version instead; of the current one by its ID
// it works; an unknown version is NoSuchVersion.
func TestTaggingAndAttributesByVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkBucket(t, "tagv")
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("tagv"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, tag := range []string{"color=red", "color=blue"} {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tagv"), Key: aws.String("k"), Body: bytes.NewReader(randBytes(uint64(i), 10+i)), Tagging: aws.String(tag)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, aws.ToString(out.VersionId))
	}
	tagOf := func(id string) string {
		t.Helper()
		out, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("tagv"), Key: aws.String("k"), VersionId: aws.String(id)})
		if err != nil || len(out.TagSet) != 1 || aws.ToString(out.VersionId) != id {
			t.Fatalf("tagging of version %s: %+v, %v", id, out, err)
		}
		return aws.ToString(out.TagSet[0].Value)
	}
	if tagOf(ids[0]) != "red" || tagOf(ids[1]) != "blue" {
		t.Fatalf("tags by version: %s %s", tagOf(ids[0]), tagOf(ids[1]))
	}
	_, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("tagv"), Key: aws.String("k"), VersionId: aws.String(ids[0]),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("color"), Value: aws.String("green")}}}})
	wantCode(t, err, "NotImplemented")
	_, err = c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: aws.String("tagv"), Key: aws.String("k"), VersionId: aws.String(ids[0])})
	wantCode(t, err, "NotImplemented")
	if tagOf(ids[0]) != "red" || tagOf(ids[1]) != "blue" {
		t.Fatal("a refused tagging of an old version changed a version")
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("tagv"), Key: aws.String("k"), VersionId: aws.String(ids[1]),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("color"), Value: aws.String("green")}}}}); err != nil {
		t.Fatal(err)
	}
	if tagOf(ids[1]) != "green" || tagOf(ids[0]) != "red" {
		t.Fatal("tagging the current version by its ID")
	}
	_, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("tagv"), Key: aws.String("k"), VersionId: aws.String(strings.Repeat("0", 32))})
	wantCode(t, err, "NoSuchVersion")

	for i, id := range ids {
		out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("tagv"), Key: aws.String("k"), VersionId: aws.String(id),
			ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}})
		if err != nil || aws.ToInt64(out.ObjectSize) != int64(10+i) || aws.ToString(out.VersionId) != id {
			t.Fatalf("attributes of version %s: %+v, %v", id, out, err)
		}
	}
}
