package coldtier_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn/internal/testcluster"
)

// badPolicies are cold policies refused with their reason: s0 not a
// multiple of Clay's sub-chunk unit, q < 2, a chunk cap below s0 (or
// between two sizes).
var badPolicies = []struct{ policy, reason string }{
	{"clay-4-2-5/gp=16KiB:2", "s0 = 16KiB is not a positive multiple of clay-4-2-5's sub-chunk unit 32KiB"},
	{"clay-4-2-5/gp=1MiB:1", "q = 1: the ratio of adjacent chunk sizes must be at least 2"},
	{"clay-4-2-5/gp=1MiB:2:512KiB", "chunk cap 524288 is below s0 = 1048576"},
	{"clay-4-2-5/gp=1MiB:2:3MiB", "the nearest below is 2097152"},
}

// TestColdBadPolicy: `cairn mb --policy` and `cairn server --cold-policy`
// refuse a bad cold policy, quoting it and saying why; mb makes no bucket,
// and the server does not start. A good one is accepted.
func TestColdBadPolicy(t *testing.T) {
	s := testcluster.StartServer(t, "")
	for _, bp := range badPolicies {
		out, err := s.TryCLI(t.Context(), "mb", "bad", "--policy", bp.policy)
		if err == nil || !strings.Contains(out, bp.reason) || !strings.Contains(out, `"`+bp.policy+`"`) {
			t.Errorf("cairn mb --policy %s: %v\n%s", bp.policy, err, out)
		}
	}
	list, err := testcluster.S3Client(s.S3).ListBuckets(t.Context(), &s3.ListBucketsInput{})
	if err != nil || len(list.Buckets) != 0 {
		t.Fatalf("buckets after the refused mb: %v, %v", list, err)
	}
	if out := s.CLI(t, "mb", "good", "--policy", "clay-4-2-5/gp=1MiB:2:2MiB"); !strings.Contains(out, "bucket good made") {
		t.Fatalf("cairn mb with a good cold policy:\n%s", out)
	}
	for _, bp := range badPolicies[:3] {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, testcluster.Binary(t), "server", "--data", t.TempDir(), "--port-base", "0",
			"--cold-policy", bp.policy)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut || !strings.Contains(string(out), "--cold-policy") || !strings.Contains(string(out), bp.reason) {
			t.Errorf("cairn server --cold-policy %s: %v\n%s", bp.policy, err, out)
		}
		if strings.Contains(string(out), "etcd") {
			t.Errorf("cairn server --cold-policy %s started the metadata store before checking its flags:\n%s", bp.policy, out)
		}
	}
}
