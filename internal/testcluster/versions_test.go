package testcluster_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/internal/testcluster"
)

// The versioning acceptance of issue #16 on `cairn server`: in a
// versioned bucket, 3 versions of a key, a delete → a marker, the listing
// shows all, GET of each version is byte-exact, deleting the marker
// restores the latest — and all of it survives a disk loss and the
// repair that follows (the disk returns only once no version's shard is
// left on it).
func TestServerVersionsSurviveDiskLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the node's 30 s refresh and the repair scan's census")
	}
	s := testcluster.StartServer(t, "", "--disks", "8", "--grace", "2s", "--repair-scan", "1s")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.TryCLI(context.Background(), "admin", "status")
			t.Logf("status:\n%s", out)
		}
	})
	c := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.S3), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		Retryer:     aws.NopRetryer{},
	})
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("vers")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vers"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(16, 1))
	data := map[string][]byte{} // by version ID
	var ids []string
	for i := range 3 {
		b := make([]byte, 100_000+i*333_333)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vers"), Key: aws.String("doc"), Body: bytes.NewReader(b)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, aws.ToString(out.VersionId))
		data[aws.ToString(out.VersionId)] = b
	}
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("doc")})
	if err != nil || !aws.ToBool(del.DeleteMarker) {
		t.Fatalf("DELETE: %+v, %v", del, err)
	}
	marker := aws.ToString(del.VersionId)
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("doc")}); err == nil {
		t.Fatal("GET under a delete marker succeeded")
	}
	check := func(when string) {
		t.Helper()
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers")})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		var got []string
		for _, v := range out.Versions {
			got = append(got, aws.ToString(v.VersionId))
		}
		if !slices.Equal(got, []string{ids[2], ids[1], ids[0]}) || len(out.DeleteMarkers) != 1 ||
			aws.ToString(out.DeleteMarkers[0].VersionId) != marker || !aws.ToBool(out.DeleteMarkers[0].IsLatest) {
			t.Fatalf("%s: versions %q, markers %+v", when, got, out.DeleteMarkers)
		}
		for _, id := range ids {
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("doc"), VersionId: aws.String(id)})
			if err != nil {
				t.Fatalf("%s: GET version %s: %v", when, id, err)
			}
			b, err := io.ReadAll(g.Body)
			g.Body.Close()
			if err != nil || !bytes.Equal(b, data[id]) {
				t.Fatalf("%s: version %s reads back %d bytes (%v), differing", when, id, len(b), err)
			}
		}
	}
	check("before the disk loss")

	before := diskStates(t, s.Conf)
	if err := os.RemoveAll(filepath.Join(s.Data, "disk3")); err != nil {
		t.Fatal(err)
	}
	check("right after removing a disk")
	waitFor(t, 90*time.Second, "disk3 down as replaced", func() bool {
		d := diskStates(t, s.Conf)["node1/disk3"]
		return d.State == cairn.DiskDown && d.Volume != before["node1/disk3"].Volume && strings.Contains(d.Reason, "replaced")
	})
	// Up again only once nothing — no version's shard — is left on it.
	waitFor(t, 3*time.Minute, "disk3 up again and nothing to repair", func() bool { return healthy(t, s.Conf) })
	check("after the repair")

	// Deleting the marker restores the latest version.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vers"), Key: aws.String("doc"), VersionId: aws.String(marker)}); err != nil {
		t.Fatal(err)
	}
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("vers"), Key: aws.String("doc")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(g.Body)
	g.Body.Close()
	if err != nil || !bytes.Equal(b, data[ids[2]]) || aws.ToString(g.VersionId) != ids[2] {
		t.Fatalf("GET after deleting the marker: %d bytes, version %s (%v)", len(b), aws.ToString(g.VersionId), err)
	}
}
