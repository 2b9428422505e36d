package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/internal/testcluster"
)

// Lifecycle on `cairn server` (issue #16): a rule set with the aws SDK
// expires the objects under its prefix once their day is up — a test day
// of two seconds (--lifecycle-day-length) — through the director's runner
// on real etcd, leaves the others, and `cairn admin lifecycle status`
// reports what the passes did.
func TestServerLifecycleExpires(t *testing.T) {
	s := testcluster.StartServer(t, "", "--lifecycle-every", "1s", "--lifecycle-day-length", "2s")
	c := testcluster.S3Client(s.S3)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("life")}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tmp/a", "tmp/b", "keep/c"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("life"), Key: aws.String(k), Body: strings.NewReader(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("life"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
			ID: aws.String("tmp"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("tmp/")},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)},
		}}}}); err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("life")})
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, o := range out.Contents {
			ks = append(ks, aws.ToString(o.Key))
		}
		return ks
	}
	// One test day plus the rounding to the next midnight: at most two
	// days of 2 s, plus a pass interval; far more is allowed for a slow machine.
	testcluster.WaitFor(t, time.Minute, "the tmp/ objects expire", func() bool { return len(keys()) == 1 })
	if ks := keys(); ks[0] != "keep/c" {
		t.Fatalf("left: %v", ks)
	}
	var p cairn.LifecycleProgress
	t.Cleanup(func() {
		if t.Failed() {
			out, err := s.TryCLI(ctx, "admin", "lifecycle", "status", "--json")
			t.Logf("lifecycle status: %v\n%s", err, out)
		}
	})
	testcluster.WaitFor(t, 30*time.Second, "a pass reports both expirations", func() bool {
		out, err := s.TryCLI(ctx, "admin", "lifecycle", "status", "--json")
		if err != nil || json.Unmarshal([]byte(out), &p) != nil {
			return false
		}
		return p.Total.Expired == 2
	})
	if out := s.CLI(t, "admin", "lifecycle", "status"); !strings.Contains(out, "passes complete:") {
		t.Fatalf("status:\n%s", out)
	}
	if out := s.CLI(t, "admin", "status"); !strings.Contains(out, "lifecycle: ") || !strings.Contains(out, "expired 2,") {
		t.Fatalf("admin status has no lifecycle line with the expirations:\n%s", out)
	}
}

// TestServerLifecycleToCold: a lifecycle rule with a Transition to COLD on
// a bucket of the default class moves its objects into the cold tier —
// the runner stages them, the export job moves them — and they read back
// byte-exact, whole and in a range; an object outside the rule's prefix
// stays where it was.
func TestServerLifecycleToCold(t *testing.T) {
	s := testcluster.StartServer(t, "", "--lifecycle-every", "1s", "--lifecycle-day-length", "2s", "--cold-every", "500ms")
	c := testcluster.S3Client(s.S3)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("aging")}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	objs := map[string][]byte{"old/a": make([]byte, 3<<20+17), "old/b": make([]byte, 5000), "new/c": make([]byte, 70000)}
	for k, b := range objs {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("aging"), Key: aws.String(k), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("aging"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
			ID: aws.String("freeze"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("old/")},
			Transitions: []types.Transition{{Days: aws.Int32(1), StorageClass: types.TransitionStorageClass("COLD")}},
		}}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, err := s.TryCLI(ctx, "admin", "lifecycle", "status", "--json")
			st, _ := s.TryCLI(ctx, "admin", "status")
			so := s.Output()
			t.Logf("lifecycle status: %v\n%s\nadmin status:\n%s\nserver output (tail):\n%s", err, out, st, so[max(0, len(so)-8000):])
		}
	})
	testcluster.WaitFor(t, 2*time.Minute, "the old/ objects reach the cold tier", func() bool {
		return exported(t, s, "aging", "old/a") && exported(t, s, "aging", "old/b")
	})
	if exported(t, s, "aging", "new/c") {
		t.Fatal("new/c, outside the rule, went to the cold tier")
	}
	for k, want := range objs {
		if got := coldGet(t, c, "aging", k, 0, -1); !bytes.Equal(got, want) {
			t.Fatalf("%s: read %d bytes, want %d byte-exact", k, len(got), len(want))
		}
	}
	if got, want := coldGet(t, c, "aging", "old/a", 1<<20+5, 100000), objs["old/a"][1<<20+5:1<<20+5+100000]; !bytes.Equal(got, want) {
		t.Fatal("a range of old/a after its transition differs")
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("aging"), Key: aws.String("old/a")})
	if err != nil || head.StorageClass != types.StorageClass("COLD") {
		t.Fatalf("HEAD of a transitioned object: class %q, %v", head.StorageClass, err)
	}
	var p cairn.LifecycleProgress
	testcluster.WaitFor(t, 30*time.Second, "a complete pass reports the two transitions", func() bool {
		out, err := s.TryCLI(ctx, "admin", "lifecycle", "status", "--json")
		return err == nil && json.Unmarshal([]byte(out), &p) == nil && p.Total.Transitioned == 2
	})
}
