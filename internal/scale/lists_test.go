package scale_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/etcd/etcdtest"
	"cairn/s3"
)

// TestScaleLists: on a real embedded etcd, ListMultipartUploads pages
// through a bucket's uploads in key order and ListBuckets through the
// buckets, with the SDK's paginators, each page one bounded read of the
// store (reduced: 2,500 uploads and 1,500 buckets; CAIRN_SCALE=full:
// 50,000 uploads and 20,000 buckets). It logs the time per form.
func TestScaleLists(t *testing.T) {
	uploads, buckets := 2500, 1500
	if os.Getenv("CAIRN_SCALE") == "full" {
		uploads, buckets = 50_000, 20_000
	}
	ctx := t.Context()
	store := etcdtest.Store(t, etcdmeta.Options{CallTimeout: time.Minute})

	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range buckets {
		g.Go(func() error {
			return store.CreateBucket(gctx, cairn.Bucket{Name: fmt.Sprintf("b-%06d", i), Policy: policy})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// Keys of 5 uploads each, created newest first: the listing's order
	// within a key (initiation time) is not the creation order.
	created := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range uploads {
		g.Go(func() error {
			return store.CreateUpload(gctx, cairn.Upload{Bucket: "b-000000", Key: fmt.Sprintf("dir%d/key%06d", (i/5)%4, i/5),
				ID: fmt.Sprintf("%032x", i), Created: created.Add(-time.Duration(i) * time.Second), Policy: policy})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d buckets and %d uploads in %v", buckets, uploads, time.Since(start).Round(time.Millisecond))

	h, err := s3.New(s3.Config{
		Objects:     client.New(store, clienttest.NewMemShards(), client.Config{}),
		Meta:        store,
		Credentials: s3.RootCredentials("AKIASCALE", "scale-secret"),
	})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(h)
	t.Cleanup(web.Close)
	sdk := s3sdk.New(s3sdk.Options{Region: "us-east-1", BaseEndpoint: aws.String(web.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIASCALE", "scale-secret", ""), Retryer: aws.NopRetryer{}})

	start = time.Now()
	listed, pages := 0, 0
	var lastKey string
	var lastCreated time.Time
	up := s3sdk.NewListMultipartUploadsPaginator(sdk, &s3sdk.ListMultipartUploadsInput{Bucket: aws.String("b-000000")})
	for up.HasMorePages() {
		out, err := up.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListMultipartUploads page %d: %v", pages, err)
		}
		for _, u := range out.Uploads {
			k, c := aws.ToString(u.Key), aws.ToTime(u.Initiated)
			if k < lastKey || k == lastKey && c.Before(lastCreated) {
				t.Fatalf("ListMultipartUploads: %s of %v after %s of %v", k, c, lastKey, lastCreated)
			}
			lastKey, lastCreated = k, c
		}
		listed += len(out.Uploads)
		pages++
	}
	if listed != uploads {
		t.Fatalf("ListMultipartUploads listed %d uploads in %d pages, want %d", listed, pages, uploads)
	}
	t.Logf("ListMultipartUploads: %d uploads in %d pages in %v", listed, pages, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	listed, pages = 0, 0
	bp := s3sdk.NewListBucketsPaginator(sdk, &s3sdk.ListBucketsInput{MaxBuckets: aws.Int32(1000)})
	for bp.HasMorePages() {
		out, err := bp.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListBuckets page %d: %v", pages, err)
		}
		listed += len(out.Buckets)
		pages++
	}
	if listed != buckets {
		t.Fatalf("ListBuckets listed %d buckets in %d pages, want %d", listed, pages, buckets)
	}
	t.Logf("ListBuckets: %d buckets in %d pages of 1000 in %v", listed, pages, time.Since(start).Round(time.Millisecond))
}
