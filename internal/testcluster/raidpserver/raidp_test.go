package raidpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// TestRAIDPWarm runs the raidp policy on real processes: four nodes whose
// disks have Lstors, a gateway, objects PUT with storage class WARM and
// read back byte-exact; then the node holding the first replica of an
// object is killed and every object still reads byte-exact from the
// mirrors; at last every node is stopped and `cairn admin raidp verify`
// finds every Lstor the XOR of its disk and every superchunk's replicas
// equal.
func TestRAIDPWarm(t *testing.T) {
	ctx := context.Background()
	const nodes = 4
	c, check := warmCluster(t, nodes, 0, []int{0, 1, 5000, 300_000, 1<<20 + 12_345}) // the last spans both superchunks
	check("all nodes up")

	st := c.CLI(t, "stat", "warm-bucket/o4")
	if !strings.Contains(st, "policy   raidp") || !strings.Contains(st, "group    warm") {
		t.Fatalf("cairn stat of a raidp object:\n%s", st)
	}
	// The first span's first replica: "  superchunk offset length nodeN/disk1 slot S ...".
	var victim int
	for _, line := range strings.Split(st, "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.HasPrefix(f[3], "node") && victim == 0 {
			fmt.Sscanf(f[3], "node%d/", &victim)
		}
	}
	if victim < 1 || victim > nodes {
		t.Fatalf("no replica disk in cairn stat:\n%s", st)
	}
	c.Nodes[victim-1].Kill()
	check(fmt.Sprintf("node%d killed", victim))

	for _, n := range c.Nodes {
		n.Kill()
	}
	args := []string{"admin", "raidp", "verify", "--size", "1MiB", "--slots", "4", "--rows", "1"}
	for i := 1; i <= nodes; i++ {
		args = append(args, c.NodeDir(i, 1)+",lstor="+c.LstorDir(i, 1))
	}
	// Offline: no --config (RunCLI would add one).
	out, err := exec.CommandContext(ctx, testcluster.Binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn admin raidp verify: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "2 superchunks: both replicas agree") || strings.Count(string(out), ": ok (") != nodes {
		t.Errorf("cairn admin raidp verify:\n%s", out)
	}
}

// warmCluster starts nodes nodes whose disks have Lstors of 4 superchunks
// of 1 MiB (and a director grace of grace, 0: the default; nodeArgs
// after these, e.g. another --raidp-size), a gateway, and PUTs objects of
// the sizes given with storage class WARM into bucket warm-bucket. check
// reads them all back byte-exact (failing the test otherwise).
func warmCluster(t *testing.T, nodes int, grace time.Duration, sizes []int, nodeArgs ...string) (*testcluster.Cluster, func(when string)) {
	t.Helper()
	ctx := context.Background()
	c := testcluster.Start(t, testcluster.Config{Nodes: nodes, Lstor: true, Grace: grace,
		NodeArgs: append([]string{"--raidp-size", "1MiB", "--raidp-slots", "4"}, nodeArgs...)})
	gw := testcluster.StartProc(t, "gateway", "gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0", "--console-addr", "off",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey)
	cl := testcluster.S3Client(gw.Addr(proc.S3))
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("warm-bucket")}); err != nil {
		t.Fatal(err)
	}
	objects := map[string][]byte{}
	rng := rand.New(rand.NewPCG(17, 1))
	for i, n := range sizes {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("o%d", i)
		objects[key] = p
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("warm-bucket"), Key: aws.String(key), Body: bytes.NewReader(p),
			ContentLength: aws.Int64(int64(n)), StorageClass: types.StorageClass("WARM")}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	check := func(when string) {
		t.Helper()
		for key, want := range objects {
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("warm-bucket"), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("%s: get %s: %v", when, key, err)
			}
			got, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: get %s: %d bytes, %v; want %d bytes", when, key, len(got), err, len(want))
			}
			if out.StorageClass != "WARM" {
				t.Errorf("%s: get %s: storage class %q, want WARM", when, key, out.StorageClass)
			}
		}
	}
	return c, check
}

// TestRAIDPDirectorRecovers kills the nodes of two disks of a raidp group,
// one after the other, on real processes: each time the director marks
// the disk down and re-mirrors its superchunks (a new generation of the
// group), and every object still reads back byte-exact — after the
// second loss too, which a group without the recovery would not survive
// for the superchunk both disks held.
func TestRAIDPDirectorRecovers(t *testing.T) {
	const nodes = 6
	c, check := warmCluster(t, nodes, 2*time.Second, []int{7000, 500_000, 900_000, 1<<20 + 99, 1 << 20})
	check("all nodes up")
	read := func() groupRecord {
		t.Helper()
		var g groupRecord
		if err := json.Unmarshal([]byte(c.CLI(t, "admin", "raidp", "group", "--json")), &g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := read()
	if g.Generation != 1 || len(g.Disks) != nodes {
		t.Fatalf("group %+v", g)
	}
	for step := 1; step <= 2; step++ {
		// Superchunk 0 holds the first object; kill the node of one of
		// its replicas.
		d := g.Disks[g.Layout.Superchunks[0].Replicas[step-1].Disk].ID
		var n int
		fmt.Sscanf(d, "node%d/", &n)
		c.Nodes[n-1].Kill()
		testcluster.WaitFor(t, 2*time.Minute, fmt.Sprintf("the director to recover from %s", d), func() bool {
			return read().Generation == uint64(step+1)
		})
		g = read()
		if len(g.Out) != step {
			t.Fatalf("after losing %s: out %v", d, g.Out)
		}
		check(fmt.Sprintf("%d disks lost and recovered", step))
	}
	if !strings.Contains(c.CLI(t, "admin", "raidp", "group"), "out") {
		t.Error("cairn admin raidp group shows no disk out")
	}
}

// TestRAIDPServerWarm: `cairn server` with its default disks serves the
// raidp policy out of the box — each disk with its Lstor in
// DIR/lstor/diskN — so a PUT with storage class WARM is stored in a RAIDP
// group of the server's disks and reads back byte-exact.
func TestRAIDPServerWarm(t *testing.T) {
	ctx := context.Background()
	s := testcluster.StartServer(t, "", "--disks", "4", "--raidp-size", "1MiB", "--raidp-slots", "4")
	cl := testcluster.S3Client(s.S3)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("warm-bucket")}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("warm tier "), 50_000)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("warm-bucket"), Key: aws.String("k"), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), StorageClass: types.StorageClass("WARM")}); err != nil {
		t.Fatal(err)
	}
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("warm-bucket"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, body) || out.StorageClass != "WARM" {
		t.Fatalf("get: %d bytes, %v, class %q", len(got), err, out.StorageClass)
	}
	if st := s.CLI(t, "stat", "warm-bucket/k"); !strings.Contains(st, "policy   raidp") {
		t.Fatalf("cairn stat:\n%s", st)
	}
	// One node: the group is every disk, each its own domain.
	if g := s.CLI(t, "admin", "raidp", "group"); !strings.Contains(g, "node1/disk4  node1/disk4") {
		t.Errorf("cairn admin raidp group:\n%s", g)
	}
	if _, err := os.Stat(filepath.Join(s.Data, "lstor", "disk4", "LSTOR")); err != nil {
		t.Errorf("the server's default Lstor of disk4: %v", err)
	}
}
