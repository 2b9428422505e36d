package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
)

func md5hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func TestObjectRoundTrip(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	for _, size := range []int{0, 1, stripe - 1, stripe, 3*stripe + 100, 10 * stripe} {
		key := fmt.Sprintf("obj/%d ü+%%", size)
		data := randBytes(uint64(size), size)
		put, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String("bkt"), Key: aws.String(key), Body: bytes.NewReader(data),
			ContentType: aws.String("text/x-cairn"), Metadata: map[string]string{"color": "blue", "Mixed-Case": "v"},
			CacheControl: aws.String("max-age=60"), ContentDisposition: aws.String("attachment"),
		})
		if err != nil {
			t.Fatalf("put %d: %v", size, err)
		}
		if want := `"` + md5hex(data) + `"`; *put.ETag != want {
			t.Fatalf("put ETag %s, want %s", *put.ETag, want)
		}
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %d: %v", size, err)
		}
		got, err := io.ReadAll(get.Body)
		get.Body.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get %d: %d bytes, %v", size, len(got), err)
		}
		if *get.ETag != *put.ETag || *get.ContentType != "text/x-cairn" || *get.ContentLength != int64(size) ||
			get.Metadata["color"] != "blue" || get.Metadata["mixed-case"] != "v" ||
			aws.ToString(get.CacheControl) != "max-age=60" || aws.ToString(get.ContentDisposition) != "attachment" {
			t.Fatalf("get %d headers: etag %s type %s len %d meta %v cc %v", size, *get.ETag, *get.ContentType, *get.ContentLength, get.Metadata, get.CacheControl)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil || *head.ContentLength != int64(size) || *head.ETag != *put.ETag || head.LastModified == nil {
			t.Fatalf("head %d: %+v %v", size, head, err)
		}
	}
	// Overwrite, then delete (twice: deleting a missing key succeeds).
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj/1 ü+%"), Body: strings.NewReader("new")}); err != nil {
		t.Fatal(err)
	}
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj/1 ü+%")})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(get.Body); string(b) != "new" || len(get.Metadata) != 0 {
		t.Fatalf("after overwrite: %q %v", b, get.Metadata)
	}
	for range 2 {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj/1 ü+%")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj/1 ü+%")})
	wantCode(t, err, "NoSuchKey")
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj/1 ü+%")})
	wantStatus(t, err, http.StatusNotFound)
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("nope"), Key: aws.String("k")})
	wantCode(t, err, "NoSuchBucket")
}

func TestObjectErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()

	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("nope"), Key: aws.String("k"), Body: strings.NewReader("x")})
	wantCode(t, err, "NoSuchBucket")
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("nope"), Key: aws.String("k")})
	wantCode(t, err, "NoSuchBucket")
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("missing")})
	wantCode(t, err, "NoSuchKey")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(strings.Repeat("k", 1025)), Body: strings.NewReader("x")})
	wantCode(t, err, "KeyTooLongError")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(strings.Repeat("k", 1024)), Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("a 1024-byte key: %v", err)
	}

	// Content-MD5: a wrong digest is BadDigest and stores nothing; a
	// malformed one is InvalidDigest; the right one is accepted.
	data := randBytes(3, 2*stripe+5)
	wrong := md5.Sum([]byte("other"))
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("md5"), Body: bytes.NewReader(data),
		ContentMD5: aws.String(base64.StdEncoding.EncodeToString(wrong[:]))})
	wantCode(t, err, "BadDigest")
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("md5")})
	wantStatus(t, err, http.StatusNotFound)
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("md5"), Body: bytes.NewReader(data),
		ContentMD5: aws.String("not-base64!")})
	wantCode(t, err, "InvalidDigest")
	right := md5.Sum(data)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("md5"), Body: bytes.NewReader(data),
		ContentMD5: aws.String(base64.StdEncoding.EncodeToString(right[:]))}); err != nil {
		t.Fatal(err)
	}
	// minio-go too (it sends Content-MD5 when asked).
	if _, err := e.minio(t).PutObject(ctx, "bkt", "md5-minio", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{SendContentMd5: true}); err != nil {
		t.Fatal(err)
	}

	// What is not built says so.
	_, err = c.GetBucketWebsite(ctx, &s3.GetBucketWebsiteInput{Bucket: aws.String("bkt")})
	wantCode(t, err, "NotImplemented")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("md5"), Body: strings.NewReader("x"), IfNoneMatch: aws.String(`"0123"`)})
	wantCode(t, err, "NotImplemented")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("sse"), Body: strings.NewReader("x"), ServerSideEncryption: types.ServerSideEncryptionAwsKms})
	wantCode(t, err, "NotImplemented")

	// No shards are left behind by the failed PUTs: 2 objects × 6 shards
	// (md5, md5-minio) and the 1024-byte key's one byte, a small object,
	// × 3 copies.
	if n := e.files(t); n != 15 {
		t.Fatalf("%d shard files, want 15", n)
	}
}

func TestRangeGet(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	size := int64(5*stripe + 1234)
	data := randBytes(9, int(size))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("r"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	mc := e.minio(t)
	type rng struct{ off, end int64 } // inclusive
	var cases []rng
	for s := int64(1); s <= 5; s++ {
		b := s * stripe
		cases = append(cases, rng{b - 1, b}, rng{b, b}, rng{b - 1, b - 1}, rng{b - blockSize, b + blockSize - 1}, rng{b - stripe, b - 1})
	}
	cases = append(cases, rng{0, 0}, rng{0, size - 1}, rng{size - 1, size - 1}, rng{blockSize - 1, 4*stripe + blockSize})
	for _, r := range cases {
		r.end = min(r.end, size-1)
		want := data[r.off : r.end+1]
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("r"), Range: aws.String(fmt.Sprintf("bytes=%d-%d", r.off, r.end))})
		if err != nil {
			t.Fatalf("range %v: %v", r, err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, want) || *out.ContentRange != fmt.Sprintf("bytes %d-%d/%d", r.off, r.end, size) {
			t.Fatalf("range %v: %d bytes, Content-Range %s", r, len(got), *out.ContentRange)
		}
		// minio-go, through its SetRange.
		opts := minio.GetObjectOptions{}
		if err := opts.SetRange(r.off, r.end); err != nil {
			t.Fatal(err)
		}
		o, err := mc.GetObject(ctx, "bkt", "r", opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(o)
		o.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("minio range %v: %d bytes, %v", r, len(got), err)
		}
	}
	// Open and suffix ranges; a range past the end is clipped.
	for spec, want := range map[string][]byte{
		fmt.Sprintf("bytes=%d-", 3*stripe):      data[3*stripe:],
		"bytes=-100":                            data[size-100:],
		fmt.Sprintf("bytes=-%d", size+10):       data,
		fmt.Sprintf("bytes=%d-%d", 10, size+99): data[10:],
	} {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("r"), Range: aws.String(spec)})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		got, _ := io.ReadAll(out.Body)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, want %d", spec, len(got), len(want))
		}
	}
	for _, spec := range []string{fmt.Sprintf("bytes=%d-", size), fmt.Sprintf("bytes=%d-%d", size+5, size+10), "bytes=-0"} {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("r"), Range: aws.String(spec)})
		wantCode(t, err, "InvalidRange")
	}
	// Syntactically invalid or multiple ranges: the whole object, as S3.
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("r"), Range: aws.String("bytes=0-1,5-6")})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(out.Body); !bytes.Equal(got, data) {
		t.Fatal("multi-range did not return the whole object")
	}
}

func TestConditionalGet(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("hello")})
	if err != nil {
		t.Fatal(err)
	}
	tag := *put.ETag
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	get := func(in s3.GetObjectInput) error {
		in.Bucket, in.Key = aws.String("bkt"), aws.String("k")
		out, err := c.GetObject(ctx, &in)
		if err == nil {
			out.Body.Close()
		}
		return err
	}
	for name, tc := range map[string]struct {
		in     s3.GetObjectInput
		status int // 0: success
	}{
		"if-match ok":            {s3.GetObjectInput{IfMatch: aws.String(tag)}, 0},
		"if-match star":          {s3.GetObjectInput{IfMatch: aws.String("*")}, 0},
		"if-match fail":          {s3.GetObjectInput{IfMatch: aws.String(`"0123"`)}, 412},
		"if-none-match hit":      {s3.GetObjectInput{IfNoneMatch: aws.String(tag)}, 304},
		"if-none-match miss":     {s3.GetObjectInput{IfNoneMatch: aws.String(`"0123"`)}, 0},
		"if-modified-since past": {s3.GetObjectInput{IfModifiedSince: aws.Time(past)}, 0},
		"if-modified-since fut":  {s3.GetObjectInput{IfModifiedSince: aws.Time(future)}, 304},
		"if-unmodified past":     {s3.GetObjectInput{IfUnmodifiedSince: aws.Time(past)}, 412},
		"if-unmodified future":   {s3.GetObjectInput{IfUnmodifiedSince: aws.Time(future)}, 0},
		"if-match wins over ius": {s3.GetObjectInput{IfMatch: aws.String(tag), IfUnmodifiedSince: aws.Time(past)}, 0},
		"inm wins over ims":      {s3.GetObjectInput{IfNoneMatch: aws.String(`"x"`), IfModifiedSince: aws.Time(future)}, 0},
	} {
		err := get(tc.in)
		if tc.status == 0 {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		var re interface{ HTTPStatusCode() int }
		if !asStatus(err, &re) || re.HTTPStatusCode() != tc.status {
			t.Errorf("%s: got %v, want HTTP %d", name, err, tc.status)
		}
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), IfNoneMatch: aws.String(tag)})
	wantStatus(t, err, http.StatusNotModified)
}

func TestCopyObject(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "src")
	e.mkBucket(t, "dst")
	c := e.root()
	data := randBytes(5, 3*stripe+7)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/c"), Body: bytes.NewReader(data),
		ContentType: aws.String("image/png"), Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(bucket, key, ctype string, meta map[string]string) {
		t.Helper()
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(out.Body)
		if !bytes.Equal(got, data) || *out.ETag != *put.ETag || aws.ToString(out.ContentType) != ctype || fmt.Sprint(out.Metadata) != fmt.Sprint(meta) {
			t.Fatalf("%s/%s: %d bytes etag %s type %v meta %v", bucket, key, len(got), *out.ETag, out.ContentType, out.Metadata)
		}
	}
	// COPY (the default directive) keeps the metadata.
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy"), CopySource: aws.String("src/a%20b/c")})
	if err != nil {
		t.Fatal(err)
	}
	if *cp.CopyObjectResult.ETag != *put.ETag {
		t.Fatalf("copy ETag %s", *cp.CopyObjectResult.ETag)
	}
	check("dst", "copy", "image/png", map[string]string{"k": "v"})
	// REPLACE takes the request's.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("repl"), CopySource: aws.String("/src/a%20b/c"),
		MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("text/plain"), Metadata: map[string]string{"new": "1"}}); err != nil {
		t.Fatal(err)
	}
	check("dst", "repl", "text/plain", map[string]string{"new": "1"})
	// Onto itself: only with REPLACE.
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/c"), CopySource: aws.String("src/a%20b/c")})
	wantCode(t, err, "InvalidRequest")
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/c"), CopySource: aws.String("src/a%20b/c"),
		MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"k": "w"}, ContentType: aws.String("image/png")}); err != nil {
		t.Fatal(err)
	}
	check("src", "a b/c", "image/png", map[string]string{"k": "w"})
	// Copy-source conditions and errors.
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("src/a%20b/c"), CopySourceIfMatch: aws.String(`"nope"`)})
	wantCode(t, err, "PreconditionFailed")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("src/missing")})
	wantCode(t, err, "NoSuchKey")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("nosuch/k")})
	wantCode(t, err, "NoSuchBucket")
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("src/a%20b/c"), MetadataDirective: "MOVE"})
	wantCode(t, err, "InvalidArgument")

	// minio-go's CopyObject.
	if _, err := e.minio(t).CopyObject(ctx, minio.CopyDestOptions{Bucket: "dst", Object: "mcopy"}, minio.CopySrcOptions{Bucket: "src", Object: "a b/c"}); err != nil {
		t.Fatal(err)
	}
	check("dst", "mcopy", "image/png", map[string]string{"k": "w"})
}

func TestDeleteObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	for i := range 10 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("k%d", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []types.ObjectIdentifier
	for _, k := range []string{"k0", "k1", "k2", "missing", strings.Repeat("x", 1025)} {
		ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
	}
	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("bkt"), Delete: &types.Delete{Objects: ids}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Deleted) != 4 || len(out.Errors) != 1 || *out.Errors[0].Code != "KeyTooLongError" {
		t.Fatalf("deleted %d, errors %+v", len(out.Deleted), out.Errors)
	}
	// Quiet mode reports only errors; minio-go's RemoveObjects uses it.
	out, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("bkt"), Delete: &types.Delete{Objects: ids[:0:0], Quiet: aws.Bool(true)}})
	wantCode(t, err, "MalformedXML") // an empty list
	_ = out
	objs := make(chan minio.ObjectInfo, 10)
	for i := 3; i < 8; i++ {
		objs <- minio.ObjectInfo{Key: fmt.Sprintf("k%d", i)}
	}
	close(objs)
	for r := range e.minio(t).RemoveObjects(ctx, "bkt", objs, minio.RemoveObjectsOptions{}) {
		t.Fatalf("minio RemoveObjects: %v", r.Err)
	}
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range lo.Contents {
		left = append(left, *o.Key)
	}
	if fmt.Sprint(left) != "[k8 k9]" {
		t.Fatalf("left %v", left)
	}
	_, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("nope"), Delete: &types.Delete{Objects: ids[:1]}})
	wantCode(t, err, "NoSuchBucket")

	// Malformed XML bodies.
	for _, body := range []string{"", "<Delete>", "not xml", "<Delete><Object><Key>a</Key></Object>", "<Other/>"} {
		st, resp := do(t, e.signed(t, "POST", "/bkt?delete", []byte(body), "", nil))
		if st != http.StatusBadRequest || !strings.Contains(resp, "<Code>MalformedXML</Code>") {
			t.Errorf("body %q: %d %s", body, st, resp)
		}
	}
}

// x-amz-checksum-* headers are verified: the SDK computes them for each
// algorithm; a wrong one is BadDigest and stores nothing.
func TestChecksums(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	data := randBytes(51, 2*stripe+9)
	for _, alg := range []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c,
		types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256, types.ChecksumAlgorithmCrc64nvme} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("sum-" + string(alg)),
			Body: bytes.NewReader(data), ChecksumAlgorithm: alg}); err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
	}
	for _, hdr := range []http.Header{
		{"X-Amz-Checksum-Crc32": {"AAAAAA=="}},
		{"X-Amz-Checksum-Sha256": {base64.StdEncoding.EncodeToString(make([]byte, 32))}},
	} {
		st, body := do(t, e.signed(t, "PUT", "/bkt/badsum", data, "", hdr))
		if st != http.StatusBadRequest || !strings.Contains(body, "<Code>BadDigest</Code>") {
			t.Fatalf("%v: %d %s", hdr, st, body)
		}
	}
	st, body := do(t, e.signed(t, "PUT", "/bkt/badsum", data, "", http.Header{"X-Amz-Checksum-Crc32": {"not base64"}}))
	if st != http.StatusBadRequest || !strings.Contains(body, "<Code>InvalidRequest</Code>") {
		t.Fatalf("malformed checksum: %d %s", st, body)
	}
	if _, err := e.meta.Manifest(ctx, "bkt", "badsum"); err == nil {
		t.Fatal("an object with a bad checksum is visible")
	}
}

// Keys that paths, queries and signatures like to mangle round-trip
// through both SDKs and come back from listings unchanged.
func TestHostileKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c, mc := e.root(), e.minio(t)
	keys := []string{"a/../b", "./x", "a//b", "/lead", "sp ace", "q?x=1&y=2", "#frag", "percent%2F", "unicode/✓ü",
		"tab\tkey", "ctl\x01", "trailing/", "+plus", "star*!'()", "semi;colon,comma", "~tilde", "..", "."}
	for i, k := range keys {
		body := fmt.Sprintf("body %d", i)
		if i%2 == 0 {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(k), Body: strings.NewReader(body)}); err != nil {
				t.Fatalf("aws put %q: %v", k, err)
			}
		} else if _, err := mc.PutObject(ctx, "bkt", k, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("minio put %q: %v", k, err)
		}
		if got := readAll(t, e, "bkt", k); string(got) != body {
			t.Fatalf("get %q = %q", k, got)
		}
		if _, err := e.meta.Manifest(ctx, "bkt", k); err != nil {
			t.Fatalf("key %q not stored verbatim: %v", k, err)
		}
	}
	var listed []string
	for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		listed = append(listed, o.Key)
	}
	want := append([]string(nil), keys...)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %q\nwant %q", listed, want)
	}
}
