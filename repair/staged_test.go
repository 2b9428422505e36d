package repair

import (
	"bytes"
	"context"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/repair/plan"
)

// TestRepairStagedObjects: objects staged for the cold tier — stored
// with the staging policy (rep-3), their manifests naming the cold policy
// and keeping the warm code as Code — are repaired like warm ones after a
// node loss, a single PUT's shards and an upload's parts alike. Every
// shard file, written by the PUT, UploadPart or the repair, records the
// identity its manifest derives (IdentityOf), which rebuild-meta compares
// across an object's files: a part of a staged object once derived the
// cold policy, so its rebuilt files disagreed with the others.
func TestRepairStagedObjects(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, "clay-4-2-5/gp=32KiB:2", 12)
	u, err := e.c.CreateUpload(ctx, "bkt", "parts", client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	var list []client.CompletePart
	for n, size := range []int{5 << 20, 3000} {
		b := bytes.Repeat([]byte{byte(n + 1), byte(size)}, size/2)
		p, err := e.c.UploadPart(ctx, "bkt", "parts", u.ID, n+1, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))})
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, client.CompletePart{Number: p.Number, ETag: p.ETag})
		all = append(all, b...)
	}
	if _, err := e.c.CompleteUpload(ctx, "bkt", "parts", u.ID, list); err != nil {
		t.Fatal(err)
	}
	for _, m := range e.orig {
		if m.Cold != nil || m.Code != "rep-3" || m.Policy != "clay-4-2-5/gp=32KiB:2" {
			t.Fatalf("%s: policy %s code %s; want staged with rep-3", m.Key, m.Policy, m.Code)
		}
	}
	e.loseNode(t, "n3")
	r := New(e.meta, e.exec, Config{Scheme: plan.Schemes[0], Unit: 4096})
	if added, err := r.Scan(ctx, time.Unix(1000, 0)); err != nil || added == 0 {
		t.Fatalf("scan: %d tasks, %v", added, err)
	}
	drain(t, r, e.meta)
	if st := r.Stats(); st.Failed != 0 {
		t.Fatalf("repair stats %+v", st)
	}
	e.check(t) // the single PUTs: no shard on n3, identities, byte-exact
	m, err := e.meta.Manifest(ctx, "bkt", "parts")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Parts {
		for i, s := range p.Shards {
			if s.Disk == "n3/d1" || s.Disk == "n3/d2" {
				t.Fatalf("part %d: shard %d still on %s", p.Number, i, s.Disk)
			}
			e.checkIdentity(t, m, p.Number, cairn.RowOf(p.Shards, i), s)
		}
	}
	e.readBack(t, "parts", all)
}
