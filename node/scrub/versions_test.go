package scrub_test

import (
	"context"
	"hash/crc32"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/meta/mem"
	"cairn/node/scrub"
	"cairn/node/volume"
)

// TestScrubKeepsNoncurrentVersions: in a versioned bucket the shards of
// noncurrent versions — single-part and parts of a multipart one — are
// named, not orphans; a version deleted for good leaves orphans that are
// collected (docs/design/versioning.md).
func TestScrubKeepsNoncurrentVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		v, err := volume.Open("/vol", volume.Options{FS: vfs.NewMem(), DiskID: disk, Create: true})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		store := mem.New()
		if err := store.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rep-3"}); err != nil {
			t.Fatal(err)
		}
		if err := store.SetBucketVersioning(ctx, "bkt", cairn.VersioningEnabled); err != nil {
			t.Fatal(err)
		}
		f := &identFixture{t: t, vol: v, store: store}
		body := []byte("a version's shard")
		crc := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
		prev := ""
		commit := func(m *cairn.Manifest) {
			t.Helper()
			m.Bucket, m.Key, m.Size, m.ETag, m.Policy, m.Created, m.Versioned = "bkt", "k", int64(len(body)), "x", "rep-3", time.Now().UTC(), true
			if err := store.CommitManifest(ctx, m, prev); err != nil {
				t.Fatal(err)
			}
			prev = m.Version
		}
		single := func() (cairn.ShardIdentity, string) {
			id := cairn.ShardIdentity{Bucket: "bkt", Key: "k", Version: f.version(), Policy: "rep-3", BlockSize: len(body)}
			name := f.put(id, body)
			commit(&cairn.Manifest{Version: id.Version, Layout: layout(body, crc)})
			return id, name
		}
		_, first := single()
		upload := hex32(777)
		part := cairn.ShardIdentity{Bucket: "bkt", Key: "k", Version: f.version(), Policy: "rep-3", BlockSize: len(body), Part: 1, Upload: upload}
		partName := f.put(part, body)
		commit(&cairn.Manifest{Version: f.version(), Upload: upload, Parts: []cairn.Part{{Number: 1, Version: part.Version,
			Size: int64(len(body)), ETag: "x", Created: time.Now(), Layout: layout(body, crc)}}})
		doomed, doomedName := single()
		_, current := single()
		if _, err := store.DeleteVersion(ctx, "bkt", "k", doomed.Version); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Hour) // past the grace period

		s, stop := start(t, v, scrub.Config{Rate: 1 << 30, Store: store, Interval: time.Hour, OrphanGrace: time.Hour})
		defer stop()
		time.Sleep(time.Minute)
		p := s.Progress()
		if p.LastPass.IsZero() || p.LastShards != 4 || p.LastOrphans != 1 || p.Collected != 1 || p.LastDamage != 0 {
			t.Fatalf("after a pass: %+v", p)
		}
		for name, want := range map[string]bool{first: true, partName: true, current: true, doomedName: false} {
			if f.exists(name) != want {
				t.Errorf("%s exists: %v, want %v", name, !want, want)
			}
		}
	})
}
