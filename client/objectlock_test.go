package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"cairn"
)

// TestObjectLockPut: the data path stores a write's own retention and
// legal hold, gives a write that names none the bucket's default
// retention from its creation time (CLI writes too, not only the
// gateway's), completes an upload with the lock it was created with, and
// refuses a lock in a bucket without Object Lock before storing anything.
func TestObjectLockPut(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	ctx := context.Background()
	created := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return created }
	until := created.Add(90 * time.Minute)
	_, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader([]byte("x")), PutOptions{Size: 1, LegalHold: true})
	if !errors.Is(err, cairn.ErrInvalid) || e.files(t) != 0 {
		t.Fatalf("a legal hold without Object Lock: %v, %d files", err, e.files(t))
	}
	if err := e.meta.SetBucketVersioning(ctx, "bkt", cairn.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	if err := e.meta.SetBucketObjectLock(ctx, "bkt", cairn.ObjectLock{Mode: cairn.LockGovernance, Days: 3}); err != nil {
		t.Fatal(err)
	}
	own, err := e.c.Put(ctx, "bkt", "own", bytes.NewReader([]byte("own")), PutOptions{Size: 3, Now: now, LegalHold: true,
		Retention: &cairn.Retention{Mode: cairn.LockCompliance, Until: until}})
	if err != nil {
		t.Fatal(err)
	}
	if r := own.Retention; r == nil || r.Mode != cairn.LockCompliance || !r.Until.Equal(until) || !own.LegalHold {
		t.Fatalf("a write's own lock: %+v, hold %v", r, own.LegalHold)
	}
	dflt, err := e.c.Put(ctx, "bkt", "dflt", bytes.NewReader([]byte("d")), PutOptions{Size: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if r := dflt.Retention; r == nil || r.Mode != cairn.LockGovernance || !r.Until.Equal(created.AddDate(0, 0, 3)) || dflt.LegalHold {
		t.Fatalf("the default retention: %+v, hold %v", r, dflt.LegalHold)
	}
	if _, err := e.meta.DeleteVersion(ctx, "bkt", "dflt", dflt.Version); !errors.Is(err, cairn.ErrLocked) {
		t.Fatalf("deleting a version under the default retention: %v", err)
	}
	u, err := e.c.CreateUpload(ctx, "bkt", "mp", PutOptions{Now: now, Retention: &cairn.Retention{Mode: cairn.LockCompliance, Until: until}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.c.UploadPart(ctx, "bkt", "mp", u.ID, 1, bytes.NewReader([]byte("part")), PutOptions{Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.c.CompleteUpload(ctx, "bkt", "mp", u.ID, []CompletePart{{Number: 1, ETag: p.ETag}})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Retention; r == nil || r.Mode != cairn.LockCompliance || !r.Until.Equal(until) {
		t.Fatalf("a completed upload's lock: %+v", r)
	}
}
