package cold_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/cold"
	"cairn/layout/gp"
	"cairn/meta"
	"cairn/meta/mem"
)

// TestStateRoundTrip saves a group whose buckets have free slots in
// several bitmap chunks (FreeChunk slots each) and loads it back equal;
// a save from a stale state conflicts; chunks whose slots are all claimed
// again are deleted, so the state's records stay bounded.
func TestStateRoundTrip(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	p, err := gp.ParsePolicy("clay-4-2-5/gp=32KiB:2:256KiB")
	if err != nil {
		t.Fatal(err)
	}
	disks := []cairn.DiskID{"a", "b", "c", "d", "e", "f"}
	st, err := cold.NewState("g1", p, disks, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &st.PG.Disks[2].Buckets[1]
	for range 3*cold.FreeChunk + 5 {
		if _, err := b.Claim(); err != nil {
			t.Fatal(err)
		}
	}
	freed := []uint32{0, 7, cold.FreeChunk - 1, cold.FreeChunk, 2*cold.FreeChunk + 9, 3*cold.FreeChunk + 4}
	for _, s := range freed {
		if err := b.Release(s); err != nil {
			t.Fatal(err)
		}
	}
	st.PG.Disks[2].Used, st.PG.Disks[0].SmallEnd, st.PG.Disks[0].SmallFree = 12345, 999, 17
	if _, err := st.PG.Disks[3].Buckets[0].Claim(); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(ctx, store); err != nil {
		t.Fatal(err)
	}
	got, err := cold.LoadState(ctx, store, "g1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.PG.Disks, st.PG.Disks) || !reflect.DeepEqual(got.Disks, disks) || got.Policy.String() != p.String() {
		t.Fatalf("loaded %+v, saved %+v", got.PG.Disks[2].Buckets[1].Free, st.PG.Disks[2].Buckets[1].Free)
	}
	if recs := freeRecords(t, store); len(recs) != 4 {
		t.Fatalf("%d bitmap records for free slots in 4 chunks: %v", len(recs), recs)
	}
	// The loaded copy saves first; the original is stale now.
	if _, err := got.PG.Disks[2].Buckets[1].Claim(); err != nil {
		t.Fatal(err)
	}
	if err := got.Save(ctx, store); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(ctx, store); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("save from a stale state: %v", err)
	}
	// Claim every free slot: the bitmap records go.
	for len(got.PG.Disks[2].Buckets[1].Free) > 0 {
		if _, err := got.PG.Disks[2].Buckets[1].Claim(); err != nil {
			t.Fatal(err)
		}
	}
	if err := got.Save(ctx, store); err != nil {
		t.Fatal(err)
	}
	if recs := freeRecords(t, store); len(recs) != 0 {
		t.Fatalf("bitmap records left with no free slot: %v", recs)
	}
	if _, err := cold.LoadState(ctx, store, "nope", nil); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("load of a missing group: %v", err)
	}
	// A damaged record is ErrCorrupt, not a panic or a wrong state.
	if err := store.ColdUpdate(ctx, []meta.ColdOp{{Key: "groups/g1/free/002/01/000000", Value: make([]byte, cold.FreeChunk/8+1)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cold.LoadState(ctx, store, "g1", nil); !errors.Is(err, cairn.ErrCorrupt) {
		t.Fatalf("load with an oversized bitmap: %v", err)
	}
}

func freeRecords(t *testing.T, store *mem.Store) []string {
	t.Helper()
	recs, _, err := store.ColdPage(context.Background(), "groups/g1/free/", "", meta.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Key)
	}
	return out
}

// TestStage: a warm object marked staged for the cold tier (the lifecycle
// Transition's call) keeps its layout under its old code and is queued;
// a cold or staged object, or a bad policy, is refused (multipart
// objects: TestExportMultipart).
func TestStage(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if err := e.store.CreateBucket(ctx, cairn.Bucket{Name: "warm", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 100<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	m, err := e.cl.Put(ctx, "warm", "obj", bytes.NewReader(data), client.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	if err := cold.Stage(ctx, e.store, "warm", "obj", "clay-4-2-5/gp=48KiB:2", time.Now()); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("stage with s0 off the sub-chunk unit: %v", err)
	}
	if err := cold.Stage(ctx, e.store, "warm", "obj", coldPolicy, time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Manifest(ctx, "warm", "obj")
	if err != nil || got.Policy != coldPolicy || got.Code != m.LayoutCode() || got.Version != m.Version {
		t.Fatalf("staged manifest %+v, %v", got, err)
	}
	if err := cold.Stage(ctx, e.store, "warm", "obj", coldPolicy, time.Now()); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("staging twice: %v", err)
	}
	if _, err := e.exporter(e.store, e.nodes.Client).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err = e.store.Manifest(ctx, "warm", "obj"); err != nil || got.Cold == nil {
		t.Fatalf("not exported after staging: %+v, %v", got, err)
	}
	_, rc, err := e.cl.Get(ctx, "warm", "obj", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, err := io.ReadAll(rc); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("read after the transition: %v", err)
	}
}

// TestStageRacesExport: the export job runs between Stage's two writes —
// the queue record, then the manifest's change to the cold policy (same
// version). The job must keep the record (the manifest may still
// commit), so that the object is exported once it does; a job that
// dropped it left the object staged for good (found by
// TestServerLifecycleToCold under load).
func TestStageRacesExport(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if err := e.store.CreateBucket(ctx, cairn.Bucket{Name: "warm", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("cold"), 30000)
	m, err := e.cl.Put(ctx, "warm", "obj", bytes.NewReader(data), client.PutOptions{Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	next := *m
	next.Policy, next.Code = coldPolicy, m.LayoutCode()
	op, err := cold.StageOp(&next, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.ColdUpdate(ctx, []meta.ColdOp{op}); err != nil { // Stage's first write
		t.Fatal(err)
	}
	if _, err := e.exporter(e.store, e.nodes.Client).Run(ctx); err != nil { // the job, in between
		t.Fatal(err)
	}
	if err := e.store.UpdateManifest(ctx, &next, m); err != nil { // Stage's second write
		t.Fatal(err)
	}
	if _, err := e.exporter(e.store, e.nodes.Client).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := e.store.Manifest(ctx, "warm", "obj"); err != nil || got.Cold == nil {
		t.Fatalf("a staged object whose record the job saw before its manifest changed was not exported: %+v, %v", got, err)
	}
}
