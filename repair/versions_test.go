package repair

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/client"
)

// TestRepairNoncurrentVersions: in a versioned bucket the noncurrent
// versions — single-part and multipart — are objects to repair: after a
// node loss none of their shards stays on it, and each reads back
// byte-exact (docs/design/versioning.md).
func TestRepairNoncurrentVersions(t *testing.T) {
	e := newEnv(t, 7, "rs-4-2", 0)
	ctx := context.Background()
	e.c = client.New(e.meta, e.files, client.Config{BlockSize: 4096, MinPartSize: 1})
	if err := e.meta.SetBucketVersioning(ctx, "bkt", cairn.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{} // by version
	for i := range 3 {
		b := randBytes(uint64(200+i), 30000+i)
		m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(b), client.PutOptions{Size: int64(len(b))})
		if err != nil {
			t.Fatal(err)
		}
		want[m.Version] = b
	}
	up, err := e.c.CreateUpload(ctx, "bkt", "k", client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	var list []client.CompletePart
	for n := 1; n <= 3; n++ {
		b := randBytes(uint64(300+n), 20000+n)
		p, err := e.c.UploadPart(ctx, "bkt", "k", up.ID, n, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
		list = append(list, client.CompletePart{Number: n, ETag: p.ETag})
	}
	mp, err := e.c.CompleteUpload(ctx, "bkt", "k", up.ID, list)
	if err != nil {
		t.Fatal(err)
	}
	want[mp.Version] = all
	// The multipart version goes noncurrent too: a delete marker on top.
	if _, err := e.meta.PutDeleteMarker(ctx, "bkt", "k", cairn.DeleteMarker{Version: strings.Repeat("0", 32), Versioned: true}); err != nil {
		t.Fatal(err)
	}
	e.loseNode(t, "n4")
	r := New(e.meta, e.exec, Config{Unit: 4096})
	added, err := r.Scan(ctx, time.Unix(1000, 0))
	if err != nil || added == 0 {
		t.Fatalf("scan: %d tasks, %v", added, err)
	}
	drain(t, r, e.meta)
	if st := r.Stats(); st.Repaired != added || st.Failed != 0 {
		t.Fatalf("%d tasks queued, stats %+v", added, st)
	}
	for version, data := range want {
		v, err := e.meta.ObjectVersion(ctx, "bkt", "k", version)
		if err != nil {
			t.Fatal(err)
		}
		m := v.Manifest
		layouts := []cairn.Layout{m.Layout}
		for _, p := range m.Parts {
			layouts = append(layouts, p.Layout)
		}
		for _, l := range layouts {
			for i, s := range l.Shards {
				if strings.HasPrefix(string(s.Disk), "n4/") {
					t.Fatalf("version %s: shard %d still on %s", version, i, s.Disk)
				}
			}
		}
		_, rc, err := e.c.OpenWith(ctx, m, 0, -1, client.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("version %s read back %d bytes (%v), differing", version, len(got), err)
		}
	}
}
