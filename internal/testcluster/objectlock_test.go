package testcluster_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"cairn"
	"cairn/internal/testcluster"
)

// TestLockedVersionsSurvive is issue #16's Object Lock acceptance on
// `cairn server`, in a bucket made by `cairn mb --object-lock`:
// COMPLIANCE-locked and legally held versions cannot be
// deleted through S3 by root, nor through the metadata store by a tool
// (the store refuses, not only the gateway), nor by `cairn rm`; and
// repair after a disk loss, the cleanup queue and the scrub's orphan
// collection (GC) leave every one of their shard files in place: each
// version reads back byte-exact afterwards.
func TestLockedVersionsSurvive(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the node's 30 s refresh, the repair scan and scrub passes")
	}
	s := testcluster.StartServer(t, "", "--disks", "8", "--grace", "2s", "--repair-scan", "1s",
		"--scrub-interval", "1s", "--scrub-rate", "1GiB", "--gc-grace", "2s", "--cleanup-grace", "1s")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.TryCLI(context.Background(), "admin", "status")
			t.Logf("status:\n%s", out)
		}
	})
	c := sseClient(s) // the server's root, path style, no retries
	d := serverDirect(t, s)
	ctx := context.Background()
	s.CLI(t, "mb", "worm", "--object-lock") // what S3's x-amz-bucket-object-lock-enabled does
	if lc, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("worm")}); err != nil ||
		lc.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled {
		t.Fatalf("a bucket made with cairn mb --object-lock: %+v, %v", lc, err)
	}
	rng := rand.New(rand.NewPCG(16, 2))
	data := map[string][]byte{} // by version ID
	var locked []string
	until := time.Now().Add(time.Hour)
	for i, lock := range []string{"compliance", "hold", "none"} {
		b := make([]byte, 200_000+i*300_001)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		in := &s3.PutObjectInput{Bucket: aws.String("worm"), Key: aws.String("doc"), Body: bytes.NewReader(b),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32}
		switch lock {
		case "compliance":
			in.ObjectLockMode, in.ObjectLockRetainUntilDate = types.ObjectLockModeCompliance, aws.Time(until)
		case "hold":
			in.ObjectLockLegalHoldStatus = types.ObjectLockLegalHoldStatusOn
		}
		out, err := c.PutObject(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		id := aws.ToString(out.VersionId)
		data[id] = b
		if lock != "none" {
			locked = append(locked, id)
		}
	}
	// Nobody deletes a locked version: root through S3 (with the bypass),
	// a tool through the store, `cairn rm` of the current one after a
	// retention is put on it.
	for _, id := range locked {
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("worm"), Key: aws.String("doc"), VersionId: aws.String(id),
			BypassGovernanceRetention: aws.Bool(true)})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
			t.Fatalf("S3 delete of locked version %s: %v", id, err)
		}
		if _, err := d.meta.DeleteVersion(ctx, "worm", "doc", id); !errors.Is(err, cairn.ErrLocked) {
			t.Fatalf("store delete of locked version %s: %v", id, err)
		}
	}
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String("worm"), Key: aws.String("doc"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: aws.Time(until)}}); err != nil {
		t.Fatal(err)
	}
	if out, err := s.TryCLI(ctx, "rm", "worm/doc"); err == nil {
		t.Fatalf("cairn rm of a GOVERNANCE version succeeded:\n%s", out)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("worm"), Key: aws.String("doc")}); err != nil {
		t.Fatalf("a delete marker over locked versions: %v", err)
	}

	check := func(when string) {
		t.Helper()
		for id, want := range data {
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("worm"), Key: aws.String("doc"), VersionId: aws.String(id)})
			if err != nil {
				t.Fatalf("%s: GET version %s: %v", when, id, err)
			}
			b, err := io.ReadAll(g.Body)
			g.Body.Close()
			if err != nil || !bytes.Equal(b, want) {
				t.Fatalf("%s: version %s reads back %d bytes (%v), differing", when, id, len(b), err)
			}
		}
	}
	check("before the disk loss")
	before := diskStates(t, s.Conf)
	if err := os.RemoveAll(filepath.Join(s.Data, "disk3")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "disk3 down as replaced", func() bool {
		d := diskStates(t, s.Conf)["node1/disk3"]
		return d.State == cairn.DiskDown && d.Volume != before["node1/disk3"].Volume && strings.Contains(d.Reason, "replaced")
	})
	waitFor(t, 3*time.Minute, "disk3 up again and nothing to repair", func() bool { return healthy(t, s.Conf) })
	// Scrub collects orphans older than 2 s (--gc-grace). Wait, on every
	// disk, for a full pass that started after every file that could be
	// taken for one was that old: a pass ending after t1 is seen (its end
	// e1), then one ending after e1 — it started after e1 > t1.
	t1 := time.Now().Add(2 * time.Second)
	first := map[cairn.DiskID]time.Time{}
	waitFor(t, time.Minute, "a scrub pass begun after the orphan grace on every disk", func() bool {
		ps, err := d.meta.ScrubProgress(ctx)
		if err != nil {
			return false
		}
		done := 0
		for _, p := range ps {
			e1, seen := first[p.Disk]
			switch {
			case !seen && p.LastPass.After(t1):
				first[p.Disk] = p.LastPass
			case seen && p.LastPass.After(e1):
				done++
			}
		}
		return done == 8
	})
	check("after the repair and GC")
	// Every file the versions name (repair moved disk3's) is on disk.
	files := 0
	for id := range data {
		v, err := d.meta.ObjectVersion(ctx, "worm", "doc", id)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range v.Manifest.Files() {
			files++
			if !shardFileExists(t, s.Data, diskDir(f.Disk)+"/"+f.Name) {
				t.Errorf("shard %s of version %s is gone", f.Name, id)
			}
		}
	}
	if files == 0 {
		t.Fatal("the versions name no shard files")
	}
}
