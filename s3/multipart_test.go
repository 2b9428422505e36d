package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
)

const mib = 1 << 20

func TestMultipartSDK(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("big/object")
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k,
		ContentType: aws.String("text/x-mp"), Metadata: map[string]string{"color": "red"}})
	if err != nil {
		t.Fatal(err)
	}
	id := cr.UploadId
	sizes := []int{5 * mib, 5*mib + 123, 1000}
	var data []byte
	for i, n := range sizes {
		data = append(data, randBytes(uint64(100+i), n)...)
	}
	off := func(i int) int {
		o := 0
		for _, n := range sizes[:i] {
			o += n
		}
		return o
	}
	etags := make([]string, len(sizes))
	for _, i := range []int{2, 0, 1} { // out of order
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: id, PartNumber: aws.Int32(int32(i + 1)),
			Body: bytes.NewReader(data[off(i):off(i+1)])})
		if err != nil {
			t.Fatalf("part %d: %v", i+1, err)
		}
		if want := `"` + md5hex(data[off(i):off(i+1)]) + `"`; *out.ETag != want {
			t.Fatalf("part %d ETag %s, want %s", i+1, *out.ETag, want)
		}
		etags[i] = *out.ETag
	}
	// A too-small part 4 uploaded and then left out; part 3 is < 5 MiB.
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: id, PartNumber: aws.Int32(4), Body: strings.NewReader("tail")}); err != nil {
		t.Fatal(err)
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k, UploadId: id, MaxParts: aws.Int32(2)})
	if err != nil || len(lp.Parts) != 2 || *lp.Parts[1].PartNumber != 2 || !*lp.IsTruncated || *lp.Parts[0].Size != int64(sizes[0]) {
		t.Fatalf("ListParts: %+v %v", lp, err)
	}
	lp, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k, UploadId: id, PartNumberMarker: lp.NextPartNumberMarker})
	if err != nil || len(lp.Parts) != 2 || *lp.Parts[0].PartNumber != 3 || *lp.IsTruncated {
		t.Fatalf("ListParts page 2: %+v %v", lp, err)
	}
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
	if err != nil || len(lu.Uploads) != 1 || *lu.Uploads[0].UploadId != *id || *lu.Uploads[0].Key != *k {
		t.Fatalf("ListMultipartUploads: %+v %v", lu, err)
	}
	complete := func(parts ...types.CompletedPart) error {
		_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: id,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		return err
	}
	part := func(n int, etag string) types.CompletedPart {
		return types.CompletedPart{PartNumber: aws.Int32(int32(n)), ETag: aws.String(etag)}
	}
	wantCode(t, complete(part(2, etags[1]), part(1, etags[0])), "InvalidPartOrder")
	wantCode(t, complete(part(1, etags[1])), "InvalidPart")
	wantCode(t, complete(part(1, etags[0]), part(5, etags[0])), "InvalidPart")
	wantCode(t, complete(part(3, etags[2]), part(4, `"`+md5hex([]byte("tail"))+`"`)), "EntityTooSmall")
	out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{part(1, etags[0]), part(2, etags[1]), part(3, etags[2])}}})
	if err != nil {
		t.Fatal(err)
	}
	md := md5.New()
	for i := range sizes {
		s := md5.Sum(data[off(i):off(i+1)])
		md.Write(s[:])
	}
	wantETag := fmt.Sprintf(`"%s-3"`, hex.EncodeToString(md.Sum(nil)))
	if *out.ETag != wantETag {
		t.Fatalf("ETag %s, want %s", *out.ETag, wantETag)
	}
	if want := e.srv.URL + "/bkt/big/object"; aws.ToString(out.Location) != want {
		t.Fatalf("Location %q, want %q", aws.ToString(out.Location), want)
	}
	// Part 4 was not chosen: only 3 parts × 6 shards remain.
	if n := e.files(t); n != 18 {
		t.Fatalf("%d shard files, want 18", n)
	}
	_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: id, PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
	wantCode(t, err, "NoSuchUpload")
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(get.Body)
	get.Body.Close()
	if err != nil || !bytes.Equal(got, data) || *get.ETag != wantETag || *get.ContentType != "text/x-mp" || get.Metadata["color"] != "red" {
		t.Fatalf("GET: %d bytes %v, etag %s type %s meta %v", len(got), err, *get.ETag, *get.ContentType, get.Metadata)
	}
	// Ranges across part and stripe boundaries.
	b1, b2 := off(1), off(2)
	for _, r := range [][2]int{{b1 - 1, b1}, {b1 - stripe - 7, b1 + stripe + 7}, {b1, b2 + 10}, {100, len(data) - 1}, {b2 - 1, len(data) - 1}, {b2, b2}} {
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, Range: aws.String(fmt.Sprintf("bytes=%d-%d", r[0], r[1]))})
		if err != nil {
			t.Fatalf("range %v: %v", r, err)
		}
		got, err := io.ReadAll(get.Body)
		get.Body.Close()
		if err != nil || !bytes.Equal(got, data[r[0]:r[1]+1]) {
			t.Fatalf("range %v: %d bytes, %v", r, len(got), err)
		}
	}
	// Overwrite with a single-part object: the parts' shards go.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("small")}); err != nil {
		t.Fatal(err)
	}
	if n := e.files(t); n != 3 { // a small object: 3 copies
		t.Fatalf("%d shard files after overwrite, want 3", n)
	}
}

func TestMultipartAbort(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("k")
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(randBytes(1, 3*stripe))}); err != nil {
		t.Fatal(err)
	}
	_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(10001), Body: strings.NewReader("x")})
	wantCode(t, err, "InvalidArgument")
	_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: aws.String("other"), UploadId: cr.UploadId})
	wantCode(t, err, "NoSuchUpload")
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId}); err != nil {
		t.Fatal(err)
	}
	if n := e.files(t); n != 0 {
		t.Fatalf("%d shard files after abort", n)
	}
	_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId})
	wantCode(t, err, "NoSuchUpload")
	_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k, UploadId: cr.UploadId})
	wantCode(t, err, "NoSuchUpload")
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(`"x"`)}}}})
	wantCode(t, err, "NoSuchUpload")
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("nobkt"), Key: k})
	wantCode(t, err, "NoSuchBucket")
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
	if err != nil || len(lu.Uploads) != 0 {
		t.Fatalf("ListMultipartUploads: %+v %v", lu, err)
	}
	_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(1), CopySource: aws.String("bkt/k")})
	wantCode(t, err, "NoSuchUpload") // an aborted upload takes no copied part either
}

func TestMultipartMinio(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	data := randBytes(9, 11*mib)
	info, err := e.minio(t).PutObject(ctx, "bkt", "m", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{PartSize: 5 * mib})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(info.ETag, "-3") {
		t.Fatalf("ETag %s, want a 3-part ETag", info.ETag)
	}
	obj, err := e.minio(t).GetObject(ctx, "bkt", "m", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GET: %d bytes, %v", len(got), err)
	}
	if err := e.minio(t).RemoveObject(ctx, "bkt", "m", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := e.files(t); n != 0 {
		t.Fatalf("%d shard files after delete", n)
	}
}

// TestMultipartCompleteTwice: completing an upload again answers, as S3,
// with the object it committed while that object is the key's current
// one, and NoSuchUpload once it was overwritten or deleted.
func TestMultipartCompleteTwice(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("k")
	upload := func() (*string, []types.CompletedPart) { return onePartUpload(t, c, b, k, "only part") }
	complete := func(id *string, parts []types.CompletedPart) (*s3.CompleteMultipartUploadOutput, error) {
		return completeUpload(c, b, k, id, parts, s3.CompleteMultipartUploadInput{})
	}
	id, parts := upload()
	first, err := complete(id, parts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := complete(id, parts)
	if err != nil {
		t.Fatalf("second completion: %v", err)
	}
	if aws.ToString(again.ETag) != aws.ToString(first.ETag) || aws.ToString(again.Location) != aws.ToString(first.Location) {
		t.Fatalf("second completion: ETag %q Location %q, first %q %q", aws.ToString(again.ETag), aws.ToString(again.Location),
			aws.ToString(first.ETag), aws.ToString(first.Location))
	}
	// Another upload of the key is not this one's object.
	other, otherParts := upload()
	_, err = complete(other, parts[:0:0])
	wantCode(t, err, "MalformedXML")
	if _, err := complete(other, otherParts); err != nil {
		t.Fatal(err)
	}
	_, err = complete(id, parts)
	wantCode(t, err, "NoSuchUpload")
	if _, err := complete(other, otherParts); err != nil {
		t.Fatalf("the current upload again: %v", err)
	}
	// Overwritten by a plain PUT, then deleted: no longer the upload's.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("plain")}); err != nil {
		t.Fatal(err)
	}
	_, err = complete(other, otherParts)
	wantCode(t, err, "NoSuchUpload")
	id, parts = upload()
	if _, err := complete(id, parts); err != nil {
		t.Fatal(err)
	}
	// An upload ID that never existed, on a key with a multipart object.
	_, err = complete(aws.String(strings.Repeat("0", 32)), parts)
	wantCode(t, err, "NoSuchUpload")
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k}); err != nil {
		t.Fatal(err)
	}
	_, err = complete(id, parts)
	wantCode(t, err, "NoSuchUpload")
}

// onePartUpload starts an upload of b/k with one part, body, and returns
// its ID and the part list that completes it.
func onePartUpload(t *testing.T, c *s3.Client, b, k *string, body string) (*string, []types.CompletedPart) {
	t.Helper()
	ctx := context.Background()
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	return cr.UploadId, []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: up.ETag}}
}

// completeUpload completes upload id of b/k with parts; in carries the
// other fields (conditions).
func completeUpload(c *s3.Client, b, k, id *string, parts []types.CompletedPart, in s3.CompleteMultipartUploadInput) (*s3.CompleteMultipartUploadOutput, error) {
	in.Bucket, in.Key, in.UploadId, in.MultipartUpload = b, k, id, &types.CompletedMultipartUpload{Parts: parts}
	return c.CompleteMultipartUpload(context.Background(), &in)
}

// ListParts and ListMultipartUploads past a page (1,000): every part and
// every upload is listed once, in order, page by page with the markers,
// as the SDK's paginators follow them; a max-parts of 0 lists none and
// says more follow.
func TestListPartsAndUploadsPastAPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("many/parts")
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1100
	for i := 1; i <= n; i++ {
		if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(int32(i)),
			Body: strings.NewReader(fmt.Sprint("part ", i))}); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
	}
	for _, maxParts := range []int32{0, 400, 1000} { // 0: the default, 1000
		in := &s3.ListPartsInput{Bucket: b, Key: k, UploadId: cr.UploadId}
		if maxParts > 0 {
			in.MaxParts = aws.Int32(maxParts)
		}
		var got []int32
		pages := 0
		for p := s3.NewListPartsPaginator(c, in); p.HasMorePages(); pages++ {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := maxParts; want > 0 && len(out.Parts) > int(want) || len(out.Parts) > 1000 {
				t.Fatalf("max-parts %d: a page of %d parts", maxParts, len(out.Parts))
			}
			for _, part := range out.Parts {
				got = append(got, *part.PartNumber)
			}
		}
		if len(got) != n || got[0] != 1 || got[n-1] != n {
			t.Fatalf("max-parts %d: %d parts listed in %d pages, want 1..%d", maxParts, len(got), pages, n)
		}
		for i, num := range got {
			if num != int32(i+1) {
				t.Fatalf("max-parts %d: part %d listed at %d", maxParts, num, i)
			}
		}
		t.Logf("max-parts %d: %d parts in %d pages", maxParts, n, pages)
	}
	zero, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k, UploadId: cr.UploadId, MaxParts: aws.Int32(0)})
	if err != nil || len(zero.Parts) != 0 || !*zero.IsTruncated {
		t.Fatalf("max-parts 0: %d parts, truncated %v, %v", len(zero.Parts), zero.IsTruncated, err)
	}
	// More uploads than a page.
	for i := range n {
		if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String(fmt.Sprintf("up/%05d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	last := ""
	in := &s3.ListMultipartUploadsInput{Bucket: b, Prefix: aws.String("up/")}
	for {
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Uploads) > 1000 {
			t.Fatalf("a page of %d uploads", len(out.Uploads))
		}
		for _, u := range out.Uploads {
			if key := *u.Key; seen[key] || key <= last {
				t.Fatalf("upload of %s listed twice or out of order (after %s)", key, last)
			}
			seen[*u.Key], last = true, *u.Key
		}
		if !*out.IsTruncated {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	if len(seen) != n {
		t.Fatalf("%d uploads listed, want %d", len(seen), n)
	}
}
