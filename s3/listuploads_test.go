package s3

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
)

// ListMultipartUploads with a delimiter rolls keys into common prefixes,
// each counted once against max-uploads, and pages through them.
func TestListUploadsDelimiter(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	for _, k := range []string{"a/1", "a/2", "b", "c/x/1", "c/y", "d"} {
		if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	// page lists one page and returns its entries ("key" or "prefix/").
	page := func(prefix, keyMarker string, max int32) ([]string, *s3.ListMultipartUploadsOutput) {
		t.Helper()
		in := &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Delimiter: aws.String("/"), Prefix: aws.String(prefix), MaxUploads: aws.Int32(max)}
		if keyMarker != "" {
			in.KeyMarker = aws.String(keyMarker)
		}
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range out.Uploads {
			got = append(got, *u.Key)
		}
		for _, cp := range out.CommonPrefixes {
			got = append(got, *cp.Prefix)
		}
		return got, out
	}
	if got, out := page("", "", 1000); fmt.Sprint(got) != "[b d a/ c/]" || aws.ToBool(out.IsTruncated) || aws.ToString(out.Delimiter) != "/" {
		t.Fatalf("one page: %v %+v", got, out)
	}
	if got, _ := page("c/", "", 1000); fmt.Sprint(got) != "[c/y c/x/]" {
		t.Fatalf("under c/: %v", got)
	}
	// Pages of two: a common prefix counts once, and a key-marker that is
	// a common prefix resumes after everything under it.
	var all []string
	marker := ""
	for range 10 {
		got, out := page("", marker, 2)
		all = append(all, got...)
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		marker = aws.ToString(out.NextKeyMarker)
	}
	slices.Sort(all)
	if fmt.Sprint(all) != "[a/ b c/ d]" { // each entry once, none lost
		t.Fatalf("paged: %v", all)
	}
}

// TestListUploadsPaginator: the SDK's paginator walks 1,100 uploads in
// pages of 250 — several uploads per key, listed by key and then by
// initiation time (their IDs sort the other way) — each once; with a
// prefix and a delimiter it pages the common prefixes as well.
func TestListUploadsPaginator(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	t0 := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	var want []cairn.Upload
	for i := range 1100 {
		key := fmt.Sprintf("dir%d/k%03d", i%3, i%367)
		u := cairn.Upload{Bucket: "bkt", Key: key, ID: fmt.Sprintf("%032x", 5000-i), Created: t0.Add(time.Duration(i) * time.Second), Policy: "rs-4-2"}
		if err := e.meta.CreateUpload(ctx, u); err != nil {
			t.Fatal(err)
		}
		want = append(want, u)
	}
	slices.SortFunc(want, func(a, b cairn.Upload) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), a.Created.Compare(b.Created))
	})
	c := e.root()
	var got []string
	pages := 0
	p := s3.NewListMultipartUploadsPaginator(c, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), MaxUploads: aws.Int32(250)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pages++; len(out.Uploads) > 250 || pages > 5 {
			t.Fatalf("page %d of %d uploads", pages, len(out.Uploads))
		}
		for _, u := range out.Uploads {
			if u.Initiated == nil || u.StorageClass != "STANDARD" {
				t.Fatalf("upload %+v", u)
			}
			got = append(got, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d uploads in %d pages, want %d", len(got), pages, len(want))
	}
	for i, u := range want {
		if got[i] != u.Key+" "+u.ID {
			t.Fatalf("upload %d is %s, want %s %s (key, then initiation time)", i, got[i], u.Key, u.ID)
		}
	}

	// Under dir1/ with a delimiter "/": only keys (no deeper prefixes).
	// At the top with "/": three common prefixes, one per page of one.
	var under int
	p = s3.NewListMultipartUploadsPaginator(c, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Prefix: aws.String("dir1/"), Delimiter: aws.String("/"), MaxUploads: aws.Int32(100)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		under += len(out.Uploads)
	}
	if under != 367 { // i%3 == 1 for 367 of 0..1099
		t.Fatalf("%d uploads under dir1/", under)
	}
	var cps []string
	p = s3.NewListMultipartUploadsPaginator(c, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Delimiter: aws.String("/"), MaxUploads: aws.Int32(1)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range out.CommonPrefixes {
			cps = append(cps, aws.ToString(cp.Prefix))
		}
		if len(cps) > 3 {
			t.Fatalf("common prefixes %v", cps)
		}
	}
	if fmt.Sprint(cps) != "[dir0/ dir1/ dir2/]" {
		t.Fatalf("common prefixes %v", cps)
	}

	// A page after an upload of a key resumes within that key.
	mid := want[1] // the second upload of the first key
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), KeyMarker: aws.String(mid.Key),
		UploadIdMarker: aws.String(mid.ID), MaxUploads: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 2 || aws.ToString(out.Uploads[0].UploadId) != want[2].ID || aws.ToString(out.Uploads[1].UploadId) != want[3].ID ||
		!aws.ToBool(out.IsTruncated) || aws.ToString(out.NextUploadIdMarker) != want[3].ID {
		t.Fatalf("after %s %s: %+v", mid.Key, mid.ID, out)
	}
}

// countingUploads counts the index records ListMultipartUploads reads.
type countingUploads struct {
	Meta
	read, calls int
}

func (c *countingUploads) UploadKeyPage(ctx context.Context, bucket, prefix, keyMarker, idMarker string, limit int) ([]cairn.Upload, bool, error) {
	us, more, err := c.Meta.UploadKeyPage(ctx, bucket, prefix, keyMarker, idMarker, limit)
	c.read, c.calls = c.read+len(us), c.calls+1
	return us, more, err
}

// A page of ListMultipartUploads reads about what it returns: max-uploads
// plus one, or a few uploads per common prefix, however many uploads the
// bucket holds.
func TestListUploadsReadsAPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	for d := range 20 {
		for f := range 100 {
			u := cairn.Upload{Bucket: "bkt", Key: fmt.Sprintf("d%02d/f%03d", d, f), ID: fmt.Sprintf("%02d%03d", d, f), Policy: "rs-4-2"}
			if err := e.meta.CreateUpload(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	cm := &countingUploads{Meta: e.meta}
	p, err := listUploadsPage(ctx, cm, "bkt", "", "", "d03/f050", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.uploads) != 10 || !p.truncated || p.uploads[0].Key != "d03/f051" || cm.read > 11 {
		t.Fatalf("%d uploads from %s (truncated %v), %d read", len(p.uploads), p.uploads[0].Key, p.truncated, cm.read)
	}
	*cm = countingUploads{Meta: e.meta}
	p, err = listUploadsPage(ctx, cm, "bkt", "", "/", "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.prefixes) != 20 || len(p.uploads) != 0 || p.truncated || cm.read > 20*skipBatch {
		t.Fatalf("%d prefixes, %d uploads (truncated %v), %d read", len(p.prefixes), len(p.uploads), p.truncated, cm.read)
	}
	if _, err := listUploadsPage(ctx, cm, "nosuch", "", "", "", "", 10); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("a missing bucket: %v", err)
	}
}

// encoding-type=url: ListMultipartUploads percent-encodes keys, prefixes
// and markers, as ListObjects does; another encoding is refused.
func TestListUploadsEncoding(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	for _, k := range []string{"a b+c%d/ü", "a b/x", "z"} {
		if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Prefix: aws.String("a b"),
		EncodingType: types.EncodingTypeUrl, MaxUploads: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 1 || aws.ToString(out.Uploads[0].Key) != "a%20b%2Bc%25d/%C3%BC" || aws.ToString(out.Prefix) != "a%20b" ||
		aws.ToString(out.NextKeyMarker) != "a%20b%2Bc%25d/%C3%BC" || out.EncodingType != types.EncodingTypeUrl {
		t.Fatalf("url encoding: %+v", out)
	}
	out, err = c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Delimiter: aws.String(" "), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CommonPrefixes) != 1 || aws.ToString(out.CommonPrefixes[0].Prefix) != "a%20" || aws.ToString(out.Delimiter) != "%20" {
		t.Fatalf("url encoding of common prefixes: %+v", out)
	}
	if status, body := do(t, e.signed(t, http.MethodGet, "/bkt?uploads&encoding-type=base64", nil, "", nil)); status != http.StatusBadRequest {
		t.Fatalf("encoding-type=base64: %d %s", status, body)
	}
}
