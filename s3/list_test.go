package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"

	"cairn"
)

// listKeys is a bucket of 2,000+ keys: directories of varied sizes,
// nested directories, top-level files and hostile characters.
func listKeys() []string {
	var keys []string
	for d := range 40 {
		for f := range 50 {
			keys = append(keys, fmt.Sprintf("dir%02d/file%03d", d, f))
		}
	}
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("top%03d", i), fmt.Sprintf("dir07/sub%d/deep/x", i%3))
	}
	keys = append(keys, "a b+c%d/ü", "dir00", "dir00/", "dir00//double", "&<>\"'", "dir39/z\u00ff")
	slices.Sort(keys)
	return slices.Compact(keys)
}

// seed commits manifests straight into the metadata store: listing reads
// only manifests, so 2,000 keys cost nothing.
func seed(t *testing.T, e *env, bucket string, keys []string) {
	t.Helper()
	ctx := context.Background()
	for i, k := range keys {
		m := &cairn.Manifest{Bucket: bucket, Key: k, Version: fmt.Sprintf("%032x", i+1), Size: int64(i), ETag: fmt.Sprintf("%032x", i),
			Created: time.Unix(1700000000, 0), Policy: "rs-4-2",
			Layout: cairn.Layout{BlockSize: 4096, Shards: []cairn.ShardLoc{{Disk: "node1/disk1", Size: 4096}}}}
		if err := e.meta.CommitManifest(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// model lists keys the way S3 defines it.
func model(keys []string, prefix, delim string) (objs, prefixes []string) {
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				cp := k[:len(prefix)+i+len(delim)]
				if !seen[cp] {
					seen[cp] = true
					prefixes = append(prefixes, cp)
				}
				continue
			}
		}
		objs = append(objs, k)
	}
	return objs, prefixes
}

func TestListObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	keys := listKeys()
	if len(keys) < 2000 {
		t.Fatalf("only %d keys", len(keys))
	}
	seed(t, e, "bkt", keys)
	c := e.root()

	cases := []struct{ prefix, delim string }{
		{"", ""}, {"", "/"}, {"dir07/", "/"}, {"dir07/sub", "/"}, {"dir0", "/"}, {"dir", "file"},
		{"dir00", "/"}, {"top", ""}, {"nomatch", "/"}, {"", "0"}, {"a b", "/"},
	}
	for _, tc := range cases {
		wantObjs, wantPrefixes := model(keys, tc.prefix, tc.delim)
		for _, pageSize := range []int32{1000, 7, 1} {
			if pageSize == 1 && tc.delim == "" && tc.prefix == "" {
				continue // 2,000 round trips
			}
			// ListObjectsV2 with the SDK's paginator.
			var objs, prefixes []string
			p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: aws.String(tc.prefix),
				Delimiter: aws.String(tc.delim), MaxKeys: aws.Int32(pageSize)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(out.Contents) + len(out.CommonPrefixes); n > int(pageSize) || int(*out.KeyCount) != n {
					t.Fatalf("page of %d entries, KeyCount %d, max %d", n, *out.KeyCount, pageSize)
				}
				for _, o := range out.Contents {
					objs = append(objs, *o.Key)
				}
				for _, cp := range out.CommonPrefixes {
					prefixes = append(prefixes, *cp.Prefix)
				}
			}
			if !slices.Equal(objs, wantObjs) || !slices.Equal(prefixes, wantPrefixes) {
				t.Fatalf("V2 %+v page %d: got %d objects %d prefixes, want %d, %d\n%v\n%v", tc, pageSize, len(objs), len(prefixes), len(wantObjs), len(wantPrefixes), prefixes, wantPrefixes)
			}
			// ListObjects (V1) with markers.
			objs, prefixes = nil, nil
			marker := ""
			for {
				out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("bkt"), Prefix: aws.String(tc.prefix),
					Delimiter: aws.String(tc.delim), MaxKeys: aws.Int32(pageSize), Marker: aws.String(marker)})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range out.Contents {
					objs = append(objs, *o.Key)
				}
				for _, cp := range out.CommonPrefixes {
					prefixes = append(prefixes, *cp.Prefix)
				}
				if !*out.IsTruncated {
					break
				}
				marker = aws.ToString(out.NextMarker)
			}
			if !slices.Equal(objs, wantObjs) || !slices.Equal(prefixes, wantPrefixes) {
				t.Fatalf("V1 %+v page %d: got %d objects %d prefixes, want %d, %d", tc, pageSize, len(objs), len(prefixes), len(wantObjs), len(wantPrefixes))
			}
		}
	}

	// start-after, and its interplay with a continuation token.
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), StartAfter: aws.String("dir39/file047"), MaxKeys: aws.Int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(out.Contents); fmt.Sprint(got) != "[dir39/file048 dir39/file049 dir39/zÿ]" || !*out.IsTruncated {
		t.Fatalf("start-after: %v truncated %v", got, *out.IsTruncated)
	}
	if aws.ToString(out.StartAfter) != "dir39/file047" || out.ContinuationToken != nil {
		t.Fatalf("echo: StartAfter %q ContinuationToken %v", aws.ToString(out.StartAfter), out.ContinuationToken)
	}
	tok := aws.ToString(out.NextContinuationToken)
	out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), StartAfter: aws.String("dir39/file047"), ContinuationToken: aws.String(tok), MaxKeys: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	// S3 echoes both the token and start-after in the response.
	if aws.ToString(out.ContinuationToken) != tok || aws.ToString(out.StartAfter) != "dir39/file047" {
		t.Fatalf("echo: ContinuationToken %q (sent %q) StartAfter %q", aws.ToString(out.ContinuationToken), tok, aws.ToString(out.StartAfter))
	}
	if got := keysOf(out.Contents); fmt.Sprint(got) != "[top000 top001]" {
		t.Fatalf("after the token: %v", got)
	}
	// max-keys 0, and a bad max-keys / token.
	out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), MaxKeys: aws.Int32(0)})
	if err != nil || len(out.Contents) != 0 {
		t.Fatalf("max-keys 0: %v", err)
	}
	_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), ContinuationToken: aws.String("!!!")})
	wantCode(t, err, "InvalidArgument")
	_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("nope")})
	wantCode(t, err, "NoSuchBucket")
	_, err = c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("nope")})
	wantCode(t, err, "NoSuchBucket")

	// encoding-type=url: keys come back percent-encoded.
	out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: aws.String("a b"), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 1 || *out.Contents[0].Key != "a%20b%2Bc%25d/%C3%BC" || *out.Prefix != "a%20b" {
		t.Fatalf("url encoding: %v prefix %q", keysOf(out.Contents), *out.Prefix)
	}
	if k, err := url.PathUnescape(*out.Contents[0].Key); err != nil || k != "a b+c%d/ü" {
		t.Fatalf("decoded %q, %v", k, err)
	}

	// minio-go lists with V2 and encoding-type=url, and V1 on request.
	mc := e.minio(t)
	for _, v1 := range []bool{false, true} {
		for _, recursive := range []bool{false, true} {
			var got []string
			for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Prefix: "dir0", Recursive: recursive, UseV1: v1, MaxKeys: 50}) {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				got = append(got, o.Key)
			}
			objs, prefixes := model(keys, "dir0", map[bool]string{false: "/", true: ""}[recursive])
			want := append(objs, prefixes...)
			sort.Strings(want)
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Fatalf("minio v1=%v recursive=%v: %d entries, want %d", v1, recursive, len(got), len(want))
			}
		}
	}
}

func keysOf(os []types.Object) []string {
	var ks []string
	for _, o := range os {
		ks = append(ks, *o.Key)
	}
	return ks
}

// countingMeta counts the listing records listings read.
type countingMeta struct {
	Meta
	read int
}

func (c *countingMeta) ListObjects(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]cairn.ObjectInfo, bool, error) {
	ms, more, err := c.Meta.ListObjects(ctx, bucket, prefix, startAfter, limit)
	c.read += len(ms)
	return ms, more, err
}

// Rolling up big "directories" reads a few manifests per directory, not
// all of their keys.
func TestListSkipsCommonPrefixes(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "bkt")
	var keys []string
	for d := range 20 {
		for f := range 200 {
			keys = append(keys, fmt.Sprintf("d%02d/f%03d", d, f))
		}
	}
	seed(t, e, "bkt", keys)
	cm := &countingMeta{Meta: e.meta}
	p, err := list(context.Background(), cm, "bkt", "", "/", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.prefixes) != 20 || p.truncated {
		t.Fatalf("%d prefixes, truncated %v", len(p.prefixes), p.truncated)
	}
	if cm.read > 20*skipBatch {
		t.Fatalf("read %d manifests for 20 prefixes", cm.read)
	}
}

// TestListObjectVersions: a never versioned bucket lists each object as
// its only version, "null" and latest, paged by key-marker and
// version-id-marker like S3; versionId=null names the object on GET, HEAD
// and DELETE, another version ID is refused.
func TestListObjectVersions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	keys := []string{"a", "b/1", "b/2", "b/c/3", "c", "d/x", "e", "f g"}
	seed(t, e, "bkt", keys)
	c := e.root()

	for _, tc := range []struct{ prefix, delim string }{{"", ""}, {"", "/"}, {"b/", "/"}, {"b", ""}, {"nomatch", "/"}} {
		wantObjs, wantPrefixes := model(keys, tc.prefix, tc.delim)
		for _, pageSize := range []int32{1000, 3, 1} {
			var objs, prefixes []string
			in := &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), Prefix: aws.String(tc.prefix), Delimiter: aws.String(tc.delim), MaxKeys: aws.Int32(pageSize)}
			for pages := 0; ; pages++ {
				if pages > len(keys) {
					t.Fatalf("%+v page %d: does not end", tc, pageSize)
				}
				out, err := c.ListObjectVersions(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				if aws.ToString(out.KeyMarker) != aws.ToString(in.KeyMarker) || aws.ToString(out.VersionIdMarker) != aws.ToString(in.VersionIdMarker) {
					t.Fatalf("markers echoed %q %q, sent %q %q", aws.ToString(out.KeyMarker), aws.ToString(out.VersionIdMarker),
						aws.ToString(in.KeyMarker), aws.ToString(in.VersionIdMarker))
				}
				if len(out.DeleteMarkers) != 0 {
					t.Fatalf("delete markers %v", out.DeleteMarkers)
				}
				for _, v := range out.Versions {
					if aws.ToString(v.VersionId) != "null" || !aws.ToBool(v.IsLatest) || v.LastModified == nil || aws.ToString(v.ETag) == "" {
						t.Fatalf("version %+v", v)
					}
					objs = append(objs, *v.Key)
				}
				for _, cp := range out.CommonPrefixes {
					prefixes = append(prefixes, *cp.Prefix)
				}
				if !aws.ToBool(out.IsTruncated) {
					if out.NextKeyMarker != nil || out.NextVersionIdMarker != nil {
						t.Fatalf("last page has next markers %q %q", aws.ToString(out.NextKeyMarker), aws.ToString(out.NextVersionIdMarker))
					}
					break
				}
				// Ended on a version: resume after it; on a common prefix: no version marker.
				wantVM := ""
				if n := len(out.Versions); n > 0 && *out.Versions[n-1].Key == aws.ToString(out.NextKeyMarker) {
					wantVM = "null"
				}
				if aws.ToString(out.NextVersionIdMarker) != wantVM {
					t.Fatalf("NextVersionIdMarker %q after %q, want %q", aws.ToString(out.NextVersionIdMarker), aws.ToString(out.NextKeyMarker), wantVM)
				}
				in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
			}
			if !slices.Equal(objs, wantObjs) || !slices.Equal(prefixes, wantPrefixes) {
				t.Fatalf("%+v page %d: got %v %v, want %v %v", tc, pageSize, objs, prefixes, wantObjs, wantPrefixes)
			}
		}
	}

	// key-marker alone, or with the "null" version: both start after the key.
	for _, vm := range []*string{nil, aws.String("null")} {
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), KeyMarker: aws.String("c"), VersionIdMarker: vm})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range out.Versions {
			got = append(got, *v.Key)
		}
		if fmt.Sprint(got) != "[d/x e f g]" {
			t.Fatalf("after c (version %v): %v", aws.ToString(vm), got)
		}
	}
	_, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), KeyMarker: aws.String("c"), VersionIdMarker: aws.String("3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY")})
	wantMessage(t, err, "InvalidArgument", "Invalid version id specified")
	_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), VersionIdMarker: aws.String("null")})
	wantMessage(t, err, "InvalidArgument", "A version-id marker cannot be specified without a key marker.")
	_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), KeyMarker: aws.String("c"), VersionIdMarker: aws.String("")})
	wantMessage(t, err, "InvalidArgument", "A version-id marker cannot be empty.")
	// An empty key-marker: S3 ignores the version marker and starts at the beginning.
	out0, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), KeyMarker: aws.String(""), VersionIdMarker: aws.String("null"), MaxKeys: aws.Int32(1)})
	if err != nil || len(out0.Versions) != 1 || aws.ToString(out0.Versions[0].Key) != "a" {
		t.Fatalf("empty key-marker: %+v, %v", out0, err)
	}
	_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), MaxKeys: aws.Int32(-1)})
	wantCode(t, err, "InvalidArgument")
	_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("nope")})
	wantCode(t, err, "NoSuchBucket")
	// encoding-type=url percent-encodes keys and markers.
	out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), Prefix: aws.String("f"), EncodingType: types.EncodingTypeUrl})
	if err != nil || len(out.Versions) != 1 || aws.ToString(out.Versions[0].Key) != "f%20g" {
		t.Fatalf("encoding-type=url: %+v, %v", out, err)
	}

	// versionId=null is the object on GET, HEAD and DELETE; another ID is not.
	body := []byte("versioned? no")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), VersionId: aws.String("null")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(g.Body)
	g.Body.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GET versionId=null: %q, %v", got, err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), VersionId: aws.String("null")}); err != nil {
		t.Fatal(err)
	}
	const other = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), VersionId: aws.String(other)})
	wantMessage(t, err, "InvalidArgument", "Invalid version id specified")
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), VersionId: aws.String("")})
	wantMessage(t, err, "InvalidArgument", "Version id cannot be the empty string")
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), VersionId: aws.String(other)})
	wantStatus(t, err, http.StatusBadRequest)
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), VersionId: aws.String(other)})
	wantCode(t, err, "InvalidArgument")
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")}); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), VersionId: aws.String("null")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")})
	wantStatus(t, err, http.StatusNotFound)
}

// wantMessage checks an SDK error's S3 code and message (which may go on
// with the request's detail).
func wantMessage(t *testing.T, err error, code, msg string) {
	t.Helper()
	wantCode(t, err, code)
	var ae smithy.APIError
	if errors.As(err, &ae); !strings.HasPrefix(ae.ErrorMessage(), msg) {
		t.Fatalf("got message %q, want %q", ae.ErrorMessage(), msg)
	}
}
