package s3

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestBuckets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()

	for _, name := range []string{"alpha", "beta.b-1", "gamma"} {
		e.mkBucket(t, name)
	}
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alpha")})
	wantCode(t, err, "BucketAlreadyOwnedByYou")

	for _, bad := range []string{"ab", "Upper", "under_score", "-dash", "a..b", "192.168.1.1", strings.Repeat("x", 64), "xn--bcher-kva", "my-ap-s3alias", "my-olap--ol-s3"} {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bad)})
		wantCode(t, err, "InvalidBucketName")
	}

	lb, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range lb.Buckets {
		names = append(names, *b.Name)
		if b.CreationDate == nil || b.CreationDate.IsZero() {
			t.Errorf("bucket %s has no creation date", *b.Name)
		}
	}
	if got := strings.Join(names, ","); got != "alpha,beta.b-1,gamma" {
		t.Fatalf("ListBuckets = %s", got)
	}

	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("alpha")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("nope")})
	wantStatus(t, err, http.StatusNotFound)

	loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("alpha")})
	if err != nil || loc.LocationConstraint != "" {
		t.Fatalf("GetBucketLocation = %q, %v", loc.LocationConstraint, err)
	}
	if l, err := e.minio(t).GetBucketLocation(ctx, "alpha"); err != nil || l != "us-east-1" {
		t.Fatalf("minio GetBucketLocation = %q, %v", l, err)
	}
	_, err = c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("nope")})
	wantCode(t, err, "NoSuchBucket")

	// A location constraint for us-east-1 is accepted, another region is not.
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("west"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintUsWest2}})
	wantCode(t, err, "InvalidLocationConstraint")

	// Delete: only empty buckets.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("alpha"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("alpha")})
	wantCode(t, err, "BucketNotEmpty")
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("nope")})
	wantCode(t, err, "NoSuchBucket")
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("gamma")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("gamma")})
	wantStatus(t, err, http.StatusNotFound)
}

// x-cairn-policy sets a bucket's default policy; objects inherit it unless
// they name their own.
func TestBucketPolicy(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	st, body := do(t, e.signed(t, "PUT", "/repl", nil, "", http.Header{"X-Cairn-Policy": {"rep-3"}}))
	if st != http.StatusOK {
		t.Fatalf("create: %d %s", st, body)
	}
	b, err := e.meta.Bucket(ctx, "repl")
	if err != nil || b.Policy != "rep-3" || b.Owner != "root" {
		t.Fatalf("bucket = %+v, %v", b, err)
	}
	st, body = do(t, e.signed(t, "PUT", "/bad", nil, "", http.Header{"X-Cairn-Policy": {"rs-nonsense"}}))
	if st != http.StatusBadRequest || !strings.Contains(body, "<Code>InvalidArgument</Code>") {
		t.Fatalf("bad policy: %d %s", st, body)
	}
	e.mkBucket(t, "dflt")
	if b, _ := e.meta.Bucket(ctx, "dflt"); b.Policy != "rs-4-2" {
		t.Fatalf("default policy = %q", b.Policy)
	}

	c := e.root()
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("repl"), Key: aws.String("inherit"), Body: strings.NewReader("data")}); err != nil {
		t.Fatal(err)
	}
	st, body = do(t, e.signed(t, "PUT", "/repl/own", []byte("data"), "", http.Header{"X-Cairn-Policy": {"rs-3-2"}}))
	if st != http.StatusOK {
		t.Fatalf("put with policy: %d %s", st, body)
	}
	for key, want := range map[string]string{"inherit": "rep-3", "own": "rs-3-2"} {
		m, err := e.meta.Manifest(ctx, "repl", key)
		if err != nil || m.Policy != want {
			t.Fatalf("%s: policy %v, %v; want %s", key, m, err, want)
		}
		resp, err := http.DefaultClient.Do(e.signed(t, "HEAD", "/repl/"+key, nil, "", nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Cairn-Policy"); got != want {
			t.Fatalf("HEAD %s: x-cairn-policy %q, want %q", key, got, want)
		}
	}
}

// A non-root identity sees and touches only the buckets it owns (the seam
// for the users file of issue 6; only root exists in production so far).
func TestBucketOwnership(t *testing.T) {
	creds := RootCredentials(testAccess, testSecret)
	creds["AKIAALICE"] = Identity{Name: "alice", AccessKey: "AKIAALICE", SecretKey: "alice-secret"}
	e := newEnvWith(t, creds)
	ctx := context.Background()
	alice := e.aws("AKIAALICE", "alice-secret")
	e.mkBucket(t, "rootbkt")
	if _, err := alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("alicebkt")}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("alicebkt"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	lb, err := alice.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 1 || *lb.Buckets[0].Name != "alicebkt" {
		t.Fatalf("alice's buckets: %v, %v", lb, err)
	}
	if lb, _ := e.root().ListBuckets(ctx, &s3.ListBucketsInput{}); len(lb.Buckets) != 2 {
		t.Fatalf("root sees %d buckets", len(lb.Buckets))
	}
	_, err = alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rootbkt"), Key: aws.String("k"), Body: strings.NewReader("x")})
	wantCode(t, err, "AccessDenied")
	_, err = alice.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("rootbkt")})
	wantCode(t, err, "AccessDenied")
	_, err = alice.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("rootbkt")})
	wantCode(t, err, "AccessDenied")
	_, err = alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("rootbkt")})
	wantCode(t, err, "BucketAlreadyExists")
	_, err = alice.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("alicebkt"), Key: aws.String("c"), CopySource: aws.String("rootbkt/k")})
	wantCode(t, err, "AccessDenied")
	if _, err := e.root().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("alicebkt"), Key: aws.String("k")}); err != nil {
		t.Fatalf("root reads alice's object: %v", err)
	}
}

// x-amz-storage-class picks a configured policy; HEAD and listings show the
// class back; x-cairn-policy wins over it.
func TestStorageClass(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	put := func(key string, class types.StorageClass) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), Body: strings.NewReader("data"), StorageClass: class})
		return err
	}
	if err := put("std", types.StorageClassStandard); err != nil {
		t.Fatal(err)
	}
	if err := put("rr", types.StorageClassReducedRedundancy); err != nil {
		t.Fatal(err)
	}
	wantCode(t, put("glacier", types.StorageClassGlacier), "InvalidStorageClass")
	for key, want := range map[string][2]string{"std": {"rs-4-2", ""}, "rr": {"rs-4-1", "REDUCED_REDUNDANCY"}} {
		m, err := e.meta.Manifest(ctx, "bkt", key)
		if err != nil || m.Policy != want[0] {
			t.Fatalf("%s: %v %v", key, m, err)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil || string(head.StorageClass) != want[1] {
			t.Fatalf("%s: HEAD storage class %q, %v", key, head.StorageClass, err)
		}
	}
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
	if err != nil || len(lo.Contents) != 2 || lo.Contents[0].StorageClass != types.ObjectStorageClassReducedRedundancy || lo.Contents[1].StorageClass != types.ObjectStorageClassStandard {
		t.Fatalf("listing: %+v %v", lo, err)
	}
	// A copy can change the class.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("std"), CopySource: aws.String("bkt/std"),
		StorageClass: types.StorageClassReducedRedundancy, MetadataDirective: types.MetadataDirectiveReplace}); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.meta.Manifest(ctx, "bkt", "std"); m.Policy != "rs-4-1" {
		t.Fatalf("copied policy %s", m.Policy)
	}
}

// TestBucketLocationRegion: a gateway in another region than us-east-1
// reports it as the LocationConstraint, as S3 does for every region but
// us-east-1 (whose constraint is empty).
func TestBucketLocationRegion(t *testing.T) {
	e := newEnv(t)
	e.h.cfg.Region = "eu-west-1" // before any request is served
	ctx := context.Background()
	c := e.aws(testAccess, testSecret, func(o *s3.Options) { o.Region = "eu-west-1" })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("euro"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintEuWest1}}); err != nil {
		t.Fatal(err)
	}
	loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("euro")})
	if err != nil || loc.LocationConstraint != types.BucketLocationConstraintEuWest1 {
		t.Fatalf("GetBucketLocation = %q, %v", loc.LocationConstraint, err)
	}
}
