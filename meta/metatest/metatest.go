package metatest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// Run runs the conformance suite against the stores newStore makes.
// newStore must return a fresh, empty store (its own namespace) each time
// it is called; it is called from parallel subtests. Run closes the stores.
func Run(t *testing.T, newStore func(t *testing.T) meta.Store) {
	tests := []struct {
		name string
		f    func(t *testing.T, s meta.Store)
	}{
		{"Nodes", testNodes},
		{"Disks", testDisks},
		{"PGTable", testPGTable},
		{"PGTableRace", testPGTableRace},
		{"PGTableUpdate", testPGTableUpdate},
		{"Buckets", testBuckets},
		{"ManifestCAS", testManifestCAS},
		{"ManifestRoundTrip", testManifestRoundTrip},
		{"ManifestInvalid", testManifestInvalid},
		{"CommitRace", testCommitRace},
		{"DeleteManifestRace", testDeleteManifestRace},
		{"DeleteBucketRace", testDeleteBucketRace},
		{"DeleteBucketUploads", testDeleteBucketUploads},
		{"DeleteBucketUploadRace", testDeleteBucketUploadRace},
		{"List", testList},
		{"ListBuckets", testListBuckets},
		{"ListPages", testListPages},
		{"Parts", testParts},
		{"ManyRecords", testManyRecords},
		{"Uploads", testUploads},
		{"UploadsByKey", testUploadsByKey},
		{"UploadEncryption", testUploadEncryption},
		{"UploadPartRepair", testUploadPartRepair},
		{"UpdateManifest", testUpdateManifest},
		{"UpdateManifestRace", testUpdateManifestRace},
		{"Usage", testUsage},
		{"UsageRace", testUsageRace},
		{"RepairTasks", testRepairTasks},
		{"RepairTaskPages", testRepairTaskPages},
		{"RepairQueue", testRepairQueue},
		{"Cleanups", testCleanups},
		{"Scrub", testScrub},
		{"Users", testUsers},
		{"CleanupWrites", testCleanupWrites},
		{"Leases", testLeases},
		{"Campaign", testCampaign},
		{"Versions", testVersions},
		{"VersionsRace", testVersionsRace},
		{"VersionsNUL", testVersionsNUL},
		{"Cold", testCold},
		{"RAIDP", testRAIDP},
		{"ObjectLock", testObjectLock},
		{"ObjectLockNull", testObjectLockNull},
		{"ObjectLockRace", testObjectLockRace},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.f(t, s)
		})
	}
}

// ---- helpers ----

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %q", what, err, target)
	}
}

func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mkBucket(t *testing.T, s meta.Store, name string) {
	t.Helper()
	noErr(t, "CreateBucket "+name, s.CreateBucket(t.Context(), cairn.Bucket{
		Name: name, Policy: "rs-4-2", Created: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
	}))
}

// manifest returns a manifest with every field set.
func manifest(bucket, key, version string) *cairn.Manifest {
	return &cairn.Manifest{
		Bucket:      bucket,
		Key:         key,
		Version:     version,
		Size:        12345,
		ETag:        "d41d8cd98f00b204e9800998ecf8427e",
		ContentType: "application/octet-stream",
		UserMeta:    map[string]string{"color": "blue", "x-ünï": "çödé"},
		Created:     time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.UTC),
		Policy:      "rs-2-1",
		Tags:        map[string]string{"team": "blue", "ünï": "çödé"},
		Checksum:    &cairn.Checksum{Algorithm: "CRC32", Value: "AAAAAA==", Type: cairn.ChecksumFullObject},
		Layout: cairn.Layout{
			BlockSize: 4096,
			PG:        7,
			Shards: []cairn.ShardLoc{
				{Disk: "node1/disk1", Size: 16384, CRC: 0xdeadbeef},
				{Disk: "node2/disk1", Size: 16384, CRC: 1},
				{Disk: "node3/disk2", Size: 16384, CRC: 0},
			},
		},
	}
}

func sameManifest(t *testing.T, what string, got, want *cairn.Manifest) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil manifest", what)
	}
	g, w := *got, *want
	if !g.Created.Equal(w.Created) {
		t.Fatalf("%s: Created %v, want %v", what, g.Created, w.Created)
	}
	g.Created, w.Created = time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

// eventually polls cond every 50 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		// real time: leases run out on the store's own clock (etcd's
		// server's), which gives no event to wait on.
		time.Sleep(50 * time.Millisecond)
	}
}

// ---- cluster map ----

func testNodes(t *testing.T, s meta.Store) {
	ctx := t.Context()
	ns, err := s.Nodes(ctx)
	noErr(t, "Nodes on empty store", err)
	if len(ns) != 0 {
		t.Fatalf("Nodes on empty store: %v", ns)
	}
	in := []cairn.Node{
		{ID: "node2", Addr: "127.0.0.1:7002"},
		{ID: "node10", Addr: "127.0.0.1:7010", Labels: cairn.Labels{cairn.LabelRack: "r2"}},
		{ID: "node1", Addr: "127.0.0.1:7001", Labels: cairn.Labels{cairn.LabelRack: "r1", cairn.LabelZone: "z1"}},
	}
	for _, n := range in {
		noErr(t, "PutNode", s.PutNode(ctx, n))
	}
	in[1].Labels[cairn.LabelRack] = "mutated after PutNode"
	in[1].Labels = cairn.Labels{cairn.LabelRack: "r2"}
	in[0].Addr = "10.0.0.2:7002" // re-register with a new address
	noErr(t, "PutNode update", s.PutNode(ctx, in[0]))

	ns, err = s.Nodes(ctx)
	noErr(t, "Nodes", err)
	want := []cairn.Node{in[2], in[1], in[0]} // node1 < node10 < node2
	if !reflect.DeepEqual(ns, want) {
		t.Fatalf("Nodes:\n got %+v\nwant %+v", ns, want)
	}
	ns[0].Labels[cairn.LabelRack] = "mutated result"
	ns, _ = s.Nodes(ctx)
	if ns[0].Labels[cairn.LabelRack] != "r1" {
		t.Fatalf("Nodes returned a map the store still uses")
	}
	wantErr(t, "PutNode without ID", s.PutNode(ctx, cairn.Node{Addr: "x:1"}), cairn.ErrInvalid)
}

func testDisks(t *testing.T, s meta.Store) {
	ctx := t.Context()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	d1 := cairn.Disk{ID: "node1/disk1", Node: "node1", Path: "/d/1", Capacity: 1000, Free: 900, State: cairn.DiskUp, Since: t0}
	d2 := cairn.Disk{ID: "node1/disk2", Node: "node1", Path: "/d/2", Capacity: 2000, Free: 2000} // no state yet
	d0 := cairn.Disk{ID: "node0/disk9", Node: "node0", Path: "/d/9", Capacity: 10, Free: 1, State: cairn.DiskDraining, Since: t0}
	for _, d := range []cairn.Disk{d1, d2, d0} {
		noErr(t, "PutDisk", s.PutDisk(ctx, d))
	}
	disks := func() []cairn.Disk {
		t.Helper()
		ds, err := s.Disks(ctx)
		noErr(t, "Disks", err)
		return ds
	}
	same := func(what string, got, want []cairn.Disk) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d disks, want %d: %+v", what, len(got), len(want), got)
		}
		for i := range got {
			g, w := got[i], want[i]
			if !g.Since.Equal(w.Since) {
				t.Fatalf("%s: disk %s Since %v, want %v", what, g.ID, g.Since, w.Since)
			}
			g.Since, w.Since = time.Time{}, time.Time{}
			if g != w {
				t.Fatalf("%s:\n got %+v\nwant %+v", what, g, w)
			}
		}
	}
	same("Disks", disks(), []cairn.Disk{d0, d1, d2})

	// Re-registering updates capacity and free space but keeps the state.
	up := d1
	up.Free, up.Capacity, up.State, up.Since = 800, 1100, cairn.DiskDown, t0.Add(time.Hour)
	noErr(t, "PutDisk again", s.PutDisk(ctx, up))
	want1 := d1
	want1.Free, want1.Capacity = 800, 1100
	// A disk with no stored state takes the one given.
	up2 := d2
	up2.State, up2.Since = cairn.DiskUp, t0.Add(2*time.Hour)
	noErr(t, "PutDisk state-less disk", s.PutDisk(ctx, up2))
	same("Disks after PutDisk", disks(), []cairn.Disk{d0, want1, up2})

	t1 := t0.Add(3 * time.Hour)
	noErr(t, "SetDiskState", s.SetDiskState(ctx, d1.ID, cairn.DiskSuspect, t1))
	want1.State, want1.Since = cairn.DiskSuspect, t1
	same("Disks after SetDiskState", disks(), []cairn.Disk{d0, want1, up2})

	wantErr(t, "SetDiskState of unknown disk", s.SetDiskState(ctx, "nodeX/disk1", cairn.DiskDown, t1), cairn.ErrNotFound)
	wantErr(t, "SetDiskState to a bad state", s.SetDiskState(ctx, d1.ID, "melted", t1), cairn.ErrInvalid)
	wantErr(t, "PutDisk without ID", s.PutDisk(ctx, cairn.Disk{Node: "n"}), cairn.ErrInvalid)

	// ChangeDisk is a compare-and-swap on the state; it sets the reason,
	// keeps Since when given none, and changes the trusted volume only
	// when given one.
	t2 := t1.Add(time.Hour)
	got, err := s.ChangeDisk(ctx, d1.ID, cairn.DiskChange{From: cairn.DiskSuspect, To: cairn.DiskDown, Since: t2, Reason: "gone"})
	noErr(t, "ChangeDisk", err)
	want1.State, want1.Since, want1.Reason = cairn.DiskDown, t2, "gone"
	same("ChangeDisk's result", []cairn.Disk{got}, []cairn.Disk{want1})
	_, err = s.ChangeDisk(ctx, d1.ID, cairn.DiskChange{From: cairn.DiskSuspect, To: cairn.DiskUp, Since: t2})
	wantErr(t, "ChangeDisk from a state the disk is not in", err, cairn.ErrConflict)
	_, err = s.ChangeDisk(ctx, d1.ID, cairn.DiskChange{To: cairn.DiskDown, Reason: "replaced", Trust: "v2"})
	noErr(t, "ChangeDisk of the reason and trust", err)
	want1.Reason, want1.Trusted = "replaced", "v2"
	same("Disks after ChangeDisk", disks(), []cairn.Disk{d0, want1, up2})
	_, err = s.ChangeDisk(ctx, "nodeX/disk1", cairn.DiskChange{To: cairn.DiskUp})
	wantErr(t, "ChangeDisk of an unknown disk", err, cairn.ErrNotFound)
	_, err = s.ChangeDisk(ctx, d1.ID, cairn.DiskChange{To: "melted"})
	wantErr(t, "ChangeDisk to a bad state", err, cairn.ErrInvalid)

	// A registration rewrites what the node owns (volume, check, fault)
	// and keeps what the director owns (state, since, reason, trust); a
	// first registration trusts the volume it reports.
	reg := want1
	reg.Volume, reg.Check, reg.Fault, reg.Trusted, reg.Reason, reg.State = "v3", cairn.CheckOK, "slow", "v3", "", cairn.DiskUp
	noErr(t, "PutDisk with a volume", s.PutDisk(ctx, reg))
	want1.Volume, want1.Check, want1.Fault = "v3", cairn.CheckOK, "slow"
	d3 := cairn.Disk{ID: "node1/disk3", Node: "node1", State: cairn.DiskUp, Since: t0, Volume: "v9"}
	noErr(t, "PutDisk of a new disk with a volume", s.PutDisk(ctx, d3))
	d3.Trusted = "v9"
	same("Disks after registrations", disks(), []cairn.Disk{d0, want1, up2, d3})
	noErr(t, "SetDiskState", s.SetDiskState(ctx, d1.ID, cairn.DiskUp, t2))
	want1.State, want1.Reason = cairn.DiskUp, ""
	same("SetDiskState clears the reason", disks(), []cairn.Disk{d0, want1, up2, d3})
}

// ---- placement groups ----

func pgTable(width, salt int) cairn.PGTable {
	t := cairn.PGTable{Width: width, DistinctNodes: salt%2 == 0}
	for i := range 4 {
		pg := cairn.PG{ID: i}
		for j := range width {
			pg.Disks = append(pg.Disks, cairn.DiskID(fmt.Sprintf("node%d/disk%d", (i+j+salt)%9, salt)))
		}
		t.PGs = append(t.PGs, pg)
	}
	return t
}

func testPGTable(t *testing.T, s meta.Store) {
	ctx := t.Context()
	_, err := s.PGTable(ctx, 6)
	wantErr(t, "PGTable before create", err, cairn.ErrNotFound)

	t6 := pgTable(6, 0)
	got, err := s.CreatePGTable(ctx, t6)
	noErr(t, "CreatePGTable", err)
	if !reflect.DeepEqual(got, t6) {
		t.Fatalf("CreatePGTable returned %+v, want %+v", got, t6)
	}
	got, err = s.CreatePGTable(ctx, pgTable(6, 1))
	noErr(t, "CreatePGTable again", err)
	if !reflect.DeepEqual(got, t6) {
		t.Fatalf("second CreatePGTable returned %+v, want the first table %+v", got, t6)
	}
	t3 := pgTable(3, 2)
	_, err = s.CreatePGTable(ctx, t3)
	noErr(t, "CreatePGTable width 3", err)
	for _, want := range []cairn.PGTable{t6, t3} {
		got, err := s.PGTable(ctx, want.Width)
		noErr(t, "PGTable", err)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("PGTable(%d) = %+v, want %+v", want.Width, got, want)
		}
	}
	got.PGs[0].Disks[0] = "mutated"
	if again, _ := s.PGTable(ctx, 3); again.PGs[0].Disks[0] == "mutated" {
		t.Fatalf("PGTable returned a slice the store still uses")
	}
	_, err = s.CreatePGTable(ctx, cairn.PGTable{Width: 0})
	wantErr(t, "CreatePGTable width 0", err, cairn.ErrInvalid)
}

func testPGTableUpdate(t *testing.T, s meta.Store) {
	ctx := t.Context()
	next := pgTable(4, 1)
	next.Epoch = 1
	wantErr(t, "UpdatePGTable before create", s.UpdatePGTable(ctx, next), cairn.ErrNotFound)
	if _, err := s.CreatePGTable(ctx, pgTable(4, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePGTable(ctx, pgTable(2, 0)); err != nil {
		t.Fatal(err)
	}
	noErr(t, "UpdatePGTable epoch 1", s.UpdatePGTable(ctx, next))
	got, err := s.PGTable(ctx, 4)
	noErr(t, "PGTable", err)
	if !reflect.DeepEqual(got, next) {
		t.Fatalf("after UpdatePGTable: %+v, want %+v", got, next)
	}
	stale := pgTable(4, 2)
	stale.Epoch = 1 // computed from epoch 0, which is gone
	wantErr(t, "UpdatePGTable from a stale epoch", s.UpdatePGTable(ctx, stale), cairn.ErrConflict)
	wantErr(t, "UpdatePGTable epoch 0", s.UpdatePGTable(ctx, pgTable(4, 3)), cairn.ErrInvalid)
	wantErr(t, "UpdatePGTable width 0", s.UpdatePGTable(ctx, cairn.PGTable{Epoch: 1}), cairn.ErrInvalid)
	all, err := s.PGTables(ctx)
	noErr(t, "PGTables", err)
	if len(all) != 2 || all[0].Width != 2 || !reflect.DeepEqual(all[1], next) {
		t.Fatalf("PGTables = %+v, want widths 2 and 4 (the updated one)", all)
	}
}

func testPGTableRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	const n = 8
	got := make([]cairn.PGTable, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = s.CreatePGTable(ctx, pgTable(9, i))
		})
	}
	close(start)
	wg.Wait()
	stored, err := s.PGTable(ctx, 9)
	noErr(t, "PGTable", err)
	for i := range n {
		noErr(t, fmt.Sprintf("creator %d", i), errs[i])
		if !reflect.DeepEqual(got[i], stored) {
			t.Fatalf("creator %d got %+v, but the stored table is %+v", i, got[i], stored)
		}
	}
}

// ---- buckets ----

func testBuckets(t *testing.T, s meta.Store) {
	ctx := t.Context()
	_, err := s.Bucket(ctx, "photos")
	wantErr(t, "Bucket before create", err, cairn.ErrNotFound)
	b := cairn.Bucket{Name: "photos", Policy: "lrc-6-2-2", Owner: "alice", Created: time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)}
	noErr(t, "CreateBucket", s.CreateBucket(ctx, b))
	wantErr(t, "CreateBucket twice", s.CreateBucket(ctx, cairn.Bucket{Name: "photos"}), cairn.ErrExists)
	mkBucket(t, s, "archive")
	mkBucket(t, s, "photos.2025")

	got, err := s.Bucket(ctx, "photos")
	noErr(t, "Bucket", err)
	if !got.Created.Equal(b.Created) || got.Name != b.Name || got.Policy != b.Policy || got.Owner != b.Owner {
		t.Fatalf("Bucket = %+v, want %+v", got, b)
	}
	// Default encryption.
	noErr(t, "SetBucketEncryption", s.SetBucketEncryption(ctx, "photos", cairn.SSES3))
	if got, err := s.Bucket(ctx, "photos"); err != nil || got.Encryption != cairn.SSES3 || got.Policy != b.Policy || got.Owner != b.Owner {
		t.Fatalf("after SetBucketEncryption: %+v, %v", got, err)
	}
	wantErr(t, "SetBucketEncryption sse-c", s.SetBucketEncryption(ctx, "photos", cairn.SSEC), cairn.ErrInvalid)
	wantErr(t, "SetBucketEncryption of a missing bucket", s.SetBucketEncryption(ctx, "nope", cairn.SSES3), cairn.ErrNotFound)
	noErr(t, "SetBucketEncryption none", s.SetBucketEncryption(ctx, "photos", ""))
	if got, _ := s.Bucket(ctx, "photos"); got.Encryption != "" {
		t.Fatalf("after removing the default encryption: %q", got.Encryption)
	}
	bucketAttrs(t, s, b)

	bs, err := s.Buckets(ctx)
	noErr(t, "Buckets", err)
	var names []string
	for _, b := range bs {
		names = append(names, b.Name)
	}
	if want := []string{"archive", "photos", "photos.2025"}; !slices.Equal(names, want) {
		t.Fatalf("Buckets = %v, want %v", names, want)
	}

	for _, bad := range []string{"", "ab", "Upper", "a/b", "has space", "-x-", strings.Repeat("a", 64), "192.168.1.1"} {
		wantErr(t, fmt.Sprintf("CreateBucket(%q)", bad), s.CreateBucket(ctx, cairn.Bucket{Name: bad}), cairn.ErrInvalid)
	}

	// Non-empty buckets stay.
	noErr(t, "CommitManifest", s.CommitManifest(ctx, manifest("photos", "cat.jpg", "v1"), ""))
	wantErr(t, "DeleteBucket non-empty", s.DeleteBucket(ctx, "photos"), cairn.ErrBucketNotEmpty)
	if _, err := s.Bucket(ctx, "photos"); err != nil {
		t.Fatalf("bucket gone after a refused delete: %v", err)
	}
	// The object in "photos" does not make "photos.2025" non-empty.
	noErr(t, "DeleteBucket photos.2025", s.DeleteBucket(ctx, "photos.2025"))
	_, err = s.DeleteManifest(ctx, "photos", "cat.jpg", "")
	noErr(t, "DeleteManifest", err)
	noErr(t, "DeleteBucket emptied", s.DeleteBucket(ctx, "photos"))
	_, err = s.Bucket(ctx, "photos")
	wantErr(t, "Bucket after delete", err, cairn.ErrNotFound)
	wantErr(t, "DeleteBucket twice", s.DeleteBucket(ctx, "photos"), cairn.ErrNotFound)
	wantErr(t, "CommitManifest to a deleted bucket", s.CommitManifest(ctx, manifest("photos", "k", "v2"), ""), cairn.ErrNotFound)
	_, _, err = s.ListManifests(ctx, "photos", "", "", 10)
	wantErr(t, "ListManifests of a deleted bucket", err, cairn.ErrNotFound)

	// A re-created bucket starts empty.
	mkBucket(t, s, "photos")
	ms, more, err := s.ListManifests(ctx, "photos", "", "", 10)
	noErr(t, "ListManifests", err)
	if len(ms) != 0 || more {
		t.Fatalf("re-created bucket lists %d objects (more=%v)", len(ms), more)
	}
}

// ---- manifests ----

func testManifestCAS(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "cas")
	_, err := s.Manifest(ctx, "cas", "obj")
	wantErr(t, "Manifest before commit", err, cairn.ErrNotFound)
	_, err = s.Manifest(ctx, "nobucket", "obj")
	wantErr(t, "Manifest in a missing bucket", err, cairn.ErrNotFound)
	wantErr(t, "CommitManifest to a missing bucket", s.CommitManifest(ctx, manifest("nobucket", "obj", "v1"), ""), cairn.ErrNotFound)

	wantErr(t, "replace a missing object", s.CommitManifest(ctx, manifest("cas", "obj", "v1"), "v0"), cairn.ErrConflict)
	m1 := manifest("cas", "obj", "v1")
	noErr(t, "create", s.CommitManifest(ctx, m1, ""))
	noErr(t, "create again (a retry of the same version)", s.CommitManifest(ctx, m1, ""))
	wantErr(t, "create over an existing object", s.CommitManifest(ctx, manifest("cas", "obj", "v2"), ""), cairn.ErrConflict)
	wantErr(t, "replace with a stale version", s.CommitManifest(ctx, manifest("cas", "obj", "v2"), "v0"), cairn.ErrConflict)
	// Versions that share a prefix with the stored one are other versions.
	wantErr(t, "replace with a prefix of the version", s.CommitManifest(ctx, manifest("cas", "obj", "v2"), "v"), cairn.ErrConflict)
	wantErr(t, "replace with an extension of the version", s.CommitManifest(ctx, manifest("cas", "obj", "v2"), "v10"), cairn.ErrConflict)

	m2 := manifest("cas", "obj", "v2")
	m2.Size = 99
	noErr(t, "replace", s.CommitManifest(ctx, m2, "v1"))
	got, err := s.Manifest(ctx, "cas", "obj")
	noErr(t, "Manifest", err)
	sameManifest(t, "Manifest after replace", got, m2)
	noErr(t, "replace again (a retry)", s.CommitManifest(ctx, m2, "v1"))
	wantErr(t, "re-commit the replaced version", s.CommitManifest(ctx, m1, ""), cairn.ErrConflict)

	_, err = s.DeleteManifest(ctx, "cas", "obj", "v1")
	wantErr(t, "DeleteManifest with a stale version", err, cairn.ErrConflict)
	_, err = s.DeleteManifest(ctx, "cas", "obj", "v")
	wantErr(t, "DeleteManifest with a version prefix", err, cairn.ErrConflict)
	del, err := s.DeleteManifest(ctx, "cas", "obj", "v2")
	noErr(t, "DeleteManifest", err)
	sameManifest(t, "deleted manifest", del, m2)
	_, err = s.DeleteManifest(ctx, "cas", "obj", "v2")
	wantErr(t, "DeleteManifest twice", err, cairn.ErrNotFound)
	_, err = s.DeleteManifest(ctx, "cas", "obj", "")
	wantErr(t, "DeleteManifest of a missing object", err, cairn.ErrNotFound)
	_, err = s.DeleteManifest(ctx, "nobucket", "obj", "")
	wantErr(t, "DeleteManifest in a missing bucket", err, cairn.ErrNotFound)
	_, err = s.Manifest(ctx, "cas", "obj")
	wantErr(t, "Manifest after delete", err, cairn.ErrNotFound)

	// Any version goes with "".
	noErr(t, "create after delete", s.CommitManifest(ctx, manifest("cas", "obj", "v3"), ""))
	del, err = s.DeleteManifest(ctx, "cas", "obj", "")
	noErr(t, "DeleteManifest any version", err)
	if del.Version != "v3" {
		t.Fatalf("DeleteManifest returned version %q, want v3", del.Version)
	}

	// AnyVersion: over no object, over whichever is current, and again
	// (a retry); the replaced version's files are queued.
	wantErr(t, "AnyVersion in a missing bucket", s.CommitManifest(ctx, manifest("nobucket", "obj", "v4"), meta.AnyVersion), cairn.ErrNotFound)
	noErr(t, "AnyVersion over no object", s.CommitManifest(ctx, manifest("cas", "obj", "v4"), meta.AnyVersion))
	before, err := s.Cleanups(ctx, time.Now().Add(time.Hour), meta.MaxPage)
	noErr(t, "Cleanups", err)
	m5 := manifest("cas", "obj", "v5")
	noErr(t, "AnyVersion over v4", s.CommitManifest(ctx, m5, meta.AnyVersion))
	noErr(t, "AnyVersion again (a retry)", s.CommitManifest(ctx, m5, meta.AnyVersion))
	got, err = s.Manifest(ctx, "cas", "obj")
	noErr(t, "Manifest", err)
	sameManifest(t, "Manifest after AnyVersion", got, m5)
	after, err := s.Cleanups(ctx, time.Now().Add(time.Hour), meta.MaxPage)
	noErr(t, "Cleanups", err)
	if len(after) != len(before)+1 || after[len(after)-1].Reason != cairn.CleanupOverwrite {
		t.Fatalf("cleanups after an AnyVersion overwrite: %+v, before %+v", after, before)
	}
}

func testManifestRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "rtrip")
	// Versions and keys with characters JSON escapes.
	for i, key := range []string{"plain", `quote"back\slash`, "<html>&amp;", "tab\tnewline\n", "nul\x00byte", "ünïcødé/日本語/😀"} {
		m := manifest("rtrip", key, fmt.Sprintf(`v"%d<&>`, i))
		m.UserMeta = nil
		if i%2 == 0 {
			m.UserMeta = map[string]string{"k": key}
		}
		noErr(t, "CommitManifest "+key, s.CommitManifest(ctx, m, ""))
		want := *m
		want.Shards = slices.Clone(m.Shards)
		want.UserMeta = maps.Clone(m.UserMeta)
		// The store must not keep the caller's manifest.
		m.Size = -1
		m.Shards[0].CRC = 42
		if m.UserMeta != nil {
			m.UserMeta["k"] = "mutated"
		}
		got, err := s.Manifest(ctx, "rtrip", key)
		noErr(t, "Manifest "+key, err)
		sameManifest(t, "Manifest "+key, got, &want)
		// Nor share what it returns.
		got.Shards[1].Disk = "mutated"
		again, _ := s.Manifest(ctx, "rtrip", key)
		sameManifest(t, "Manifest "+key+" again", again, &want)
		noErr(t, "replace "+key, s.CommitManifest(ctx, manifest("rtrip", key, "next"), want.Version))
	}
}

func testManifestInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "inv")
	wantErr(t, "nil manifest", s.CommitManifest(ctx, nil, ""), cairn.ErrInvalid)
	wantErr(t, "empty version", s.CommitManifest(ctx, manifest("inv", "k", ""), ""), cairn.ErrInvalid)
	wantErr(t, "empty key", s.CommitManifest(ctx, manifest("inv", "", "v1"), ""), cairn.ErrInvalid)
	wantErr(t, "key too long", s.CommitManifest(ctx, manifest("inv", strings.Repeat("k", cairn.MaxKeyLen+1), "v1"), ""), cairn.ErrInvalid)
	wantErr(t, "key not UTF-8", s.CommitManifest(ctx, manifest("inv", "bad\xff", "v1"), ""), cairn.ErrInvalid)
	noErr(t, "longest key", s.CommitManifest(ctx, manifest("inv", strings.Repeat("k", cairn.MaxKeyLen), "v1"), ""))
	// The layout rules are cairn's (Manifest.Validate); one of each kind.
	noLayout := manifest("inv", "k", "v1")
	noLayout.Layout = cairn.Layout{}
	wantErr(t, "no layout", s.CommitManifest(ctx, noLayout, ""), cairn.ErrInvalid)
	twoForms := manifest("inv", "k", "v1")
	twoForms.Coded = []cairn.CodedStripe{{Version: "s1", Blocks: []cairn.BlockLoc{{ID: 0, Disk: "node1/disk1"}}}}
	wantErr(t, "shards and coded stripes", s.CommitManifest(ctx, twoForms, ""), cairn.ErrInvalid)
	if _, err := s.Manifest(ctx, "inv", "k"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("an invalid manifest was committed: %v", err)
	}
}

func testCommitRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "race")
	const writers = 8
	for _, key := range []string{"a", "b/c", "d e"} {
		prev := ""
		for round := range 3 {
			errs := make([]error, writers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range writers {
				wg.Go(func() {
					<-start
					errs[w] = s.CommitManifest(ctx, manifest("race", key, fmt.Sprintf("r%dw%d", round, w)), prev)
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for w, err := range errs {
				switch {
				case err == nil && winner >= 0:
					t.Fatalf("key %q round %d: writers %d and %d both won", key, round, winner, w)
				case err == nil:
					winner = w
				default:
					wantErr(t, fmt.Sprintf("key %q round %d: loser %d", key, round, w), err, cairn.ErrConflict)
				}
			}
			if winner < 0 {
				t.Fatalf("key %q round %d: nobody won", key, round)
			}
			m, err := s.Manifest(ctx, "race", key)
			noErr(t, "Manifest", err)
			if want := fmt.Sprintf("r%dw%d", round, winner); m.Version != want {
				t.Fatalf("key %q round %d: stored version %s, winner was %s", key, round, m.Version, want)
			}
			prev = m.Version
		}
	}
}

func testDeleteManifestRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "delrace")
	for i := range 5 {
		key := fmt.Sprintf("k%d", i)
		noErr(t, "CommitManifest", s.CommitManifest(ctx, manifest("delrace", key, "v1"), ""))
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range n {
			wg.Go(func() {
				<-start
				version := "v1"
				if w%2 == 1 {
					version = ""
				}
				_, errs[w] = s.DeleteManifest(ctx, "delrace", key, version)
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
			} else {
				wantErr(t, "losing delete", err, cairn.ErrNotFound)
			}
		}
		if wins != 1 {
			t.Fatalf("%d deletes of one object succeeded, want 1", wins)
		}
	}
}

// testDeleteBucketRace races DeleteBucket against a commit into the empty
// bucket: exactly one may win, and a deleted bucket never keeps a manifest.
func testDeleteBucketRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	deleted, committed := 0, 0
	for i := range 25 {
		name := fmt.Sprintf("drace-%d", i)
		mkBucket(t, s, name)
		var delErr, comErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		// Stagger the two a little differently each trial so that both
		// orders (and the window inside DeleteBucket) get exercised.
		lag := time.Duration(i%5) * 300 * time.Microsecond
		wg.Go(func() { <-start; delErr = s.DeleteBucket(ctx, name) })
		// real time: a stagger of microseconds between two real racers.
		wg.Go(func() { <-start; time.Sleep(lag); comErr = s.CommitManifest(ctx, manifest(name, "obj", "v1"), "") })
		close(start)
		wg.Wait()
		switch {
		case delErr == nil:
			deleted++
			wantErr(t, "commit that lost to DeleteBucket", comErr, cairn.ErrNotFound)
			mkBucket(t, s, name) // an orphaned manifest would show up now
			ms, _, err := s.ListManifests(ctx, name, "", "", 0)
			noErr(t, "ListManifests", err)
			if len(ms) != 0 {
				t.Fatalf("trial %d: the deleted bucket kept %d manifests", i, len(ms))
			}
			_, err = s.Manifest(ctx, name, "obj")
			wantErr(t, "Manifest in a re-created bucket", err, cairn.ErrNotFound)
		case errors.Is(delErr, cairn.ErrBucketNotEmpty):
			committed++
			noErr(t, "commit that beat DeleteBucket", comErr)
			_, err := s.Manifest(ctx, name, "obj")
			noErr(t, "Manifest", err)
		default:
			t.Fatalf("trial %d: DeleteBucket: %v (commit: %v)", i, delErr, comErr)
		}
	}
	t.Logf("DeleteBucket won %d times, CommitManifest %d times", deleted, committed)
}

// testDeleteBucketUploadRace races DeleteBucket against CreateUpload into
// the bucket (which already has an upload, so the delete has uploads to
// abort): the delete always wins over uploads (S3 deletes a bucket with
// uploads in progress), the upload either lands before and is deleted or
// fails with ErrNotFound, and no upload ever outlives its bucket.
func testDeleteBucketUploadRace(t *testing.T, s meta.Store) {
	ctx := t.Context()
	created := time.Unix(1, 0).UTC()
	for i := range 25 {
		name := fmt.Sprintf("urace-%d", i)
		mkBucket(t, s, name)
		noErr(t, "CreateUpload u0", s.CreateUpload(ctx, cairn.Upload{Bucket: name, Key: "k", ID: "u0", Policy: "rs-2-1", Created: created}))
		var delErr, upErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		lag := time.Duration(i%5) * 300 * time.Microsecond
		wg.Go(func() { <-start; delErr = s.DeleteBucket(ctx, name) })
		wg.Go(func() {
			<-start
			// real time: a stagger of microseconds between two real racers.
			time.Sleep(lag)
			upErr = s.CreateUpload(ctx, cairn.Upload{Bucket: name, Key: "k", ID: "u1", Policy: "rs-2-1", Created: created})
		})
		close(start)
		wg.Wait()
		noErr(t, fmt.Sprintf("trial %d: DeleteBucket", i), delErr)
		if upErr != nil {
			wantErr(t, "CreateUpload that lost to DeleteBucket", upErr, cairn.ErrNotFound)
		}
		mkBucket(t, s, name) // an orphaned upload would show up now
		us, err := s.Uploads(ctx, name)
		noErr(t, "Uploads", err)
		if len(us) != 0 {
			t.Fatalf("trial %d: the deleted bucket kept uploads %+v (CreateUpload: %v)", i, us, upErr)
		}
	}
}

// ---- listing ----

// listKeys returns ≥ 300 keys exercising the byte order: "/" at many
// depths, spaces, control bytes, multi-byte UTF-8 (up to U+10FFFF), keys
// that are prefixes of others, and 1024-byte keys.
func listKeys() []string {
	keys := []string{
		"a", "a/", "a/b", "a/b/", "a/b/c", "a\x00", "a\x00b", "a\x01", "a ", "a b", "a\u007f", "a\u0080",
		"a\u07ff", "a\u0800", "a\uffff", "a\U00010000", "a\U0010FFFF", "\x00", "\x00\x00", " ", "~", "!",
		"/", "//", "/leading", "trailing/", "ab", "aa", "b", "é", "e\u0301",
	}
	for i := range 100 {
		keys = append(keys, fmt.Sprintf("dir/%03d", i))
	}
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("dir/sub/%d", i))
	}
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("with space %d .txt", i))
	}
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("日本/%d", i), fmt.Sprintf("😀%d", i), fmt.Sprintf("ü/%d/ö", i))
	}
	for i := range 8 {
		keys = append(keys, strings.Repeat("k", cairn.MaxKeyLen-4)+fmt.Sprintf("%04d", i))
		keys = append(keys, strings.Repeat("é", (cairn.MaxKeyLen-4)/2)+fmt.Sprintf("%04d", i))
	}
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("zz/%02d", i))
	}
	slices.Sort(keys) // byte-wise, as the store must
	return keys
}

func testList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	const b = "lst"
	mkBucket(t, s, b)
	mkBucket(t, s, "lst-x") // a bucket whose name extends this one's
	keys := listKeys()
	if len(keys) < 300 {
		t.Fatalf("only %d keys", len(keys))
	}
	version := func(k string) string { return fmt.Sprintf("v%x", len(k)*31+int(k[len(k)-1])) }

	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for k := range work {
				if err := s.CommitManifest(ctx, manifest(b, k, version(k)), ""); err != nil {
					errs <- fmt.Errorf("commit %q: %w", k, err)
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "dir/000", "lst", "zzz"} {
		noErr(t, "commit to lst-x", s.CommitManifest(ctx, manifest("lst-x", k, "other"), ""))
	}

	model := func(prefix, startAfter string) []string {
		var out []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) && k > startAfter {
				out = append(out, k)
			}
		}
		return out
	}
	check := func(prefix, startAfter string, limit int) []*cairn.Manifest {
		t.Helper()
		ms, more, err := s.ListManifests(ctx, b, prefix, startAfter, limit)
		noErr(t, fmt.Sprintf("ListManifests(%q, %q, %d)", prefix, startAfter, limit), err)
		want := model(prefix, startAfter)
		wantMore := limit > 0 && len(want) > limit
		if wantMore {
			want = want[:limit]
		}
		got := make([]string, len(ms))
		for i, m := range ms {
			got[i] = m.Key
			if m.Bucket != b || m.Version != version(m.Key) {
				t.Fatalf("ListManifests(%q, %q, %d): manifest %q is %s/%s", prefix, startAfter, limit, m.Key, m.Bucket, m.Version)
			}
		}
		if !slices.Equal(got, want) || more != wantMore {
			t.Fatalf("ListManifests(%q, %q, %d):\n got %q more=%v\nwant %q more=%v",
				prefix, startAfter, limit, got, more, want, wantMore)
		}
		if limit > 0 {
			// The listing records say the same, from the same keys.
			os, omore, err := s.ListObjects(ctx, b, prefix, startAfter, limit)
			noErr(t, fmt.Sprintf("ListObjects(%q, %q, %d)", prefix, startAfter, limit), err)
			if len(os) != len(ms) || omore != more {
				t.Fatalf("ListObjects(%q, %q, %d): %d records more=%v, ListManifests %d more=%v", prefix, startAfter, limit, len(os), omore, len(ms), more)
			}
			for i, o := range os {
				if w := ms[i].Info(); !sameInfo(o, w) {
					t.Fatalf("ListObjects(%q, %q, %d)[%d] = %+v, want %+v", prefix, startAfter, limit, i, o, w)
				}
			}
		}
		return ms
	}
	// walk pages through a prefix with startAfter = the last key returned.
	walk := func(prefix string, limit int) {
		t.Helper()
		var all []string
		after := ""
		for page := 0; ; page++ {
			ms, more, err := s.ListManifests(ctx, b, prefix, after, limit)
			noErr(t, "ListManifests", err)
			if more && len(ms) != limit {
				t.Fatalf("walk %q by %d: page %d has %d keys and more=true", prefix, limit, page, len(ms))
			}
			for _, m := range ms {
				all = append(all, m.Key)
			}
			if !more {
				break
			}
			after = ms[len(ms)-1].Key
		}
		if want := model(prefix, ""); !slices.Equal(all, want) {
			t.Fatalf("walk %q by %d: got %d keys, want %d:\n got %q\nwant %q", prefix, limit, len(all), len(want), all, want)
		}
	}

	// walkObjects pages through a prefix's listing records.
	walkObjects := func(prefix string, limit int) {
		t.Helper()
		var all []string
		after := ""
		for page := 0; ; page++ {
			os, more, err := s.ListObjects(ctx, b, prefix, after, limit)
			noErr(t, "ListObjects", err)
			if more && len(os) != limit {
				t.Fatalf("walk records %q by %d: page %d has %d keys and more=true", prefix, limit, page, len(os))
			}
			for _, o := range os {
				all = append(all, o.Key)
			}
			if !more {
				break
			}
			after = os[len(os)-1].Key
		}
		if want := model(prefix, ""); !slices.Equal(all, want) {
			t.Fatalf("walk records %q by %d: got %d keys, want %d", prefix, limit, len(all), len(want))
		}
	}

	prefixes := []string{"", "a", "a/", "a\x00", "dir/", "dir/sub/", "dir/0", "with space", "日本/", "😀", "ü/1",
		strings.Repeat("k", 1000), strings.Repeat("é", 300), "\x00", "/", "zz/", "zz/19", "nomatch", "\U0010FFFF", "~~"}
	for _, p := range prefixes {
		for _, limit := range []int{0, 7, 100, 1000} {
			walk(p, limit)
		}
		for _, limit := range []int{7, 1000} {
			walkObjects(p, limit)
		}
		if len(model(p, "")) <= 40 {
			walk(p, 1)
		}
		starts := []string{"", p, p + "\x00", p + "/", "a", "a\x00", "dir/050", "dir/sub/", "m", "zz/05", "~", "\U0010FFFF"}
		if in := model(p, ""); len(in) > 0 {
			starts = append(starts, in[len(in)/2], in[len(in)-1], in[0])
		}
		for _, sa := range starts {
			for _, limit := range []int{0, 1, 5} {
				check(p, sa, limit)
			}
		}
	}
	all := check("", "", 0)
	if len(all) != len(keys) {
		t.Fatalf("unlimited listing returned %d of %d keys", len(all), len(keys))
	}
	_, _, err := s.ListManifests(ctx, "missing", "", "", 10)
	wantErr(t, "ListManifests of a missing bucket", err, cairn.ErrNotFound)
	_, _, err = s.ListObjects(ctx, "missing", "", "", 10)
	wantErr(t, "ListObjects of a missing bucket", err, cairn.ErrNotFound)
	_, _, err = s.ListObjects(ctx, "missing", "", "", 0)
	wantErr(t, "ListObjects with limit 0", err, cairn.ErrInvalid)
	for _, bad := range []int{0, -1, meta.MaxPage + 1} {
		_, _, err = s.ListObjects(ctx, b, "", "", bad)
		wantErr(t, fmt.Sprintf("ListObjects with limit %d", bad), err, cairn.ErrInvalid)
	}

	// The other bucket is separate.
	ms, more, err := s.ListManifests(ctx, "lst-x", "", "", 0)
	noErr(t, "ListManifests lst-x", err)
	if len(ms) != 4 || more {
		t.Fatalf("lst-x lists %d objects (more=%v), want 4", len(ms), more)
	}
	wantErr(t, "DeleteBucket lst-x", s.DeleteBucket(ctx, "lst-x"), cairn.ErrBucketNotEmpty)
}

func testListBuckets(t *testing.T, s meta.Store) {
	ctx := t.Context()
	// Bucket names that are prefixes of one another, with "." and "-".
	names := []string{"abc", "abc-d", "abc.d", "abcd", "abc0"}
	for _, n := range names {
		mkBucket(t, s, n)
	}
	for _, n := range names {
		for _, k := range []string{"x", "y/z"} {
			noErr(t, "commit", s.CommitManifest(ctx, manifest(n, k, "v-"+n), ""))
		}
	}
	for _, n := range names {
		ms, more, err := s.ListManifests(ctx, n, "", "", 0)
		noErr(t, "ListManifests "+n, err)
		if len(ms) != 2 || more {
			t.Fatalf("bucket %s lists %d objects (more=%v), want 2", n, len(ms), more)
		}
		for _, m := range ms {
			if m.Bucket != n || m.Version != "v-"+n {
				t.Fatalf("bucket %s lists %s/%s version %s", n, m.Bucket, m.Key, m.Version)
			}
		}
	}
	for _, n := range names {
		for _, k := range []string{"x", "y/z"} {
			_, err := s.DeleteManifest(ctx, n, k, "v-"+n)
			noErr(t, "DeleteManifest", err)
		}
		noErr(t, "DeleteBucket "+n, s.DeleteBucket(ctx, n))
	}
}

// ---- liveness and election ----

func testLeases(t *testing.T, s meta.Store) {
	ctx := t.Context()
	const ttl = time.Second
	alive := func() []string {
		t.Helper()
		hs, err := s.Alive(ctx)
		noErr(t, "Alive", err)
		return hs
	}
	if hs := alive(); len(hs) != 0 {
		t.Fatalf("Alive on an empty store: %v", hs)
	}
	actx, stopA := context.WithCancel(ctx)
	defer stopA()
	noErr(t, "KeepAlive node-a", s.KeepAlive(actx, "node-a", ttl))
	noErr(t, "KeepAlive node-b", s.KeepAlive(ctx, "node-b", ttl))
	// node-c renews twice; stopping the first renewal must not end it.
	cctx, stopC := context.WithCancel(ctx)
	defer stopC()
	noErr(t, "KeepAlive node-c", s.KeepAlive(cctx, "node-c", ttl))
	noErr(t, "KeepAlive node-c again", s.KeepAlive(ctx, "node-c", ttl))
	want := []string{"node-a", "node-b", "node-c"}
	if hs := alive(); !slices.Equal(hs, want) {
		t.Fatalf("Alive = %v, want %v", hs, want)
	}
	// Renewal outlives the TTL (etcd may round it up to 2 s).
	// real time: the leases' TTL must pass on the store's own clock.
	time.Sleep(2*ttl + ttl/2)
	if hs := alive(); !slices.Equal(hs, want) {
		t.Fatalf("Alive after 2.5 TTLs of renewal = %v, want %v", hs, want)
	}
	stopA()
	stopC()
	eventually(t, 3*ttl+3*time.Second, "node-a's entry to expire", func() bool {
		return !slices.Contains(alive(), "node-a")
	})
	if hs := alive(); !slices.Equal(hs, []string{"node-b", "node-c"}) {
		t.Fatalf("Alive after node-a stopped = %v, want [node-b node-c]", hs)
	}
	wantErr(t, "KeepAlive without holder", s.KeepAlive(ctx, "", ttl), cairn.ErrInvalid)
	wantErr(t, "KeepAlive with ttl 0", s.KeepAlive(ctx, "x", 0), cairn.ErrInvalid)
}

type campaignResult struct {
	l   meta.Leadership
	err error
}

func campaign(ctx context.Context, s meta.Store, role, id string) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		l, err := s.Campaign(ctx, role, id)
		ch <- campaignResult{l, err}
	}()
	return ch
}

func wantLeader(t *testing.T, s meta.Store, role, want string) {
	t.Helper()
	got, err := s.Leader(t.Context(), role)
	if want == "" {
		wantErr(t, "Leader("+role+")", err, cairn.ErrNotFound)
		return
	}
	noErr(t, "Leader("+role+")", err)
	if got != want {
		t.Fatalf("Leader(%s) = %q, want %q", role, got, want)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func testCampaign(t *testing.T, s meta.Store) {
	ctx := t.Context()
	wantLeader(t, s, "director", "")
	la, err := s.Campaign(ctx, "director", "a")
	noErr(t, "first Campaign", err)
	wantLeader(t, s, "director", "a")
	if isClosed(la.Done()) {
		t.Fatal("fresh leadership is Done")
	}

	b := campaign(ctx, s, "director", "b")
	select {
	case r := <-b:
		t.Fatalf("second campaigner did not block: %v", r.err)
	case <-time.After(300 * time.Millisecond):
	}
	wantLeader(t, s, "director", "a")

	// A campaigner that gives up never becomes leader.
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = s.Campaign(cctx, "director", "c")
	wantErr(t, "Campaign with an expiring ctx", err, context.DeadlineExceeded)

	// Other roles are independent.
	lx, err := s.Campaign(ctx, "scrubber", "x")
	noErr(t, "Campaign for another role", err)
	wantLeader(t, s, "scrubber", "x")

	noErr(t, "Resign a", la.Resign(ctx))
	if !isClosed(la.Done()) {
		t.Fatal("Done not closed after Resign")
	}
	var lb meta.Leadership
	select {
	case r := <-b:
		noErr(t, "second Campaign", r.err)
		lb = r.l
	case <-time.After(10 * time.Second):
		t.Fatal("second campaigner did not win after the first resigned")
	}
	wantLeader(t, s, "director", "b")
	noErr(t, "Resign a twice", la.Resign(ctx))
	wantLeader(t, s, "director", "b")

	noErr(t, "Resign b", lb.Resign(ctx))
	wantLeader(t, s, "director", "") // c gave up
	noErr(t, "Resign x", lx.Resign(ctx))
	wantLeader(t, s, "scrubber", "")

	_, err = s.Campaign(ctx, "", "a")
	wantErr(t, "Campaign without role", err, cairn.ErrInvalid)
	_, err = s.Campaign(ctx, "director", "")
	wantErr(t, "Campaign without id", err, cairn.ErrInvalid)
}

func testClose(t *testing.T, s meta.Store) {
	ctx := t.Context()
	l, err := s.Campaign(ctx, "director", "a")
	noErr(t, "Campaign", err)
	blocked := campaign(ctx, s, "director", "b")
	noErr(t, "KeepAlive", s.KeepAlive(ctx, "node-a", time.Second))
	noErr(t, "Close", s.Close())
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("leadership not Done after Close")
	}
	select {
	case r := <-blocked:
		if r.err == nil {
			t.Fatal("a campaign blocked at Close won")
		}
		wantErr(t, "Campaign blocked at Close", r.err, meta.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Campaign still blocked after Close")
	}
	_, err = s.Nodes(ctx)
	wantErr(t, "Nodes after Close", err, meta.ErrClosed)
	wantErr(t, "CommitManifest after Close", s.CommitManifest(ctx, manifest("b", "k", "v"), ""), meta.ErrClosed)
	_, err = s.Usage(ctx)
	wantErr(t, "Usage after Close", err, meta.ErrClosed)
	wantErr(t, "KeepAlive after Close", s.KeepAlive(ctx, "node-b", time.Second), meta.ErrClosed)
	_, err = s.Campaign(ctx, "director", "c")
	wantErr(t, "Campaign after Close", err, meta.ErrClosed)
	noErr(t, "Close twice", s.Close())
}

// testUploadEncryption checks UpdateUploadEncryption: a compare-and-swap
// of an upload's encryption record that changes its stamp.
func testUploadEncryption(t *testing.T, s meta.Store) {
	ctx := context.Background()
	mkBucket(t, s, "encb")
	old := &cairn.Encryption{Scheme: cairn.SSES3, Cipher: cairn.Cipher, KeyID: "k1", SealedKey: []byte("sealed under k1")}
	next := &cairn.Encryption{Scheme: cairn.SSES3, Cipher: cairn.Cipher, KeyID: "k2", SealedKey: []byte("sealed under k2")}
	u := cairn.Upload{Bucket: "encb", Key: "k", ID: "00cc", Created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Policy: "rs-4-2", Encryption: old}
	noErr(t, "create upload", s.CreateUpload(ctx, u))
	noErr(t, "create plain upload", s.CreateUpload(ctx, cairn.Upload{Bucket: "encb", Key: "p", ID: "00dd", Created: u.Created, Policy: "rs-4-2"}))
	_, stamp, err := s.Parts(ctx, "encb", "00cc")
	noErr(t, "parts", err)

	wantErr(t, "no new record", s.UpdateUploadEncryption(ctx, "encb", "00cc", nil, old), cairn.ErrInvalid)
	wantErr(t, "of a plain upload", s.UpdateUploadEncryption(ctx, "encb", "00dd", next, nil), cairn.ErrInvalid)
	sseC := *next
	sseC.Scheme = cairn.SSEC
	wantErr(t, "another scheme", s.UpdateUploadEncryption(ctx, "encb", "00cc", &sseC, old), cairn.ErrInvalid)
	noID := *next
	noID.KeyID = ""
	wantErr(t, "no key ID", s.UpdateUploadEncryption(ctx, "encb", "00cc", &noID, old), cairn.ErrInvalid)
	wantErr(t, "missing upload", s.UpdateUploadEncryption(ctx, "encb", "none", next, old), cairn.ErrNotFound)
	stale := *old
	stale.SealedKey = []byte("another sealing")
	wantErr(t, "stale prev", s.UpdateUploadEncryption(ctx, "encb", "00cc", next, &stale), cairn.ErrConflict)
	if got, err := s.Upload(ctx, "encb", "00cc"); err != nil || !reflect.DeepEqual(got.Encryption, old) {
		t.Fatalf("after refused updates: %+v, %v", got.Encryption, err)
	}

	noErr(t, "update", s.UpdateUploadEncryption(ctx, "encb", "00cc", next, old))
	got, err := s.Upload(ctx, "encb", "00cc")
	noErr(t, "upload", err)
	want := u
	want.Encryption = next
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after update: %+v, want %+v", got, want)
	}
	_, stamp2, err := s.Parts(ctx, "encb", "00cc")
	noErr(t, "parts after update", err)
	if stamp2 == stamp {
		t.Fatalf("the update kept the stamp %d: a CompleteUpload that read the old record would commit it", stamp)
	}
	noErr(t, "the same update again", s.UpdateUploadEncryption(ctx, "encb", "00cc", next, old))
	third := &cairn.Encryption{Scheme: cairn.SSES3, Cipher: cairn.Cipher, KeyID: "k3", SealedKey: []byte("sealed under k3")}
	wantErr(t, "update from the old record", s.UpdateUploadEncryption(ctx, "encb", "00cc", third, old), cairn.ErrConflict)
	_, err = s.CompleteUpload(ctx, manifest("encb", "k", "v1"), "", "00cc", stamp)
	wantErr(t, "complete with the stamp from before the update", err, cairn.ErrConflict)
}

func testUploads(t *testing.T, s meta.Store) {
	ctx := context.Background()
	mkBucket(t, s, "upb")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	u := cairn.Upload{Bucket: "upb", Key: "k", ID: "00aa", Created: t0, Policy: "rs-4-2", UserMeta: map[string]string{"a": "b"},
		Tags: map[string]string{"t": "v"}, ChecksumAlgorithm: "SHA256", ChecksumType: cairn.ChecksumComposite}
	wantErr(t, "create upload, no bucket", s.CreateUpload(ctx, cairn.Upload{Bucket: "nob", Key: "k", ID: "1"}), cairn.ErrNotFound)
	wantErr(t, "create upload, bad id", s.CreateUpload(ctx, cairn.Upload{Bucket: "upb", Key: "k", ID: "a/b"}), cairn.ErrInvalid)
	noErr(t, "create upload", s.CreateUpload(ctx, u))
	wantErr(t, "create upload twice", s.CreateUpload(ctx, u), cairn.ErrExists)
	u2 := cairn.Upload{Bucket: "upb", Key: "a", ID: "00bb", Created: t0, Policy: "rs-4-2"}
	noErr(t, "create upload 2", s.CreateUpload(ctx, u2))
	got, err := s.Upload(ctx, "upb", "00aa")
	noErr(t, "upload", err)
	if !reflect.DeepEqual(got, u) {
		t.Fatalf("upload: got %+v, want %+v", got, u)
	}
	_, err = s.Upload(ctx, "upb", "none")
	wantErr(t, "missing upload", err, cairn.ErrNotFound)
	us, err := s.Uploads(ctx, "upb")
	noErr(t, "uploads", err)
	if len(us) != 2 || us[0].ID != "00bb" || us[1].ID != "00aa" {
		t.Fatalf("uploads: %+v", us)
	}
	if us, err := s.Uploads(ctx, ""); err != nil || len(us) != 2 {
		t.Fatalf("all uploads: %+v %v", us, err)
	}
	part := func(n int, v string) cairn.Part {
		return cairn.Part{Number: n, Version: v, Size: int64(n), ETag: "e" + v, Created: t0,
			Layout: cairn.Layout{BlockSize: 4, Shards: []cairn.ShardLoc{{Disk: "d1", Size: 4, CRC: 7}}}}
	}
	_, err = s.PutPart(ctx, "upb", "00aa", part(0, "v"))
	wantErr(t, "part 0", err, cairn.ErrInvalid)
	noLayout := part(1, "v")
	noLayout.Layout = cairn.Layout{}
	_, err = s.PutPart(ctx, "upb", "00aa", noLayout)
	wantErr(t, "part without a layout", err, cairn.ErrInvalid)
	_, err = s.PutPart(ctx, "upb", "none", part(1, "v"))
	wantErr(t, "part of a missing upload", err, cairn.ErrNotFound)
	_, stamp0, err := s.Parts(ctx, "upb", "00aa")
	noErr(t, "parts", err)
	for _, p := range []cairn.Part{part(10, "v10"), part(2, "v2"), part(1, "v1")} {
		prev, err := s.PutPart(ctx, "upb", "00aa", p)
		if err != nil || prev != nil {
			t.Fatalf("put part %d: %v %v", p.Number, prev, err)
		}
	}
	prev, err := s.PutPart(ctx, "upb", "00aa", part(2, "v2b"))
	if err != nil || prev == nil || !reflect.DeepEqual(*prev, part(2, "v2")) {
		t.Fatalf("replace part 2: %+v %v", prev, err)
	}
	parts, stamp, err := s.Parts(ctx, "upb", "00aa")
	noErr(t, "parts", err)
	if len(parts) != 3 || parts[0].Number != 1 || parts[1].Version != "v2b" || parts[2].Number != 10 || stamp == stamp0 {
		t.Fatalf("parts: %+v stamp %d (was %d)", parts, stamp, stamp0)
	}
	m := manifest("upb", "k", "mv1")
	m.Layout, m.Parts, m.Size = cairn.Layout{}, parts[:2], parts[0].Size+parts[1].Size
	_, err = s.CompleteUpload(ctx, m, "", "00aa", stamp0)
	wantErr(t, "complete with an old stamp", err, cairn.ErrConflict)
	_, err = s.CompleteUpload(ctx, m, "nope", "00aa", stamp)
	wantErr(t, "complete over a wrong version", err, cairn.ErrConflict)
	_, err = s.CompleteUpload(ctx, m, "", "none", stamp)
	wantErr(t, "complete a missing upload", err, cairn.ErrNotFound)
	deleted, err := s.CompleteUpload(ctx, m, "", "00aa", stamp)
	noErr(t, "complete", err)
	if len(deleted) != 3 {
		t.Fatalf("complete returned %d parts, want 3", len(deleted))
	}
	gm, err := s.Manifest(ctx, "upb", "k")
	noErr(t, "manifest after complete", err)
	sameManifest(t, "completed manifest", gm, m)
	_, err = s.Upload(ctx, "upb", "00aa")
	wantErr(t, "upload after complete", err, cairn.ErrNotFound)
	_, _, err = s.Parts(ctx, "upb", "00aa")
	wantErr(t, "parts after complete", err, cairn.ErrNotFound)
	_, err = s.PutPart(ctx, "upb", "00bb", part(1, "w1"))
	noErr(t, "put part 2", err)
	deleted, err = s.DeleteUpload(ctx, "upb", "00bb")
	if err != nil || len(deleted) != 1 || deleted[0].Version != "w1" {
		t.Fatalf("delete upload: %+v %v", deleted, err)
	}
	_, err = s.DeleteUpload(ctx, "upb", "00bb")
	wantErr(t, "delete upload twice", err, cairn.ErrNotFound)
	if us, err := s.Uploads(ctx, ""); err != nil || len(us) != 0 {
		t.Fatalf("uploads at the end: %+v %v", us, err)
	}
}
