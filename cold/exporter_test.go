package cold_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/cold"
	"cairn/layout/gp"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/etcd/etcdtest"
	"cairn/node/nodetest"
	"cairn/node/wire"
)

// coldPolicy is the tests' cold tier: clay-4-2-5 (α = 8, so s0 is a
// multiple of 32 KiB), chunks from 32 KiB to 256 KiB.
const coldPolicy = "clay-4-2-5/gp=32KiB:2:256KiB"

// env is a cluster for the export job: a real etcd, six node servers
// (the cold group's disks, also the warm tier's) and a library client.
type env struct {
	store *etcdmeta.Store
	nodes *nodetest.Nodes
	disks []cairn.DiskID
	cl    *client.Client
	pol   gp.Policy
	log   *slog.Logger // the export job's (nil: none)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	store := etcdtest.Store(t, etcdmeta.Options{})
	e := &env{store: store, nodes: nodetest.New()}
	for i := range 6 {
		id := fmt.Sprintf("n%d", i+1)
		d := e.nodes.Start(t, id)
		e.disks = append(e.disks, d)
		if err := store.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := store.PutDisk(ctx, cairn.Disk{ID: d, Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if e.pol, err = gp.ParsePolicy(coldPolicy); err != nil {
		t.Fatal(err)
	}
	e.cl = client.New(store, e.nodes.Client, client.Config{BlockSize: 64 << 10})
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: coldPolicy, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return e
}

// exporter returns an export job over the env's one group, writing
// through nodes and keeping its state in m; opts change its config.
func (e *env) exporter(m cold.Meta, nodes cold.Disks, opts ...func(*cold.ExporterConfig)) *cold.Exporter {
	cfg := cold.ExporterConfig{
		Meta: m, Nodes: nodes, Policy: e.pol, Groups: 1,
		GroupDisks: func(context.Context, int) ([]cairn.DiskID, error) { return e.disks, nil },
		Fetch: func(ctx context.Context, m *cairn.Manifest, off, n int64, w io.Writer) error {
			rc, err := e.cl.OpenStored(ctx, m, off, n)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(w, rc)
			return err
		},
		MaxBatch: 4,
		Log:      e.log,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cold.NewExporter(cfg)
}

func (e *env) put(t *testing.T, key string, data []byte) *cairn.Manifest {
	t.Helper()
	m, err := e.cl.Put(context.Background(), "bkt", key, bytes.NewReader(data), client.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// read checks that key reads back as data, whole and in a range.
func (e *env) read(t *testing.T, rng *rand.Rand, key string, data []byte) {
	t.Helper()
	var opts client.GetOptions
	if strings.HasPrefix(key, "enc") {
		opts.CustomerKey = customerKey
	}
	get := func(off, n int64) []byte {
		_, rc, err := e.cl.GetWith(context.Background(), "bkt", key, off, n, opts)
		if err != nil {
			t.Fatalf("get %s [%d, +%d): %v", key, off, n, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatalf("get %s [%d, +%d): %v", key, off, n, err)
		}
		return b
	}
	if got := get(0, -1); !bytes.Equal(got, data) {
		t.Fatalf("%s: %d bytes read, %d stored, differ", key, len(got), len(data))
	}
	if len(data) > 0 {
		off := rng.Int64N(int64(len(data)))
		n := 1 + rng.Int64N(int64(len(data))-off)
		if got := get(off, n); !bytes.Equal(got, data[off:off+n]) {
			t.Fatalf("%s: range [%d, +%d) differs", key, off, n)
		}
	}
}

// group loads the state of the env's one cold group.
func (e *env) group(t *testing.T) *cold.State {
	t.Helper()
	st, err := cold.LoadState(context.Background(), e.store, cold.GroupID(e.pol, 0), e.nodes.Client)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// record returns the cold record of exported object key in group st.
func (e *env) record(t *testing.T, st *cold.State, key string) gp.Record {
	t.Helper()
	m, err := e.store.Manifest(context.Background(), "bkt", key)
	if err != nil || m.Cold == nil {
		t.Fatalf("%s not exported: %v", key, err)
	}
	r, err := gp.DecodeRecord(m.Cold.Record, st.PG.Geo)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newExported returns an env holding n objects k<i> of min to max−1
// bytes (drawn from rng, recorded in the map it returns), all exported.
func newExported(t *testing.T, rng *rand.Rand, n, min, max int) (*env, map[string][]byte) {
	t.Helper()
	e := newEnv(t)
	objs := map[string][]byte{}
	e.putRandom(t, rng, objs, n, min, max)
	for range (n + 3) / 4 { // MaxBatch 4
		e.pass(t, "an export pass")
	}
	return e, objs
}

// pass runs one whole pass of the export job, which must succeed; what
// says which pass, for the failure.
func (e *env) pass(t *testing.T, what string) {
	t.Helper()
	if _, err := e.exporter(e.store, e.nodes.Client).Run(context.Background()); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// putRandom PUTs n new objects k<i> of min to max−1 bytes and records
// them in objs.
func (e *env) putRandom(t *testing.T, rng *rand.Rand, objs map[string][]byte, n, min, max int) {
	t.Helper()
	for range n {
		key := fmt.Sprintf("k%d", len(objs))
		objs[key] = randBytes(rng, min+rng.IntN(max-min))
		e.put(t, key, objs[key])
	}
}

// lose stops the node serving disk and marks the disk down: a disk lost.
func (e *env) lose(t *testing.T, disk cairn.DiskID) {
	t.Helper()
	e.nodes.Stop(disk)
	if err := e.store.SetDiskState(context.Background(), disk, cairn.DiskDown, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// spare starts node name with one disk, up in the cluster map (a spare to
// rebuild onto), and returns the disk.
func (e *env) spare(t *testing.T, name string) cairn.DiskID {
	t.Helper()
	ctx := context.Background()
	disk := e.nodes.Start(t, name)
	if err := e.store.PutNode(ctx, cairn.Node{ID: cairn.NodeID(name), Addr: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.PutDisk(ctx, cairn.Disk{ID: disk, Node: cairn.NodeID(name), Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
		t.Fatal(err)
	}
	return disk
}

// readWithout stops the disks at the given positions of the group and
// reads every object, each of which must be exported, through a fresh
// client (no cached group): the rows decode without them.
func (e *env) readWithout(t *testing.T, rng *rand.Rand, objs map[string][]byte, positions ...int) {
	t.Helper()
	ctx := context.Background()
	st := e.group(t)
	for _, p := range positions {
		e.nodes.Stop(st.Disks[p])
	}
	e.cl = client.New(e.store, e.nodes.Client, client.Config{BlockSize: 64 << 10})
	for key, data := range objs {
		if m, err := e.store.Manifest(ctx, "bkt", key); err != nil || m.Cold == nil {
			t.Fatalf("%s not exported: %v", key, err)
		}
		e.read(t, rng, key, data)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// checkGroup checks the stored group against the committed cold
// manifests: no slot is held by two objects or is both held and free,
// and each data disk's Used is the bytes of its objects (strict; else at
// least those: a crash may have stopped the sweep that frees the slots
// of overwritten ones).
func (e *env) checkGroup(t *testing.T, objs map[string][]byte, strict bool) {
	t.Helper()
	ctx := context.Background()
	st, err := cold.LoadState(ctx, e.store, cold.GroupID(e.pol, 0), e.nodes.Client)
	if errors.Is(err, cairn.ErrNotFound) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	type slot struct{ disk, level, slot int }
	held := map[slot]string{}
	used := make([]int64, st.PG.K)
	for key := range objs {
		m, err := e.store.Manifest(ctx, "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		if m.Cold == nil {
			continue
		}
		r, err := gp.DecodeRecord(m.Cold.Record, st.PG.Geo)
		if err != nil {
			t.Fatal(err)
		}
		used[r.Disk] += r.Size
		n := 0
		for _, c := range st.PG.Geo.Partition(r.Size).Chunks(st.PG.Geo) {
			if c.Level < 0 {
				continue
			}
			s := slot{r.Disk, c.Level, int(r.Slots[n])}
			n++
			if other, ok := held[s]; ok {
				t.Fatalf("slot %+v held by %s and %s", s, other, key)
			}
			held[s] = key
		}
	}
	// An interrupted export's intent still holds its batch's slots.
	_, err = e.store.ColdGet(ctx, "intents/"+st.ID)
	pending := err == nil
	for d, disk := range st.PG.Disks {
		if !pending && (disk.Used < used[d] || strict && disk.Used != used[d]) {
			t.Fatalf("disk %d: Used %d, its objects hold %d", d, disk.Used, used[d])
		}
		for l, b := range disk.Buckets {
			for _, f := range b.Free {
				if k, ok := held[slot{d, l, int(f)}]; ok {
					t.Fatalf("slot %d/%d/%d is free and held by %s", d, l, f, k)
				}
			}
			if b.Used() < 0 {
				t.Fatalf("disk %d level %d: %d slots used", d, l, b.Used())
			}
		}
	}
	var ms []*cairn.Manifest
	for key := range objs {
		m, err := e.store.Manifest(ctx, "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if err := cold.Check(ctx, e.store, st.ID, ms); err != nil {
		t.Fatal(err)
	}
}

// TestExportJob: objects of 0 bytes to 2 MiB PUT to a cold bucket are
// staged (warm copies), the job exports them, and they read back
// byte-exact through the client, whole and in ranges, with every disk
// and with a stopped disk of the group; an object overwritten and one
// deleted while the job reads the batch keep the newer write, and their
// exported copies' slots are freed.
func TestExportJob(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 2))
	e := newEnv(t)
	objs := map[string][]byte{}
	for i, n := range []int{0, 1, 5000, 32 << 10, 100 << 10, 1<<20 + 3, 2 << 20, 700 << 10} {
		key := fmt.Sprintf("k%d", i)
		objs[key] = randBytes(rng, n)
		m := e.put(t, key, objs[key])
		if m.Cold != nil || m.Policy != coldPolicy || m.Code != "rep-3" {
			t.Fatalf("%s staged as policy %s code %s cold %v", key, m.Policy, m.Code, m.Cold)
		}
	}
	// An SSE-C object: its ciphertext is exported, and reads decrypt it.
	objs["enc"] = randBytes(rng, 300<<10)
	if _, err := e.cl.Put(ctx, "bkt", "enc", bytes.NewReader(objs["enc"]), client.PutOptions{Size: -1,
		SSE: &client.SSE{Scheme: cairn.SSEC, CustomerKey: customerKey}}); err != nil {
		t.Fatal(err)
	}
	e.read(t, rng, "k3", objs["k3"]) // staged: read from the warm copy
	// While the job reads its first batch, k1 is overwritten, k2
	// deleted and k3's tags change.
	// k4's warm copy cannot be read in the first pass: it stays staged
	// and does not hold up its batch.
	var raced, unread atomic.Bool
	ex := e.exporter(e.store, e.nodes.Client)
	fetch := cold.ExporterFetch(ex)
	cold.SetExporterFetch(ex, func(ctx context.Context, m *cairn.Manifest, off, n int64, w io.Writer) error {
		if m.Key == "k4" && !unread.Swap(true) {
			return fmt.Errorf("%w: k4 unreadable", cairn.ErrUnavailable)
		}
		if !raced.Swap(true) {
			objs["k1"] = randBytes(rng, 3000)
			e.put(t, "k1", objs["k1"])
			if err := e.cl.Delete(ctx, "bkt", "k2"); err != nil {
				t.Fatal(err)
			}
			delete(objs, "k2")
			// k3 is updated in place (its tags): the same version and
			// bytes, so its copy is committed against the new form.
			m3, err := e.store.Manifest(ctx, "bkt", "k3")
			if err != nil {
				t.Fatal(err)
			}
			tagged := *m3
			tagged.Tags = map[string]string{"t": "1"}
			if err := e.store.UpdateManifest(ctx, &tagged, m3); err != nil {
				t.Fatal(err)
			}
		}
		return fetch(ctx, m, off, n, w)
	})
	st, err := ex.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lost != 2 || st.Unread != 1 || st.Exported != int64(len(objs))-2 {
		t.Fatalf("first pass: %+v (want the copies of k1 and k2 lost, k4 unread, the others exported)", st)
	}
	if m3, err := e.store.Manifest(ctx, "bkt", "k3"); err != nil || m3.Cold == nil || m3.Tags["t"] != "1" {
		t.Fatalf("k3 after the first pass: %+v, %v (want exported with its new tags)", m3, err)
	}
	// k1's new version is staged again, and k4 still: a second pass
	// exports them.
	if _, err := ex.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for key, data := range objs {
		m, err := e.store.Manifest(ctx, "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		if m.Cold == nil {
			t.Fatalf("%s not exported: %+v", key, m)
		}
		e.read(t, rng, key, data)
	}
	e.checkGroup(t, objs, true)
	p, err := cold.ReadProgress(ctx, e.store)
	if err != nil || p.Passes != 2 || p.Exported < int64(len(objs)) || p.Lost != st.Lost {
		t.Fatalf("progress %+v, %v", p, err)
	}
	// Deleting a cold object and overwriting another: the sweep frees
	// the slots of both old versions, and the new one is exported.
	if err := e.cl.Delete(ctx, "bkt", "k6"); err != nil {
		t.Fatal(err)
	}
	delete(objs, "k6")
	objs["k7"] = randBytes(rng, 200<<10)
	e.put(t, "k7", objs["k7"])
	st, err = ex.Run(ctx)
	if err != nil || st.Released != 2 || st.Exported != 1 {
		t.Fatalf("pass after a delete and an overwrite: %+v, %v", st, err)
	}
	e.checkGroup(t, objs, true)
	for key, data := range objs {
		e.read(t, rng, key, data)
	}
	// A stopped disk of the group: every object still reads (degraded
	// when it was on that disk).
	e.nodes.Stop(e.disks[1])
	for key, data := range objs {
		e.read(t, rng, key, data)
	}
}

// customerKey is the SSE-C key of the tests' encrypted objects (keys
// "enc…").
var customerKey = bytes.Repeat([]byte{0x5a}, 32)

// failingNodes fails every PutShard after the first n, as a crash in the
// middle of an export would stop its writes.
type failingNodes struct {
	cold.Disks
	left atomic.Int64
}

var errCrash = errors.New("crash")

func (f *failingNodes) PutShard(ctx context.Context, d cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error) {
	if f.left.Add(-1) < 0 {
		return wire.ShardInfo{}, errCrash
	}
	return f.Disks.PutShard(ctx, d, name, r)
}

// failingMeta fails every ColdUpdate and UpdateManifest after the first
// n, as a crash between an export's commits would.
type failingMeta struct {
	cold.Meta
	left atomic.Int64
}

func (f *failingMeta) ColdUpdate(ctx context.Context, ops []meta.ColdOp) error {
	if f.left.Add(-1) < 0 {
		return errCrash
	}
	return f.Meta.ColdUpdate(ctx, ops)
}

func (f *failingMeta) UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error {
	if f.left.Add(-1) < 0 {
		return errCrash
	}
	return f.Meta.UpdateManifest(ctx, m, prev)
}

// stoppedPass runs one pass of the export job that stops, as a crash
// would, after a random number (below nodeWrites) of shard writes when
// onNodes, else of metadata writes (below metaWrites).
func (e *env) stoppedPass(t *testing.T, rng *rand.Rand, round int, onNodes bool, nodeWrites, metaWrites int) {
	t.Helper()
	var ex *cold.Exporter
	if onNodes {
		fn := &failingNodes{Disks: e.nodes.Client}
		fn.left.Store(int64(rng.IntN(nodeWrites)))
		ex = e.exporter(e.store, fn)
	} else {
		fm := &failingMeta{Meta: e.store}
		fm.left.Store(int64(rng.IntN(metaWrites)))
		ex = e.exporter(fm, e.nodes.Client)
	}
	if _, err := ex.Run(context.Background()); err != nil && !errors.Is(err, errCrash) {
		t.Fatalf("round %d: %v", round, err)
	}
}

// TestExportCrash stops exports at every point — after n shard writes,
// or after n metadata writes — and then runs a whole job: every object
// reads back byte-exact (never lost, never visible twice: one manifest per
// key), the group's slots are consistent with the committed records, and
// rows re-encoded by the recovery decode with a disk lost.
func TestExportCrash(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 3))
	e := newEnv(t)
	objs := map[string][]byte{}
	next := 0
	rounds := crashRounds(t, 24)
	for round := range rounds {
		for range 3 {
			key := fmt.Sprintf("k%d", next)
			next++
			objs[key] = randBytes(rng, rng.IntN(600<<10))
			e.put(t, key, objs[key])
		}
		if round%3 == 2 {
			// Deleting a cold object (its slots stay claimed: no release
			// on delete yet) and overwriting one keep the job honest.
			for key := range objs {
				objs[key] = randBytes(rng, rng.IntN(300<<10))
				e.put(t, key, objs[key])
				break
			}
		}
		e.stoppedPass(t, rng, round, round%2 == 0, 12, 8)
		for key, data := range objs {
			e.read(t, rng, key, data) // staged or cold, whichever committed
		}
		e.checkGroup(t, objs, false)
	}
	// A whole job recovers what the crashes left and exports the rest.
	st, err := e.exporter(e.store, e.nodes.Client).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("last pass: %+v", st)
	for key, data := range objs {
		m, err := e.store.Manifest(ctx, "bkt", key)
		if err != nil || m.Cold == nil {
			t.Fatalf("%s not exported: %v", key, err)
		}
		e.read(t, rng, key, data)
	}
	e.checkGroup(t, objs, true)
	if _, err := e.store.ColdGet(ctx, "intents/"+cold.GroupID(e.pol, 0)); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("an intent is left: %v", err)
	}
	// The rows the crashes left half-written were re-encoded: lose a
	// data disk and a parity disk and read everything.
	e.nodes.Stop(e.disks[0])
	e.nodes.Stop(e.disks[5])
	for key, data := range objs {
		e.read(t, rng, key, data)
	}
}

// TestRebuildLostDisk: when the cluster map holds a disk of a group lost,
// the export job rebuilds it onto a spare disk outside the group and puts
// the spare in its place; every object then reads normally, and with
// another disk of the group gone too; exports go on into the group.
func TestRebuildLostDisk(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 5))
	e := newEnv(t)
	objs := map[string][]byte{}
	put := func(n int) { e.putRandom(t, rng, objs, n, 0, 700<<10) }
	put(10)
	ex := e.exporter(e.store, e.nodes.Client)
	if _, err := ex.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// Disk 2 of the group is lost; a seventh node joins.
	e.lose(t, e.disks[2])
	spare := e.spare(t, "n7")
	put(3) // staged while the group is being rebuilt
	st, err := ex.Run(ctx)
	if err != nil || st.Rebuilt != 1 {
		t.Fatalf("pass with a lost disk: %+v, %v", st, err)
	}
	g, err := cold.LoadState(ctx, e.store, cold.GroupID(e.pol, 0), e.nodes.Client)
	if err != nil || g.Disks[2] != spare {
		t.Fatalf("group disks %v after the rebuild (want %s at 2), %v", g.Disks, spare, err)
	}
	e.checkGroup(t, objs, true)
	// A fresh client (no cached group) reads everything, then with disk 0
	// gone too.
	e.cl = client.New(e.store, e.nodes.Client, client.Config{BlockSize: 64 << 10})
	for key, data := range objs {
		if m, err := e.store.Manifest(ctx, "bkt", key); err != nil || m.Cold == nil {
			t.Fatalf("%s not exported after the rebuild: %v", key, err)
		}
		e.read(t, rng, key, data)
	}
	e.nodes.Stop(e.disks[0])
	for key, data := range objs {
		e.read(t, rng, key, data)
	}
}

// TestCheckFindsInconsistency: cold.Check passes on a group the job
// exported into, and reports a membership record deleted behind the job's
// back (its manifest's slots then look free to the next export) and a
// freed slot that a manifest still names.
func TestCheckFindsInconsistency(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 7))
	e := newEnv(t)
	for i := range 4 {
		e.put(t, fmt.Sprintf("k%d", i), randBytes(rng, 200<<10+rng.IntN(400<<10)))
	}
	if _, err := e.exporter(e.store, e.nodes.Client).Run(ctx); err != nil {
		t.Fatal(err)
	}
	id := cold.GroupID(e.pol, 0)
	m, err := e.store.Manifest(ctx, "bkt", "k1")
	if err != nil || m.Cold == nil {
		t.Fatalf("k1 not exported: %v", err)
	}
	if err := cold.Check(ctx, e.store, id, []*cairn.Manifest{m}); err != nil {
		t.Fatalf("a consistent group: %v", err)
	}
	key := "members/" + id + "/" + m.Version
	if err := e.store.ColdUpdate(ctx, []meta.ColdOp{{Key: key}}); err != nil {
		t.Fatal(err)
	}
	err = cold.Check(ctx, e.store, id, []*cairn.Manifest{m})
	if !errors.Is(err, cold.ErrInconsistent) || !strings.Contains(err.Error(), "has no membership record") || !strings.Contains(err.Error(), "leaked") {
		t.Fatalf("a deleted membership record: %v", err)
	}
	t.Logf("reported: %v", err)
	// The slots of k1 released (the record comes back): they are free
	// while its manifest names them.
	st, err := cold.LoadState(ctx, e.store, id, e.nodes.Client)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gp.DecodeRecord(m.Cold.Record, st.PG.Geo)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PG.Release(r); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(ctx, e.store); err != nil {
		t.Fatal(err)
	}
	err = cold.Check(ctx, e.store, id, []*cairn.Manifest{m})
	if !errors.Is(err, cold.ErrInconsistent) || !strings.Contains(err.Error(), "is free") && !strings.Contains(err.Error(), "no membership record") {
		t.Fatalf("freed slots of a committed object: %v", err)
	}
}

// TestExportUsage: the bucket's and the code's usage counters stay right
// across staging, export and delete: staged objects count their warm
// shards, exported ones their bytes times (K+M)/K (cairn.ColdStored), and a
// deleted one nothing.
func TestExportUsage(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 9))
	e := newEnv(t)
	var staged cairn.Tally
	sizes := []int{0, 5000, 300 << 10, 900<<10 + 3}
	for i, n := range sizes {
		m := e.put(t, fmt.Sprintf("k%d", i), randBytes(rng, n))
		staged = staged.Add(m.Tally())
	}
	if u, err := e.store.BucketUsage(ctx, "bkt"); err != nil || u != staged || u.Stored < 3*u.Logical {
		t.Fatalf("staged: usage %+v, want %+v (rep-3 copies), %v", u, staged, err)
	}
	if _, err := e.exporter(e.store, e.nodes.Client).Run(ctx); err != nil {
		t.Fatal(err)
	}
	var exported cairn.Tally
	for i, n := range sizes {
		if m, err := e.store.Manifest(ctx, "bkt", fmt.Sprintf("k%d", i)); err != nil || m.Cold == nil {
			t.Fatalf("k%d not exported: %v", i, err)
		}
		exported = exported.Add(cairn.Tally{Objects: 1, Logical: int64(n), Stored: cairn.ColdStored(e.pol.String(), int64(n))})
	}
	u, err := e.store.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Buckets["bkt"]; got != exported {
		t.Fatalf("exported: bucket usage %+v, want %+v", got, exported)
	}
	if got := u.Codes["clay-4-2-5"]; got != exported {
		t.Fatalf("exported: usage of clay-4-2-5 %+v, want %+v", got, exported)
	}
	if err := e.cl.Delete(ctx, "bkt", "k3"); err != nil {
		t.Fatal(err)
	}
	want := exported.Add(cairn.Tally{Objects: -1, Logical: -int64(sizes[3]), Stored: -cairn.ColdStored(e.pol.String(), int64(sizes[3]))})
	if u, err := e.store.BucketUsage(ctx, "bkt"); err != nil || u != want {
		t.Fatalf("after a delete: usage %+v, want %+v, %v", u, want, err)
	}
}

// crashRounds is the rounds of a crash test: def, a third of it with
// -short, or $CAIRN_COLD_CRASH (the long form: 100 and more).
func crashRounds(t *testing.T, def int) int {
	if v := os.Getenv("CAIRN_COLD_CRASH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CAIRN_COLD_CRASH=%q: want a positive number of rounds", v)
		}
		return n
	}
	if testing.Short() {
		return max(1, def/3)
	}
	return def
}

// TestRebuildCrash stops the rebuild of a lost disk at every point —
// after n of its shard writes, or at the save of the group — round after
// round, each round losing another disk of the group (a random position,
// data or parity) with a new spare node to rebuild onto. After each stop
// every object reads byte-exact (degraded while the group still names
// the lost disk), no slot is held by two objects, and the group names
// either the lost disk or the spare, never anything between; the next
// pass then finishes the rebuild. Some rounds stage new objects, so a
// stopped pass also stops exports. Last, two more disks are lost at once
// and everything still reads: the rebuilt slots are the right bytes.
func TestRebuildCrash(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 11))
	e := newEnv(t)
	objs := map[string][]byte{}
	put := func(n int) { e.putRandom(t, rng, objs, n, 0, 600<<10) }
	put(12)
	e.pass(t, "a whole pass")
	rounds := crashRounds(t, 20)
	crashed, finished := 0, 0
	for round := range rounds {
		st := e.group(t)
		switch round % 5 {
		case 4:
			// exported by the passes below, which rebuild first (a new
			// client: the old one's cluster map has the lost disks up)
			e.cl = client.New(e.store, e.nodes.Client, client.Config{BlockSize: 64 << 10})
			put(2)
		case 0:
			// Export what is still staged before another disk goes: no
			// warm repair runs here to keep its copies at three.
			e.pass(t, "a whole pass")
		}
		pos := rng.IntN(len(st.Disks))
		lost := st.Disks[pos]
		e.lose(t, lost)
		spare := e.spare(t, fmt.Sprintf("s%d", round))
		e.stoppedPass(t, rng, round, round%3 != 2, 24, 3)
		check := func(when string) {
			t.Helper()
			if d := e.group(t).Disks[pos]; d != lost && d != spare {
				t.Fatalf("round %d %s: position %d names %s, neither the lost %s nor the spare %s", round, when, pos, d, lost, spare)
			}
			for key, data := range objs {
				e.read(t, rng, key, data)
			}
			e.checkGroup(t, objs, false)
		}
		check("after the stop")
		if e.group(t).Disks[pos] == spare {
			finished++ // the stop came after the save
			continue
		}
		crashed++
		e.pass(t, fmt.Sprintf("round %d: the pass after the stop", round))
		if got := e.group(t).Disks; got[pos] != spare {
			t.Fatalf("round %d: position %d not rebuilt onto %s after a whole pass: %v", round, pos, spare, got)
		}
		check("after the next pass")
	}
	t.Logf("%d rounds: %d rebuilds stopped part way and finished by the next pass, %d done before the stop came", rounds, crashed, finished)
	if crashed < rounds/3 {
		t.Fatalf("only %d of %d rebuilds were stopped part way", crashed, rounds)
	}
	// A whole pass exports what the last stopped ones left staged. Every
	// rebuilt slot holds the right bytes: lose two more disks (a data and
	// a parity position) and read everything with a fresh client.
	e.pass(t, "a whole pass")
	e.readWithout(t, rng, objs, 1, 4)
	e.checkGroup(t, objs, true)
}

// TestRebuildThroughInterruptedExport: an export stopped part way through
// its row writes (no object of its batch committed) leaves rows whose
// shards disagree; a disk of the group (each position in turn, data and
// parity) is then lost before the next pass could recover the export. The rebuild must not write what those
// rows give: it rebuilds the committed pieces there from helpers that
// agree with their checksums and leaves the rest to the export's
// recovery. Every object then reads byte-exact, and still does with two
// more disks gone. Before, the rebuild decoded the half-written rows and
// wrote wrong bytes onto the replacement: committed objects lost.
func TestRebuildThroughInterruptedExport(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 12))
	e, objs := newExported(t, rng, 16, 1, 1+600<<10)
	var logs bytes.Buffer
	e.log = slog.New(slog.NewTextHandler(&logs, nil))
	put := func(n int) { e.putRandom(t, rng, objs, n, 1, 1+600<<10) }
	id := cold.GroupID(e.pol, 0)
	inDoubt := 0
	for i := range 8 {
		// Slots freed by overwrites, so the next batch reuses slots in rows
		// that hold committed objects (delta updates of their parity).
		for key := range objs {
			objs[key] = randBytes(rng, 1+rng.IntN(600<<10))
			e.put(t, key, objs[key])
			break
		}
		put(3)
		fn := &failingNodes{Disks: e.nodes.Client}
		fn.left.Store(int64(1 + i%4))
		if _, err := e.exporter(e.store, fn).Run(ctx); !errors.Is(err, errCrash) {
			t.Fatalf("round %d: the export was not stopped: %v", i, err)
		}
		if _, err := e.store.ColdGet(ctx, "intents/"+id); err != nil {
			t.Fatalf("round %d: no intent after the stop: %v", i, err)
		}
		st := e.group(t)
		pos := i % len(st.Disks) // data disks, then parity disks
		e.lose(t, st.Disks[pos])
		spare := e.spare(t, fmt.Sprintf("s%d", i))
		before := strings.Count(logs.String(), "export_in_doubt=true")
		e.pass(t, fmt.Sprintf("round %d: the pass after the loss", i))
		inDoubt += strings.Count(logs.String(), "export_in_doubt=true") - before
		if got := e.group(t).Disks; got[pos] != spare {
			t.Fatalf("round %d: position %d not rebuilt onto %s: %v", i, pos, spare, got)
		}
		e.cl = client.New(e.store, e.nodes.Client, client.Config{BlockSize: 64 << 10})
		for key, data := range objs {
			e.read(t, rng, key, data)
		}
		e.checkGroup(t, objs, false)
	}
	if inDoubt != 8 {
		t.Fatalf("%d of 8 rebuilds ran with the export in doubt", inDoubt)
	}
	// The rebuilt disks hold the right bytes: read with two more lost.
	e.readWithout(t, rng, objs, 0, 3)
}

// TestDegradedReadSkipsWipedHelper: a disk of the group replaced by an
// empty one that the cluster map still holds up (its node came back on
// a new volume) must not be a helper of a degraded read: its slots would
// read as never written and rebuild wrong bytes. With every object's own
// disk down in the map in turn, and another disk of the group wiped, every
// object reads byte-exact, whole and in a range.
func TestDegradedReadSkipsWipedHelper(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 13))
	e, objs := newExported(t, rng, 12, 1, 900<<10)
	st := e.group(t)
	byDisk := map[int][]string{}
	for key := range objs {
		r := e.record(t, st, key)
		byDisk[r.Disk] = append(byDisk[r.Disk], key)
	}
	lost := -1
	for d := range st.PG.K {
		if len(byDisk[d]) > 0 && (lost < 0 || len(byDisk[d]) > len(byDisk[lost])) {
			lost = d
		}
	}
	wiped := (lost + 1) % st.PG.K // another data disk
	e.nodes.Replace(t, st.Disks[wiped])
	e.lose(t, st.Disks[lost])
	e.cl = client.New(e.store, e.nodes.Client, client.Config{BlockSize: 64 << 10})
	for _, key := range byDisk[lost] {
		e.read(t, rng, key, objs[key])
	}
	t.Logf("%d objects of disk %d read degraded with disk %d wiped", len(byDisk[lost]), lost, wiped)
}

// TestRebuildInDoubtWritesNothingWrong: a committed chunk on a lost disk,
// in a row an interrupted export left in doubt, is rebuilt only from
// helpers that give it back to its checksum. With two of its row's
// helpers disagreeing no set of helpers does: the rebuild fails with
// ErrCorrupt, the group keeps the lost disk and the spare holds nothing
// for the slot. With one disagreeing, the set that leaves it out does:
// the rebuild completes and the object reads byte-exact.
func TestRebuildInDoubtWritesNothingWrong(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 14))
	e, objs := newExported(t, rng, 8, 300<<10, 600<<10)
	id := cold.GroupID(e.pol, 0)
	st := e.group(t)
	// k0's first chunk: its row becomes the doubtful row of an export
	// that never committed (an intent with no objects).
	r := e.record(t, st, "k0")
	locs, err := st.PG.Pieces(r)
	if err != nil {
		t.Fatal(err)
	}
	var chunk gp.Location
	for _, l := range locs {
		if l.File != gp.SmallFile {
			chunk = l
			break
		}
	}
	if chunk.Length == 0 {
		t.Fatal("k0 has no chunk")
	}
	level, slot := st.PG.Geo.Level(chunk.Length), chunk.Offset/chunk.Length
	in := fmt.Sprintf(`{"objects":[],"rows":[[%d,%d]],"pages":[]}`, level, slot)
	if err := e.store.ColdUpdate(ctx, []meta.ColdOp{{Key: "intents/" + id, Value: []byte(in)}}); err != nil {
		t.Fatal(err)
	}
	// Two helpers of the row disagree: overwrite their slots.
	stripe := st.PG.Stripe(level, uint32(slot))
	var bad []int
	for d := range stripe {
		if d != r.Disk && len(bad) < 2 {
			bad = append(bad, d)
		}
	}
	saved := map[int][]byte{}
	for _, d := range bad {
		name := cold.UnitShard(st.Group, d, stripe[d].File, slot)
		rc, err := e.nodes.Client.GetShard(ctx, st.Disks[d], name, 0, chunk.Length)
		if err != nil {
			t.Fatal(err)
		}
		saved[d], err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.nodes.Client.PutShard(ctx, st.Disks[d], name, bytes.NewReader(randBytes(rng, int(chunk.Length)))); err != nil {
			t.Fatal(err)
		}
	}
	lost := st.Disks[r.Disk]
	e.lose(t, lost)
	spare := e.spare(t, "s0")
	if _, err := e.exporter(e.store, e.nodes.Client).Run(ctx); !errors.Is(err, cairn.ErrCorrupt) || !strings.Contains(err.Error(), "no set of helpers") {
		t.Fatalf("rebuild through two disagreeing helpers: %v, want ErrCorrupt (no set of helpers)", err)
	}
	if got := e.group(t).Disks; got[r.Disk] != lost {
		t.Fatalf("after a failed rebuild the group names %v (want %s at %d)", got, lost, r.Disk)
	}
	if _, err := e.nodes.Client.GetShard(ctx, spare, cold.UnitShard(st.Group, r.Disk, chunk.File, slot), 0, 1); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("the spare holds k0's slot after a failed rebuild: %v", err)
	}
	// Put one helper back: leaving the other out rebuilds k0's chunk.
	if _, err := e.nodes.Client.PutShard(ctx, st.Disks[bad[0]], cold.UnitShard(st.Group, bad[0], stripe[bad[0]].File, slot), bytes.NewReader(saved[bad[0]])); err != nil {
		t.Fatal(err)
	}
	e.pass(t, "rebuild through one disagreeing helper")
	if got := e.group(t).Disks; got[r.Disk] != spare {
		t.Fatalf("the group names %v (want %s at %d)", got, spare, r.Disk)
	}
	e.cl = client.New(e.store, e.nodes.Client, client.Config{BlockSize: 64 << 10})
	e.read(t, rng, "k0", objs["k0"])
}

// TestDegradedReadAfterRebuild: a client that cached a group's state (in
// a degraded read) just before its lost disk was rebuilt onto a spare
// reads the object from the spare, not degraded through the old disks:
// the row's parity damaged after the rebuild does not matter to it.
// (Through the cached state, which still names the lost disk, the read
// would rebuild the object from that parity and fail its checksum.)
func TestDegradedReadAfterRebuild(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 15))
	e, objs := newExported(t, rng, 4, 300<<10, 600<<10)
	st := e.group(t)
	r := e.record(t, st, "k0")
	e.lose(t, st.Disks[r.Disk])
	e.read(t, rng, "k0", objs["k0"]) // degraded; the client caches the group
	spare := e.spare(t, "s0")
	e.pass(t, "a whole pass")
	if got := e.group(t).Disks; got[r.Disk] != spare {
		t.Fatalf("not rebuilt onto %s: the group names %v", spare, got)
	}
	// Damage every parity slot of the rows of k0's chunks: a degraded
	// read through the old disks needs them.
	locs, err := st.PG.Pieces(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locs {
		if l.File == gp.SmallFile {
			continue
		}
		level, slot := st.PG.Geo.Level(l.Length), l.Offset/l.Length
		for d := st.PG.K; d < len(st.Disks); d++ {
			name := cold.UnitShard(st.Group, d, gp.ParityFile(level), slot)
			if _, err := e.nodes.Client.PutShard(ctx, st.Disks[d], name, bytes.NewReader(randBytes(rng, int(l.Length)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.read(t, rng, "k0", objs["k0"]) // within the cache's 5 s
}
