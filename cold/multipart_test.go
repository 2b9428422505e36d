package cold_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/cold"
	"cairn/meta"
)

// uploadParts uploads data to bucket/key in parts of the sizes given
// and completes the upload.
func uploadParts(t *testing.T, cl *client.Client, bucket, key string, data []byte, sizes []int, opts client.PutOptions) *cairn.Manifest {
	t.Helper()
	ctx := context.Background()
	u, err := cl.CreateUpload(ctx, bucket, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	var list []client.CompletePart
	off := 0
	for i, n := range sizes {
		p, err := cl.UploadPart(ctx, bucket, key, u.ID, i+1, bytes.NewReader(data[off:off+n]),
			client.PutOptions{Size: int64(n), SSE: opts.SSE})
		if err != nil {
			t.Fatalf("%s part %d: %v", key, i+1, err)
		}
		list = append(list, client.CompletePart{Number: p.Number, ETag: p.ETag})
		off += n
	}
	m, err := cl.CompleteUpload(ctx, bucket, key, u.ID, list)
	if err != nil {
		t.Fatalf("%s: complete: %v", key, err)
	}
	return m
}

// TestExportMultipart: an upload in parts to a cold policy completes
// staged (its parts stored with the staging policy, the object queued),
// and the export job moves it like a single-part object. The exported
// manifest keeps its parts' records (numbers, versions, sizes, ETags)
// with zero layouts and the object's ETag; it reads back whole and in
// ranges across part boundaries; the warm parts' files are queued for
// deletion. An upload sealed with SSE-C part by part is exported too, and
// reads through its parts' offsets in the cold object (docs/design/cold.md,
// "Multipart uploads"). A warm multipart object can be staged later
// (Stage, the lifecycle Transition's call) and is exported too.
func TestExportMultipart(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 9))
	e := newEnv(t)
	cl := client.New(e.store, e.nodes.Client, client.Config{BlockSize: 64 << 10, MinPartSize: 100 << 10})
	sizes := []int{150 << 10, 100<<10 + 1, 7}
	data := randBytes(rng, 250<<10+8)
	staged := uploadParts(t, cl, "bkt", "mp", data, sizes, client.PutOptions{})
	if staged.Cold != nil || staged.Policy != coldPolicy || staged.Code != "rep-3" || len(staged.Parts) != 3 {
		t.Fatalf("completed as policy %s code %s, %d parts, cold %v; want staged for %s with code rep-3", staged.Policy, staged.Code, len(staged.Parts), staged.Cold, coldPolicy)
	}
	for _, p := range staged.Parts {
		if len(p.Shards) != 3 || p.Code != "" {
			t.Fatalf("staged part %d: %d shards, code %q; want rep-3's 3 and none of its own", p.Number, len(p.Shards), p.Code)
		}
	}
	if q, _, err := e.store.ColdPage(ctx, "staged/", "", 10); err != nil || len(q) != 1 || q[0].Key != "staged/bkt/mp" {
		t.Fatalf("staging queue %v, %v; want the upload's object alone", q, err)
	}
	e.read(t, rng, "mp", data) // staged: from the warm parts

	encData := randBytes(rng, 250<<10+8)
	enc := uploadParts(t, cl, "bkt", "enc-mp", encData, sizes, client.PutOptions{SSE: &client.SSE{Scheme: cairn.SSEC, CustomerKey: customerKey}})
	if enc.Policy != coldPolicy || enc.Code != "rep-3" || enc.Cold != nil || enc.Encryption == nil {
		t.Fatalf("an SSE-C upload completed as policy %s code %s (cold %v); want it staged, encrypted", enc.Policy, enc.Code, enc.Cold)
	}
	e.read(t, rng, "enc-mp", encData)

	if err := e.store.CreateBucket(ctx, cairn.Bucket{Name: "warm", Policy: "rs-4-2", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	warmData := randBytes(rng, 250<<10+8)
	warm := uploadParts(t, cl, "warm", "wmp", warmData, sizes, client.PutOptions{})
	if err := cold.Stage(ctx, e.store, "warm", "wmp", coldPolicy, time.Now()); err != nil {
		t.Fatalf("staging a warm multipart object: %v", err)
	}
	if err := cold.Stage(ctx, e.store, "warm", "wmp", coldPolicy, time.Now()); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("staging it twice: %v; want ErrInvalid", err)
	}

	e.pass(t, "the export pass")
	for _, o := range []struct {
		bucket, key string
		before      *cairn.Manifest
		data        []byte
	}{{"bkt", "mp", staged, data}, {"warm", "wmp", warm, warmData}, {"bkt", "enc-mp", enc, encData}} {
		m, err := e.store.Manifest(ctx, o.bucket, o.key)
		if err != nil || m.Cold == nil {
			t.Fatalf("%s/%s not exported: %+v, %v", o.bucket, o.key, m, err)
		}
		if m.Version != o.before.Version || m.ETag != o.before.ETag || m.Size != o.before.Size || m.Upload != o.before.Upload || m.Code != "" {
			t.Fatalf("%s/%s exported as version %s ETag %s size %d upload %s code %q; was %s %s %d %s",
				o.bucket, o.key, m.Version, m.ETag, m.Size, m.Upload, m.Code, o.before.Version, o.before.ETag, o.before.Size, o.before.Upload)
		}
		if len(m.Parts) != len(o.before.Parts) {
			t.Fatalf("%s/%s: %d parts exported, %d staged", o.bucket, o.key, len(m.Parts), len(o.before.Parts))
		}
		for i, p := range m.Parts {
			b := o.before.Parts[i]
			if p.Number != b.Number || p.Version != b.Version || p.Size != b.Size || p.ETag != b.ETag || !p.Created.Equal(b.Created) || len(p.Shards) != 0 || p.BlockSize != 0 {
				t.Fatalf("%s/%s part %d exported as %+v; want its record %+v without a layout", o.bucket, o.key, b.Number, p, b)
			}
		}
		var key []byte
		if o.before.Encryption != nil {
			key = customerKey
			if !reflect.DeepEqual(m.Encryption, o.before.Encryption) {
				t.Fatalf("%s/%s: encryption %+v exported, %+v staged", o.bucket, o.key, m.Encryption, o.before.Encryption)
			}
		}
		if got := read(t, cl, o.bucket, o.key, key, 0, -1); !bytes.Equal(got, o.data) {
			t.Fatalf("%s/%s: %d bytes read after the export, differ", o.bucket, o.key, len(got))
		}
		// Ranges across both part boundaries, and inside the second part.
		for _, rg := range [][2]int64{{150<<10 - 3, 100<<10 + 6}, {150<<10 + 5000, 70000}, {250<<10 + 1, 7}} {
			if got := read(t, cl, o.bucket, o.key, key, rg[0], rg[1]); !bytes.Equal(got, o.data[rg[0]:rg[0]+rg[1]]) {
				t.Fatalf("%s/%s: range [%d, +%d) differs", o.bucket, o.key, rg[0], rg[1])
			}
		}
		// The warm parts' files are garbage now.
		want := o.before.Files()
		var queued []cairn.ShardFile
		cs, err := e.store.Cleanups(ctx, time.Now().Add(time.Hour), 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Bucket == o.bucket && c.Key == o.key {
				queued = append(queued, c.Files...)
			}
		}
		for _, f := range want {
			if !slices.Contains(queued, f) {
				t.Fatalf("%s/%s: staged part file %v is not queued for deletion (queued: %v)", o.bucket, o.key, f, queued)
			}
		}
	}
	// Without its key, the exported SSE-C object does not read.
	if _, _, err := cl.Get(ctx, "bkt", "enc-mp", 0, -1); err == nil {
		t.Fatal("the exported SSE-C object read without its key")
	}
}

// read returns bytes [off, off+n) of bucket/key (n < 0: to the end),
// with SSE-C key ck (nil: none).
func read(t *testing.T, cl *client.Client, bucket, key string, ck []byte, off, n int64) []byte {
	t.Helper()
	_, rc, err := cl.GetWith(context.Background(), bucket, key, off, n, client.GetOptions{CustomerKey: ck})
	if err != nil {
		t.Fatalf("get %s/%s [%d, +%d): %v", bucket, key, off, n, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("get %s/%s [%d, +%d): %v", bucket, key, off, n, err)
	}
	return b
}

// TestExportStreams: an object bigger than a batch (MaxBatchBytes) is
// read a piece at a time as the export writes it — never whole: each of
// the job's reads is one piece (at most the policy's largest chunk), and
// together they cover the object once. A piece that cannot be read ends
// that export like a failed write, undone at once: the object stays
// staged, counted unread, without failing the pass or holding up the
// group's next batch, and the next pass exports it. Objects within the bound are still read
// whole, in batches.
func TestExportStreams(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 11))
	e := newEnv(t)
	objs := map[string][]byte{}
	for key, n := range map[string]int{"big": 1<<20 + 12345, "bigger": 2<<20 + 1, "small": 5000, "mid": 60 << 10} {
		objs[key] = randBytes(rng, n)
		e.put(t, key, objs[key])
	}
	const batch, maxChunk = 64 << 10, 256 << 10
	type call struct{ off, n int64 }
	var mu sync.Mutex
	calls := map[string][]call{}
	fail := "bigger" // its first pass fails on a piece past its front
	ex := e.exporter(e.store, e.nodes.Client, func(cfg *cold.ExporterConfig) {
		fetch := cfg.Fetch
		cfg.MaxBatchBytes = batch
		cfg.Fetch = func(ctx context.Context, m *cairn.Manifest, off, n int64, w io.Writer) error {
			mu.Lock()
			calls[m.Key] = append(calls[m.Key], call{off, n})
			broken := m.Key == fail && off > 0
			mu.Unlock()
			if broken {
				return fmt.Errorf("%w: a piece of %s unreadable", cairn.ErrUnavailable, m.Key)
			}
			return fetch(ctx, m, off, n, w)
		}
	})
	st, err := ex.Run(ctx)
	if err != nil {
		t.Fatalf("the first pass: %v (a streamed object's unreadable piece must not fail it)", err)
	}
	if st.Exported != 3 || st.Unread != 1 {
		t.Fatalf("the first pass: %+v; want 3 exported, 1 unread", st)
	}
	if m, err := e.store.Manifest(ctx, "bkt", fail); err != nil || m.Cold != nil {
		t.Fatalf("%s after its failed export: %+v, %v; want it staged", fail, m, err)
	}
	mu.Lock()
	fail = ""
	for key, cs := range calls {
		size := int64(len(objs[key]))
		if size <= batch {
			if len(cs) != 1 || cs[0] != (call{0, size}) {
				t.Fatalf("%s (%d bytes, within a batch): reads %v; want one of the whole object", key, size, cs)
			}
			continue
		}
		if key == "bigger" {
			continue // its export failed part way
		}
		var sum int64
		for _, c := range cs {
			if c.n > maxChunk || c.n == size {
				t.Fatalf("%s (%d bytes): a read of [%d, +%d); want pieces of at most %d", key, size, c.off, c.n, maxChunk)
			}
			sum += c.n
		}
		if sum != size {
			t.Fatalf("%s (%d bytes): reads %v cover %d bytes", key, size, cs, sum)
		}
	}
	mu.Unlock()
	e.checkGroup(t, map[string][]byte{"big": objs["big"], "small": objs["small"], "mid": objs["mid"]}, false)
	if _, err := e.store.ColdGet(ctx, "intents/"+cold.GroupID(e.pol, 0)); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("the failed export's intent after the pass: %v; want it resolved at once", err)
	}
	if st, err := ex.Run(ctx); err != nil || st.Exported != 1 || st.Recovered != 0 {
		t.Fatalf("the second pass: %+v, %v; want %s exported, nothing left to recover", st, err, "bigger")
	}
	for key, data := range objs {
		if m, err := e.store.Manifest(ctx, "bkt", key); err != nil || m.Cold == nil {
			t.Fatalf("%s not exported: %v", key, err)
		}
		e.read(t, rng, key, data)
	}
	e.checkGroup(t, objs, true)
}

// TestRequeueLostRecord: two writers of a key race — both queue the key
// (one record per key) and the one whose manifest commits queued first,
// so the record names the loser's version, which never commits (two
// Completes of one upload, or two PUTs). Past the grace period the job
// points the record at the key's staged version instead of dropping it,
// and the next pass exports that version: the winner does not stay warm.
func TestRequeueLostRecord(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 12))
	e := newEnv(t)
	data := randBytes(rng, 100<<10)
	m := e.put(t, "k", data)
	lost := *m
	lost.Version = "ffffffffffffffffffffffffffffffff"
	op, err := cold.StageOp(&lost, time.Now().Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.ColdUpdate(ctx, []meta.ColdOp{op}); err != nil {
		t.Fatal(err)
	}
	e.pass(t, "the pass that finds the record")
	if got, err := e.store.Manifest(ctx, "bkt", "k"); err != nil || got.Cold != nil {
		t.Fatalf("k after the first pass: %+v, %v; want it still staged (its record is moved first)", got, err)
	}
	q, _, err := e.store.ColdPage(ctx, "staged/", "", 10)
	if err != nil || len(q) != 1 || !strings.Contains(string(q[0].Value), m.Version) {
		t.Fatalf("the queue after the first pass: %v, %v; want k's record naming %s", q, err, m.Version)
	}
	e.pass(t, "the pass that exports it")
	if got, err := e.store.Manifest(ctx, "bkt", "k"); err != nil || got.Cold == nil || got.Version != m.Version {
		t.Fatalf("k after the second pass: %+v, %v; want version %s exported", got, err, m.Version)
	}
	e.read(t, rng, "k", data)
}

// TestExportMaxChunks: an object of more chunks than MaxChunks stays in
// the warm tier — its records, a slot per chunk, must fit one metadata
// value — and its queue record goes; one within the bound is exported.
func TestExportMaxChunks(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 13))
	e := newEnv(t)
	few, many := randBytes(rng, 3*32<<10), randBytes(rng, 40*32<<10)
	if n := e.pol.Partition(int64(len(few))).NumChunks(); n > 4 {
		t.Fatalf("the small object has %d chunks", n)
	}
	if n := e.pol.Partition(int64(len(many))).NumChunks(); n <= 4 {
		t.Fatalf("the big object has %d chunks", n)
	}
	e.put(t, "few", few)
	e.put(t, "many", many)
	ex := e.exporter(e.store, e.nodes.Client, func(cfg *cold.ExporterConfig) { cfg.MaxChunks = 4 })
	if st, err := ex.Run(ctx); err != nil || st.Exported != 1 {
		t.Fatalf("the pass: %+v, %v; want one object exported", st, err)
	}
	if m, err := e.store.Manifest(ctx, "bkt", "few"); err != nil || m.Cold == nil {
		t.Fatalf("few: %+v, %v; want it exported", m, err)
	}
	if m, err := e.store.Manifest(ctx, "bkt", "many"); err != nil || m.Cold != nil {
		t.Fatalf("many: %+v, %v; want it staged still (warm)", m, err)
	}
	if q, _, err := e.store.ColdPage(ctx, "staged/", "", 10); err != nil || len(q) != 0 {
		t.Fatalf("the queue after the pass: %v, %v; want it empty", q, err)
	}
	e.read(t, rng, "many", many)
}
