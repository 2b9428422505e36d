package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"cairn"
)

func (nopMeta) SetBucketObjectLock(context.Context, string, cairn.ObjectLock) error {
	return cairn.ErrNotFound
}
func (nopMeta) SetObjectLock(context.Context, string, string, string, cairn.LockChange) (cairn.ObjectVersion, error) {
	return cairn.ObjectVersion{}, cairn.ErrNotFound
}
func (nopMeta) DeleteVersionBypass(context.Context, string, string, string) (cairn.ObjectVersion, error) {
	return cairn.ObjectVersion{}, cairn.ErrNotFound
}

// mkLockBucket creates a bucket with Object Lock through the SDK.
func (e *env) mkLockBucket(t *testing.T, name string) {
	t.Helper()
	if _, err := e.root().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name),
		ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
}

// putLocked puts a version of key with a retention (mode "": none) and
// a legal hold, and returns its version ID.
func putLocked(t *testing.T, c *s3.Client, bucket, key string, mode types.ObjectLockMode, until time.Time, hold bool) string {
	t.Helper()
	in := &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("locked " + key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32}
	if mode != "" {
		in.ObjectLockMode, in.ObjectLockRetainUntilDate = mode, aws.Time(until)
	}
	if hold {
		in.ObjectLockLegalHoldStatus = types.ObjectLockLegalHoldStatusOn
	}
	out, err := c.PutObject(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VersionId)
}

func deleteVersion(c *s3.Client, bucket, key, id string, bypass bool) error {
	in := &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(id)}
	if bypass {
		in.BypassGovernanceRetention = aws.Bool(true)
	}
	_, err := c.DeleteObject(context.Background(), in)
	return err
}

// TestObjectLockConfiguration: a bucket created with Object Lock is
// versioned for good; the default retention round-trips; Object Lock can
// be enabled on an existing bucket once its versioning is Enabled; the
// errors are AWS's.
func TestObjectLockConfiguration(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkLockBucket(t, "locked")
	v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("locked")})
	if err != nil || v.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("versioning of a lock bucket: %q, %v", v.Status, err)
	}
	got, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("locked")})
	if err != nil || got.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled || got.ObjectLockConfiguration.Rule != nil {
		t.Fatalf("GetObjectLockConfiguration: %+v, %v", got.ObjectLockConfiguration, err)
	}
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("locked"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
	wantCode(t, err, "InvalidBucketState")

	put := func(bucket string, r *types.DefaultRetention) error {
		cfg := &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled}
		if r != nil {
			cfg.Rule = &types.ObjectLockRule{DefaultRetention: r}
		}
		_, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String(bucket), ObjectLockConfiguration: cfg})
		return err
	}
	if err := put("locked", &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(7)}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("locked")})
	if err != nil || got.ObjectLockConfiguration.Rule == nil || got.ObjectLockConfiguration.Rule.DefaultRetention.Mode != types.ObjectLockRetentionModeGovernance ||
		aws.ToInt32(got.ObjectLockConfiguration.Rule.DefaultRetention.Days) != 7 || got.ObjectLockConfiguration.Rule.DefaultRetention.Years != nil {
		t.Fatalf("GetObjectLockConfiguration after a rule: %+v, %v", got.ObjectLockConfiguration, err)
	}
	if err := put("locked", &types.DefaultRetention{Mode: types.ObjectLockRetentionModeCompliance, Years: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	err = put("locked", &types.DefaultRetention{Mode: types.ObjectLockRetentionModeCompliance, Years: aws.Int32(2), Days: aws.Int32(1)})
	wantCode(t, err, "MalformedXML")
	err = put("locked", &types.DefaultRetention{Mode: types.ObjectLockRetentionModeCompliance, Days: aws.Int32(0)})
	wantCode(t, err, "InvalidArgument")
	err = put("locked", &types.DefaultRetention{Days: aws.Int32(1)})
	wantCode(t, err, "MalformedXML")

	e.mkBucket(t, "plain")
	_, err = c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("plain")})
	wantCode(t, err, "ObjectLockConfigurationNotFoundError")
	wantCode(t, put("plain", nil), "InvalidBucketState")
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("plain"), Key: aws.String("k"), Body: strings.NewReader("x"),
		ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: aws.Time(time.Now().Add(time.Hour))})
	wantCode(t, err, "InvalidRequest")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("plain"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String("plain"), Key: aws.String("k")})
	wantCode(t, err, "InvalidRequest")
	_, err = c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("plain"), Key: aws.String("k"),
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOn}})
	wantCode(t, err, "InvalidRequest")

	// Enabling Object Lock on an existing bucket, as AWS now allows.
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("plain"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	if err := put("plain", nil); err != nil {
		t.Fatalf("Object Lock on an existing versioned bucket: %v", err)
	}
	// Its object written before (the null version) can be locked now.
	if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("plain"), Key: aws.String("k"),
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOn}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, deleteVersion(c, "plain", "k", "null", true), "AccessDenied")

	// An object's subresource asked of a bucket, or the reverse, is not
	// mistaken for a listing or a PUT.
	for _, target := range []string{"/locked?retention", "/locked?legal-hold", "/locked/k?object-lock"} {
		resp, err := http.DefaultClient.Do(e.signed(t, http.MethodGet, target, nil, "", nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotImplemented {
			t.Errorf("GET %s: %d, want 501", target, resp.StatusCode)
		}
	}
}

// TestObjectLockCompliance is issue #16's acceptance: a COMPLIANCE-locked
// object cannot be deleted or overwritten in place by anyone, root
// included, until its date; its retention can be extended, not shortened.
func TestObjectLockCompliance(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkLockBucket(t, "worm")
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	id := putLocked(t, c, "worm", "k", types.ObjectLockModeCompliance, until, false)

	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("worm"), Key: aws.String("k")})
	if err != nil || h.ObjectLockMode != types.ObjectLockModeCompliance || !aws.ToTime(h.ObjectLockRetainUntilDate).Equal(until) {
		t.Fatalf("HEAD of a locked object: mode %q until %v, %v", h.ObjectLockMode, h.ObjectLockRetainUntilDate, err)
	}
	r, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String("worm"), Key: aws.String("k"), VersionId: aws.String(id)})
	if err != nil || r.Retention.Mode != types.ObjectLockRetentionModeCompliance || !aws.ToTime(r.Retention.RetainUntilDate).Equal(until) {
		t.Fatalf("GetObjectRetention: %+v, %v", r.Retention, err)
	}
	_, err = c.GetObjectLegalHold(ctx, &s3.GetObjectLegalHoldInput{Bucket: aws.String("worm"), Key: aws.String("k")})
	wantCode(t, err, "NoSuchObjectLockConfiguration")

	wantCode(t, deleteVersion(c, "worm", "k", id, false), "AccessDenied")
	wantCode(t, deleteVersion(c, "worm", "k", id, true), "AccessDenied")
	do, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("worm"), BypassGovernanceRetention: aws.Bool(true),
		Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("k"), VersionId: aws.String(id)}}}})
	if err != nil || len(do.Errors) != 1 || aws.ToString(do.Errors[0].Code) != "AccessDenied" || len(do.Deleted) != 0 {
		t.Fatalf("DeleteObjects of a locked version: %+v, %v", do, err)
	}
	// Overwriting and a delete marker leave the locked version as it was.
	over := putLocked(t, c, "worm", "k", "", time.Time{}, false)
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("worm"), Key: aws.String("k")}); err != nil {
		t.Fatalf("a delete marker over a locked version: %v", err)
	}
	if got, _ := getBytes(t, c, "worm", "k", id); string(got) != "locked k" {
		t.Fatalf("the locked version reads %q", got)
	}
	if err := deleteVersion(c, "worm", "k", over, false); err != nil {
		t.Fatalf("deleting the unlocked version over it: %v", err)
	}

	retain := func(mode types.ObjectLockRetentionMode, t time.Time, bypass bool) error {
		in := &s3.PutObjectRetentionInput{Bucket: aws.String("worm"), Key: aws.String("k"), VersionId: aws.String(id),
			Retention: &types.ObjectLockRetention{Mode: mode, RetainUntilDate: aws.Time(t)}}
		if bypass {
			in.BypassGovernanceRetention = aws.Bool(true)
		}
		_, err := c.PutObjectRetention(ctx, in)
		return err
	}
	wantCode(t, retain(types.ObjectLockRetentionModeCompliance, until.Add(-time.Minute), true), "AccessDenied")
	wantCode(t, retain(types.ObjectLockRetentionModeGovernance, until.Add(time.Minute), true), "AccessDenied")
	wantCode(t, retain(types.ObjectLockRetentionModeCompliance, time.Now().Add(-time.Minute), false), "InvalidArgument")
	wantCode(t, retain("FOREVER", until.Add(time.Minute), false), "InvalidArgument")
	if err := retain(types.ObjectLockRetentionModeCompliance, until.Add(time.Hour), false); err != nil {
		t.Fatalf("extending a COMPLIANCE retention: %v", err)
	}
	r, err = c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: aws.String("worm"), Key: aws.String("k"), VersionId: aws.String(id)})
	if err != nil || !aws.ToTime(r.Retention.RetainUntilDate).Equal(until.Add(time.Hour)) {
		t.Fatalf("GetObjectRetention after extending: %+v, %v", r.Retention, err)
	}
	_, err = c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("worm"), Key: aws.String("k"), VersionId: aws.String("0123456789abcdef0123456789abcdef"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: aws.Time(until)}})
	wantCode(t, err, "NoSuchVersion")
	// The bucket cannot go while the version is there.
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("worm")})
	wantCode(t, err, "BucketNotEmpty")
}

// TestObjectLockGovernance: a GOVERNANCE version goes with the bypass
// header, not without; its retention is shortened only with it; a legal
// hold stops even the bypass.
func TestObjectLockGovernance(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkLockBucket(t, "gov")
	until := time.Now().Add(24 * time.Hour)
	id := putLocked(t, c, "gov", "g", types.ObjectLockModeGovernance, until, false)
	wantCode(t, deleteVersion(c, "gov", "g", id, false), "AccessDenied")
	_, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("gov"), Key: aws.String("g"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: aws.Time(until.Add(-time.Hour))}})
	wantCode(t, err, "AccessDenied")
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("gov"), Key: aws.String("g"), BypassGovernanceRetention: aws.Bool(true),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: aws.Time(until.Add(-time.Hour))}}); err != nil {
		t.Fatalf("shortening GOVERNANCE with the bypass: %v", err)
	}
	if err := deleteVersion(c, "gov", "g", id, true); err != nil {
		t.Fatalf("deleting a GOVERNANCE version with the bypass: %v", err)
	}

	// A legal hold, alone: no bypass helps until it is lifted.
	hid := putLocked(t, c, "gov", "h", "", time.Time{}, true)
	lh, err := c.GetObjectLegalHold(ctx, &s3.GetObjectLegalHoldInput{Bucket: aws.String("gov"), Key: aws.String("h"), VersionId: aws.String(hid)})
	if err != nil || lh.LegalHold.Status != types.ObjectLockLegalHoldStatusOn {
		t.Fatalf("GetObjectLegalHold: %+v, %v", lh.LegalHold, err)
	}
	if h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("gov"), Key: aws.String("h")}); err != nil || h.ObjectLockLegalHoldStatus != types.ObjectLockLegalHoldStatusOn {
		t.Fatalf("HEAD of a held object: %q, %v", h.ObjectLockLegalHoldStatus, err)
	}
	wantCode(t, deleteVersion(c, "gov", "h", hid, true), "AccessDenied")
	if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("gov"), Key: aws.String("h"),
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOff}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetObjectLegalHold(ctx, &s3.GetObjectLegalHoldInput{Bucket: aws.String("gov"), Key: aws.String("h")})
	wantCode(t, err, "NoSuchObjectLockConfiguration")
	_, err = c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: aws.String("gov"), Key: aws.String("h"),
		LegalHold: &types.ObjectLockLegalHold{Status: "MAYBE"}})
	wantCode(t, err, "MalformedXML")
	if err := deleteVersion(c, "gov", "h", hid, false); err != nil {
		t.Fatalf("deleting once the hold is lifted: %v", err)
	}
}

// wantNeedsDigest sends r, a PUT with Object Lock and no digest, and
// checks it is refused as AWS refuses it.
func wantNeedsDigest(t *testing.T, r *http.Request) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "<Code>InvalidRequest</Code>") || !strings.Contains(string(b), "Content-MD5 OR x-amz-checksum-") {
		t.Fatalf("a locked PUT without a digest: %d %s", resp.StatusCode, b)
	}
}

// TestObjectLockWrites: the lock headers on PUT, copy and
// CreateMultipartUpload, the default retention, their errors, and the
// digest a locked PUT needs.
func TestObjectLockWrites(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.root()
	e.mkLockBucket(t, "wrt")
	future := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	for _, tc := range []struct {
		name string
		in   s3.PutObjectInput
		code string
	}{
		{"mode without date", s3.PutObjectInput{ObjectLockMode: types.ObjectLockModeGovernance}, "InvalidArgument"},
		{"date without mode", s3.PutObjectInput{ObjectLockRetainUntilDate: aws.Time(future)}, "InvalidArgument"},
		{"bad mode", s3.PutObjectInput{ObjectLockMode: "SOMETIMES", ObjectLockRetainUntilDate: aws.Time(future)}, "InvalidArgument"},
		{"date in the past", s3.PutObjectInput{ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: aws.Time(time.Now().Add(-time.Hour))}, "InvalidArgument"},
		{"bad legal hold", s3.PutObjectInput{ObjectLockLegalHoldStatus: "MAYBE"}, "InvalidArgument"},
	} {
		in := tc.in
		in.Bucket, in.Key, in.Body = aws.String("wrt"), aws.String("bad"), strings.NewReader("x")
		_, err := c.PutObject(ctx, &in)
		wantCode(t, err, tc.code)
	}

	// A PUT with a lock and no digest: refused; with Content-MD5: stored.
	body := []byte("needs a digest")
	hdr := http.Header{"X-Amz-Object-Lock-Mode": {"GOVERNANCE"}, "X-Amz-Object-Lock-Retain-Until-Date": {future.Format(time.RFC3339)}}
	wantNeedsDigest(t, e.signed(t, http.MethodPut, "/wrt/raw", body, "", hdr))
	sum := md5.Sum(body)
	hdr.Set("Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
	resp, err := http.DefaultClient.Do(e.signed(t, http.MethodPut, "/wrt/raw", body, "", hdr))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a locked PUT with Content-MD5: %d", resp.StatusCode)
	}

	// Copy and multipart carry their own lock, not the source's.
	src := putLocked(t, c, "wrt", "src", types.ObjectLockModeCompliance, future, true)
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("wrt"), Key: aws.String("copy"), CopySource: aws.String("wrt/src?versionId=" + src),
		ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: aws.Time(future.Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("wrt"), Key: aws.String("copy"), VersionId: cp.VersionId})
	if err != nil || h.ObjectLockMode != types.ObjectLockModeGovernance || !aws.ToTime(h.ObjectLockRetainUntilDate).Equal(future.Add(time.Hour)) || h.ObjectLockLegalHoldStatus != "" {
		t.Fatalf("HEAD of a locked copy: %q %v %q, %v", h.ObjectLockMode, h.ObjectLockRetainUntilDate, h.ObjectLockLegalHoldStatus, err)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("wrt"), Key: aws.String("mp"),
		ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn})
	if err != nil {
		t.Fatal(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("wrt"), Key: aws.String("mp"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(randBytes(5, 100))})
	if err != nil {
		t.Fatal(err)
	}
	co, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("wrt"), Key: aws.String("mp"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, deleteVersion(c, "wrt", "mp", aws.ToString(co.VersionId), true), "AccessDenied")

	// The bucket's default retention reaches a PUT that names none.
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("wrt"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(2)}}}}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	dv := putLocked(t, c, "wrt", "dflt", "", time.Time{}, false)
	h, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("wrt"), Key: aws.String("dflt")})
	got := aws.ToTime(h.ObjectLockRetainUntilDate)
	if err != nil || h.ObjectLockMode != types.ObjectLockModeGovernance || got.Before(before.AddDate(0, 0, 2).Add(-time.Second)) || got.After(time.Now().AddDate(0, 0, 2)) {
		t.Fatalf("HEAD under a default retention: %q until %v, %v", h.ObjectLockMode, got, err)
	}
	wantCode(t, deleteVersion(c, "wrt", "dflt", dv, false), "AccessDenied")
	// ... and makes a digest necessary.
	wantNeedsDigest(t, e.signed(t, http.MethodPut, "/wrt/raw2", body, "", nil))
}

// TestObjectLockExpired: once its date has passed on the store's clock,
// a COMPLIANCE version goes like any other. The gateway's clock runs ten
// minutes behind, so it takes a date that the store already sees as past.
func TestObjectLockExpired(t *testing.T) {
	e := newEnv(t)
	c := e.root()
	e.mkLockBucket(t, "exp")
	e.skew.Store(int64(-10 * time.Minute))
	id := putLocked(t, c, "exp", "k", types.ObjectLockModeCompliance, time.Now().Add(-5*time.Minute), false)
	live := putLocked(t, c, "exp", "k", types.ObjectLockModeCompliance, time.Now().Add(30*time.Minute), false)
	wantCode(t, deleteVersion(c, "exp", "k", live, false), "AccessDenied")
	if err := deleteVersion(c, "exp", "k", id, false); err != nil {
		t.Fatalf("deleting a version whose retention has passed: %v", err)
	}
}

// TestObjectLockMinio: minio-go, as backup tools use it.
func TestObjectLockMinio(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mc := e.minio(t)
	if err := mc.MakeBucket(ctx, "mlock", minio.MakeBucketOptions{ObjectLocking: true}); err != nil {
		t.Fatal(err)
	}
	mode := minio.Governance
	days := uint(1)
	unit := minio.Days
	if err := mc.SetObjectLockConfig(ctx, "mlock", &mode, &days, &unit); err != nil {
		t.Fatal(err)
	}
	enabled, gm, gv, gu, err := mc.GetObjectLockConfig(ctx, "mlock")
	if err != nil || enabled != "Enabled" || gm == nil || *gm != minio.Governance || gv == nil || *gv != 1 || gu == nil || *gu != minio.Days {
		t.Fatalf("GetObjectLockConfig: %q %v %v %v, %v", enabled, gm, gv, gu, err)
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	info, err := mc.PutObject(ctx, "mlock", "k", strings.NewReader("backup"), 6, minio.PutObjectOptions{
		Mode: minio.Compliance, RetainUntilDate: until, SendContentMd5: true})
	if err != nil {
		t.Fatal(err)
	}
	m, u, err := mc.GetObjectRetention(ctx, "mlock", "k", info.VersionID)
	if err != nil || m == nil || *m != minio.Compliance || u == nil || !u.Equal(until) {
		t.Fatalf("GetObjectRetention: %v %v, %v", m, u, err)
	}
	err = mc.RemoveObject(ctx, "mlock", "k", minio.RemoveObjectOptions{VersionID: info.VersionID, GovernanceBypass: true})
	if minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Fatalf("RemoveObject of a COMPLIANCE version: %v", err)
	}
	on := minio.LegalHoldEnabled
	if err := mc.PutObjectLegalHold(ctx, "mlock", "k", minio.PutObjectLegalHoldOptions{VersionID: info.VersionID, Status: &on}); err != nil {
		t.Fatal(err)
	}
	st, err := mc.GetObjectLegalHold(ctx, "mlock", "k", minio.GetObjectLegalHoldOptions{VersionID: info.VersionID})
	if err != nil || st == nil || *st != minio.LegalHoldEnabled {
		t.Fatalf("GetObjectLegalHold: %v, %v", st, err)
	}
}
