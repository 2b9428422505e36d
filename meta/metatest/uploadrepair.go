package metatest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// testUploadPartRepair: UpdateUploadPart moves the shards of an upload's
// part by compare-and-swap on the part alone, changes the upload's stamp
// (a CompleteUpload that read the parts before conflicts), moves the
// usage counters, queues the superseded copy for cleanup, and refuses an
// update over a part uploaded again, of an aborted upload, or that
// changes what is not the shards' places.
func testUploadPartRepair(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "upr")
	u := cairn.Upload{Bucket: "upr", Key: "k", ID: "00cc", Created: time.Unix(1, 0).UTC(), Policy: "rs-2-1"}
	noErr(t, "create upload", s.CreateUpload(ctx, u))
	p1 := part(1, "p1v1", "node1/disk1", "node2/disk1", "node3/disk2")
	p2 := part(2, "p2v1", "node1/disk1", "node2/disk1", "node3/disk2")
	for _, p := range []cairn.Part{p1, p2} {
		_, err := s.PutPart(ctx, "upr", "00cc", p)
		noErr(t, "put part", err)
	}
	_, stamp, err := s.Parts(ctx, "upr", "00cc")
	noErr(t, "parts", err)

	moved := p1
	moved.Shards = slices.Clone(p1.Shards)
	moved.Shards[1].Disk = "node9/disk9"
	bad := moved
	bad.Version = "p1v2"
	wantErr(t, "UpdateUploadPart changing the version", s.UpdateUploadPart(ctx, "upr", "00cc", bad, p1), cairn.ErrInvalid)
	wantErr(t, "UpdateUploadPart of a missing upload", s.UpdateUploadPart(ctx, "upr", "none", moved, p1), cairn.ErrNotFound)
	p3 := part(3, "p3v1", "node1/disk1")
	wantErr(t, "UpdateUploadPart of a missing part", s.UpdateUploadPart(ctx, "upr", "00cc", p3, p3), cairn.ErrNotFound)
	noErr(t, "UpdateUploadPart", s.UpdateUploadPart(ctx, "upr", "00cc", moved, p1))
	noErr(t, "UpdateUploadPart retried", s.UpdateUploadPart(ctx, "upr", "00cc", moved, p1))
	other := p1
	other.Shards = slices.Clone(p1.Shards)
	other.Shards[1].Disk = "node8/disk8"
	wantErr(t, "UpdateUploadPart over a stale part", s.UpdateUploadPart(ctx, "upr", "00cc", other, p1), cairn.ErrConflict)

	parts, stamp2, err := s.Parts(ctx, "upr", "00cc")
	noErr(t, "parts after the update", err)
	if stamp2 == stamp {
		t.Fatalf("UpdateUploadPart left the upload's stamp at %d", stamp)
	}
	if len(parts) != 2 || !reflect.DeepEqual(parts[0], moved) || !reflect.DeepEqual(parts[1], p2) {
		t.Fatalf("parts after the update: %+v", parts)
	}
	us, err := s.Usage(ctx)
	noErr(t, "Usage", err)
	if d := us.Disks["node9/disk9"]; d.Files != 1 {
		t.Fatalf("the part's new disk counts %+v", d)
	}
	if d := us.Disks["node2/disk1"]; d.Files != 1 {
		t.Fatalf("the part's old disk counts %+v, want 1 file (part 2's)", d)
	}
	qs, err := s.Cleanups(ctx, time.Now().Add(time.Hour), 10)
	noErr(t, "Cleanups", err)
	want := []cairn.ShardFile{{Disk: "node2/disk1", Name: cairn.ShardName("p1v1", 1)}}
	if len(qs) != 1 || qs[0].Reason != cairn.CleanupRepair || !reflect.DeepEqual(qs[0].Files, want) || qs[0].Key != "k" {
		t.Fatalf("cleanup of the moved shard: %+v, want %v", qs, want)
	}

	// A completion that read the parts before conflicts; one that reads
	// them again commits the moved shards.
	m := &cairn.Manifest{Bucket: "upr", Key: "k", Version: "obj1", Policy: "rs-2-1", Size: p1.Size + p2.Size, ETag: "e-2",
		Created: u.Created, Upload: "00cc", Parts: []cairn.Part{p1, p2}}
	_, err = s.CompleteUpload(ctx, m, "", "00cc", stamp)
	wantErr(t, "CompleteUpload with the stamp before the update", err, cairn.ErrConflict)

	// A part uploaded again is another part: the update over the old one
	// conflicts.
	p2again := part(2, "p2v2", "node4/disk1", "node5/disk1", "node6/disk2")
	_, err = s.PutPart(ctx, "upr", "00cc", p2again)
	noErr(t, "put part 2 again", err)
	moved2 := p2
	moved2.Shards = slices.Clone(p2.Shards)
	moved2.Shards[0].Disk = "node9/disk9"
	wantErr(t, "UpdateUploadPart over a part uploaded again", s.UpdateUploadPart(ctx, "upr", "00cc", moved2, p2), cairn.ErrConflict)

	_, stamp3, err := s.Parts(ctx, "upr", "00cc")
	noErr(t, "parts", err)
	m.Parts = []cairn.Part{moved, p2again}
	_, err = s.CompleteUpload(ctx, m, "", "00cc", stamp3)
	noErr(t, "CompleteUpload", err)
	got, err := s.Manifest(ctx, "upr", "k")
	noErr(t, "Manifest", err)
	sameManifest(t, "completed after the repair", got, m)
	wantErr(t, "UpdateUploadPart after the completion", s.UpdateUploadPart(ctx, "upr", "00cc", moved, moved), cairn.ErrNotFound)
}
