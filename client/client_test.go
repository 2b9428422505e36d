package client

import (
	"bytes"
	"cairn/client/clienttest"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/cleanup"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/meta/mem"
)

type env struct {
	meta   *mem.Store
	shards *clienttest.MemShards
	c      *Client
	damage []Damage
}

// newEnv makes a cluster map of nodes×disks and a bucket "b" with policy.
func newEnv(t testing.TB, nodes, disks int, policy string, cfg Config) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{meta: mem.New(), shards: clienttest.NewMemShards()}
	for n := 1; n <= nodes; n++ {
		id := cairn.NodeID(fmt.Sprintf("node%d", n))
		if err := e.meta.PutNode(ctx, cairn.Node{ID: id, Addr: "x"}); err != nil {
			t.Fatal(err)
		}
		for d := 1; d <= disks; d++ {
			if err := e.meta.PutDisk(ctx, cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/disk%d", id, d)), Node: id, Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.meta.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: policy}); err != nil {
		t.Fatal(err)
	}
	cfg.OnDamage = func(d Damage) { e.damage = append(e.damage, d) }
	e.c = New(e.meta, e.shards, cfg)
	return e
}

func randBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// files runs the cleanup queue with no grace period (as if it had
// passed) and returns the shard files left.
func (e *env) files(t testing.TB) int {
	t.Helper()
	if _, err := cleanup.New(e.meta, e.shards, cleanup.Config{Grace: -1, Rate: 1e6}).Run(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return e.shards.Count()
}

func (e *env) get(t *testing.T, key string, off, n int64) []byte {
	t.Helper()
	_, rc, err := e.c.Get(context.Background(), "bkt", key, off, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("get %s [%d,+%d): %v", key, off, n, err)
	}
	return b
}

func TestPutGetPolicies(t *testing.T) {
	for _, policy := range []string{"rs-4-2", "rs-3-2", "lrc-4-2-1", "rep-3", "clay-4-2-5", "lt-16-2", "rs-4-2 without small objects"} {
		t.Run(policy, func(t *testing.T) {
			cfg := Config{BlockSize: 4096, WindowBytes: 3 * 4096}
			if p, ok := strings.CutSuffix(policy, " without small objects"); ok {
				policy, cfg.SmallObject = p, -1
			}
			e := newEnv(t, 32, 1, policy, cfg)
			for _, size := range []int{0, 1, 4095, 4096 * 4, 4096*4 + 1, 100_000} {
				data := randBytes(uint64(size), size)
				key := fmt.Sprintf("obj-%d", size)
				m, err := e.c.Put(context.Background(), "bkt", key, bytes.NewReader(data), PutOptions{Size: int64(size), ContentType: "x/y"})
				if err != nil {
					t.Fatalf("put %d: %v", size, err)
				}
				sum := md5.Sum(data)
				if m.ETag != hex.EncodeToString(sum[:]) || m.Size != int64(size) || m.Policy != policy {
					t.Fatalf("manifest %+v", m)
				}
				if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
					t.Fatalf("size %d: get returned %d bytes, differing", size, len(got))
				}
				checkIdentities(t, e.shards, m)
				// Two data shards unreadable: every policy here tolerates it
				// (lt-16-2 decodes from 30 of its 32 blocks).
				d0, d1 := firstDisks(m)
				e.shards.Mu.Lock()
				e.shards.FailGet = map[cairn.DiskID]error{d0: cairn.ErrNotFound, d1: cairn.ErrCorrupt}
				e.shards.Mu.Unlock()
				if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
					t.Fatalf("size %d: degraded get returned %d bytes, differing", size, len(got))
				}
				e.shards.Mu.Lock()
				e.shards.FailGet = map[cairn.DiskID]error{}
				e.shards.Mu.Unlock()
			}
		})
	}
}

// firstDisks returns the disks of an object's first two shards, or of
// the first two blocks of a fountain-coded one's first stripe.
func firstDisks(m *cairn.Manifest) (cairn.DiskID, cairn.DiskID) {
	if m.Coded == nil {
		return m.Shards[0].Disk, m.Shards[1].Disk
	}
	return m.Coded[0].Blocks[0].Disk, m.Coded[0].Blocks[1].Disk
}

func TestRangeReadsTouchOnlyTheirStripes(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024, WindowBytes: 4096})
	data := randBytes(1, 40*4096+17)
	if _, err := e.c.Put(context.Background(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for range 50 {
		off := rng.Int64N(int64(len(data)))
		n := rng.Int64N(int64(len(data)) - off + 1)
		if got := e.get(t, "k", off, n); !bytes.Equal(got, data[off:off+n]) {
			t.Fatalf("range [%d,+%d) wrong", off, n)
		}
	}
	// Stripe boundaries exactly.
	for _, r := range [][2]int64{{0, 4096}, {4096, 4096}, {4095, 2}, {int64(len(data)) - 17, 17}, {int64(len(data)), 0}} {
		if got := e.get(t, "k", r[0], r[1]); !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v wrong", r)
		}
	}
	// A one-stripe range makes one request per shard read (K+δ = 5), not more.
	e.shards.Mu.Lock()
	e.shards.Gets = map[cairn.DiskID]int{}
	e.shards.Mu.Unlock()
	e.get(t, "k", 10*4096+5, 100)
	calls := 0
	e.shards.Mu.Lock()
	for _, n := range e.shards.Gets {
		calls += n
	}
	e.shards.Mu.Unlock()
	if calls > 5 {
		t.Fatalf("a one-stripe range made %d shard requests, want ≤ 5", calls)
	}
	if _, _, err := e.c.Get(context.Background(), "bkt", "k", int64(len(data))+1, 1); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("range past the end: %v, want ErrInvalid", err)
	}
}

func TestGetDecodesAroundLostAndCorruptShards(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	data := randBytes(2, 50_000)
	m, err := e.c.Put(context.Background(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Lose shard 0's disk entirely and make shard 2's disk return corruption.
	e.shards.Set(func() { e.shards.FailGet[m.Shards[0].Disk] = fmt.Errorf("disk gone: %w", cairn.ErrNotFound) })
	e.shards.Set(func() { e.shards.FailGet[m.Shards[2].Disk] = fmt.Errorf("block 3: %w", cairn.ErrCorrupt) })
	if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
		t.Fatal("degraded read returned wrong bytes")
	}
	// At least one failure must be seen (four of the five shards first asked
	// for cannot decode without a replacement); the other may lose the race
	// with the decode. Every report names a bad shard.
	if len(e.damage) < 1 {
		t.Fatal("no damage reported")
	}
	for _, d := range e.damage {
		if d.Shard != 0 && d.Shard != 2 {
			t.Fatalf("damage reported for healthy shard %d", d.Shard)
		}
		if want := cairn.ShardName(m.Version, d.Shard); d.Name != want || d.Disk != m.Shards[d.Shard].Disk {
			t.Fatalf("damage of shard %d names %s on %s, want %s on %s", d.Shard, d.Name, d.Disk, want, m.Shards[d.Shard].Disk)
		}
	}
	// A third loss exceeds rs-4-2's tolerance: a precise error, not wrong data.
	e.shards.Set(func() { e.shards.FailGet[m.Shards[4].Disk] = errors.New("io error") })
	_, rc, err := e.c.Get(context.Background(), "bkt", "k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("three lost shards of rs-4-2: %v, want ErrUnavailable", err)
	}
}

func TestGetIgnoresStraggler(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	data := randBytes(3, 20_000)
	m, err := e.c.Put(context.Background(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	e.shards.Set(func() { e.shards.Slow[m.Shards[1].Disk] = time.Hour }) // would never finish
	done := make(chan []byte)
	go func() { done <- e.get(t, "k", 0, -1) }()
	select {
	case got := <-done:
		if !bytes.Equal(got, data) {
			t.Fatal("wrong bytes")
		}
	case <-time.After(time.Minute):
		t.Fatal("GET waited for a straggler it did not need")
	}
}

func TestPutFailureLeavesNothing(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	ctx := context.Background()
	disks, _ := e.meta.Disks(ctx)
	e.shards.Set(func() { e.shards.FailPut[disks[3].ID] = fmt.Errorf("write: %w", cairn.ErrNoSpace) })
	_, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(randBytes(4, 100_000)), PutOptions{Size: -1})
	if !errors.Is(err, cairn.ErrNoSpace) || !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("put with a full disk: %v, want ErrUnavailable wrapping ErrNoSpace", err)
	}
	if _, err := e.c.Stat(ctx, "bkt", "k"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("failed put is visible: %v", err)
	}
	if n := e.files(t); n != 0 {
		t.Fatalf("failed put left %d shard files", n)
	}
}

type failingReader struct {
	r   io.Reader
	n   int
	err error
}

func (f *failingReader) Read(b []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	b = b[:min(len(b), f.n)]
	n, err := f.r.Read(b)
	f.n -= n
	return n, err
}

func TestTruncatedAndBrokenBodies(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	ctx := context.Background()
	data := randBytes(5, 30_000)
	// Announced 30000, sent 20000.
	_, err := e.c.Put(ctx, "bkt", "short", bytes.NewReader(data[:20_000]), PutOptions{Size: 30_000})
	if !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("short body: %v, want ErrInvalid", err)
	}
	// Announced 100, sent more.
	_, err = e.c.Put(ctx, "bkt", "long", bytes.NewReader(data), PutOptions{Size: 100})
	if !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("long body: %v, want ErrInvalid", err)
	}
	// The connection breaks mid-body.
	broken := errors.New("connection reset")
	_, err = e.c.Put(ctx, "bkt", "broken", &failingReader{r: bytes.NewReader(data), n: 9000, err: broken}, PutOptions{Size: -1})
	if !errors.Is(err, broken) {
		t.Fatalf("broken body: %v", err)
	}
	// A truncated HTTP body reports io.ErrUnexpectedEOF: an error, not the end.
	_, err = e.c.Put(ctx, "bkt", "truncated", &failingReader{r: bytes.NewReader(data), n: 9000, err: io.ErrUnexpectedEOF}, PutOptions{Size: -1})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated body: %v, want the read error", err)
	}
	for _, k := range []string{"short", "long", "broken", "truncated"} {
		if _, err := e.c.Stat(ctx, "bkt", k); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("%s is visible after a failed put", k)
		}
	}
	if n := e.files(t); n != 0 {
		t.Fatalf("failed puts left %d shard files", n)
	}
}

func TestOverwriteAndDelete(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	ctx := context.Background()
	for i := range 3 {
		data := randBytes(uint64(10+i), 5000+i)
		if _, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1}); err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("overwrite %d: wrong bytes", i)
		}
		if n := e.files(t); n != 6 {
			t.Fatalf("after overwrite %d: %d shard files, want 6 (old versions deleted)", i, n)
		}
	}
	if err := e.c.Delete(ctx, "bkt", "k"); err != nil {
		t.Fatal(err)
	}
	if n := e.files(t); n != 0 {
		t.Fatalf("delete left %d shard files", n)
	}
	if err := e.c.Delete(ctx, "bkt", "k"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{SmallObject: -1}) // every body here is small: store it with its policy
	ctx := context.Background()
	cases := []struct {
		bucket, key, policy string
		want                error
	}{
		{"nosuch", "k", "", cairn.ErrNotFound},
		{"bkt", "", "", cairn.ErrInvalid},
		{"bkt", strings.Repeat("k", 1025), "", cairn.ErrInvalid},
		{"bkt", "bad\xff\xfeutf8", "", cairn.ErrInvalid},
		{"bkt", "k", "rs-0-2", cairn.ErrInvalid},
		{"bkt", "k", "rs-6-3", cairn.ErrUnavailable}, // 9 shards, 6 disks
	}
	for _, tc := range cases {
		_, err := e.c.Put(ctx, tc.bucket, tc.key, strings.NewReader("x"), PutOptions{Policy: tc.policy, Size: -1})
		if !errors.Is(err, tc.want) {
			t.Errorf("put %q/%q policy %q: %v, want %v", tc.bucket, tc.key, tc.policy, err, tc.want)
		}
	}
	// Hostile keys are opaque: they are stored and read back, and never
	// reach a file name (shard files are named by version).
	for _, key := range []string{"../../x", "/", "a/../../b", strings.Repeat("é", 512), "\x00nul", "CON"} {
		data := []byte("payload for " + key)
		if _, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(data), PutOptions{Size: -1}); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("key %q read back wrong", key)
		}
	}
	e.shards.Mu.Lock()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range e.shards.Files {
			if !yield(k) {
				return
			}
		}
	})
	e.shards.Mu.Unlock()
	for _, n := range names {
		if strings.Contains(n, "..") || strings.Count(n, "/") != 2 {
			t.Fatalf("shard file name %q leaks the key", n)
		}
	}
}

func TestConcurrentPutsOneWinner(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	ctx := context.Background()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(randBytes(uint64(i), 3000)), PutOptions{Size: -1})
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := e.get(t, "k", 0, -1)
	found := false
	for i := range 8 {
		found = found || bytes.Equal(got, randBytes(uint64(i), 3000))
	}
	if !found {
		t.Fatal("the object is none of the writes")
	}
	if n := e.files(t); n != 3 { // 3000 bytes are a small object: rs-4-2 stores it as 3 replicas
		t.Fatalf("%d shard files after 8 overwrites, want 3", n)
	}
}

// Two of the K+δ shards a GET asks for hang: the engine hedges with the
// remaining shard instead of waiting.
func TestGetHedgesStragglers(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024, HedgeAfter: 20 * time.Millisecond})
	data := randBytes(6, 20_000)
	m, err := e.c.Put(context.Background(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	e.shards.Set(func() {
		e.shards.Slow[m.Shards[1].Disk] = time.Hour
		e.shards.Slow[m.Shards[2].Disk] = time.Hour
	})
	done := make(chan []byte)
	go func() { done <- e.get(t, "k", 0, -1) }()
	select {
	case got := <-done:
		if !bytes.Equal(got, data) {
			t.Fatal("wrong bytes")
		}
	case <-time.After(time.Minute):
		t.Fatal("GET waited for stragglers instead of hedging")
	}
}

// TestReusedStripeMemory: stripe buffers are pooled and not zeroed, so a
// small or ragged object written after a large one must not carry the old
// object's bytes into its padding: the same bytes give the same shards.
func TestReusedStripeMemory(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 256 << 10})
	ctx := context.Background()
	small := randBytes(9, 900<<10) // one short stripe
	ragged := randBytes(10, 1<<20+5)
	put := func(key string, data []byte) *cairn.Manifest {
		t.Helper()
		m, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(data), PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("%s: read back %d bytes, differing", key, len(got))
		}
		return m
	}
	first := []*cairn.Manifest{put("small-1", small), put("ragged-1", ragged)}
	for i := range 3 { // dirty every pooled buffer with other bytes
		put(fmt.Sprintf("big-%d", i), randBytes(uint64(20+i), 5<<20+int(i)))
	}
	again := []*cairn.Manifest{put("small-2", small), put("ragged-2", ragged)}
	for i := range first {
		for j, s := range first[i].Shards {
			if again[i].Shards[j].CRC != s.CRC || again[i].Shards[j].Size != s.Size {
				t.Fatalf("object %d shard %d: %+v after reuse, %+v before", i, j, again[i].Shards[j], s)
			}
		}
	}
}

// TestPutAvoidsLostDisks: shards meant for a disk that is down or suspect,
// or whose node reports a fault, go to a writable disk outside the stripe, on an unused node when there
// is one, and the manifest says where.
func TestPutAvoidsLostDisks(t *testing.T) {
	e := newEnv(t, 9, 1, "rs-4-2", Config{BlockSize: 4096})
	ctx := context.Background()
	if err := e.meta.SetDiskState(ctx, "node2/disk1", cairn.DiskDown, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := e.meta.SetDiskState(ctx, "node5/disk1", cairn.DiskSuspect, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	// Up as far as the director knows, but its node reports a fault.
	if err := e.meta.PutDisk(ctx, cairn.Disk{ID: "node7/disk1", Node: "node7", Capacity: 1 << 40, State: cairn.DiskUp,
		Fault: "volume node7/disk1: stat shards: no such file or directory"}); err != nil {
		t.Fatal(err)
	}
	e.shards.Set(func() {
		// node7/disk1 would take writes: only its reported fault keeps
		// shards off it.
		e.shards.FailPut = map[cairn.DiskID]error{"node2/disk1": cairn.ErrUnavailable, "node5/disk1": cairn.ErrUnavailable}
	})
	for i := range 20 {
		data := randBytes(uint64(i), 10000+i)
		key := fmt.Sprintf("k%d", i)
		m, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(data), PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		nodes := map[string]bool{}
		for _, s := range m.Shards {
			if s.Disk == "node2/disk1" || s.Disk == "node5/disk1" || s.Disk == "node7/disk1" {
				t.Fatalf("%s: shard on a lost disk: %+v", key, m.Shards)
			}
			n := strings.Split(string(s.Disk), "/")[0]
			if nodes[n] {
				t.Fatalf("%s: two shards on %s although free nodes exist: %+v", key, n, m.Shards)
			}
			nodes[n] = true
		}
		if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("%s read back differently", key)
		}
	}
}

// slotOf returns the manifest slot on disk, or -1.
func slotOf(m *cairn.Manifest, disk cairn.DiskID) int {
	return slices.IndexFunc(m.Shards, func(s cairn.ShardLoc) bool { return s.Disk == disk })
}

// TestPutReplacesSlowShard: a shard stream that holds the PUT back is
// replaced by a spare parity row on a spare disk and cancelled; the
// manifest records the row, the slow disk keeps nothing, and the object
// reads back — also with one more shard lost, decoding with the spare row.
func TestPutReplacesSlowShard(t *testing.T) {
	e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 64 << 10})
	ctx := context.Background()
	data := randBytes(31, 4<<20+1000) // 16 stripes of 256 KiB and a last one of 1000 bytes: blocks of 250
	// The PG depends on the version: write until the slow disk is one of
	// the object's six.
	disks, _ := e.meta.Disks(ctx)
	slow := disks[2].ID
	e.shards.Set(func() { e.shards.SlowPut[slow] = 500 * time.Millisecond }) // 64 KiB per 500 ms: 16 blocks take 8 s
	var m *cairn.Manifest
	for i := 0; m == nil; i++ {
		if i == 40 {
			t.Fatal("the slow disk was never a primary of 40 objects")
		}
		start := time.Now()
		got, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if took > 4*time.Second {
			t.Fatalf("put took %v: it waited for the slow disk", took)
		}
		for j, s := range got.Shards {
			if s.Row != 0 {
				t.Logf("put %d took %v; slot %d holds spare row %d on %s", i, took, j, s.Row, s.Disk)
				m = got
			}
		}
	}
	if slotOf(m, slow) >= 0 {
		t.Fatalf("the slow disk is in the manifest: %+v", m.Shards)
	}
	e.shards.Set(func() { // the cancelled stream's file was deleted before the PUT returned
		for name := range e.shards.Files {
			if strings.HasPrefix(name, string(slow)+"/"+m.Version) {
				t.Errorf("the slow disk kept %s", name)
			}
		}
	})
	if got := e.get(t, m.Key, 0, -1); !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	// Stats (the metrics' source) saw the spare row and the slow stream
	// cancelled.
	st := e.c.Stats()
	if st.SpareRows == 0 || st.Writes.Cancelled == 0 || st.Writes.Hedged < st.SpareRows || st.Writes.Succeeded < 6 {
		t.Fatalf("stats after a put with a spare row: %+v", st)
	}
	decodes := st.Decodes
	// Lose a data shard too: the read decodes with the spare row.
	spare := slices.IndexFunc(m.Shards, func(s cairn.ShardLoc) bool { return s.Row != 0 })
	lose := (spare + 1) % 4
	e.shards.Set(func() { e.shards.FailGet[m.Shards[lose].Disk] = cairn.ErrUnavailable })
	if got := e.get(t, m.Key, 0, -1); !bytes.Equal(got, data) {
		t.Fatal("read back with a lost shard differs")
	}
	if st := e.c.Stats(); st.Decodes == decodes || st.DecodeTime <= 0 {
		t.Fatalf("a read around a lost data shard counted no decode: %+v", st)
	}
	if got := e.get(t, m.Key, 300_000, 1_000_000); !bytes.Equal(got, data[300_000:1_300_000]) {
		t.Fatal("range read back differs")
	}
}

// TestPutReplacesFailedShard: a disk that refuses the write is replaced by
// a spare, and the PUT succeeds with full redundancy.
func TestPutReplacesFailedShard(t *testing.T) {
	e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 4096})
	ctx := context.Background()
	disks, _ := e.meta.Disks(ctx)
	bad := disks[5].ID
	e.shards.Set(func() { e.shards.FailPut[bad] = fmt.Errorf("write: %w", cairn.ErrNoSpace) })
	for i := range 10 {
		data := randBytes(uint64(40+i), 50_000)
		m, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: -1})
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if slotOf(m, bad) >= 0 {
			t.Fatalf("the failing disk is in the manifest: %+v", m.Shards)
		}
		if len(m.Shards) != 6 || slices.ContainsFunc(m.Shards, func(s cairn.ShardLoc) bool { return s.Disk == "" }) {
			t.Fatalf("manifest lacks a shard: %+v", m.Shards)
		}
		if got := e.get(t, m.Key, 0, -1); !bytes.Equal(got, data) {
			t.Fatal("read back differs")
		}
	}
}

// TestPutPastSpareWindowWaits: once the stripes a spare would need are
// gone (the spare window is one stripe here), a slow stream is waited for;
// the PUT is still complete and correct, with no spare row.
func TestPutPastSpareWindowWaits(t *testing.T) {
	e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 4096, SpareWindow: 16 << 10, StreamWait: 10 * time.Millisecond})
	ctx := context.Background()
	disks, _ := e.meta.Disks(ctx)
	slow := disks[1].ID
	e.shards.Set(func() { e.shards.SlowPut[slow] = 20 * time.Millisecond }) // 512 KiB shards: 160 ms
	data := randBytes(50, 2<<20)
	for i := 0; ; i++ {
		if i == 40 {
			t.Fatal("the slow disk was never a primary of 40 objects")
		}
		start := time.Now()
		m, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		for _, s := range m.Shards {
			if s.Row != 0 {
				t.Fatalf("a spare row after the spare window: %+v", m.Shards)
			}
		}
		if got := e.get(t, m.Key, 0, -1); !bytes.Equal(got, data) {
			t.Fatal("read back differs")
		}
		if slotOf(m, slow) >= 0 {
			if took < 160*time.Millisecond {
				t.Fatalf("put took %v, less than the slow disk needs: it did not wait for it", took)
			}
			return
		}
	}
}

// The policy's read mode decides how many shards a GET asks for at
// first: K+δ from the client by default, "read=k+N", or "read=all"
// (every shard, RobuSTore mode). With nothing slow, a read that asks for
// K data shards decodes nothing and touches no parity disk.
func TestPolicyReadModes(t *testing.T) {
	for _, c := range []struct {
		policy string
		disks  int // disks a healthy one-window GET touches
	}{{"rs-4-2", 5}, {"rs-4-2/read=k+0", 4}, {"rs-4-2/read=k+2", 6}, {"rs-4-2/read=all", 6}} {
		t.Run(c.policy, func(t *testing.T) {
			e := newEnv(t, 6, 1, c.policy, Config{BlockSize: 4096})
			data := randBytes(3, 4*4096*3)
			m, err := e.c.Put(context.Background(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1})
			if err != nil {
				t.Fatal(err)
			}
			if m.Policy != c.policy {
				t.Fatalf("manifest policy %q", m.Policy)
			}
			// Make every request slow enough that none finishes before all
			// the first ones are sent.
			e.shards.Set(func() {
				e.shards.Gets = map[cairn.DiskID]int{}
				for _, s := range m.Shards {
					e.shards.Slow[s.Disk] = 20 * time.Millisecond
				}
			})
			if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
				t.Fatal("read back differs")
			}
			e.shards.Set(func() {
				if len(e.shards.Gets) != c.disks {
					t.Errorf("the GET asked %d disks, want %d: %v", len(e.shards.Gets), c.disks, e.shards.Gets)
				}
			})
		})
	}
}

// Spare disks cost nothing when no stream straggles or fails: a healthy
// rs-4-2 PUT on 8 disks (2 spares) stores exactly its 6 shards and sends
// exactly their bytes.
func TestSparesUnusedWhenHealthy(t *testing.T) {
	e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 4096})
	data := randBytes(12, 4*4096*5)
	m, err := e.c.Put(context.Background(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	e.shards.Set(func() {
		if n := len(e.shards.Files); n != 6 {
			t.Errorf("%d shard files, want 6", n)
		}
		if want := int64(6 * 5 * 4096); e.shards.PutBytes != want {
			t.Errorf("%d bytes stored, want %d", e.shards.PutBytes, want)
		}
	})
	for _, s := range m.Shards {
		if s.Row != 0 {
			t.Fatalf("a spare row without a straggler: %+v", m.Shards)
		}
	}
}

// countingCode counts the Encode and Reconstruct calls of a code.
type countingCode struct {
	codec.Code
	encodes, reconstructs int
}

func (c *countingCode) Encode(shards [][]byte) error { c.encodes++; return c.Code.Encode(shards) }
func (c *countingCode) Reconstruct(shards [][]byte, want []int) error {
	c.reconstructs++
	return c.Code.Reconstruct(shards, want)
}

// Config.Codes builds the codes PUT and GET use, once per policy: a PUT
// encodes every stripe with it and a GET around a lost data shard decodes
// with it.
func TestConfigCodes(t *testing.T) {
	var built []string
	codes := map[string]*countingCode{}
	cfg := Config{BlockSize: 4096, Spares: -1, ReadExtra: -1, Codes: func(policy string) (codec.Code, error) {
		built = append(built, policy)
		cd, err := all.New(policy)
		if err != nil {
			return nil, err
		}
		codes[policy] = &countingCode{Code: cd}
		return codes[policy], nil
	}}
	e := newEnv(t, 6, 1, "rs-4-2", cfg)
	ctx := context.Background()
	data := randBytes(1, 3*4*4096) // three full stripes
	m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	cc := codes["rs-4-2"]
	if cc == nil || cc.encodes != 3 {
		t.Fatalf("codes built %v; want rs-4-2 to encode 3 stripes, got %+v", built, cc)
	}
	if err := e.shards.DeleteShard(ctx, m.Shards[0].Disk, cairn.ShardName(m.Version, 0)); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, "k", 0, -1); !bytes.Equal(got, data) {
		t.Fatal("read back wrong")
	}
	if cc.reconstructs != 3 || !slices.Equal(built, []string{"rs-4-2"}) {
		t.Fatalf("built %v, %d reconstructs; want rs-4-2 once and 3 reconstructs", built, cc.reconstructs)
	}
	if _, err := New(e.meta, e.shards, Config{Codes: func(string) (codec.Code, error) { return nil, errors.New("no") }}).
		Put(ctx, "bkt", "k2", bytes.NewReader(data), PutOptions{Size: int64(len(data))}); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("a failing Codes: got %v, want ErrInvalid", err)
	}
}

// TestGetCatchesSubstitutedShardWithoutFooter: from a store that sends no
// footer (the in-memory fake), a whole-shard read compares the CRC of the
// bytes read with the manifest's, so a shard file replaced by the same
// shard of another object of the same size is read around and reported.
func TestGetCatchesSubstitutedShardWithoutFooter(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024, ReadExtra: -1})
	data := randBytes(3, 50_000)
	m, err := e.c.Put(context.Background(), "bkt", "a", bytes.NewReader(data), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.c.Put(context.Background(), "bkt", "b", bytes.NewReader(randBytes(4, 50_000)), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	name := cairn.ShardName(m.Version, 1)
	e.shards.Set(func() {
		e.shards.Files[string(m.Shards[1].Disk)+"/"+name] = e.shards.Files[string(other.Shards[1].Disk)+"/"+cairn.ShardName(other.Version, 1)]
	})
	if got := e.get(t, "a", 0, -1); !bytes.Equal(got, data) {
		t.Fatal("GET over a substituted shard returned wrong bytes")
	}
	if len(e.damage) != 1 || e.damage[0].Shard != 1 || e.damage[0].Name != name || !errors.Is(e.damage[0].Err, cairn.ErrCorrupt) {
		t.Fatalf("damage reported %+v, want shard 1 (%s) corrupt", e.damage, name)
	}
}

// checkIdentities checks that every file of m records an identity that m
// names on its disk with the file's size and CRC (cairn.Layout.Refers),
// of the length the manifest records, and no other file of m's versions
// exists.
func checkIdentities(t *testing.T, s *clienttest.MemShards, m *cairn.Manifest) {
	t.Helper()
	s.Mu.Lock()
	defer s.Mu.Unlock()
	check := func(version string, l cairn.Layout, file cairn.ShardFile, ident int) {
		b := s.Idents[string(file.Disk)+"/"+file.Name]
		id, err := cairn.DecodeIdentity(b)
		if err != nil || len(b) != ident {
			t.Fatalf("%s on %s: identity %q (%v), the manifest records %d bytes", file.Name, file.Disk, b, err, ident)
		}
		data := s.Files[string(file.Disk)+"/"+file.Name]
		if ref, detail := l.Refers(version, id, file.Disk, int64(len(data)), crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))); ref != cairn.Named {
			t.Fatalf("%s on %s: %v %s (identity %+v)", file.Name, file.Disk, ref, detail, id)
		}
		if id.Bucket != m.Bucket || id.Key != m.Key || id.Policy != m.Policy || id.Size != m.Size {
			t.Fatalf("%s on %s: identity %+v of manifest %s/%s %s size %d", file.Name, file.Disk, id, m.Bucket, m.Key, m.Policy, m.Size)
		}
	}
	for i, sh := range m.Shards {
		check(m.Version, m.Layout, cairn.ShardFile{Disk: sh.Disk, Name: cairn.ShardName(m.Version, cairn.RowOf(m.Shards, i))}, sh.Ident)
	}
	for _, st := range m.Coded {
		for _, b := range st.Blocks {
			check(m.Version, m.Layout, cairn.ShardFile{Disk: b.Disk, Name: cairn.ShardName(st.Version, b.ID)}, b.Ident)
		}
	}
}
