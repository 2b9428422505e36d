package metatest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// vers returns the n-th time-ordered version (larger n: newer).
func vers(t *testing.T, n int) string {
	t.Helper()
	v, err := cairn.NewVersion(time.Date(2025, 6, 7, 8, 9, n, 0, time.UTC), bytes.NewReader(bytes.Repeat([]byte{byte(n)}, 8)))
	noErr(t, "NewVersion", err)
	return v
}

// versioned returns a manifest of version n of key, versioned or null,
// on disks of its own.
func versioned(t *testing.T, bucket, key string, n int, on bool) *cairn.Manifest {
	m := manifest(bucket, key, vers(t, n))
	m.Versioned = on
	m.Created = time.Date(2025, 6, 7, 8, 9, n, 0, time.UTC)
	return m
}

// listAll lists every version of a bucket a page of limit at a time.
func listAll(t *testing.T, s meta.Store, bucket, prefix string, limit int) []cairn.ObjectVersion {
	t.Helper()
	var out []cairn.ObjectVersion
	key, after := "", ""
	for range 1000 {
		vs, more, err := s.ListVersions(t.Context(), bucket, prefix, key, after, limit)
		noErr(t, "ListVersions", err)
		out = append(out, vs...)
		if !more {
			return out
		}
		if len(vs) == 0 {
			t.Fatalf("ListVersions after (%q, %q): an empty page with more", key, after)
		}
		key, after = vs[len(vs)-1].Key, vs[len(vs)-1].Version
	}
	t.Fatal("ListVersions: no end")
	return nil
}

// describe renders versions as "key:id[:marker][:latest]" for comparing.
func describe(vs []cairn.ObjectVersion) []string {
	var out []string
	for _, v := range vs {
		s := v.Key + ":" + v.Version
		if !v.Versioned {
			s += ":null"
		}
		if v.Marker {
			s += ":marker"
		}
		if v.Latest {
			s += ":latest"
		}
		out = append(out, s)
	}
	return out
}

func wantVersions(t *testing.T, s meta.Store, bucket, what string, want []string) {
	t.Helper()
	for _, limit := range []int{1, 2, 3, meta.MaxPage} {
		if got := describe(listAll(t, s, bucket, "", limit)); !slices.Equal(got, want) {
			t.Fatalf("%s: ListVersions (pages of %d):\n%q\nwant\n%q", what, limit, got, want)
		}
	}
}

// testVersions: the versioning contract (docs/design/versioning.md) —
// versions kept on overwrite, delete markers, deleting a version brings
// the next one back, the null version's rules, listing positions, usage
// and cleanup of every version as an object.
func testVersions(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "vbk")
	wantErr(t, "SetBucketVersioning of a missing bucket", s.SetBucketVersioning(ctx, "nope", cairn.VersioningEnabled), cairn.ErrNotFound)
	wantErr(t, "SetBucketVersioning bad status", s.SetBucketVersioning(ctx, "vbk", "On"), cairn.ErrInvalid)
	_, err := s.PutDeleteMarker(ctx, "vbk", "k", cairn.DeleteMarker{Version: vers(t, 1)})
	wantErr(t, "PutDeleteMarker in a bucket never versioned", err, cairn.ErrInvalid)

	// A null version written before versioning.
	n0 := versioned(t, "vbk", "k", 1, false)
	noErr(t, "commit n0", s.CommitManifest(ctx, n0, ""))
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "vbk", cairn.VersioningEnabled))
	b, err := s.Bucket(ctx, "vbk")
	noErr(t, "Bucket", err)
	if b.Versioning != cairn.VersioningEnabled {
		t.Fatalf("Bucket.Versioning = %q", b.Versioning)
	}
	v2, v3, v4 := versioned(t, "vbk", "k", 2, true), versioned(t, "vbk", "k", 3, true), versioned(t, "vbk", "k", 4, true)
	v4.Shards[0].Disk = "node9/disk9"
	noErr(t, "commit v2", s.CommitManifest(ctx, v2, n0.Version))
	noErr(t, "commit v3", s.CommitManifest(ctx, v3, v2.Version))
	noErr(t, "commit v3 again (a retry)", s.CommitManifest(ctx, v3, v2.Version))
	wantErr(t, "commit over a noncurrent version", s.CommitManifest(ctx, v4, v2.Version), cairn.ErrConflict)
	noErr(t, "commit v4", s.CommitManifest(ctx, v4, v3.Version))
	wantQueued(t, s, "versions kept", nil)
	wantVersions(t, s, "vbk", "three versions over a null one", []string{
		"k:" + v4.Version + ":latest", "k:" + v3.Version, "k:" + v2.Version, "k:" + n0.Version + ":null"})
	u, err := s.BucketUsage(ctx, "vbk")
	noErr(t, "BucketUsage", err)
	if u.Objects != 4 {
		t.Fatalf("usage counts %d objects, want every version: 4", u.Objects)
	}
	for _, m := range []*cairn.Manifest{n0, v2, v3, v4} {
		id := m.Version
		if !m.Versioned {
			id = cairn.NullVersionID
		}
		got, err := s.ObjectVersion(ctx, "vbk", "k", id)
		noErr(t, "ObjectVersion "+id, err)
		sameManifest(t, "ObjectVersion "+id, got.Manifest, m)
		if got.Latest != (m == v4) || got.Marker || got.Version != m.Version {
			t.Fatalf("ObjectVersion %s: %+v", id, got)
		}
	}
	_, err = s.ObjectVersion(ctx, "vbk", "k", vers(t, 9))
	wantErr(t, "ObjectVersion of a version never written", err, cairn.ErrNotFound)
	_, err = s.ObjectVersion(ctx, "vbk", "k", "v1")
	wantErr(t, "ObjectVersion malformed", err, cairn.ErrInvalid)
	_, err = s.DeleteVersion(ctx, "vbk", "k", "")
	wantErr(t, "DeleteVersion without an id", err, cairn.ErrInvalid)
	wantErr(t, "DeleteBucket with versions", s.DeleteBucket(ctx, "vbk"), cairn.ErrBucketNotEmpty)

	// Repair of a noncurrent version: UpdateManifest finds it.
	fixed := *v3
	fixed.Shards = slices.Clone(v3.Shards)
	fixed.Shards[1].Disk = "node8/disk8"
	noErr(t, "UpdateManifest of a noncurrent version", s.UpdateManifest(ctx, &fixed, v3))
	wantQueued(t, s, "repair of a noncurrent version", map[string][]cairn.ShardFile{
		cairn.CleanupRepair: {{Disk: v3.Shards[1].Disk, Name: cairn.ShardName(v3.Version, 1)}}})
	ms, more, err := s.ListVersionManifests(ctx, "vbk", "", "", 2)
	noErr(t, "ListVersionManifests", err)
	if !more || len(ms) != 2 {
		t.Fatalf("ListVersionManifests page of 2: %d manifests, more %v", len(ms), more)
	}
	sameManifest(t, "ListVersionManifests[0]", ms[0], &fixed)
	sameManifest(t, "ListVersionManifests[1]", ms[1], v2)
	ms, more, err = s.ListVersionManifests(ctx, "vbk", "k", v2.Version, 2)
	noErr(t, "ListVersionManifests page 2", err)
	if more || len(ms) != 1 {
		t.Fatalf("ListVersionManifests page 2: %d manifests, more %v", len(ms), more)
	}
	sameManifest(t, "ListVersionManifests page 2", ms[0], n0)

	// A delete marker hides the object; deleting it brings v4 back.
	mk, err := s.PutDeleteMarker(ctx, "vbk", "k", cairn.DeleteMarker{Version: vers(t, 5), Versioned: true, Created: time.Date(2025, 6, 7, 8, 9, 5, 0, time.UTC)})
	noErr(t, "PutDeleteMarker", err)
	if !mk.Marker || !mk.Latest || mk.Version != vers(t, 5) {
		t.Fatalf("PutDeleteMarker returned %+v", mk)
	}
	_, err = s.Manifest(ctx, "vbk", "k")
	wantErr(t, "Manifest under a delete marker", err, cairn.ErrNotFound)
	lat, err := s.ObjectVersion(ctx, "vbk", "k", "")
	noErr(t, "ObjectVersion latest", err)
	if !lat.Marker || !lat.Latest || lat.Version != mk.Version {
		t.Fatalf("latest under a marker: %+v", lat)
	}
	objs, _, err := s.ListObjects(ctx, "vbk", "", "", 10)
	noErr(t, "ListObjects", err)
	if len(objs) != 0 {
		t.Fatalf("ListObjects under a delete marker: %v", objs)
	}
	// A marker whose proposed version is older than the key's newest
	// still goes first.
	mk2, err := s.PutDeleteMarker(ctx, "vbk", "k", cairn.DeleteMarker{Version: vers(t, 3), Versioned: true})
	noErr(t, "PutDeleteMarker (an old clock)", err)
	if mk2.Version >= mk.Version {
		t.Fatalf("second marker %s does not sort before %s", mk2.Version, mk.Version)
	}
	wantVersions(t, s, "vbk", "two markers", []string{
		"k:" + mk2.Version + ":marker:latest", "k:" + mk.Version + ":marker", "k:" + v4.Version, "k:" + v3.Version,
		"k:" + v2.Version, "k:" + n0.Version + ":null"})
	wantQueued(t, s, "markers", nil)
	for _, m := range []cairn.ObjectVersion{mk2, mk} {
		got, err := s.DeleteVersion(ctx, "vbk", "k", m.Version)
		noErr(t, "DeleteVersion of a marker", err)
		if !got.Marker || !got.Latest {
			t.Fatalf("DeleteVersion of the latest marker returned %+v", got)
		}
	}
	cur, err := s.Manifest(ctx, "vbk", "k")
	noErr(t, "Manifest after deleting the markers", err)
	sameManifest(t, "restored current", cur, v4)

	// Deleting the current version makes the next one current.
	got, err := s.DeleteVersion(ctx, "vbk", "k", v4.Version)
	noErr(t, "DeleteVersion current", err)
	if !got.Latest || got.Manifest == nil {
		t.Fatalf("DeleteVersion current returned %+v", got)
	}
	wantQueued(t, s, "current version deleted", map[string][]cairn.ShardFile{cairn.CleanupDelete: v4.Files()})
	cur, err = s.Manifest(ctx, "vbk", "k")
	noErr(t, "Manifest after deleting the current", err)
	sameManifest(t, "next current", cur, &fixed)
	_, err = s.DeleteVersion(ctx, "vbk", "k", v4.Version)
	wantErr(t, "DeleteVersion twice", err, cairn.ErrNotFound)

	// Suspended: a null write replaces the null version, wherever it is.
	noErr(t, "suspend", s.SetBucketVersioning(ctx, "vbk", cairn.VersioningSuspended))
	n6 := versioned(t, "vbk", "k", 6, false)
	noErr(t, "commit a null version", s.CommitManifest(ctx, n6, fixed.Version))
	wantQueued(t, s, "null version replaced", map[string][]cairn.ShardFile{cairn.CleanupDelete: n0.Files()})
	n7 := versioned(t, "vbk", "k", 7, false)
	n7.Shards[2].Disk = "node7/disk7"
	noErr(t, "commit a null over the null", s.CommitManifest(ctx, n7, n6.Version))
	wantQueued(t, s, "null current overwritten", map[string][]cairn.ShardFile{cairn.CleanupOverwrite: cairn.Superseded(n6, n7)})
	nm, err := s.PutDeleteMarker(ctx, "vbk", "k", cairn.DeleteMarker{Version: vers(t, 8)})
	noErr(t, "null delete marker", err)
	wantQueued(t, s, "null marker replaces the null", map[string][]cairn.ShardFile{cairn.CleanupDelete: n7.Files()})
	wantVersions(t, s, "vbk", "suspended", []string{
		"k:" + nm.Version + ":null:marker:latest", "k:" + fixed.Version, "k:" + v2.Version})
	nv, err := s.ObjectVersion(ctx, "vbk", "k", cairn.NullVersionID)
	noErr(t, "ObjectVersion null", err)
	if !nv.Marker || nv.Version != nm.Version {
		t.Fatalf("null version: %+v", nv)
	}

	// Listing positions: prefix, and several keys.
	for i, key := range []string{"a", "k/x", "ka", "z"} {
		m := versioned(t, "vbk", key, 10+i, true)
		noErr(t, "commit "+key, s.CommitManifest(ctx, m, ""))
	}
	all := describe(listAll(t, s, "vbk", "", 2))
	if len(all) != 7 || all[0][:2] != "a:" || all[1][:2] != "k:" || all[4][:4] != "k/x:" || all[5][:3] != "ka:" {
		t.Fatalf("ListVersions of several keys: %q", all)
	}
	pre := describe(listAll(t, s, "vbk", "k", 1))
	if len(pre) != 5 || pre[4][:3] != "ka:" {
		t.Fatalf("ListVersions prefix k: %q", pre)
	}
	vs, _, err := s.ListVersions(ctx, "vbk", "", "k", "", 10)
	noErr(t, "ListVersions after every version of k", err)
	if d := describe(vs); len(d) != 3 || d[0][:4] != "k/x:" {
		t.Fatalf("ListVersions after key k: %q", d)
	}

	// Usage: every object version, no markers.
	u, err = s.BucketUsage(ctx, "vbk")
	noErr(t, "BucketUsage", err)
	if u.Objects != 6 {
		t.Fatalf("usage counts %d objects, want 6 (2 versions of k, 4 keys)", u.Objects)
	}
	// DeleteManifest of the current version brings the next one back too.
	a2 := versioned(t, "vbk", "a", 20, true)
	a1, err := s.Manifest(ctx, "vbk", "a")
	noErr(t, "Manifest a", err)
	noErr(t, "commit a2", s.CommitManifest(ctx, a2, a1.Version))
	_, err = s.DeleteManifest(ctx, "vbk", "a", a2.Version)
	noErr(t, "DeleteManifest in a versioned bucket", err)
	cur, err = s.Manifest(ctx, "vbk", "a")
	noErr(t, "Manifest after DeleteManifest", err)
	sameManifest(t, "current after DeleteManifest", cur, a1)
	wantQueued(t, s, "DeleteManifest", map[string][]cairn.ShardFile{cairn.CleanupDelete: a2.Files()})

	// Emptying the bucket version by version lets it go.
	for _, v := range listAll(t, s, "vbk", "", meta.MaxPage) {
		if _, err := s.DeleteVersion(ctx, "vbk", v.Key, v.ID()); err != nil {
			t.Fatalf("DeleteVersion %s %s: %v", v.Key, v.ID(), err)
		}
	}
	u, err = s.BucketUsage(ctx, "vbk")
	noErr(t, "BucketUsage", err)
	if u != (cairn.Tally{}) {
		t.Fatalf("usage of an emptied bucket: %+v", u)
	}
	noErr(t, "DeleteBucket emptied", s.DeleteBucket(ctx, "vbk"))
}

// testVersionsRace: writers commit versions of one key and put delete
// markers at once; afterwards every write that succeeded is one version,
// exactly one version is latest (the first listed), the current object
// is it when it is no marker, and usage counts every object version.
func testVersionsRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "vrace")
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "vrace", cairn.VersioningEnabled))
	const writers, ops = 6, 5
	var (
		mu      sync.Mutex
		objects int
		want    []string
	)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range ops {
				n := 1 + w*ops + i
				if (w+i)%3 == 2 {
					mk, err := s.PutDeleteMarker(ctx, "vrace", "k", cairn.DeleteMarker{Version: vers(t, n), Versioned: true})
					if err != nil {
						t.Errorf("PutDeleteMarker: %v", err)
						return
					}
					mu.Lock()
					want = append(want, mk.Version)
					mu.Unlock()
					continue
				}
				m := versioned(t, "vrace", "k", n, true)
				for try := 0; ; try++ {
					prev := ""
					if cur, err := s.Manifest(ctx, "vrace", "k"); err == nil {
						prev = cur.Version
					}
					err := s.CommitManifest(ctx, m, prev)
					if err == nil {
						break
					}
					if !errors.Is(err, cairn.ErrConflict) || try == 50 {
						t.Errorf("CommitManifest: %v", err)
						return
					}
				}
				mu.Lock()
				want, objects = append(want, m.Version), objects+1
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	vs := listAll(t, s, "vrace", "", 7)
	var got []string
	for i, v := range vs {
		got = append(got, v.Version)
		if v.Latest != (i == 0) {
			t.Fatalf("version %d of %d (%s) has Latest %v", i, len(vs), v.Version, v.Latest)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("versions listed %q, written %q", got, want)
	}
	cur, err := s.Manifest(ctx, "vrace", "k")
	switch {
	case vs[0].Marker:
		wantErr(t, "Manifest under a marker", err, cairn.ErrNotFound)
	case err != nil || cur.Version != vs[0].Version:
		t.Fatalf("current %v (%v), latest listed %s", cur, err, vs[0].Version)
	}
	u, err := s.BucketUsage(ctx, "vrace")
	noErr(t, "BucketUsage", err)
	if u.Objects != int64(objects) {
		t.Fatalf("usage counts %d objects, %d object versions were written", u.Objects, objects)
	}
}

// testVersionsNUL: keys holding NUL bytes keep their versions apart and
// in key order (the etcd store escapes them in the versions keyspace).
func testVersionsNUL(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "vnul")
	noErr(t, "SetBucketVersioning", s.SetBucketVersioning(ctx, "vnul", cairn.VersioningEnabled))
	keys := []string{"n", "n\x00", "n\x00a", "n\x01"}
	n := 0
	for _, key := range keys {
		prev := ""
		for range 2 {
			n++
			m := versioned(t, "vnul", key, n, true)
			noErr(t, fmt.Sprintf("commit %q", key), s.CommitManifest(ctx, m, prev))
			prev = m.Version
		}
	}
	_, err := s.PutDeleteMarker(ctx, "vnul", "n", cairn.DeleteMarker{Version: vers(t, 50), Versioned: true})
	noErr(t, "PutDeleteMarker n", err)
	for _, limit := range []int{1, 3, meta.MaxPage} {
		var got []string
		for _, v := range listAll(t, s, "vnul", "", limit) {
			got = append(got, fmt.Sprintf("%q", v.Key))
		}
		want := []string{`"n"`, `"n"`, `"n"`, `"n\x00"`, `"n\x00"`, `"n\x00a"`, `"n\x00a"`, `"n\x01"`, `"n\x01"`}
		if !slices.Equal(got, want) {
			t.Fatalf("ListVersions (pages of %d): %v, want %v", limit, got, want)
		}
	}
	for _, key := range keys[1:] { // from (key, ""): the key's own noncurrent version first
		ms, _, err := s.ListVersionManifests(ctx, "vnul", key, "", 1)
		noErr(t, "ListVersionManifests", err)
		if len(ms) != 1 || ms[0].Key != key {
			t.Fatalf("ListVersionManifests from %q: %v", key, ms)
		}
	}
	v, err := s.ObjectVersion(ctx, "vnul", "n", "")
	noErr(t, "ObjectVersion latest of n", err)
	if !v.Marker || !v.Latest {
		t.Fatalf("latest of n: %+v", v)
	}
}
