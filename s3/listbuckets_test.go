package s3

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn"
)

// TestListBucketsPaginator: with 1,005 buckets the SDK's paginator walks
// them in pages of max-buckets, each once, in name order; prefix narrows
// the listing and is echoed; a request without max-buckets returns them
// all in one response (under S3's 10,000), read from the store a page at
// a time; bad max-buckets and tokens are refused.
func TestListBucketsPaginator(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var want []string
	for i := range 1005 {
		name := fmt.Sprintf("bkt-%04d", i)
		if err := e.meta.CreateBucket(ctx, cairn.Bucket{Name: name, Policy: "rs-4-2"}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	c := e.root()
	var got []string
	pages := 0
	p := s3.NewListBucketsPaginator(c, &s3.ListBucketsInput{MaxBuckets: aws.Int32(300)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pages++; len(out.Buckets) > 300 || pages > 4 {
			t.Fatalf("page %d of %d buckets", pages, len(out.Buckets))
		}
		for _, b := range out.Buckets {
			if aws.ToString(b.BucketRegion) != "us-east-1" || b.CreationDate == nil {
				t.Fatalf("bucket %+v", b)
			}
			got = append(got, aws.ToString(b.Name))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d buckets in %d pages, want %d in name order", len(got), pages, len(want))
	}

	got = nil
	p = s3.NewListBucketsPaginator(c, &s3.ListBucketsInput{Prefix: aws.String("bkt-01"), MaxBuckets: aws.Int32(30)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.Prefix) != "bkt-01" {
			t.Fatalf("prefix echoed %q", aws.ToString(out.Prefix))
		}
		for _, b := range out.Buckets {
			got = append(got, aws.ToString(b.Name))
		}
	}
	if !slices.Equal(got, want[100:200]) {
		t.Fatalf("under bkt-01: %d buckets %v..., want bkt-0100..bkt-0199", len(got), got[:min(3, len(got))])
	}

	out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Buckets) != len(want) || out.ContinuationToken != nil {
		t.Fatalf("one response: %d buckets, token %v", len(out.Buckets), out.ContinuationToken)
	}
	if out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{BucketRegion: aws.String("eu-west-3")}); err != nil || len(out.Buckets) != 0 {
		t.Fatalf("another region: %v, %v", out, err)
	}
	for _, q := range []string{"max-buckets=0", "max-buckets=10001", "max-buckets=x", "continuation-token=%25%25"} {
		if status, body := do(t, e.signed(t, http.MethodGet, "/?"+q, nil, "", nil)); status != http.StatusBadRequest {
			t.Fatalf("ListBuckets ?%s: %d %s", q, status, body)
		}
	}
}

// countingBuckets counts the bucket records ListBuckets reads.
type countingBuckets struct {
	Meta
	read, calls int
}

func (c *countingBuckets) BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error) {
	bs, more, err := c.Meta.BucketPage(ctx, after, limit)
	c.read, c.calls = c.read+len(bs), c.calls+1
	return bs, more, err
}

// A ListBuckets page reads what it returns plus one, or at most
// maxBuckets records for a user who owns none of them.
func TestListBucketsReadsAPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i := range 12000 {
		if err := e.meta.CreateBucket(ctx, cairn.Bucket{Name: fmt.Sprintf("b-%05d", i), Policy: "rs-4-2", Owner: "someone"}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &countingBuckets{Meta: e.meta}
	all := func(cairn.Bucket) bool { return true }
	bs, next, err := bucketsPage(ctx, cm, "", "b-00099", 10, all)
	if err != nil || len(bs) != 10 || bs[0].Name != "b-00100" || next != "b-00109" || cm.read > 11 {
		t.Fatalf("%d buckets, next %q, %d read, %v", len(bs), next, cm.read, err)
	}
	*cm = countingBuckets{Meta: e.meta}
	bs, next, err = bucketsPage(ctx, cm, "", "", maxBuckets, func(b cairn.Bucket) bool { return b.Owner == "nobody" })
	if err != nil || len(bs) != 0 || next == "" || cm.read > maxBuckets+maxListKeys {
		t.Fatalf("a user with no buckets: %d buckets, next %q, %d read, %v", len(bs), next, cm.read, err)
	}
	*cm = countingBuckets{Meta: e.meta}
	bs, next, err = bucketsPage(ctx, cm, "b-1", "", 5, all)
	if err != nil || len(bs) != 5 || bs[0].Name != "b-10000" || next != "b-10004" || cm.read > 6 {
		t.Fatalf("under b-1: %d buckets, next %q, %d read, %v", len(bs), next, cm.read, err)
	}
	*cm = countingBuckets{Meta: e.meta}
	bs, next, err = bucketsPage(ctx, cm, "b-0", "b-09998", 5, all)
	if err != nil || len(bs) != 1 || bs[0].Name != "b-09999" || next != "" || cm.read > 6 {
		t.Fatalf("the end of b-0: %v, next %q, %d read, %v", bs, next, cm.read, err)
	}
}

// A user's ListBuckets pages hold only the user's buckets, however the
// names interleave with other users', and the paginator finds them all.
func TestListBucketsPagesOwnBuckets(t *testing.T) {
	e := newEnvWith(t, StaticCredentials{
		"AKIAALICE": {Name: "alice", AccessKey: "AKIAALICE", SecretKey: "alice-secret"},
		"AKIABOB":   {Name: "bob", AccessKey: "AKIABOB", SecretKey: "bob-secret"},
	})
	ctx := context.Background()
	var mine []string
	for i := range 50 {
		owner := "bob"
		if i%7 == 3 {
			owner = "alice"
		}
		name := fmt.Sprintf("shared-%03d", i)
		if err := e.meta.CreateBucket(ctx, cairn.Bucket{Name: name, Policy: "rs-4-2", Owner: owner}); err != nil {
			t.Fatal(err)
		}
		if owner == "alice" {
			mine = append(mine, name)
		}
	}
	var got []string
	p := s3.NewListBucketsPaginator(e.aws("AKIAALICE", "alice-secret"), &s3.ListBucketsInput{MaxBuckets: aws.Int32(2)})
	for pages := 0; p.HasMorePages(); pages++ {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Buckets) > 2 || pages > len(mine) {
			t.Fatalf("page %d of %d buckets", pages, len(out.Buckets))
		}
		for _, b := range out.Buckets {
			got = append(got, aws.ToString(b.Name))
		}
	}
	if !slices.Equal(got, mine) {
		t.Fatalf("alice lists %v, owns %v", got, mine)
	}
}
