package coldtier_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	"cairn/layout/gp"
	etcdmeta "cairn/meta/etcd"
)

const (
	bucket = "frozen"
	// policy: clay-4-2-5's sub-chunk unit is 32 KiB (α = 8), so objects
	// of a few hundred KiB have a front and chunks of three or four sizes.
	policy  = "clay-4-2-5/gp=32KiB:2"
	groups  = 2
	maxKeys = 24
)

// obj is what the test last wrote to a key (acknowledged).
type obj struct {
	seed uint64
	size int64
	sum  [32]byte
	part int64 // the part size of one uploaded in parts (0: a single PUT)
}

// crash is one run of TestColdCrash.
type crash struct {
	t      *testing.T
	rng    *rand.Rand
	s      *testcluster.Server
	c      *s3.Client
	store  *etcdmeta.Store
	pol    gp.Policy
	objs   map[string]obj
	next   int
	counts map[string]int // iterations per trigger
}

// TestColdCrash is issue 18's crash test (see the package doc): kill -9
// during exports and during the rebuild of a lost disk, ≥ 100 times. In
// the end, with every object exported, two disks are removed and every
// object still reads byte-exact (the rows the crashes interrupted were
// re-encoded, and the rebuilt disks hold the right bytes).
func TestColdCrash(t *testing.T) {
	iters := 100
	if testing.Short() {
		iters = 20
	}
	if s := os.Getenv("CAIRN_COLD_CRASHES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CAIRN_COLD_CRASHES=%q: want a number of iterations ≥ 1", s)
		}
		iters = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CAIRN_COLD_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CAIRN_COLD_SEED=%q: want a number", s)
		}
		seed = n
	}
	t.Logf("cold crash test: %d iterations, seed %d (CAIRN_COLD_SEED=%d replays its choices)", iters, seed, seed)
	pol, err := gp.ParsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	cr := &crash{t: t, rng: rand.New(rand.NewPCG(seed, 18)), pol: pol, objs: map[string]obj{}, counts: map[string]int{}}
	// The export job runs at every director tick; the cleanup of staged
	// copies after their commit comes a second later, so a copy deleted
	// too early would show at the next check.
	cr.s = testcluster.StartServer(t, "", "--cold-policy", policy, "--cold-every", "100ms", "--cold-groups", strconv.Itoa(groups),
		"--cleanup-grace", "1s", "--cleanup-every", "500ms")
	t.Cleanup(func() {
		if t.Failed() {
			out := cr.s.Output()
			t.Logf("server output (tail):\n%s", out[max(0, len(out)-8000):])
		}
		if cr.store != nil {
			cr.store.Close()
		}
	})
	cr.connect()
	if _, err := cr.c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	for i := range iters {
		cr.work(i)
		trigger := cr.kill(i)
		cr.counts[trigger]++
		cr.check(fmt.Sprintf("iteration %d (%s)", i, trigger))
	}
	t.Logf("%d iterations in %v: %v", iters, time.Since(begin).Round(time.Second), cr.counts)
	// In the end every object is exported, no intent is left, and the
	// groups still check.
	testcluster.WaitFor(t, 2*time.Minute, "the export of every object", func() bool {
		for key := range cr.objs {
			m, err := cr.store.Manifest(t.Context(), bucket, key)
			if err != nil || m.Cold == nil {
				return false
			}
		}
		return true
	})
	for n := range groups {
		if _, err := cr.store.ColdGet(t.Context(), "intents/"+cold.GroupID(pol, n)); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("group %d: an intent is left after the exports: %v", n, err)
		}
	}
	cr.check("the end")
	p, err := cold.ReadProgress(t.Context(), cr.store)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("export job: %+v", p)
	// The rows the crashes left half-written were re-encoded, and the
	// rebuilt disks hold the right bytes: with two disks removed (m = 2
	// for every group) every object still reads byte-exact.
	var disks []cairn.DiskID
	for n := range groups {
		st, err := cold.LoadState(t.Context(), cr.store, cold.GroupID(pol, n), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range st.Disks {
			if !slices.Contains(disks, d) {
				disks = append(disks, d)
			}
		}
	}
	cr.rng.Shuffle(len(disks), func(i, j int) { disks[i], disks[j] = disks[j], disks[i] })
	for _, d := range disks[:2] {
		_, name, _ := strings.Cut(string(d), "/")
		if err := os.RemoveAll(filepath.Join(cr.s.Data, name)); err != nil {
			t.Fatal(err)
		}
	}
	for key, o := range cr.objs {
		if got, n := get(t, cr.c, "with "+string(disks[0])+" and "+string(disks[1])+" removed", key, ""); got != o.sum || n != o.size {
			t.Fatalf("with %v removed: %s: %d bytes read, %d written, or they differ", disks[:2], key, n, o.size)
		}
	}
}

// connect points the S3 client and the metadata store at the server's
// current ports and waits for the gateway.
func (cr *crash) connect() {
	cr.c, cr.store = connect(cr.t, cr.s, cr.store)
}

// work writes a few objects (new keys, overwrites, deletes) and waits for
// each answer: every write is acknowledged before the kill.
func (cr *crash) work(i int) {
	t, ctx := cr.t, cr.t.Context()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range cr.objs {
			if !yield(k) {
				return
			}
		}
	})
	for range 1 + cr.rng.IntN(3) {
		switch r := cr.rng.IntN(10); {
		case len(keys) > 0 && (r < 2 || len(cr.objs) >= maxKeys):
			key := keys[cr.rng.IntN(len(keys))]
			if _, err := cr.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
				t.Fatalf("iteration %d: delete %s: %v", i, key, err)
			}
			delete(cr.objs, key)
			keys = slices.DeleteFunc(keys, func(k string) bool { return k == key })
		case len(keys) > 0 && r < 4:
			cr.put(i, keys[cr.rng.IntN(len(keys))])
		default:
			key := fmt.Sprintf("k%03d", cr.next)
			cr.next++
			cr.put(i, key)
			keys = append(keys, key)
		}
	}
}

// put writes key with a size drawn from 0 to 40 s0 (log-uniform-ish:
// empty, a front only, a few chunks, many chunks), by a PUT or, one time
// in four, uploaded in parts: in one, or in two of 5 MiB and the size.
func (cr *crash) put(i int, key string) {
	var size int64
	switch cr.rng.IntN(6) {
	case 0:
		size = cr.rng.Int64N(2)
	case 1:
		size = cr.rng.Int64N(32 << 10)
	default:
		size = cr.rng.Int64N(1 << (15 + 1 + cr.rng.IntN(5)))
	}
	o := obj{seed: cr.rng.Uint64(), size: size}
	var err error
	switch cr.rng.IntN(8) {
	case 0, 1: // uploaded in one part
		o.part = size
		err = putParts(cr.t.Context(), cr.c, key, o.seed, size, size, false, "")
	case 2: // in two, the first of S3's least part size
		o.size, o.part = 5<<20+size, 5<<20
		err = putParts(cr.t.Context(), cr.c, key, o.seed, o.size, o.part, false, "")
	default:
		_, err = cr.c.PutObject(cr.t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: coldtier.Stream(o.seed, size), ContentLength: aws.Int64(size), StorageClass: types.StorageClass("COLD")})
	}
	if err != nil {
		cr.t.Fatalf("iteration %d: put %s (%d bytes, parts of %d): %v", i, key, o.size, o.part, err)
	}
	o.sum = coldtier.Sum(o.seed, o.size, 0, o.size)
	cr.objs[key] = o
}

// kill picks a trigger, waits for it and kills the server, then restarts
// it. It returns the trigger's name.
func (cr *crash) kill(i int) string {
	t := cr.t
	var trigger string
	var out cairn.DiskID
	switch r := cr.rng.IntN(8); {
	case r < 2:
		out = cr.takeOut(i)
		if out == "" {
			trigger = "delay"
			cr.delay(3 * time.Second)
			break
		}
		trigger = "rebuild"
		cr.rebuilding(out)
	case r < 5:
		trigger = "delay"
		cr.delay(3 * time.Second)
	case r < 7:
		trigger = "export"
		if !cr.exporting(false) {
			trigger = "export (none seen)"
		}
	default:
		// An intent left by the last kill: the first pass after the
		// restart recovers it (re-encodes its rows); kill during that.
		trigger = "recovery"
		if !cr.exporting(true) {
			trigger = "recovery (none seen)"
		}
	}
	cr.s.Restart(t)
	cr.connect()
	if out != "" {
		// The next passes rebuild the disk onto a spare; then it comes
		// back in, a spare for the next rebuilds.
		testcluster.WaitFor(t, 2*time.Minute, "the rebuild of "+string(out), func() bool { return !cr.inGroup(out) })
		cr.s.CLI(t, "admin", "disk", "in", string(out))
	}
	return trigger
}

// delay sleeps a random time below d.
func (cr *crash) delay(d time.Duration) {
	// real time: the export job runs on the server's own clock; the kill
	// lands somewhere in its passes.
	time.Sleep(time.Duration(cr.rng.Int64N(int64(d))))
}

// exporting polls for up to 5 s for an export in flight — an intent
// record written since it was called (fresh) or one left by the last kill
// (stale, recovered by the job's next pass) — and returns once it sees
// one, after a random delay (the intent is written before the slots and
// deleted after the commits; a recovery re-encodes rows before it
// resolves the intent).
func (cr *crash) exporting(stale bool) bool {
	ctx := cr.t.Context()
	extra := time.Duration(cr.rng.Int64N(int64(30 * time.Millisecond)))
	if stale {
		extra = time.Duration(cr.rng.Int64N(int64(300 * time.Millisecond)))
	}
	intents := func() map[string]string {
		out := map[string]string{}
		page, _, err := cr.store.ColdPage(ctx, "intents/", "", groups)
		if err != nil {
			return nil
		}
		for _, r := range page {
			out[r.Key] = string(r.Value)
		}
		return out
	}
	before := intents()
	if stale {
		if len(before) == 0 {
			return false
		}
		// real time: a random point of the recovery on the real process.
		time.Sleep(extra)
		return true
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for k, v := range intents() {
			if before[k] != v {
				// real time: a random point of the export in flight.
				time.Sleep(extra)
				return true
			}
		}
		// real time: polling the real process's metadata.
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// takeOut takes a random disk of a random existing group out (`cairn
// admin disk out`); "" if no group exists yet.
func (cr *crash) takeOut(i int) cairn.DiskID {
	ctx := cr.t.Context()
	var disks []cairn.DiskID
	for n := range groups {
		st, err := cold.LoadState(ctx, cr.store, cold.GroupID(cr.pol, n), nil)
		if errors.Is(err, cairn.ErrNotFound) {
			continue
		}
		if err != nil {
			cr.t.Fatalf("iteration %d: %v", i, err)
		}
		disks = append(disks, st.Disks...)
	}
	if len(disks) == 0 {
		return ""
	}
	d := disks[cr.rng.IntN(len(disks))]
	cr.s.CLI(cr.t, "admin", "disk", "out", string(d))
	return d
}

// inGroup reports whether a group still names disk d.
func (cr *crash) inGroup(d cairn.DiskID) bool {
	for n := range groups {
		st, err := cold.LoadState(cr.t.Context(), cr.store, cold.GroupID(cr.pol, n), nil)
		if err != nil {
			return !errors.Is(err, cairn.ErrNotFound)
		}
		if slices.Contains(st.Disks, d) {
			return true
		}
	}
	return false
}

// rebuilding waits up to 4 s — the director's next ticks — and kills
// while a group still names disk d (its rebuild not saved yet), at a
// random moment.
func (cr *crash) rebuilding(d cairn.DiskID) {
	wait := time.Duration(cr.rng.Int64N(int64(4 * time.Second)))
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && cr.inGroup(d) {
		// real time: polling the real process's metadata.
		time.Sleep(5 * time.Millisecond)
	}
}

// check runs every check of the package doc after a restart.
func (cr *crash) check(when string) {
	t, ctx := cr.t, cr.t.Context()
	t.Helper()
	// The listing: every key once, no other.
	var listed []string
	p := s3.NewListObjectsV2Paginator(cr.c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(7)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("%s: list: %v", when, err)
		}
		for _, o := range page.Contents {
			listed = append(listed, *o.Key)
		}
	}
	want := slices.Sorted(func(yield func(string) bool) {
		for k := range cr.objs {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(listed, want) {
		t.Fatalf("%s: listed %v, want %v", when, listed, want)
	}
	// Every object byte-exact, and one range.
	for _, key := range want {
		o := cr.objs[key]
		if got, n := get(t, cr.c, when, key, ""); got != o.sum || n != o.size {
			t.Fatalf("%s: %s: %d bytes read (sha256 %x), %d written (%x)", when, key, n, got[:6], o.size, o.sum[:6])
		}
	}
	if len(want) > 0 {
		key := want[cr.rng.IntN(len(want))]
		if o := cr.objs[key]; o.size > 1 {
			off := cr.rng.Int64N(o.size)
			n := 1 + cr.rng.Int64N(o.size-off)
			if got, m := get(t, cr.c, when, key, fmt.Sprintf("bytes=%d-%d", off, off+n-1)); got != coldtier.Sum(o.seed, o.size, off, n) || m != n {
				t.Fatalf("%s: %s: range [%d, +%d) differs (%d bytes read)", when, key, off, n, m)
			}
		}
	}
	cr.checkMeta(when)
}

// get GETs key (rng: a Range header or "") and returns the SHA-256 and
// length of the body.
func get(t *testing.T, c *s3.Client, when, key, rng string) ([32]byte, int64) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := c.GetObject(t.Context(), in)
	if err != nil {
		t.Fatalf("%s: get %s %s: %v", when, key, rng, err)
	}
	defer out.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if err != nil {
		t.Fatalf("%s: get %s %s: %v", when, key, rng, err)
	}
	return [32]byte(h.Sum(nil)), n
}

// checkMeta checks the groups against the cold manifests (cold.Check) and
// that the shard files of every staged manifest are on their disks.
func (cr *crash) checkMeta(when string) {
	t, ctx := cr.t, cr.t.Context()
	var ms []*cairn.Manifest
	for after := ""; ; {
		page, more, err := cr.store.ListManifests(ctx, bucket, "", after, 100)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for _, m := range page {
			after = m.Key
			ms = append(ms, m)
		}
		if !more || len(page) == 0 {
			break
		}
	}
	files := cr.shardFiles(when)
	for _, m := range ms {
		if m.Cold != nil || !cairn.IsColdPolicy(m.Policy) {
			continue
		}
		for _, f := range m.Files() {
			if !files[f] {
				t.Fatalf("%s: staged %s/%s: shard %s/%s is not on its disk", when, m.Bucket, m.Key, f.Disk, f.Name)
			}
		}
	}
	for n := range groups {
		id := cold.GroupID(cr.pol, n)
		for try := 0; ; try++ {
			err := cold.Check(ctx, cr.store, id, ms)
			if errors.Is(err, cairn.ErrNotFound) {
				break
			}
			if errors.Is(err, cairn.ErrConflict) && try < 50 {
				// real time: the export job changed the group while it was
				// read; read it again.
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			break
		}
	}
}

// shardFiles lists the shard files on the server's disks.
func (cr *crash) shardFiles(when string) map[cairn.ShardFile]bool {
	return shardFiles(cr.t, cr.s, when)
}

// shardFiles lists the shard files on the disks of server s.
func shardFiles(t *testing.T, s *testcluster.Server, when string) map[cairn.ShardFile]bool {
	out := map[cairn.ShardFile]bool{}
	dirs, err := filepath.Glob(filepath.Join(s.Data, "disk*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		disk := cairn.DiskID("node1/" + filepath.Base(dir))
		err := filepath.WalkDir(filepath.Join(dir, "shards"), func(_ string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			out[cairn.ShardFile{Disk: disk, Name: e.Name()}] = true
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("%s: %v", when, err)
		}
	}
	return out
}
