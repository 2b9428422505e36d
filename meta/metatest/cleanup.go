package metatest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// forever is an until past every record's Since.
var forever = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// shardFile names shard i of version n (a valid shard name).
func shardFile(disk cairn.DiskID, n, i int) cairn.ShardFile {
	return cairn.ShardFile{Disk: disk, Name: cairn.ShardName(fmt.Sprintf("%032x", n), i)}
}

// testCleanups: PutCleanup checks its record and assigns IDs that sort
// by Since; Cleanups returns the records due by a time, oldest first, a
// page at a time; DeleteCleanup removes one.
func testCleanups(t *testing.T, s meta.Store) {
	ctx := t.Context()
	wantErr(t, "PutCleanup without files", s.PutCleanup(ctx, cairn.Cleanup{Reason: "x"}), cairn.ErrInvalid)
	wantErr(t, "PutCleanup with a bad name", s.PutCleanup(ctx, cairn.Cleanup{Files: []cairn.ShardFile{{Disk: "n/d", Name: "../etc"}}}), cairn.ErrInvalid)
	wantErr(t, "PutCleanup without a disk", s.PutCleanup(ctx, cairn.Cleanup{Files: []cairn.ShardFile{{Name: shardFile("", 1, 0).Name}}}), cairn.ErrInvalid)
	many := make([]cairn.ShardFile, cairn.MaxCleanupFiles+1)
	for i := range many {
		many[i] = shardFile("n/d", 1, i)
	}
	wantErr(t, "PutCleanup with too many files", s.PutCleanup(ctx, cairn.Cleanup{Files: many}), cairn.ErrInvalid)
	_, err := s.Cleanups(ctx, forever, 0)
	wantErr(t, "Cleanups with limit 0", err, cairn.ErrInvalid)

	t0 := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	put := func(since time.Time, n int) cairn.Cleanup {
		c := cairn.Cleanup{Since: since, Reason: cairn.CleanupFailed, Bucket: "b", Key: "k",
			Files: []cairn.ShardFile{shardFile("n1/d1", n, 0), shardFile("n2/d1", n, 1)}, Attempts: n, LastError: "e"}
		noErr(t, "PutCleanup", s.PutCleanup(ctx, c))
		return c
	}
	// Put out of order; the zero time sorts first.
	want := []cairn.Cleanup{put(time.Time{}, 1), put(t0, 2), put(t0.Add(time.Second), 3), put(t0.Add(time.Hour), 4)}
	got, err := s.Cleanups(ctx, forever, 10)
	noErr(t, "Cleanups", err)
	if len(got) != 4 {
		t.Fatalf("Cleanups: %d records, want 4", len(got))
	}
	for i, c := range got {
		if c.ID == "" || !strings.HasPrefix(c.ID, cairn.CleanupPrefix(want[i].Since)) {
			t.Fatalf("record %d: ID %q does not start with its Since %s", i, c.ID, cairn.CleanupPrefix(want[i].Since))
		}
		if i > 0 && c.ID <= got[i-1].ID {
			t.Fatalf("records out of ID order: %q after %q", c.ID, got[i-1].ID)
		}
		w := want[i]
		w.ID = c.ID
		if !c.Since.Equal(w.Since) {
			t.Fatalf("record %d: Since %v, want %v", i, c.Since, w.Since)
		}
		c.Since, w.Since = time.Time{}, time.Time{}
		if !reflect.DeepEqual(c, w) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, c, w)
		}
	}
	due, err := s.Cleanups(ctx, t0.Add(time.Second), 10)
	noErr(t, "Cleanups until t0+1s", err)
	if len(due) != 3 || due[2].ID != got[2].ID {
		t.Fatalf("Cleanups until t0+1s: %d records, want the first 3", len(due))
	}
	page, err := s.Cleanups(ctx, forever, 2)
	noErr(t, "Cleanups page", err)
	if len(page) != 2 || page[0].ID != got[0].ID || page[1].ID != got[1].ID {
		t.Fatalf("Cleanups limit 2: %+v", page)
	}
	noErr(t, "DeleteCleanup", s.DeleteCleanup(ctx, got[1].ID))
	wantErr(t, "DeleteCleanup again", s.DeleteCleanup(ctx, got[1].ID), cairn.ErrNotFound)
	wantErr(t, "DeleteCleanup of nothing", s.DeleteCleanup(ctx, "nope"), cairn.ErrNotFound)
	left, err := s.Cleanups(ctx, forever, 10)
	noErr(t, "Cleanups after delete", err)
	if len(left) != 3 || left[0].ID != got[0].ID || left[1].ID != got[2].ID {
		t.Fatalf("after DeleteCleanup: %+v", left)
	}
}

// queued drains the cleanup queue and returns its files by reason.
func queued(t *testing.T, s meta.Store) map[string][]cairn.ShardFile {
	t.Helper()
	cs, err := s.Cleanups(t.Context(), forever, 1000)
	noErr(t, "Cleanups", err)
	out := map[string][]cairn.ShardFile{}
	for _, c := range cs {
		out[c.Reason] = append(out[c.Reason], c.Files...)
		noErr(t, "DeleteCleanup", s.DeleteCleanup(t.Context(), c.ID))
	}
	return out
}

func wantQueued(t *testing.T, s meta.Store, what string, want map[string][]cairn.ShardFile) {
	t.Helper()
	got := queued(t, s)
	for _, fs := range [](map[string][]cairn.ShardFile){got, want} {
		for r := range fs {
			slices.SortFunc(fs[r], func(a, b cairn.ShardFile) int { return strings.Compare(a.Name+string(a.Disk), b.Name+string(b.Disk)) })
		}
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: queued\n%v\nwant\n%v", what, got, want)
	}
}

// testCleanupWrites: every write that stops naming shard files queues
// exactly those files, with its reason, bucket, key and time; refused
// writes and writes that drop nothing queue nothing.
func testCleanupWrites(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "bkt")
	before := time.Now()
	v1 := manifest("bkt", "k", "v1")
	noErr(t, "commit", s.CommitManifest(ctx, v1, ""))
	wantQueued(t, s, "a new object", nil)
	v2 := manifest("bkt", "k", "v2")
	noErr(t, "overwrite", s.CommitManifest(ctx, v2, "v1"))
	cs, err := s.Cleanups(ctx, forever, 10)
	noErr(t, "Cleanups", err)
	if len(cs) != 1 || cs[0].Bucket != "bkt" || cs[0].Key != "k" || cs[0].Since.Before(before.Add(-time.Second)) || cs[0].Since.After(time.Now().Add(time.Second)) {
		t.Fatalf("overwrite queued %+v, want one record of bkt/k since about now", cs)
	}
	wantQueued(t, s, "overwrite", map[string][]cairn.ShardFile{cairn.CleanupOverwrite: v1.Files()})
	wantErr(t, "a stale overwrite", s.CommitManifest(ctx, manifest("bkt", "k", "v3"), "v1"), cairn.ErrConflict)
	noErr(t, "a retried commit", s.CommitManifest(ctx, v2, "v1"))
	wantQueued(t, s, "refused and retried commits", nil)

	moved := *v2
	moved.Shards = slices.Clone(v2.Shards)
	moved.Shards[1].Disk = "node9/disk9"
	noErr(t, "UpdateManifest", s.UpdateManifest(ctx, &moved, v2))
	wantQueued(t, s, "repair", map[string][]cairn.ShardFile{cairn.CleanupRepair: {{Disk: "node2/disk1", Name: cairn.ShardName("v2", 1)}}})

	_, err = s.DeleteManifest(ctx, "bkt", "k", "")
	noErr(t, "delete", err)
	wantQueued(t, s, "delete", map[string][]cairn.ShardFile{cairn.CleanupDelete: moved.Files()})

	// Multipart: a replaced part, an aborted upload, a completion that
	// leaves a part out, over an object.
	noErr(t, "commit v4", s.CommitManifest(ctx, manifest("bkt", "mp", "v4"), ""))
	up := cairn.Upload{Bucket: "bkt", Key: "mp", ID: "u1", Policy: "rs-2-1", Created: time.Unix(1, 0).UTC()}
	noErr(t, "CreateUpload", s.CreateUpload(ctx, up))
	p1 := part(1, "p1", "n1/d1", "n2/d1", "n3/d1")
	p1b := part(1, "p1b", "n1/d2", "n2/d2", "n3/d2")
	p2 := part(2, "p2", "n1/d1", "n2/d1", "n3/d1")
	for _, p := range []cairn.Part{p1, p1b, p2} {
		_, err := s.PutPart(ctx, "bkt", "u1", p)
		noErr(t, "PutPart", err)
	}
	wantQueued(t, s, "a replaced part", map[string][]cairn.ShardFile{cairn.CleanupPart: p1.Files()})
	_, stamp, err := s.Parts(ctx, "bkt", "u1")
	noErr(t, "Parts", err)
	m := manifest("bkt", "mp", "v5")
	m.Layout, m.Parts = cairn.Layout{}, []cairn.Part{p1b}
	m.Parts[0].Size, m.Size = 5000, 5000
	_, err = s.CompleteUpload(ctx, m, "v4", "u1", stamp)
	noErr(t, "CompleteUpload", err)
	wantQueued(t, s, "complete", map[string][]cairn.ShardFile{
		cairn.CleanupOverwrite: manifest("bkt", "mp", "v4").Files(), cairn.CleanupUnchosen: p2.Files()})

	noErr(t, "CreateUpload u2", s.CreateUpload(ctx, cairn.Upload{Bucket: "bkt", Key: "ab", ID: "u2", Policy: "rs-2-1", Created: time.Unix(1, 0).UTC()}))
	_, err = s.PutPart(ctx, "bkt", "u2", p2)
	noErr(t, "PutPart u2", err)
	_, err = s.DeleteUpload(ctx, "bkt", "u2")
	noErr(t, "DeleteUpload", err)
	cs, err = s.Cleanups(ctx, forever, 10)
	noErr(t, "Cleanups", err)
	if len(cs) != 1 || cs[0].Key != "ab" {
		t.Fatalf("abort queued %+v, want one record of key ab", cs)
	}
	wantQueued(t, s, "abort", map[string][]cairn.ShardFile{cairn.CleanupAbort: p2.Files()})
}

// testDeleteBucketUploads: DeleteBucket deletes the bucket's uploads in
// progress with it (as S3 does), queues their parts' files for cleanup and
// drops them from the usage counters, so that the bucket name's next owner
// finds nothing of them; another bucket's upload stays.
func testDeleteBucketUploads(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "gone")
	mkBucket(t, s, "kept")
	before, err := s.Usage(ctx)
	noErr(t, "Usage", err)
	created := time.Unix(1, 0).UTC()
	p1 := part(1, "p1", "n1/d1", "n2/d1", "n3/d1")
	p2 := part(2, "p2", "n1/d2", "n2/d2", "n3/d2")
	for _, u := range []cairn.Upload{
		{Bucket: "gone", Key: "a", ID: "u1", Policy: "rs-2-1", Created: created},
		{Bucket: "gone", Key: "b", ID: "u2", Policy: "rs-2-1", Created: created},
	} {
		noErr(t, "CreateUpload "+u.ID, s.CreateUpload(ctx, u))
	}
	noErr(t, "CreateUpload kept", s.CreateUpload(ctx, cairn.Upload{Bucket: "kept", Key: "a", ID: "u1", Policy: "rs-2-1", Created: created}))
	for _, put := range []struct {
		id string
		p  cairn.Part
	}{{"u1", p1}, {"u2", p2}} {
		_, err := s.PutPart(ctx, "gone", put.id, put.p)
		noErr(t, "PutPart", err)
	}
	wantQueued(t, s, "parts put", nil)

	noErr(t, "DeleteBucket with uploads in progress", s.DeleteBucket(ctx, "gone"))
	wantQueued(t, s, "delete bucket", map[string][]cairn.ShardFile{cairn.CleanupAbort: append(p1.Files(), p2.Files()...)})
	after, err := s.Usage(ctx)
	noErr(t, "Usage", err)
	if !reflect.DeepEqual(nonZeroDisks(after.Disks), nonZeroDisks(before.Disks)) {
		t.Fatalf("disk usage after the delete %v, want the one before the uploads %v", after.Disks, before.Disks)
	}

	// The next owner of the name finds none of it.
	mkBucket(t, s, "gone")
	us, err := s.Uploads(ctx, "gone")
	noErr(t, "Uploads", err)
	if len(us) != 0 {
		t.Fatalf("re-created bucket has uploads %+v", us)
	}
	for _, id := range []string{"u1", "u2"} {
		_, err := s.Upload(ctx, "gone", id)
		wantErr(t, "Upload "+id, err, cairn.ErrNotFound)
		_, _, err = s.Parts(ctx, "gone", id)
		wantErr(t, "Parts "+id, err, cairn.ErrNotFound)
		_, err = s.PutPart(ctx, "gone", id, p1)
		wantErr(t, "PutPart "+id, err, cairn.ErrNotFound)
	}
	us, err = s.Uploads(ctx, "kept")
	noErr(t, "Uploads kept", err)
	if len(us) != 1 {
		t.Fatalf("other bucket's uploads %+v, want its one", us)
	}
}

// nonZeroDisks drops zero counters (they may be absent or present).
func nonZeroDisks(m map[cairn.DiskID]cairn.DiskTally) map[cairn.DiskID]cairn.DiskTally {
	out := map[cairn.DiskID]cairn.DiskTally{}
	for d, c := range m {
		if c != (cairn.DiskTally{}) {
			out[d] = c
		}
	}
	return out
}
