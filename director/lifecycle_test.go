package director

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	"cairn/meta/mem"
)

// lcEnv is a metadata store with disks and a data path to write objects
// through, for the lifecycle runner's tests.
type lcEnv struct {
	store *mem.Store
	data  *client.Client
}

func newLCEnv(t *testing.T) *lcEnv {
	t.Helper()
	ctx := context.Background()
	e := &lcEnv{store: mem.New()}
	t.Cleanup(func() { e.store.Close() })
	for n := 1; n <= 6; n++ {
		id := cairn.NodeID(fmt.Sprintf("n%d", n))
		if err := e.store.PutNode(ctx, cairn.Node{ID: id, Addr: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := e.store.PutDisk(ctx, cairn.Disk{ID: cairn.DiskID(string(id) + "/d1"), Node: id, Capacity: 1 << 30, State: cairn.DiskUp}); err != nil {
			t.Fatal(err)
		}
	}
	e.data = client.New(e.store, clienttest.NewMemShards(), client.Config{BlockSize: 4096})
	return e
}

func (e *lcEnv) bucket(t *testing.T, name, versioning string, rules ...cairn.LifecycleRule) {
	t.Helper()
	ctx := context.Background()
	if err := e.store.CreateBucket(ctx, cairn.Bucket{Name: name, Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	if versioning != "" {
		if err := e.store.SetBucketVersioning(ctx, name, versioning); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.SetBucketLifecycle(ctx, name, rules); err != nil {
		t.Fatal(err)
	}
}

func (e *lcEnv) put(t *testing.T, bucket, key string) *cairn.Manifest {
	t.Helper()
	m, err := e.data.Put(context.Background(), bucket, key, strings.NewReader(key), client.PutOptions{Size: int64(len(key))})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// versions lists bucket's versions as "key@id[ marker]" lines.
func (e *lcEnv) versions(t *testing.T, bucket string) string {
	t.Helper()
	vs, _, err := e.store.ListVersions(context.Background(), bucket, "", "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vs {
		s := v.Key
		if v.Marker {
			s += " marker"
		}
		if v.Latest {
			s += " latest"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// TestLifecycleRunner stages a week on the bubble's virtual clock: an
// unversioned bucket's objects expire by prefix and its upload is
// aborted; in a versioned bucket the current version is hidden by a
// delete marker, the noncurrent versions are deleted a day after they
// became noncurrent, and the delete marker left alone is removed. Each
// step happens at the midnight S3's rounding gives, not before.
func TestLifecycleRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		e := newLCEnv(t)
		day := 24 * time.Hour
		t0 := time.Now().UTC() // the bubble starts at midnight
		e.bucket(t, "logs", "", cairn.LifecycleRule{ID: "tmp", Enabled: true, Filter: cairn.LifecycleFilter{Prefix: "tmp/"},
			Expiration: &cairn.LifecycleExpiration{Days: 2}, AbortUploadDays: 1})
		e.bucket(t, "vers", cairn.VersioningEnabled,
			cairn.LifecycleRule{ID: "age", Enabled: true, Expiration: &cairn.LifecycleExpiration{Days: 3},
				NoncurrentExpiration: &cairn.NoncurrentExpiration{NoncurrentDays: 1}},
			cairn.LifecycleRule{ID: "markers", Enabled: true, Expiration: &cairn.LifecycleExpiration{ExpiredObjectDeleteMarker: true}})
		e.bucket(t, "none", "")
		e.put(t, "logs", "tmp/a")
		e.put(t, "logs", "keep/b")
		e.put(t, "none", "tmp/c")
		if _, err := e.data.CreateUpload(ctx, "logs", "tmp/up", client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		e.put(t, "vers", "k")
		time.Sleep(time.Hour)
		e.put(t, "vers", "k")

		r := NewLifecycleRunner(e.store, LifecycleConfig{Rate: 1000, Page: 2})
		step := func(at time.Duration, wantLogs, wantVers string) cairn.LifecycleProgress {
			t.Helper()
			time.Sleep(time.Until(t0.Add(at)))
			if err := r.Run(ctx, time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := e.versions(t, "logs"); got != wantLogs {
				t.Fatalf("at %v logs: %s, want %s", at, got, wantLogs)
			}
			if got := e.versions(t, "vers"); got != wantVers {
				t.Fatalf("at %v vers: %s, want %s", at, got, wantVers)
			}
			p, err := e.store.LifecycleProgress(ctx)
			if err != nil || !p.Started.IsZero() || p.Bucket != "" {
				t.Fatalf("progress after a pass: %+v, %v", p, err)
			}
			return p
		}
		step(2*day-time.Second, "keep/b latest, tmp/a latest", "k latest, k")
		if us, _ := e.store.Uploads(ctx, "logs"); len(us) != 1 {
			t.Fatalf("upload aborted early: %v", us)
		}
		p := step(2*day, "keep/b latest, tmp/a latest", "k latest")
		if us, _ := e.store.Uploads(ctx, "logs"); len(us) != 0 || p.Last.Aborted != 1 || p.Last.DeletedVersions != 1 {
			t.Fatalf("at 2 days: uploads %v, progress %+v", us, p)
		}
		step(3*day, "keep/b latest", "k latest")
		p = step(4*day+2*time.Hour, "keep/b latest", "k marker latest, k")
		if p.Last.Expired != 1 || p.Passes != 4 || p.Last.Buckets != 2 {
			t.Fatalf("at 4 days: %+v", p)
		}
		step(6*day-time.Second, "keep/b latest", "k marker latest, k")
		step(6*day, "keep/b latest", "k marker latest") // the marker stood in front of v2 when listed
		p = step(6*day, "keep/b latest", "")
		if p.Last.DeletedMarkers != 1 {
			t.Fatalf("marker removal: %+v", p)
		}
		if _, err := e.store.Manifest(ctx, "none", "tmp/c"); err != nil {
			t.Fatalf("a bucket without rules lost an object: %v", err)
		}
	})
}

// TestLifecycleRunnerResumes: a pass cut off (its ctx ended) keeps its
// cursor; the next run finishes it without starting over, and a
// transition with no hook is counted as pending, never applied.
func TestLifecycleRunnerResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newLCEnv(t)
		e.bucket(t, "cold", "", cairn.LifecycleRule{ID: "c", Enabled: true,
			Transitions: []cairn.LifecycleTransition{{Days: 1, StorageClass: "COLD"}}})
		for i := range 6 {
			e.put(t, "cold", fmt.Sprintf("k%d", i))
		}
		time.Sleep(48 * time.Hour)
		// One action a second: the first run is cut off after about three.
		r := NewLifecycleRunner(e.store, LifecycleConfig{Rate: 1, Page: 2})
		ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
		defer cancel()
		if err := r.Run(ctx, time.Now()); err == nil {
			t.Fatal("a cut-off run reported success")
		}
		p, err := e.store.LifecycleProgress(t.Context())
		if err != nil || p.Started.IsZero() || p.Bucket != "cold" || p.After == "" || p.Passes != 0 {
			t.Fatalf("progress of a cut-off pass: %+v, %v", p, err)
		}
		if err := r.Run(t.Context(), time.Now()); err != nil {
			t.Fatal(err)
		}
		p, _ = e.store.LifecycleProgress(t.Context())
		if p.Passes != 1 || p.Last.TransitionsPending < 6 || p.Last.Transitioned != 0 || p.Last.TransitionsPending > 8 {
			t.Fatalf("after the resumed pass: %+v", p)
		}
		if got := e.versions(t, "cold"); strings.Count(got, "latest") != 6 {
			t.Fatalf("a pending transition changed objects: %s", got)
		}
	})
}

// TestLifecycleDuty: the director runs the runner as a duty, on a short
// test day (DayLength): an object expires after "2 days" of an hour each.
func TestLifecycleDuty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newLCEnv(t)
		e.bucket(t, "bkt", "", cairn.LifecycleRule{ID: "x", Enabled: true, Expiration: &cairn.LifecycleExpiration{Days: 2}})
		e.put(t, "bkt", "k")
		r := NewLifecycleRunner(e.store, LifecycleConfig{Every: 10 * time.Minute, DayLength: time.Hour})
		d := Start(e.store, Config{ID: "me", Duties: []Duty{r.Duty()}})
		defer d.Close()
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := e.versions(t, "bkt"); got != "k latest" {
			t.Fatalf("expired before its days: %s", got)
		}
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		if got := e.versions(t, "bkt"); got != "" {
			t.Fatalf("not expired after 4 test days: %s", got)
		}
	})
}

// TestLifecycleKeepsLockedVersions: a noncurrent version under a
// COMPLIANCE retention is due by the rules, but the store refuses to
// delete it; the runner counts the refusal, leaves the version and
// finishes its pass (the unlocked one next to it is deleted).
func TestLifecycleKeepsLockedVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		e := newLCEnv(t)
		e.bucket(t, "locked", cairn.VersioningEnabled, cairn.LifecycleRule{ID: "nc", Enabled: true,
			NoncurrentExpiration: &cairn.NoncurrentExpiration{NoncurrentDays: 1}})
		if err := e.store.SetBucketObjectLock(ctx, "locked", cairn.ObjectLock{}); err != nil {
			t.Fatal(err)
		}
		until := time.Now().Add(365 * 24 * time.Hour)
		if _, err := e.data.Put(ctx, "locked", "a", strings.NewReader("kept"), client.PutOptions{Size: 4,
			Retention: &cairn.Retention{Mode: cairn.LockCompliance, Until: until}}); err != nil {
			t.Fatal(err)
		}
		e.put(t, "locked", "a")
		e.put(t, "locked", "b")
		e.put(t, "locked", "b")
		time.Sleep(3 * 24 * time.Hour)
		r := NewLifecycleRunner(e.store, LifecycleConfig{Rate: 1000})
		if err := r.Run(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got := e.versions(t, "locked"); got != "a latest, a, b latest" {
			t.Fatalf("versions: %s", got)
		}
		p, _ := e.store.LifecycleProgress(ctx)
		if p.Last.Refused != 1 || p.Last.DeletedVersions != 1 {
			t.Fatalf("progress: %+v", p.Last)
		}
	})
}

// TestLifecycleTagFilter: a rule with a tag filter reads the versions'
// tags (from their manifests) and expires only the tagged object.
func TestLifecycleTagFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		e := newLCEnv(t)
		e.bucket(t, "tags", "", cairn.LifecycleRule{ID: "tmp", Enabled: true,
			Filter:     cairn.LifecycleFilter{Prefix: "d/", Tags: map[string]string{"tmp": "yes"}},
			Expiration: &cairn.LifecycleExpiration{Days: 1}})
		for key, tags := range map[string]map[string]string{"d/tagged": {"tmp": "yes", "x": "1"}, "d/other": {"tmp": "no"}, "d/none": nil, "e/tagged": {"tmp": "yes"}} {
			if _, err := e.data.Put(ctx, "tags", key, strings.NewReader(key), client.PutOptions{Size: int64(len(key)), Tags: tags}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * 24 * time.Hour)
		if err := NewLifecycleRunner(e.store, LifecycleConfig{Rate: 1000}).Run(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got := e.versions(t, "tags"); got != "d/none latest, d/other latest, e/tagged latest" {
			t.Fatalf("versions: %s", got)
		}
	})
}
