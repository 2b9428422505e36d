package raidpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn/internal/testcluster"
)

// TestRAIDPLazyZeroCrash kills `cairn server` (its nodes, gateway and
// director together) with SIGKILL at random points after a round of raidp
// deletes, while the director's zeroer works the queue of dead ranges
// (--raidp-zero-grace 0; the kill waits for the zeroer to begin, then a
// random 0-2.5 s), and starts it again, many times. After each
// restart the queue drains (a range zeroed before the kill but not
// removed from the queue is zeroed again, harmlessly: dead bytes are
// never handed out again) and every live object — PUT in any earlier
// round, so lying beside ranges zeroed, half-zeroed and zeroed twice —
// reads back byte-exact. At the end `cairn admin raidp verify` finds
// every Lstor the XOR of its disk and both replicas of every superchunk
// equal.
func TestRAIDPLazyZeroCrash(t *testing.T) {
	const disks = 6
	rounds := 20
	if testing.Short() {
		rounds = 4
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	ctx := context.Background()
	s := testcluster.StartServer(t, "", "--disks", fmt.Sprint(disks), "--raidp-size", "16MiB", "--raidp-slots", "4",
		"--raidp-zero-grace", "0s", "--raidp-zero-every", "100ms", "--raidp-zero-batch", "4")
	cl := testcluster.S3Client(s.S3)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("warm")}); err != nil {
		t.Fatal(err)
	}
	live := map[string][]byte{}
	backlog := func() int {
		t.Helper()
		var sp struct {
			Dead struct {
				Ranges []json.RawMessage `json:"ranges"`
			} `json:"dead"`
		}
		if err := json.Unmarshal([]byte(s.CLI(t, "admin", "raidp", "space", "--json")), &sp); err != nil {
			t.Fatal(err)
		}
		return len(sp.Dead.Ranges)
	}
	check := func(when string) {
		t.Helper()
		for key, want := range live {
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("warm"), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("%s: get %s: %v", when, key, err)
			}
			got, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: get %s: %d bytes, %v; want %d bytes", when, key, len(got), err, len(want))
			}
		}
	}
	n := 0
	for round := range rounds {
		var keys []string
		for range 12 {
			key := fmt.Sprintf("o%d", n)
			n++
			p := make([]byte, 2_000+rng.IntN(400_000)) // zeroing the larger ones takes a few records
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("warm"), Key: aws.String(key), Body: bytes.NewReader(p),
				ContentLength: aws.Int64(int64(len(p))), StorageClass: types.StorageClass("WARM")}); err != nil {
				t.Fatalf("round %d: put %s: %v", round, key, err)
			}
			live[key] = p
			keys = append(keys, key)
		}
		// Delete most of this round's objects (and some older ones), so
		// that dead ranges lie between live ones.
		for _, key := range keys[:9] {
			if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("warm"), Key: aws.String(key)}); err != nil {
				t.Fatalf("round %d: delete %s: %v", round, key, err)
			}
			delete(live, key)
		}
		// Kill once the zeroer has begun (it zeroes --raidp-zero-batch
		// ranges per director round, 2 s apart), at a random point of
		// the rest.
		if !testcluster.Poll(time.Minute, func() bool { return backlog() < len(keys[:9]) }) {
			t.Fatalf("round %d: the zeroer did not begin within a minute", round)
		}
		// real time: the kill must land at a random point of the
		// director's zeroing in another process.
		time.Sleep(time.Duration(rng.IntN(2500)) * time.Millisecond)
		left := backlog()
		s.Restart(t)
		t.Logf("round %d: killed with %d dead ranges queued", round, left)
		cl = testcluster.S3Client(s.S3)
		if !testcluster.Poll(time.Minute, func() bool { return backlog() == 0 }) {
			out := s.Output()
			t.Fatalf("round %d: the dead backlog did not drain within a minute of the restart:\n%s\nserver log (tail):\n%s",
				round, s.CLI(t, "admin", "raidp", "space"), out[max(0, len(out)-8000):])
		}
		check(fmt.Sprintf("round %d, after the kill", round))
	}

	// Offline: every Lstor the XOR of its disk, both replicas equal.
	var g struct {
		Disks  []struct{ ID string } `json:"disks"`
		Layout struct {
			Superchunks []json.RawMessage `json:"superchunks"`
		} `json:"layout"`
	}
	if err := json.Unmarshal([]byte(s.CLI(t, "admin", "raidp", "group", "--json")), &g); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	args := []string{"admin", "raidp", "verify", "--size", "16MiB", "--slots", "4", "--rows", fmt.Sprint(2 * len(g.Layout.Superchunks) / len(g.Disks))}
	for _, d := range g.Disks {
		name := d.ID[strings.LastIndex(d.ID, "/")+1:] // node1/disk3 → disk3
		args = append(args, filepath.Join(s.Data, name)+",lstor="+filepath.Join(s.Data, "lstor", name))
	}
	out, err := exec.CommandContext(ctx, testcluster.Binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn admin raidp verify: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "both replicas agree") || strings.Count(string(out), ": ok (") != disks {
		t.Errorf("cairn admin raidp verify:\n%s", out)
	}
}

// TestRAIDPCompactServer compacts a raidp group on a real `cairn server`:
// most objects of the first superchunks deleted, `cairn admin raidp space
// --compact 0.5` moves the live ones out and reclaims the superchunks,
// every live object reads back byte-exact, new objects reuse the space,
// and `cairn admin raidp verify` finds every Lstor the XOR of its disk and
// both replicas equal.
func TestRAIDPCompactServer(t *testing.T) {
	const disks = 6
	ctx := context.Background()
	s := testcluster.StartServer(t, "", "--disks", fmt.Sprint(disks), "--raidp-size", "1MiB", "--raidp-slots", "4",
		"--raidp-zero-grace", "0s")
	cl := testcluster.S3Client(s.S3)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("warm")}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	live := map[string][]byte{}
	put := func(key string, n int) {
		t.Helper()
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("warm"), Key: aws.String(key), Body: bytes.NewReader(p),
			ContentLength: aws.Int64(int64(n)), StorageClass: types.StorageClass("WARM")}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		live[key] = p
	}
	for i := range 30 {
		put(fmt.Sprintf("o%d", i), 100_000)
	}
	for i := range 30 {
		if i%5 == 0 {
			continue
		}
		key := fmt.Sprintf("o%d", i)
		if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("warm"), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
		delete(live, key)
	}
	out := s.CLI(t, "admin", "raidp", "space", "--compact", "0.5")
	if !strings.Contains(out, "reclaimed [") || strings.Contains(out, "reclaimed []") {
		t.Fatalf("cairn admin raidp space --compact:\n%s", out)
	}
	t.Logf("%s", out)
	check := func(when string) {
		t.Helper()
		for key, want := range live {
			o, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("warm"), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("%s: get %s: %v", when, key, err)
			}
			got, err := io.ReadAll(o.Body)
			o.Body.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: get %s: %d bytes, %v; want %d bytes", when, key, len(got), err, len(want))
			}
		}
	}
	check("after compaction")
	for i := range 10 {
		put(fmt.Sprintf("new%d", i), 100_000)
	}
	s.CLI(t, "admin", "raidp", "space", "--zero")
	check("after new puts into the reclaimed space")
	if g := s.CLI(t, "admin", "raidp", "group"); !strings.Contains(g, "dead backlog: 0 ranges") {
		t.Errorf("cairn admin raidp group shows no dead backlog:\n%s", g)
	}

	var g struct {
		Disks  []struct{ ID string } `json:"disks"`
		Layout struct {
			Superchunks []json.RawMessage `json:"superchunks"`
		} `json:"layout"`
	}
	if err := json.Unmarshal([]byte(s.CLI(t, "admin", "raidp", "group", "--json")), &g); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	args := []string{"admin", "raidp", "verify", "--size", "1MiB", "--slots", "4", "--rows", fmt.Sprint(2 * len(g.Layout.Superchunks) / len(g.Disks))}
	for _, d := range g.Disks {
		name := d.ID[strings.LastIndex(d.ID, "/")+1:]
		args = append(args, filepath.Join(s.Data, name)+",lstor="+filepath.Join(s.Data, "lstor", name))
	}
	vout, err := exec.CommandContext(ctx, testcluster.Binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn admin raidp verify: %v\n%s", err, vout)
	}
	if !strings.Contains(string(vout), "both replicas agree") || strings.Count(string(vout), ": ok (") != disks {
		t.Errorf("cairn admin raidp verify:\n%s", vout)
	}
}
