package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/internal/testcluster"
)

// TestOpenUploadSurvivesDiskLifecycle: a multipart upload stays open
// (parts uploaded, not completed) while a disk holding its parts' shards
// is replaced (its directory removed) and another one is drained. Repair
// rebuilds the parts' shards (docs/design/repair.md, "Parts of uploads in
// progress"), so the replaced disk returns empty and the drained one goes
// out, neither waiting for the upload to end (before, both waited for the
// 7-day sweep of abandoned uploads); then the upload completes and the
// object reads back byte-exact.
func TestOpenUploadSurvivesDiskLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the node's 30 s refresh and the director's census")
	}
	s := testcluster.StartServer(t, "", "--disks", "10", "--grace", "2s", "--repair-scan", "1s")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.TryCLI(context.Background(), "admin", "status")
			t.Logf("status:\n%s", out)
			lines := strings.Split(s.Output(), "\n")
			t.Logf("server (last lines):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	ctx := t.Context()
	s.CLI(t, "mb", "uploads", "--policy", "rs-4-2")
	c := testcluster.S3Client(s.S3)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("uploads"), Key: aws.String("multi")})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	var parts []types.CompletedPart
	for i, n := range []int64{5 << 20, 5 << 20, 700 << 10} {
		data := patternBytes(n, uint64(40+i))
		want = append(want, data...)
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("uploads"), Key: aws.String("multi"), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}

	// The disks holding the parts' files: nothing else is stored, so
	// every file the usage counts is a part's.
	holding := func() map[cairn.DiskID]int64 {
		var du struct {
			Disks []struct {
				Disk  cairn.DiskID `json:"disk"`
				Files int64        `json:"files"`
			} `json:"disks"`
		}
		out := s.CLI(t, "admin", "du", "--json", "--disks")
		if err := json.Unmarshal([]byte(out), &du); err != nil {
			t.Fatalf("du --json: %v\n%s", err, out)
		}
		m := map[cairn.DiskID]int64{}
		for _, d := range du.Disks {
			if d.Files > 0 {
				m[d.Disk] = d.Files
			}
		}
		return m
	}
	held := holding()
	var disks []cairn.DiskID
	for d := range held {
		disks = append(disks, d)
	}
	slices.Sort(disks)
	if len(disks) < 2 {
		t.Fatalf("the parts are on %v: want two disks to replace and drain", held)
	}
	replaced, drained := disks[0], disks[1]
	t.Logf("parts' files per disk: %v; replacing %s, draining %s", held, replaced, drained)
	before := diskStates(t, s.Conf)

	// Replaced: down as replaced, the parts' shards rebuilt, up empty.
	if err := os.RemoveAll(filepath.Join(s.Data, strings.TrimPrefix(string(replaced), "node1/"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, string(replaced)+" down as replaced", func() bool {
		d := diskStates(t, s.Conf)[replaced]
		return d.State == cairn.DiskDown && d.Volume != before[replaced].Volume && strings.Contains(d.Reason, "replaced")
	})
	waitFor(t, 3*time.Minute, string(replaced)+" up again, empty, with the upload still open", func() bool { return healthy(t, s.Conf) })
	if d := diskStates(t, s.Conf)[replaced]; !strings.Contains(d.Reason, "empty") {
		t.Fatalf("%s after its return: %+v", replaced, d)
	}
	if h := holding(); h[replaced] != 0 {
		t.Fatalf("parts' files per disk after the replacement: %v", h)
	}

	// Drained: its parts' shards moved off, then out.
	s.CLI(t, "admin", "disk", "drain", string(drained))
	waitFor(t, 2*time.Minute, string(drained)+" out, drained, with the upload still open", func() bool {
		return diskStates(t, s.Conf)[drained].State == cairn.DiskOut
	})
	if h := holding(); h[drained] != 0 {
		t.Fatalf("parts' files per disk after the drain: %v", h)
	}
	uploads, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("uploads")})
	if err != nil || len(uploads.Uploads) != 1 {
		t.Fatalf("uploads in progress: %+v, %v", uploads, err)
	}

	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("uploads"), Key: aws.String("multi"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("uploads"), Key: aws.String("multi")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GET after the completion: %d bytes (%v), want %d, differing", len(got), err, len(want))
	}
}
