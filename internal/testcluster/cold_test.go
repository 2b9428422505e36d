package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/internal/testcluster"
)

// coldPut PUTs data as bucket/key in the COLD storage class.
func coldPut(ctx context.Context, c *s3.Client, bucket, key string, data []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), StorageClass: types.StorageClass("COLD")})
	return err
}

// coldGet GETs bytes [off, off+n) of bucket/key (n < 0: all of it).
func coldGet(t *testing.T, c *s3.Client, bucket, key string, off, n int64) []byte {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if n >= 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	}
	out, err := c.GetObject(t.Context(), in)
	if err != nil {
		t.Fatalf("get %s [%d, +%d): %v", key, off, n, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("get %s [%d, +%d): %v", key, off, n, err)
	}
	return b
}

// checkCold reads every object back byte-exact, whole and in two ranges.
func checkCold(t *testing.T, c *s3.Client, bucket string, rng *rand.Rand, objs map[string][]byte) {
	t.Helper()
	for key, data := range objs {
		if got := coldGet(t, c, bucket, key, 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes read, %d stored, differ", key, len(got), len(data))
		}
		for range 2 {
			if len(data) == 0 {
				break
			}
			off := rng.Int64N(int64(len(data)))
			n := 1 + rng.Int64N(int64(len(data))-off)
			if got := coldGet(t, c, bucket, key, off, n); !bytes.Equal(got, data[off:off+n]) {
				t.Fatalf("%s: range [%d, +%d) differs", key, off, n)
			}
		}
	}
}

// exported reports whether bucket/key's manifest is an exported cold one.
func exported(t *testing.T, s *testcluster.Server, bucket, key string) bool {
	t.Helper()
	out, err := s.TryCLI(t.Context(), "stat", "--json", bucket+"/"+key)
	if err != nil {
		return false
	}
	var m cairn.Manifest
	return json.Unmarshal([]byte(out), &m) == nil && m.Cold != nil
}

// TestColdClass: objects of 0 bytes to 24 MiB PUT through S3 in the COLD
// storage class of `cairn server` (clay-4-2-5/gp=1MiB:2 on its 8 disks)
// are exported by the director's job and read back byte-exact, whole and
// in ranges, before and after; `cairn stat` shows their group and slots
// and `cairn admin status` the job's progress. Then the server is killed
// (SIGKILL) again and again while objects are PUT and exported: every
// acknowledged object reads back byte-exact after each restart, and in
// the end all are exported. Last, with the disk that holds an object
// removed, everything still reads byte-exact (degraded reads).
func TestColdClass(t *testing.T) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(18, 4))
	s := testcluster.StartServer(t, "", "--cold-every", "500ms", "--cold-groups", "2")
	c := testcluster.S3Client(s.S3)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("frozen")}); err != nil {
		t.Fatal(err)
	}
	objs := map[string][]byte{}
	for i, n := range []int{0, 5000, 3<<20 + 123, 24 << 20} {
		key := fmt.Sprintf("obj%d", i)
		objs[key] = randData(rng.Uint64(), n)
		if err := coldPut(ctx, c, "frozen", key, objs[key]); err != nil {
			t.Fatal(err)
		}
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("frozen"), Key: aws.String("obj1")})
	if err != nil || head.StorageClass != "COLD" {
		t.Fatalf("HEAD: storage class %q, %v", head.StorageClass, err)
	}
	checkCold(t, c, "frozen", rng, objs) // staged or exported: whichever committed
	t.Cleanup(func() {
		if t.Failed() {
			st, _ := s.TryCLI(context.Background(), "admin", "status")
			out := s.Output()
			t.Logf("admin status:\n%s\nserver output (tail):\n%s", st, out[max(0, len(out)-6000):])
		}
	})
	start := time.Now()
	waitFor(t, 2*time.Minute, "the export of every object", func() bool {
		for key := range objs {
			if !exported(t, s, "frozen", key) {
				return false
			}
		}
		return true
	})
	t.Logf("exported %d objects (27 MiB) within %v of their PUTs (export every 500ms)", len(objs), time.Since(start).Round(100*time.Millisecond))
	checkCold(t, c, "frozen", rng, objs)
	stat := s.CLI(t, "stat", "frozen/obj3")
	t.Logf("cairn stat frozen/obj3:\n%s", stat)
	m := regexp.MustCompile(`on data disk \d+ \(node1/(disk\d+)\)`).FindStringSubmatch(stat)
	if !strings.Contains(stat, "cold     group") || m == nil {
		t.Fatalf("stat of a cold object:\n%s", stat)
	}
	if st := s.CLI(t, "admin", "status"); !strings.Contains(st, "cold: ") || strings.Contains(st, "no export has run") {
		t.Fatalf("admin status:\n%s", st)
	}
	// Kill the server during exports.
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("crashing")}); err != nil {
		t.Fatal(err)
	}
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	crashed := map[string][]byte{}
	for r := range rounds {
		for i := range 4 {
			key := fmt.Sprintf("r%d-%d", r, i)
			data := randData(rng.Uint64(), rng.IntN(3<<20))
			if err := coldPut(ctx, c, "crashing", key, data); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
			crashed[key] = data
		}
		// real time: the export runs on the server's own clock; the kill
		// lands somewhere in its passes.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		s.Restart(t)
		c = testcluster.S3Client(s.S3)
		waitFor(t, time.Minute, "the gateway after a restart", func() bool {
			_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("crashing")})
			return err == nil
		})
		checkCold(t, c, "crashing", rng, crashed)
	}
	waitFor(t, 3*time.Minute, "the export of every object after the crashes", func() bool {
		for key := range crashed {
			if !exported(t, s, "crashing", key) {
				return false
			}
		}
		return true
	})
	checkCold(t, c, "crashing", rng, crashed)
	checkCold(t, c, "frozen", rng, objs)

	// Remove the disk holding obj3: every object still reads.
	if err := os.RemoveAll(filepath.Join(s.Data, m[1])); err != nil {
		t.Fatal(err)
	}
	checkCold(t, c, "frozen", rng, objs)
	checkCold(t, c, "crashing", rng, crashed)

}
