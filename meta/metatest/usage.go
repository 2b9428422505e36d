package metatest

import (
	"fmt"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// usageOf counts what manifests and parts name, the way Store.Usage must:
// the model the counters are checked against.
func usageOf(objects []*cairn.Manifest, parts []cairn.Part) cairn.Usage {
	d := meta.NewDelta()
	for _, m := range objects {
		d.Object(m, 1)
	}
	d.Parts(parts, 1)
	var u cairn.Usage
	d.AddTo(&u)
	return u
}

// wantUsage checks the store's counters against want (zero entries may be
// absent in either) and every bucket's BucketUsage.
func wantUsage(t *testing.T, s meta.Store, what string, want cairn.Usage) {
	t.Helper()
	got, err := s.Usage(t.Context())
	noErr(t, what+": Usage", err)
	var none cairn.Usage
	meta.NewDelta().AddTo(&none) // empty maps
	for _, u := range []*cairn.Usage{&got, &want} {
		if u.Buckets == nil {
			*u = none
		}
		maps.DeleteFunc(u.Buckets, func(_ string, t cairn.Tally) bool { return t == cairn.Tally{} })
		maps.DeleteFunc(u.Codes, func(_ string, t cairn.Tally) bool { return t == cairn.Tally{} })
		maps.DeleteFunc(u.Disks, func(_ cairn.DiskID, t cairn.DiskTally) bool { return t == cairn.DiskTally{} })
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: usage\n got %+v\nwant %+v", what, got, want)
	}
	for b, tally := range want.Buckets {
		bt, err := s.BucketUsage(t.Context(), b)
		noErr(t, what+": BucketUsage "+b, err)
		if bt != tally {
			t.Fatalf("%s: BucketUsage(%s) = %+v, want %+v", what, b, bt, tally)
		}
	}
}

// part returns part n of an upload: 5000 bytes of rs-2-1 on three disks.
func part(n int, version string, disks ...cairn.DiskID) cairn.Part {
	p := cairn.Part{Number: n, Version: version, Size: 5000, ETag: "e", Created: time.Unix(int64(n), 0).UTC(),
		Layout: cairn.Layout{BlockSize: 4096, Shards: make([]cairn.ShardLoc, len(disks))}}
	for i, d := range disks {
		p.Shards[i] = cairn.ShardLoc{Disk: d, Size: 2500}
	}
	return p
}

// testUsage: every write that commits, replaces or deletes a manifest or
// records or drops a part moves the counters by exactly what it adds and
// removes; a small object counts under the code of its replicas.
func testUsage(t *testing.T, s meta.Store) {
	ctx := t.Context()
	wantUsage(t, s, "empty store", cairn.Usage{})
	mkBucket(t, s, "bk1")
	mkBucket(t, s, "bk2")
	_, err := s.BucketUsage(ctx, "nosuch")
	wantErr(t, "BucketUsage of no bucket", err, cairn.ErrNotFound)
	if bt, err := s.BucketUsage(ctx, "bk1"); err != nil || bt != (cairn.Tally{}) {
		t.Fatalf("BucketUsage of an empty bucket: %+v, %v", bt, err)
	}

	a := manifest("bk1", "a", "va")
	b := manifest("bk1", "b", "vb")
	b.Policy = "rs-2-1/read=all" // counted as rs-2-1
	small := manifest("bk2", "s", "vs")
	small.Size, small.Code, small.BlockSize = 100, "rep-3", 100
	for i := range small.Shards {
		small.Shards[i].Size = 100
	}
	noErr(t, "commit a", s.CommitManifest(ctx, a, ""))
	noErr(t, "commit b", s.CommitManifest(ctx, b, ""))
	noErr(t, "commit small", s.CommitManifest(ctx, small, ""))
	noErr(t, "commit a again (retried)", s.CommitManifest(ctx, a, ""))
	wantUsage(t, s, "three objects", usageOf([]*cairn.Manifest{a, b, small}, nil))
	u, _ := s.Usage(ctx)
	if c := u.Codes["rep-3"]; c.Objects != 1 || c.Logical != 100 || c.Stored != 3*cairn.ShardFileBytes(100) {
		t.Fatalf("the small object under rep-3: %+v", c)
	}
	if c := u.Codes["rs-2-1"]; c.Objects != 2 || c.Logical != 2*12345 {
		t.Fatalf("rs-2-1 with and without a read mode: %+v", c)
	}

	// Overwrite: the old version's counts go.
	a2 := manifest("bk1", "a", "va2")
	a2.Size = 999
	a2.Shards[0].Disk = "node9/disk1"
	noErr(t, "overwrite a", s.CommitManifest(ctx, a2, "va"))
	wantErr(t, "a losing overwrite", s.CommitManifest(ctx, manifest("bk1", "a", "vx"), "va"), cairn.ErrConflict)
	wantUsage(t, s, "after an overwrite", usageOf([]*cairn.Manifest{a2, b, small}, nil))

	// Repair moves a shard: only the disks change.
	moved := *a2
	moved.Shards = append([]cairn.ShardLoc(nil), a2.Shards...)
	moved.Shards[1].Disk = "node8/disk2"
	noErr(t, "update a", s.UpdateManifest(ctx, &moved, a2))
	wantUsage(t, s, "after a repair", usageOf([]*cairn.Manifest{&moved, b, small}, nil))

	// Delete.
	_, err = s.DeleteManifest(ctx, "bk1", "b", "")
	noErr(t, "delete b", err)
	_, err = s.DeleteManifest(ctx, "bk1", "b", "")
	wantErr(t, "delete b again", err, cairn.ErrNotFound)
	wantUsage(t, s, "after a delete", usageOf([]*cairn.Manifest{&moved, small}, nil))

	// Multipart: parts count on their disks until Complete makes them
	// an object; a replaced part and the parts left out go.
	up := cairn.Upload{Bucket: "bk2", Key: "mp", ID: "up1", Policy: "rs-2-1", Created: time.Unix(5, 0).UTC()}
	noErr(t, "CreateUpload", s.CreateUpload(ctx, up))
	p1 := part(1, "p1", "node1/disk1", "node2/disk1", "node3/disk1")
	p2 := part(2, "p2", "node4/disk1", "node5/disk1", "node6/disk1")
	p2b := part(2, "p2b", "node1/disk1", "node5/disk1", "node7/disk1")
	p3 := part(3, "p3", "node2/disk1", "node3/disk1", "node4/disk1")
	for _, p := range []cairn.Part{p1, p2, p2b, p3} {
		_, err := s.PutPart(ctx, "bk2", "up1", p)
		noErr(t, "PutPart", err)
	}
	objects := []*cairn.Manifest{&moved, small}
	wantUsage(t, s, "parts uploaded", usageOf(objects, []cairn.Part{p1, p2b, p3}))
	_, stamp, err := s.Parts(ctx, "bk2", "up1")
	noErr(t, "Parts", err)
	mp := &cairn.Manifest{Bucket: "bk2", Key: "mp", Version: "vmp", Size: 10000, ETag: "x-2", Policy: "rs-2-1",
		Created: time.Unix(6, 0).UTC(), Parts: []cairn.Part{p1, p2b}}
	_, err = s.CompleteUpload(ctx, mp, "", "up1", stamp)
	noErr(t, "CompleteUpload", err)
	objects = append(objects, mp)
	wantUsage(t, s, "after Complete", usageOf(objects, nil))
	// Complete over an existing object replaces its counts too.
	noErr(t, "CreateUpload 2", s.CreateUpload(ctx, cairn.Upload{Bucket: "bk1", Key: "a", ID: "up2", Policy: "rs-2-1", Created: time.Unix(7, 0).UTC()}))
	q1 := part(1, "q1", "node1/disk1", "node2/disk1", "node3/disk1")
	_, err = s.PutPart(ctx, "bk1", "up2", q1)
	noErr(t, "PutPart q1", err)
	_, stamp, err = s.Parts(ctx, "bk1", "up2")
	noErr(t, "Parts 2", err)
	mpa := &cairn.Manifest{Bucket: "bk1", Key: "a", Version: "vmpa", Size: 5000, ETag: "y-1", Policy: "rs-2-1",
		Created: time.Unix(8, 0).UTC(), Parts: []cairn.Part{q1}}
	_, err = s.CompleteUpload(ctx, mpa, moved.Version, "up2", stamp)
	noErr(t, "CompleteUpload over a", err)
	objects = []*cairn.Manifest{small, mp, mpa}
	wantUsage(t, s, "after Complete over an object", usageOf(objects, nil))
	// Abort: the parts go.
	noErr(t, "CreateUpload 3", s.CreateUpload(ctx, cairn.Upload{Bucket: "bk2", Key: "gone", ID: "up3", Policy: "rs-2-1", Created: time.Unix(9, 0).UTC()}))
	_, err = s.PutPart(ctx, "bk2", "up3", p3)
	noErr(t, "PutPart p3", err)
	wantUsage(t, s, "an upload in progress", usageOf(objects, []cairn.Part{p3}))
	_, err = s.DeleteUpload(ctx, "bk2", "up3")
	noErr(t, "DeleteUpload", err)
	wantUsage(t, s, "after an abort", usageOf(objects, nil))

	// Everything deleted: nothing is counted, the bucket goes.
	for _, m := range objects {
		_, err := s.DeleteManifest(ctx, m.Bucket, m.Key, m.Version)
		noErr(t, "delete "+m.Key, err)
	}
	wantUsage(t, s, "all deleted", cairn.Usage{})
	noErr(t, "DeleteBucket", s.DeleteBucket(ctx, "bk1"))
	_, err = s.BucketUsage(ctx, "bk1")
	wantErr(t, "BucketUsage of a deleted bucket", err, cairn.ErrNotFound)
	mkBucket(t, s, "bk1")
	noErr(t, "commit into the new u1", s.CommitManifest(ctx, a, ""))
	wantUsage(t, s, "a bucket made again", usageOf([]*cairn.Manifest{a}, nil))
}

// testUsageRace: writers commit, overwrite and delete objects of one
// bucket at once (their counter updates contend); afterwards the counters
// are exactly those of the objects left.
func testUsageRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "hot")
	const writers, rounds = 8, 6
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", w)
			prev := ""
			for r := range rounds {
				m := manifest("hot", key, fmt.Sprintf("w%dr%d", w, r))
				m.Size = int64(1000*w + r)
				m.Shards[0].Disk = cairn.DiskID(fmt.Sprintf("node%d/disk1", w))
				if err := s.CommitManifest(ctx, m, prev); err != nil {
					t.Errorf("writer %d round %d: %v", w, r, err)
					return
				}
				prev = m.Version
			}
			if w%2 == 1 {
				if _, err := s.DeleteManifest(ctx, "hot", key, prev); err != nil {
					t.Errorf("writer %d delete: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ms, _, err := s.ListManifests(ctx, "hot", "", "", 0)
	noErr(t, "ListManifests", err)
	if len(ms) != writers/2 {
		t.Fatalf("%d objects left, want %d", len(ms), writers/2)
	}
	wantUsage(t, s, "after the race", usageOf(ms, nil))
}
