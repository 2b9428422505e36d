package s3

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
