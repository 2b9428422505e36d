package scrub_test

import (
	"bytes"
	"context"
	"errors"
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

// identFixture writes shard files recording identities, and the
// manifests and uploads that name some of them.
type identFixture struct {
	t     *testing.T
	vol   *volume.Volume
	store *mem.Store
	n     int
}

func (f *identFixture) version() string {
	f.n++
	return hex32(f.n)
}

func hex32(n int) string {
	const digits = "0123456789abcdef"
	b := []byte("00000000000000000000000000000000")
	for i := len(b) - 1; n > 0; i-- {
		b[i] = digits[n%16]
		n /= 16
	}
	return string(b)
}

// put writes row 0 of id's version on the fixture's disk.
func (f *identFixture) put(id cairn.ShardIdentity, body []byte) string {
	f.t.Helper()
	b, err := id.Encode()
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.vol.PutIdentified(context.Background(), id.Name(), b, bytes.NewReader(body)); err != nil {
		f.t.Fatal(err)
	}
	return id.Name()
}

// layout is a rep-3 layout of body with its shard 0 on the fixture's disk
// recorded with crc.
func layout(body []byte, crc uint32) cairn.Layout {
	size := int64(len(body))
	return cairn.Layout{BlockSize: len(body), Shards: []cairn.ShardLoc{
		{Disk: disk, Size: size, CRC: crc}, {Disk: "node2/disk1", Size: size, CRC: crc}, {Disk: "node3/disk1", Size: size, CRC: crc}}}
}

func (f *identFixture) exists(name string) bool {
	_, err := f.vol.Stat(context.Background(), name)
	if err != nil && !errors.Is(err, cairn.ErrNotFound) {
		f.t.Fatal(err)
	}
	return err == nil
}

// TestScrubMatchesIdentities: a shard whose identity a manifest names on
// its disk with its CRC is left alone; one named with another CRC is
// damage; one named by an upload in progress is left alone, and damage if
// its part names it with another CRC; one no
// manifest or upload names is an orphan, removed once older than the
// grace period (the young one on the next pass); a file without an
// identity (format 1) is never matched nor removed.
func TestScrubMatchesIdentities(t *testing.T) {
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
		f := &identFixture{t: t, vol: v, store: store}
		body := []byte("the content of every shard here")
		crc := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
		id := func(key string) cairn.ShardIdentity {
			return cairn.ShardIdentity{Bucket: "bkt", Key: key, Version: f.version(), Policy: "rep-3", BlockSize: len(body)}
		}
		commit := func(i cairn.ShardIdentity, crc uint32) {
			m := &cairn.Manifest{Bucket: "bkt", Key: i.Key, Version: i.Version, Size: int64(len(body)), ETag: "x",
				Policy: "rep-3", Created: time.Now().UTC(), Layout: layout(body, crc)}
			if err := store.CommitManifest(ctx, m, ""); err != nil {
				t.Fatal(err)
			}
		}
		named := id("named")
		f.put(named, body)
		commit(named, crc)
		wrong := id("wrong-crc")
		f.put(wrong, body)
		commit(wrong, crc^1)
		part := id("mp")
		part.Part, part.Upload = 2, hex32(999)
		f.put(part, body)
		if err := store.CreateUpload(ctx, cairn.Upload{Bucket: "bkt", Key: "mp", ID: part.Upload, Created: time.Now(), Policy: "rep-3"}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.PutPart(ctx, "bkt", part.Upload, cairn.Part{Number: 2, Version: part.Version, Size: int64(len(body)),
			ETag: "x", Created: time.Now(), Layout: layout(body, crc)}); err != nil {
			t.Fatal(err)
		}
		// A part of the same upload in progress whose record names its
		// file with another CRC: damage (scrub verifies the shards of
		// open uploads against their part records; repair heals them).
		partWrong := id("mp")
		partWrong.Part, partWrong.Upload = 3, part.Upload
		f.put(partWrong, body)
		if _, err := store.PutPart(ctx, "bkt", part.Upload, cairn.Part{Number: 3, Version: partWrong.Version, Size: int64(len(body)),
			ETag: "x", Created: time.Now(), Layout: layout(body, crc^1)}); err != nil {
			t.Fatal(err)
		}
		overwritten := id("named") // an older version of "named": its manifest names another version
		old := f.put(overwritten, body)
		gone := f.put(id("deleted"), body)
		v1 := hex32(5000) + ".0"
		if _, err := v.Put(ctx, v1, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Hour) // the orphans so far are past the grace period
		young := f.put(id("young"), body)

		s, stop := start(t, v, scrub.Config{Rate: 1 << 30, Store: store, Interval: time.Hour, OrphanGrace: time.Hour})
		defer stop()
		time.Sleep(time.Minute)
		p := s.Progress()
		if p.LastPass.IsZero() || p.LastShards != 8 || p.LastDamage != 2 || p.LastOrphans != 3 || p.Collected != 2 {
			t.Fatalf("after the first pass: %+v", p)
		}
		ds, _, err := store.Damages(ctx, "", 100)
		damaged := map[string]bool{}
		for _, d := range ds {
			damaged[d.Shard] = d.Kind == cairn.DamageCorrupt
		}
		if err != nil || len(ds) != 2 || !damaged[wrong.Name()] || !damaged[partWrong.Name()] {
			t.Fatalf("damage records %+v %v, want one for %s and one for %s", ds, err, wrong.Name(), partWrong.Name())
		}
		for name, want := range map[string]bool{named.Name(): true, wrong.Name(): true, part.Name(): true, partWrong.Name(): true,
			old: false, gone: false, young: true, v1: true} {
			if f.exists(name) != want {
				t.Errorf("after the first pass, %s exists: %v, want %v", name, !want, want)
			}
		}
		time.Sleep(time.Hour) // the second pass: the young orphan is old enough now
		p = s.Progress()
		if p.LastOrphans != 1 || p.Collected != 3 || f.exists(young) {
			t.Fatalf("after the second pass: %+v; young orphan exists %v", p, f.exists(young))
		}
		if !f.exists(named.Name()) || !f.exists(part.Name()) || !f.exists(v1) {
			t.Fatal("the second pass removed a named shard or one without identity")
		}
	})
}
