package coldtier_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
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

	"cairn"
	"cairn/cold"
	"cairn/internal/testcluster"
	"cairn/internal/testcluster/coldtier"
	"cairn/internal/units"
	"cairn/layout/gp"
	etcdmeta "cairn/meta/etcd"
)

// largePolicy caps chunks at 64 MiB: a row is 6 chunks, so an export
// holds at most 384 MiB of one row, and reads an object bigger than a
// batch (64 MiB) a chunk at a time.
const largePolicy = "clay-4-2-5/gp=1MiB:2:64MiB"

// e2e is one run of TestColdEndToEnd.
type e2e struct {
	t     *testing.T
	rng   *rand.Rand
	s     *testcluster.Server
	c     *s3.Client
	store *etcdmeta.Store
	objs  map[string]obj
}

// TestColdEndToEnd is issue 18's end-to-end acceptance on a real `cairn
// server`: objects from 0 bytes to the largest size (CAIRN_COLD_LARGEST,
// default 1GiB; 256MiB with -short) are PUT to the COLD class through S3,
// streamed (never held in memory by the test), and one is uploaded in
// parts. They are read back — whole, compared by SHA-256, in ranges, and
// a part by number — in every state: staged (the export job runs only at
// a start: --cold-every is an hour; the objects go in after the first
// pass), exported, degraded (two disks of the group removed, the data
// disk of the largest object among them: m = 2 of clay-4-2-5), and
// recovered (the disks taken out, rebuilt onto the two spares by the
// job).
func TestColdEndToEnd(t *testing.T) {
	largest := int64(1 << 30)
	if testing.Short() {
		largest = 256 << 20
	}
	if s := os.Getenv("CAIRN_COLD_LARGEST"); s != "" {
		n, err := units.ParseSize(s)
		if err != nil || n < 1 {
			t.Fatalf("CAIRN_COLD_LARGEST=%q: want a size such as 1GiB: %v", s, err)
		}
		largest = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("largest object %d bytes, seed %d", largest, seed)
	e := &e2e{t: t, rng: rand.New(rand.NewPCG(seed, 18)), objs: map[string]obj{}}
	e.s = testcluster.StartServer(t, "", "--cold-policy", largePolicy, "--cold-every", "1h", "--cold-groups", "1",
		"--cleanup-grace", "1s", "--cleanup-every", "1s")
	t.Cleanup(func() {
		if t.Failed() {
			out := e.s.Output()
			t.Logf("server output (tail):\n%s", out[max(0, len(out)-8000):])
		}
		if e.store != nil {
			e.store.Close()
		}
	})
	e.connect()
	ctx := t.Context()
	// The director runs the job's first pass right after it wins
	// leadership, which may come after "ready": an object PUT before that
	// pass ends may be exported by it. The objects go in after it.
	testcluster.WaitFor(t, time.Minute, "the export job's first pass", func() bool {
		p, err := cold.ReadProgress(ctx, e.store)
		return err == nil && p.Passes > 0
	})
	if _, err := e.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	sizes := []int64{0, 1, 5000, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 12345, 40<<20 + 7}
	sizes = append(sizes, largest)
	begin := time.Now()
	for i, n := range sizes {
		key := fmt.Sprintf("o%d-%d", i, n)
		o := obj{seed: e.rng.Uint64(), size: n}
		o.sum = coldtier.Sum(o.seed, n, 0, n)
		_, err := e.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: coldtier.Stream(o.seed, n), ContentLength: aws.Int64(n), StorageClass: types.StorageClass("COLD")})
		if err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		e.objs[key] = o
	}
	// And one uploaded in parts, the last one short.
	mp := obj{seed: e.rng.Uint64(), size: 13<<20 + 7, part: 5 << 20}
	mp.sum = coldtier.Sum(mp.seed, mp.size, 0, mp.size)
	if err := putParts(ctx, e.c, "mp", mp.seed, mp.size, mp.part, false, ""); err != nil {
		t.Fatalf("put mp in parts: %v", err)
	}
	e.objs["mp"] = mp
	t.Logf("PUT %d objects in %v", len(e.objs), time.Since(begin).Round(time.Millisecond))
	for key := range e.objs {
		if m, err := e.store.Manifest(ctx, bucket, key); err != nil || m.Cold != nil || !cairn.IsColdPolicy(m.Policy) {
			t.Fatalf("%s right after its PUT: not staged (%v)", key, err)
		}
	}
	e.readAll("staged")

	// A restart runs the export job at once (its first pass).
	begin = time.Now()
	e.s.Restart(t)
	e.connect()
	testcluster.WaitFor(t, 10*time.Minute, "the export of every object", func() bool {
		for key := range e.objs {
			if m, err := e.store.Manifest(ctx, bucket, key); err != nil || m.Cold == nil {
				return false
			}
		}
		return true
	})
	t.Logf("exported within %v of the restart", time.Since(begin).Round(time.Millisecond))
	e.readAll("exported")

	// Remove two disks of the group, the largest object's data disk one of
	// them: every read is degraded or needs a repair of its row.
	big := e.manifest(fmt.Sprintf("o%d-%d", len(sizes)-1, largest))
	st, err := cold.LoadState(ctx, e.store, big.Cold.Group, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gp.DecodeRecord(big.Cold.Record, st.PG.Geo)
	if err != nil {
		t.Fatal(err)
	}
	other := (r.Disk + 1 + e.rng.IntN(len(st.Disks)-1)) % len(st.Disks)
	lost := []cairn.DiskID{st.Disks[r.Disk], st.Disks[other]}
	for _, d := range lost {
		if err := os.RemoveAll(e.diskDir(d)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("removed %v (positions %d and %d of group %s %v)", lost, r.Disk, other, st.ID, st.Disks)
	e.readAll("degraded")

	// Recovery: the disks go out, the job rebuilds them onto the spares
	// (a restart runs it at once).
	for _, d := range lost {
		e.s.CLI(t, "admin", "disk", "out", string(d))
	}
	begin = time.Now()
	e.s.Restart(t)
	e.connect()
	testcluster.WaitFor(t, 10*time.Minute, "the rebuild of the removed disks", func() bool {
		st, err := cold.LoadState(ctx, e.store, big.Cold.Group, nil)
		return err == nil && !strings.Contains(fmt.Sprint(st.Disks), string(lost[0])) && !strings.Contains(fmt.Sprint(st.Disks), string(lost[1]))
	})
	st, err = cold.LoadState(ctx, e.store, big.Cold.Group, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuilt onto spares within %v of the restart: group %v", time.Since(begin).Round(time.Millisecond), st.Disks)
	e.readAll("recovered")
	var ms []*cairn.Manifest
	for key := range e.objs {
		ms = append(ms, e.manifest(key))
	}
	if err := cold.Check(ctx, e.store, st.ID, ms); err != nil {
		t.Fatal(err)
	}
}

func (e *e2e) connect() {
	e.c, e.store = connect(e.t, e.s, e.store)
}

func (e *e2e) manifest(key string) *cairn.Manifest {
	m, err := e.store.Manifest(e.t.Context(), bucket, key)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// diskDir is the directory of one of the server's disks (node1/diskN).
func (e *e2e) diskDir(d cairn.DiskID) string {
	_, name, _ := strings.Cut(string(d), "/")
	return filepath.Join(e.s.Data, name)
}

// readAll reads every object whole and in three ranges — one of at most a
// few MiB at a random offset, one from a random offset to the end, and
// one crossing the boundary of the first chunk after the front — and
// compares them by SHA-256.
func (e *e2e) readAll(state string) {
	t := e.t
	begin := time.Now()
	var bytes int64
	for key, o := range e.objs {
		got, n := get(t, e.c, state, key, "")
		if got != o.sum || n != o.size {
			t.Fatalf("%s: %s: %d bytes read, %d written, sha256 differs: %v", state, key, n, o.size, got != o.sum)
		}
		bytes += n
		if o.size == 0 {
			continue
		}
		off := e.rng.Int64N(o.size)
		ranges := [][2]int64{
			{off, min(o.size-off, 1+e.rng.Int64N(4<<20))},
			{e.rng.Int64N(o.size), -1},
		}
		if front := o.size % (1 << 20); front > 0 && o.size > 1<<20 {
			ranges = append(ranges, [2]int64{max(0, front-100), min(o.size-max(0, front-100), 1000)})
		}
		if o.part > 0 {
			// A part by ?partNumber=, chosen at random.
			n := e.rng.Int64N((o.size + o.part - 1) / o.part)
			rg := [2]int64{n * o.part, min(o.part, o.size-n*o.part)}
			out, err := e.c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), PartNumber: aws.Int32(int32(n + 1))})
			if err != nil {
				t.Fatalf("%s: %s: part %d: %v", state, key, n+1, err)
			}
			b, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil || int64(len(b)) != rg[1] || sha256.Sum256(b) != coldtier.Sum(o.seed, o.size, rg[0], rg[1]) {
				t.Fatalf("%s: %s: part %d: %d bytes read, want %d, or they differ (%v)", state, key, n+1, len(b), rg[1], err)
			}
			bytes += rg[1]
		}
		for _, rg := range ranges {
			off, n := rg[0], rg[1]
			h := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
			if n < 0 {
				n = o.size - off
				h = fmt.Sprintf("bytes=%d-", off)
			}
			if got, m := get(t, e.c, state, key, h); got != coldtier.Sum(o.seed, o.size, off, n) || m != n {
				t.Fatalf("%s: %s: range %s: %d bytes read, want %d, or they differ", state, key, h, m, n)
			}
			bytes += n
		}
	}
	t.Logf("%s: read %d objects whole and in ranges (%d bytes) in %v", state, len(e.objs), bytes, time.Since(begin).Round(time.Millisecond))
}

// connect points an S3 client and a metadata store at the server's
// current ports (closing old, if any) and waits for the gateway.
func connect(t *testing.T, s *testcluster.Server, old *etcdmeta.Store) (*s3.Client, *etcdmeta.Store) {
	t.Helper()
	c := testcluster.S3Client(s.S3)
	b, err := os.ReadFile(s.Conf)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Meta []string `json:"meta"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatal(err)
	}
	if old != nil {
		old.Close()
	}
	store, err := etcdmeta.Open(t.Context(), conf.Meta, etcdmeta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, time.Minute, "the gateway", func() bool {
		_, err := c.ListBuckets(t.Context(), &s3.ListBucketsInput{})
		return err == nil
	})
	return c, store
}
