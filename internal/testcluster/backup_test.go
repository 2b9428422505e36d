package testcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn/internal/testcluster"
)

// The acceptance point: `cairn admin backup`, then the loss of
// the metadata directory, then `cairn admin restore`: every object (small,
// large, multipart) reads back byte-exact through S3 and the listing is
// the same.
func TestBackupRestoreServer(t *testing.T) {
	large := int64(24 << 20)
	if testing.Short() {
		large = 8 << 20
	}
	s := testcluster.StartServer(t, "")
	ctx := context.Background()
	c := s3Client(s.S3)
	want := map[string][]byte{} // "bucket/key" → bytes
	for _, b := range []string{"alpha", "beta"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(bucket, key string, data []byte) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatalf("put %s/%s: %v", bucket, key, err)
		}
		want[bucket+"/"+key] = data
	}
	put("alpha", "empty", nil)
	put("alpha", "small", patternBytes(1000, 1))
	put("alpha", "dir/large", patternBytes(large, 2))
	put("beta", "small", patternBytes(70<<10, 3))
	var mp []byte
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("beta"), Key: aws.String("multi")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, n := range []int64{5 << 20, 5 << 20, 300 << 10} {
		data := patternBytes(n, uint64(10+i))
		mp = append(mp, data...)
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("beta"), Key: aws.String("multi"), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("beta"), Key: aws.String("multi"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	want["beta/multi"] = mp
	before := listAll(t, c)

	file := filepath.Join(t.TempDir(), "meta.backup")
	out := s.CLI(t, "admin", "backup", file)
	if !regexp.MustCompile(`^wrote ` + regexp.QuoteMeta(file) + `: [1-9][0-9]* bytes, etcd revision [1-9][0-9]*, [1-9][0-9]* keys, sha256 [0-9a-f]{64}, etcd 3\.`).MatchString(out) {
		t.Fatalf("backup printed %q, want the file, its revision and checksum", out)
	}
	if _, err := os.Stat(file + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is left behind: %v", err)
	}
	if out, err := s.TryCLI(ctx, "admin", "backup", file); err == nil || !strings.Contains(out, "exists; pass --force") {
		t.Fatalf("a second backup to the same file: %v\n%s", err, out)
	}
	s.CLI(t, "admin", "backup", "--force", file)

	s.Kill()
	meta := filepath.Join(s.Data, "meta")
	if err := os.RemoveAll(meta); err != nil {
		t.Fatal(err)
	}
	// A backup with one byte changed is refused (etcd's checksum), and
	// nothing is left where the member's directory goes.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x40
	bad := filepath.Join(t.TempDir(), "bad.backup")
	if err := os.WriteFile(bad, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := restoreCLI(t, "--server-data", s.Data, "--peer-addr", "127.0.0.1:0", bad); err == nil || !strings.Contains(out, "does not match its checksum") {
		t.Fatalf("a corrupt backup: %v\n%s", err, out)
	}
	if _, err := os.Stat(meta); !os.IsNotExist(err) {
		t.Fatalf("a failed restore left %s: %v", meta, err)
	}
	// restore is offline and takes no --config.
	out, err = restoreCLI(t, "--server-data", s.Data, "--peer-addr", "127.0.0.1:0", file)
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	// A second restore over the rebuilt directory is refused without --force.
	if out, err := restoreCLI(t, "--server-data", s.Data, "--peer-addr", "127.0.0.1:0", file); err == nil || !strings.Contains(out, "is not empty") {
		t.Fatalf("restore over a member's directory without --force: %v\n%s", err, out)
	}
	out, err = restoreCLI(t, "--server-data", s.Data, "--peer-addr", "127.0.0.1:0", "--force", file)
	if err != nil || !strings.Contains(out, "moved the old metadata directory to "+meta+".before-restore-") {
		t.Fatalf("restore --force: %v\n%s", err, out)
	}
	s.Restart(t)
	c = s3Client(s.S3)
	if after := listAll(t, c); !slices.Equal(before, after) {
		t.Fatalf("listing after restore:\n%v\nbefore:\n%v", after, before)
	}
	for bk, data := range want {
		bucket, key, _ := strings.Cut(bk, "/")
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %s after restore: %v", bk, err)
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(got.Body)
		got.Body.Close()
		if err != nil {
			t.Fatalf("get %s after restore: %v", bk, err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("%s reads back %d bytes after restore, differing from the %d put", bk, buf.Len(), len(data))
		}
	}
	// The restored cluster takes writes.
	put("alpha", "after", patternBytes(5000, 9))
}

// listAll lists every bucket's objects: "bucket/key size etag" lines.
func listAll(t *testing.T, c *s3.Client) []string {
	t.Helper()
	ctx := context.Background()
	bs, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs.Buckets {
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: b.Name, MaxKeys: aws.Int32(2)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				out = append(out, fmt.Sprintf("%s/%s %d %s", aws.ToString(b.Name), aws.ToString(o.Key), aws.ToInt64(o.Size), aws.ToString(o.ETag)))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("nothing listed")
	}
	return out
}

// restoreCLI runs `cairn admin restore ARGS`.
func restoreCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), testcluster.Binary(t), append([]string{"admin", "restore"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
