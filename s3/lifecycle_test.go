package s3

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7/pkg/lifecycle"
)

// TestBucketLifecycle: a configuration with every action and filter form
// round-trips through aws-sdk-go-v2 (and minio-go reads it); DELETE
// removes it, after which GET is NoSuchLifecycleConfiguration.
func TestBucketLifecycle(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "lcb")
	ctx := context.Background()
	c := e.root()
	_, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("lcb")})
	wantCode(t, err, "NoSuchLifecycleConfiguration")
	date := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	rules := []types.LifecycleRule{
		{ID: aws.String("logs"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("logs/")},
			Expiration:  &types.LifecycleExpiration{Days: aws.Int32(30)},
			Transitions: []types.Transition{{Days: aws.Int32(7), StorageClass: types.TransitionStorageClass("REDUCED_REDUNDANCY")}}},
		{ID: aws.String("tmp"), Status: types.ExpirationStatusDisabled, Filter: &types.LifecycleRuleFilter{
			And: &types.LifecycleRuleAndOperator{Prefix: aws.String("tmp/"), Tags: []types.Tag{{Key: aws.String("kind"), Value: aws.String("scratch")}},
				ObjectSizeGreaterThan: aws.Int64(1024)}},
			Expiration: &types.LifecycleExpiration{Date: &date}},
		{ID: aws.String("versions"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
			NoncurrentVersionExpiration:    &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(10), NewerNoncurrentVersions: aws.Int32(3)},
			NoncurrentVersionTransitions:   []types.NoncurrentVersionTransition{{NoncurrentDays: aws.Int32(2), StorageClass: types.TransitionStorageClass("REDUCED_REDUNDANCY")}},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(2)}},
		{ID: aws.String("markers"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Tag: &types.Tag{Key: aws.String("a"), Value: aws.String("b")}},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}},
		{ID: aws.String("dm"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{ObjectSizeLessThan: aws.Int64(10)},
			Expiration: &types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)}},
	}
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("lcb"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: rules}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("lcb")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rules) != len(rules) {
		t.Fatalf("got %d rules", len(got.Rules))
	}
	r0, r1, r2, r3, r4 := got.Rules[0], got.Rules[1], got.Rules[2], got.Rules[3], got.Rules[4]
	switch {
	case aws.ToString(r0.ID) != "logs" || aws.ToString(r0.Filter.Prefix) != "logs/" || aws.ToInt32(r0.Expiration.Days) != 30 ||
		len(r0.Transitions) != 1 || aws.ToInt32(r0.Transitions[0].Days) != 7 || r0.Transitions[0].StorageClass != "REDUCED_REDUNDANCY":
		t.Fatalf("rule logs: %+v", r0)
	case r1.Status != types.ExpirationStatusDisabled || r1.Filter.And == nil || aws.ToString(r1.Filter.And.Prefix) != "tmp/" ||
		len(r1.Filter.And.Tags) != 1 || aws.ToInt64(r1.Filter.And.ObjectSizeGreaterThan) != 1024 || !aws.ToTime(r1.Expiration.Date).Equal(date):
		t.Fatalf("rule tmp: %+v %+v", r1, r1.Filter.And)
	case aws.ToInt32(r2.NoncurrentVersionExpiration.NoncurrentDays) != 10 || aws.ToInt32(r2.NoncurrentVersionExpiration.NewerNoncurrentVersions) != 3 ||
		aws.ToInt32(r2.AbortIncompleteMultipartUpload.DaysAfterInitiation) != 2 || len(r2.NoncurrentVersionTransitions) != 1:
		t.Fatalf("rule versions: %+v", r2)
	case r3.Filter.Tag == nil || aws.ToString(r3.Filter.Tag.Key) != "a":
		t.Fatalf("rule markers: %+v", r3)
	case aws.ToInt64(r4.Filter.ObjectSizeLessThan) != 10 || !aws.ToBool(r4.Expiration.ExpiredObjectDeleteMarker):
		t.Fatalf("rule dm: %+v", r4)
	}
	lc, err := e.minio(t).GetBucketLifecycle(ctx, "lcb")
	if err != nil || len(lc.Rules) != len(rules) || lc.Rules[0].Expiration.Days != lifecycle.ExpirationDays(30) {
		t.Fatalf("minio-go: %+v, %v", lc, err)
	}
	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String("lcb")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("lcb")})
	wantCode(t, err, "NoSuchLifecycleConfiguration")
}

// TestBucketLifecycleErrors: S3's validation errors, from hand-written
// documents.
func TestBucketLifecycleErrors(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "lcb")
	rule := func(body string) string {
		return `<LifecycleConfiguration><Rule><ID>r</ID>` + body + `</Rule></LifecycleConfiguration>`
	}
	tests := []struct {
		name, doc, code, message string
	}{
		{"no rule", `<LifecycleConfiguration></LifecycleConfiguration>`, "MalformedXML", ""},
		{"bad status", rule(`<Filter></Filter><Status>On</Status><Expiration><Days>1</Days></Expiration>`), "MalformedXML", ""},
		{"filter and prefix", rule(`<Filter></Filter><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>`), "MalformedXML", ""},
		{"two predicates", rule(`<Filter><Prefix>a</Prefix><ObjectSizeLessThan>5</ObjectSizeLessThan></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>`), "MalformedXML", ""},
		{"no action", rule(`<Filter></Filter><Status>Enabled</Status>`), "InvalidRequest", "At least one action needs to be specified in a rule"},
		{"zero days", rule(`<Filter></Filter><Status>Enabled</Status><Expiration><Days>0</Days></Expiration>`), "InvalidArgument", ""},
		{"date not midnight", rule(`<Filter></Filter><Status>Enabled</Status><Expiration><Date>2027-01-01T10:00:00Z</Date></Expiration>`), "InvalidArgument", "'Date' must be at midnight GMT"},
		{"unknown class", rule(`<Filter></Filter><Status>Enabled</Status><Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>`), "InvalidStorageClass", ""},
		{"transition after expiration", rule(`<Filter></Filter><Status>Enabled</Status><Transition><Days>9</Days><StorageClass>REDUCED_REDUNDANCY</StorageClass></Transition><Expiration><Days>5</Days></Expiration>`), "InvalidArgument", ""},
		{"abort with tags", rule(`<Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>`), "InvalidRequest", ""},
		{"duplicate IDs", `<LifecycleConfiguration><Rule><ID>r</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule><Rule><ID>r</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule></LifecycleConfiguration>`, "InvalidArgument", ""},
		{"not xml", `<Lifecycle`, "MalformedXML", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := send(t, e.signed(t, http.MethodPut, "/lcb?lifecycle", []byte(tc.doc), "", nil))
			if got.status != http.StatusBadRequest || got.code != tc.code || !strings.Contains(got.message, tc.message) {
				t.Fatalf("got %d %s %q, want 400 %s %q", got.status, got.code, got.message, tc.code, tc.message)
			}
		})
	}
	if got := send(t, e.signed(t, http.MethodGet, "/lcb?lifecycle", nil, "", nil)); got.code != "NoSuchLifecycleConfiguration" {
		t.Fatalf("a refused configuration was stored: %d %s", got.status, got.code)
	}
	if got := send(t, e.signed(t, http.MethodGet, "/nope?lifecycle", nil, "", nil)); got.code != "NoSuchBucket" {
		t.Fatalf("missing bucket: %d %s", got.status, got.code)
	}
}
