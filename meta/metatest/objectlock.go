package metatest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// Dates far from any test's clock: a retention until far is in force, one
// until past has expired, whatever the store's clock says.
var (
	farDate  = time.Date(2100, 1, 2, 3, 4, 5, 0, time.UTC)
	pastDate = time.Date(2000, 1, 2, 3, 4, 5, 0, time.UTC)
)

// locked returns version n of key, versioned, with a retention.
func locked(t *testing.T, bucket, key string, n int, mode string, until time.Time) *cairn.Manifest {
	m := versioned(t, bucket, key, n, true)
	if mode != "" {
		m.Retention = &cairn.Retention{Mode: mode, Until: until}
	}
	return m
}

// testObjectLock checks the store's enforcement of Object Lock
// (docs/design/objectlock.md): the bucket's configuration, and that no
// delete or retention change the rules forbid gets through, whoever
// asks.
func testObjectLock(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "lockb")
	wantErr(t, "lock on an unversioned bucket", s.SetBucketObjectLock(ctx, "lockb", cairn.ObjectLock{}), cairn.ErrInvalid)
	wantErr(t, "lock on a missing bucket", s.SetBucketObjectLock(ctx, "nope", cairn.ObjectLock{}), cairn.ErrNotFound)
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "lockb", cairn.VersioningEnabled))
	for _, bad := range []cairn.ObjectLock{{Mode: cairn.LockGovernance}, {Mode: "FOREVER", Days: 1},
		{Mode: cairn.LockCompliance, Days: 1, Years: 1}, {Days: 3}, {Mode: cairn.LockGovernance, Years: 101}} {
		wantErr(t, "SetBucketObjectLock of a bad configuration", s.SetBucketObjectLock(ctx, "lockb", bad), cairn.ErrInvalid)
	}
	cfg := cairn.ObjectLock{Mode: cairn.LockCompliance, Days: 3}
	noErr(t, "SetBucketObjectLock", s.SetBucketObjectLock(ctx, "lockb", cfg))
	b, err := s.Bucket(ctx, "lockb")
	noErr(t, "Bucket", err)
	if b.ObjectLock == nil || *b.ObjectLock != cfg || b.Versioning != cairn.VersioningEnabled {
		t.Fatalf("bucket after SetBucketObjectLock: lock %+v, versioning %q", b.ObjectLock, b.Versioning)
	}
	wantErr(t, "suspending a lock bucket", s.SetBucketVersioning(ctx, "lockb", cairn.VersioningSuspended), cairn.ErrInvalid)
	noErr(t, "SetBucketVersioning Enabled again", s.SetBucketVersioning(ctx, "lockb", cairn.VersioningEnabled))

	// COMPLIANCE: nobody deletes it or shortens it; an overwrite makes a
	// new version, and extending is allowed.
	v1 := locked(t, "lockb", "k", 1, cairn.LockCompliance, farDate)
	noErr(t, "commit v1", s.CommitManifest(ctx, v1, ""))
	v2 := locked(t, "lockb", "k", 2, "", time.Time{})
	noErr(t, "commit v2 over a locked v1", s.CommitManifest(ctx, v2, v1.Version))
	_, err = s.DeleteVersion(ctx, "lockb", "k", v1.Version)
	wantErr(t, "DeleteVersion of a COMPLIANCE version", err, cairn.ErrLocked)
	_, err = s.DeleteVersionBypass(ctx, "lockb", "k", v1.Version)
	wantErr(t, "DeleteVersionBypass of a COMPLIANCE version", err, cairn.ErrLocked)
	short := &cairn.Retention{Mode: cairn.LockCompliance, Until: farDate.Add(-time.Hour)}
	for what, c := range map[string]cairn.LockChange{
		"shortening":        {SetRetention: true, Retention: short},
		"shortening bypass": {SetRetention: true, Retention: short, BypassGovernance: true},
		"removing":          {SetRetention: true, BypassGovernance: true},
		"to GOVERNANCE":     {SetRetention: true, Retention: &cairn.Retention{Mode: cairn.LockGovernance, Until: farDate.Add(time.Hour)}, BypassGovernance: true},
	} {
		_, err = s.SetObjectLock(ctx, "lockb", "k", v1.Version, c)
		wantErr(t, what+" a COMPLIANCE retention", err, cairn.ErrLocked)
	}
	longer := &cairn.Retention{Mode: cairn.LockCompliance, Until: farDate.Add(time.Hour)}
	v, err := s.SetObjectLock(ctx, "lockb", "k", v1.Version, cairn.LockChange{SetRetention: true, Retention: longer})
	noErr(t, "extending a COMPLIANCE retention", err)
	if v.Manifest == nil || v.Manifest.Retention == nil || !v.Manifest.Retention.Until.Equal(longer.Until) || v.Latest {
		t.Fatalf("SetObjectLock returned %+v", v)
	}
	got, err := s.ObjectVersion(ctx, "lockb", "k", v1.Version)
	noErr(t, "ObjectVersion v1", err)
	if got.Manifest.Retention == nil || !got.Manifest.Retention.Until.Equal(longer.Until) || got.Manifest.Retention.Mode != cairn.LockCompliance {
		t.Fatalf("v1's retention after extending: %+v", got.Manifest.Retention)
	}
	changed := *got.Manifest
	changed.Retention = nil
	wantErr(t, "UpdateManifest changing the lock", s.UpdateManifest(ctx, &changed, got.Manifest), cairn.ErrInvalid)

	// GOVERNANCE: refused unless bypassed; current versions too.
	v3 := locked(t, "lockb", "k", 3, cairn.LockGovernance, farDate)
	noErr(t, "commit v3", s.CommitManifest(ctx, v3, v2.Version))
	_, err = s.DeleteManifest(ctx, "lockb", "k", "")
	wantErr(t, "DeleteManifest of a GOVERNANCE version", err, cairn.ErrLocked)
	_, err = s.DeleteVersion(ctx, "lockb", "k", v3.Version)
	wantErr(t, "DeleteVersion of a GOVERNANCE version", err, cairn.ErrLocked)
	_, err = s.SetObjectLock(ctx, "lockb", "k", "", cairn.LockChange{SetRetention: true})
	wantErr(t, "removing a GOVERNANCE retention", err, cairn.ErrLocked)
	v, err = s.SetObjectLock(ctx, "lockb", "k", "", cairn.LockChange{SetRetention: true,
		Retention: &cairn.Retention{Mode: cairn.LockGovernance, Until: farDate.Add(-time.Hour)}, BypassGovernance: true})
	noErr(t, "shortening a GOVERNANCE retention with bypass", err)
	if !v.Latest || v.Version != v3.Version {
		t.Fatalf("SetObjectLock of the latest: %+v", v)
	}
	_, err = s.DeleteVersionBypass(ctx, "lockb", "k", v3.Version)
	noErr(t, "DeleteVersionBypass of a GOVERNANCE version", err)

	// Legal hold: refused whatever the bypass, until it is lifted.
	on, off := true, false
	_, err = s.SetObjectLock(ctx, "lockb", "k", v2.Version, cairn.LockChange{LegalHold: &on})
	noErr(t, "legal hold on", err)
	_, err = s.DeleteVersionBypass(ctx, "lockb", "k", v2.Version)
	wantErr(t, "DeleteVersionBypass under a legal hold", err, cairn.ErrLocked)
	_, err = s.DeleteManifest(ctx, "lockb", "k", v2.Version)
	wantErr(t, "DeleteManifest under a legal hold", err, cairn.ErrLocked)
	_, err = s.SetObjectLock(ctx, "lockb", "k", v2.Version, cairn.LockChange{LegalHold: &off})
	noErr(t, "legal hold off", err)
	_, err = s.DeleteVersion(ctx, "lockb", "k", v2.Version)
	noErr(t, "DeleteVersion once the hold is lifted", err)

	// An expired retention protects nothing.
	v4 := locked(t, "lockb", "old", 4, cairn.LockCompliance, pastDate)
	noErr(t, "commit v4", s.CommitManifest(ctx, v4, ""))
	_, err = s.DeleteVersion(ctx, "lockb", "old", v4.Version)
	noErr(t, "DeleteVersion of an expired retention", err)

	// A delete marker over a locked version is allowed (the version stays);
	// the marker itself has no lock.
	_, err = s.PutDeleteMarker(ctx, "lockb", "k", cairn.DeleteMarker{Version: vers(t, 9), Versioned: true, Created: time.Now()})
	noErr(t, "PutDeleteMarker over a locked version", err)
	_, err = s.SetObjectLock(ctx, "lockb", "k", "", cairn.LockChange{LegalHold: &on})
	wantErr(t, "SetObjectLock of a delete marker", err, cairn.ErrInvalid)
	_, err = s.SetObjectLock(ctx, "lockb", "k", vers(t, 30), cairn.LockChange{LegalHold: &on})
	wantErr(t, "SetObjectLock of a missing version", err, cairn.ErrNotFound)
	_, err = s.SetObjectLock(ctx, "lockb", "k", v1.Version, cairn.LockChange{SetRetention: true, Retention: &cairn.Retention{Mode: "SOMETIMES", Until: farDate}})
	wantErr(t, "SetObjectLock with a bad mode", err, cairn.ErrInvalid)
	if _, err := s.ObjectVersion(ctx, "lockb", "k", v1.Version); err != nil {
		t.Fatalf("the COMPLIANCE version is gone: %v", err)
	}

	// No cleanup record names a locked version's files.
	cs, err := s.Cleanups(ctx, farDate, 1000)
	noErr(t, "Cleanups", err)
	for _, c := range cs {
		for _, f := range v1.Files() {
			if slices.Contains(c.Files, f) {
				t.Fatalf("cleanup record %s names %v of the locked version", c.ID, f)
			}
		}
	}
	wantErr(t, "DeleteBucket with a locked version", s.DeleteBucket(ctx, "lockb"), cairn.ErrBucketNotEmpty)

	// A bucket without Object Lock takes no retention change.
	mkBucket(t, s, "plain")
	noErr(t, "commit plain", s.CommitManifest(ctx, manifest("plain", "k", vers(t, 5)), ""))
	_, err = s.SetObjectLock(ctx, "plain", "k", "", cairn.LockChange{LegalHold: &on})
	wantErr(t, "SetObjectLock without Object Lock", err, cairn.ErrInvalid)
}

// testObjectLockNull checks that a null version with a lock is not
// replaced for good by a null write or a null delete marker (a bucket
// whose lock came after its null versions).
func testObjectLockNull(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "lockn")
	null := manifest("lockn", "k", vers(t, 1))
	null.Retention = &cairn.Retention{Mode: cairn.LockCompliance, Until: farDate}
	noErr(t, "commit a locked null version", s.CommitManifest(ctx, null, ""))
	over := manifest("lockn", "k", vers(t, 2))
	wantErr(t, "overwriting a locked object in a never versioned bucket", s.CommitManifest(ctx, over, null.Version), cairn.ErrLocked)
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "lockn", cairn.VersioningSuspended))
	wantErr(t, "overwriting a locked null version", s.CommitManifest(ctx, over, null.Version), cairn.ErrLocked)
	_, err := s.PutDeleteMarker(ctx, "lockn", "k", cairn.DeleteMarker{Version: vers(t, 3), Created: time.Now()})
	wantErr(t, "a null marker over a locked null version", err, cairn.ErrLocked)
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "lockn", cairn.VersioningEnabled))
	v := versioned(t, "lockn", "k", 4, true)
	noErr(t, "a versioned write over it", s.CommitManifest(ctx, v, null.Version))
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "lockn", cairn.VersioningSuspended))
	over = manifest("lockn", "k", vers(t, 5))
	wantErr(t, "a null write over a noncurrent locked null version", s.CommitManifest(ctx, over, v.Version), cairn.ErrLocked)
	if got, err := s.ObjectVersion(ctx, "lockn", "k", cairn.NullVersionID); err != nil || got.Version != null.Version {
		t.Fatalf("the locked null version: %+v, %v", got, err)
	}
}

// testObjectLockRace races a legal hold against a delete of the same
// version: exactly one of them wins — never a delete of a version whose
// hold was set (the store checks the lock in the delete's transaction).
func testObjectLockRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "lockrace")
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "lockrace", cairn.VersioningEnabled))
	noErr(t, "SetBucketObjectLock", s.SetBucketObjectLock(ctx, "lockrace", cairn.ObjectLock{}))
	const n = 12
	on := true
	for i := range n {
		key := fmt.Sprintf("k%02d", i)
		m := versioned(t, "lockrace", key, i+1, true)
		noErr(t, "commit "+key, s.CommitManifest(ctx, m, ""))
		var holdErr, delErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, holdErr = s.SetObjectLock(ctx, "lockrace", key, m.Version, cairn.LockChange{LegalHold: &on})
		}()
		go func() { defer wg.Done(); _, delErr = s.DeleteVersion(ctx, "lockrace", key, m.Version) }()
		wg.Wait()
		v, err := s.ObjectVersion(ctx, "lockrace", key, m.Version)
		switch {
		case holdErr == nil && delErr == nil:
			t.Fatalf("%s: both the legal hold and the delete succeeded", key)
		case holdErr == nil:
			wantErr(t, key+": the delete after the hold", delErr, cairn.ErrLocked)
			if err != nil || !v.Manifest.LegalHold {
				t.Fatalf("%s: the held version: %+v, %v", key, v, err)
			}
		case delErr == nil:
			wantErr(t, key+": the hold after the delete", holdErr, cairn.ErrNotFound)
			wantErr(t, key+": the deleted version", err, cairn.ErrNotFound)
		default:
			t.Fatalf("%s: both failed: hold %v, delete %v", key, holdErr, delErr)
		}
	}
}
