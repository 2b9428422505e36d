package metatest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// sameInfo compares listing records (Created by instant).
func sameInfo(a, b cairn.ObjectInfo) bool {
	if !a.Created.Equal(b.Created) {
		return false
	}
	a.Created, b.Created = time.Time{}, time.Time{}
	return a == b
}

// bigManifest returns a multipart manifest of n parts.
func bigManifest(bucket, key, version string, n int) *cairn.Manifest {
	m := manifest(bucket, key, version)
	m.Layout = cairn.Layout{}
	m.Size = 0
	for i := 1; i <= n; i++ {
		p := part(i, fmt.Sprintf("%s%05x", version, i), "node1/disk1", "node2/disk1", "node3/disk2")
		p.Checksum = &cairn.Checksum{Algorithm: "CRC32", Value: fmt.Sprintf("AAAA%03d=", i%1000), Type: cairn.ChecksumFullObject}
		m.Size += p.Size
		m.Parts = append(m.Parts, p)
	}
	return m
}

func encodedSize(t *testing.T, m *cairn.Manifest) int {
	t.Helper()
	b, err := json.Marshal(m)
	noErr(t, "encoding a manifest", err)
	return len(b)
}

// testListPages: ListManifests pages are bounded by meta.MaxPage manifests
// and by meta.ManifestPageBytes of them; listing records follow every
// write; a walk that meets deletions and commits behind and ahead of it
// loses no key that stays; a manifest beyond meta.MaxManifestBytes is
// refused.
func testListPages(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "pgs")
	ms, more, err := s.ListManifests(ctx, "pgs", "", "", 10)
	noErr(t, "ListManifests of an empty bucket", err)
	os, omore, err := s.ListObjects(ctx, "pgs", "", "", 10)
	noErr(t, "ListObjects of an empty bucket", err)
	if len(ms)+len(os) != 0 || more || omore {
		t.Fatalf("empty bucket lists %d manifests, %d records", len(ms), len(os))
	}

	// Big manifests: a page holds as many as fit in ManifestPageBytes.
	const parts = 2000
	one := encodedSize(t, bigManifest("pgs", "big/0", "v0", parts))
	perPage := max(1, meta.ManifestPageBytes/one)
	total := 2*perPage + 1
	for i := range total {
		noErr(t, "commit big", s.CommitManifest(ctx, bigManifest("pgs", fmt.Sprintf("big/%d", i), fmt.Sprint("v", i), parts), ""))
	}
	after, seen := "", 0
	for page := 0; ; page++ {
		ms, more, err := s.ListManifests(ctx, "pgs", "big/", after, meta.MaxPage)
		noErr(t, "ListManifests big", err)
		bytes := 0
		for _, m := range ms {
			if len(m.Parts) != parts {
				t.Fatalf("big manifest %s read back with %d parts", m.Key, len(m.Parts))
			}
			bytes += encodedSize(t, m)
		}
		if len(ms) > 1 && bytes > meta.ManifestPageBytes+len(ms)*256 {
			t.Fatalf("page %d holds %d manifests of %d bytes, more than %d", page, len(ms), bytes, meta.ManifestPageBytes)
		}
		if more && len(ms) == 0 {
			t.Fatalf("page %d is empty with more", page)
		}
		seen += len(ms)
		if !more {
			break
		}
		if page > total {
			t.Fatalf("no end after %d pages", page)
		}
		after = ms[len(ms)-1].Key
	}
	if seen != total {
		t.Fatalf("paged %d big manifests, want %d", seen, total)
	}
	all, _, err := s.ListManifests(ctx, "pgs", "big/", "", 0)
	noErr(t, "ListManifests unlimited", err)
	if len(all) != total {
		t.Fatalf("unlimited listing: %d big manifests, want %d", len(all), total)
	}
	os, _, err = s.ListObjects(ctx, "pgs", "big/", "", meta.MaxPage)
	noErr(t, "ListObjects big", err)
	if len(os) != total || os[0].Parts != parts || os[0].Size != all[0].Size {
		t.Fatalf("ListObjects big: %d records, first %+v", len(os), os[0])
	}

	// Small manifests: a page is at most MaxPage, however many are asked.
	for i := range meta.MaxPage + 5 {
		noErr(t, "commit small", s.CommitManifest(ctx, manifest("pgs", fmt.Sprintf("s/%04d", i), "v"), ""))
	}
	ms, more, err = s.ListManifests(ctx, "pgs", "s/", "", 5000)
	noErr(t, "ListManifests 5000", err)
	if len(ms) != meta.MaxPage || !more {
		t.Fatalf("ListManifests of 5000: %d manifests more=%v, want %d and more", len(ms), more, meta.MaxPage)
	}
	os, more, err = s.ListObjects(ctx, "pgs", "s/", "", meta.MaxPage)
	noErr(t, "ListObjects exactly a page", err)
	if len(os) != meta.MaxPage || !more {
		t.Fatalf("ListObjects of a page: %d more=%v", len(os), more)
	}
	os, more, err = s.ListObjects(ctx, "pgs", "s/", os[len(os)-1].Key, meta.MaxPage)
	noErr(t, "ListObjects last page", err)
	if len(os) != 5 || more {
		t.Fatalf("ListObjects last page: %d more=%v", len(os), more)
	}

	// Writes move the listing records: overwrite, repair, delete, complete.
	info := func(key string) (cairn.ObjectInfo, bool) {
		t.Helper()
		os, _, err := s.ListObjects(ctx, "pgs", key, "", 1)
		noErr(t, "ListObjects "+key, err)
		if len(os) == 0 || os[0].Key != key {
			return cairn.ObjectInfo{}, false
		}
		return os[0], true
	}
	m2 := manifest("pgs", "w", "v1")
	noErr(t, "commit w", s.CommitManifest(ctx, m2, ""))
	m3 := manifest("pgs", "w", "v2")
	m3.Size, m3.ETag, m3.Policy = 99, "abc", "rs-2-1"
	noErr(t, "overwrite w", s.CommitManifest(ctx, m3, "v1"))
	if got, ok := info("w"); !ok || !sameInfo(got, m3.Info()) {
		t.Fatalf("after overwrite: %+v, want %+v", got, m3.Info())
	}
	moved := *m3
	moved.Shards = slices.Clone(m3.Shards)
	moved.Shards[0].Disk = "node9/disk-with-a-longer-name"
	noErr(t, "update w", s.UpdateManifest(ctx, &moved, m3))
	if got, ok := info("w"); !ok || !sameInfo(got, moved.Info()) {
		t.Fatalf("after update: %+v", got)
	}
	_, err = s.DeleteManifest(ctx, "pgs", "w", "")
	noErr(t, "delete w", err)
	if got, ok := info("w"); ok {
		t.Fatalf("after delete, still listed: %+v", got)
	}
	noErr(t, "CreateUpload", s.CreateUpload(ctx, cairn.Upload{Bucket: "pgs", ID: "0123456789abcdef0123456789abcdef", Key: "mp", Policy: "rs-2-1"}))
	p1 := part(1, "pv1", "node1/disk1", "node2/disk1", "node3/disk2")
	_, err = s.PutPart(ctx, "pgs", "0123456789abcdef0123456789abcdef", p1)
	noErr(t, "PutPart", err)
	_, stamp, err := s.Parts(ctx, "pgs", "0123456789abcdef0123456789abcdef")
	noErr(t, "Parts", err)
	mp := bigManifest("pgs", "mp", "mpv", 0)
	mp.Parts, mp.Size = []cairn.Part{p1}, p1.Size
	_, err = s.CompleteUpload(ctx, mp, "", "0123456789abcdef0123456789abcdef", stamp)
	noErr(t, "CompleteUpload", err)
	if got, ok := info("mp"); !ok || !sameInfo(got, mp.Info()) || got.Parts != 1 {
		t.Fatalf("after complete: %+v, want %+v", got, mp.Info())
	}

	// Deletion during a walk: keys deleted behind and ahead of the walk,
	// and keys committed ahead, do not break it; every key that stays is
	// seen once.
	var walked []string
	after = ""
	for page := 0; ; page++ {
		os, more, err := s.ListObjects(ctx, "pgs", "s/", after, 100)
		noErr(t, "ListObjects walk", err)
		for _, o := range os {
			walked = append(walked, o.Key)
		}
		if page == 2 {
			for _, k := range []string{os[len(os)-1].Key, "s/0000", "s/0500", "s/0999"} {
				_, err := s.DeleteManifest(ctx, "pgs", k, "")
				noErr(t, "delete during walk "+k, err)
			}
			noErr(t, "commit during walk", s.CommitManifest(ctx, manifest("pgs", "s/0700x", "v"), ""))
		}
		if !more {
			break
		}
		after = os[len(os)-1].Key
	}
	if len(walked) != meta.MaxPage+5-2+1 || !slices.Contains(walked, "s/0700x") || slices.Contains(walked, "s/0500") {
		t.Fatalf("walk with deletions saw %d keys", len(walked))
	}
	if !slices.IsSorted(walked) || len(slices.Compact(slices.Clone(walked))) != len(walked) {
		t.Fatalf("walk with deletions is not strictly ordered")
	}

	// A manifest too big for the store is refused with ErrInvalid.
	huge := manifest("pgs", "huge", "vh")
	huge.UserMeta = map[string]string{"big": strings.Repeat("x", meta.MaxManifestBytes)}
	wantErr(t, "commit of a huge manifest", s.CommitManifest(ctx, huge, ""), cairn.ErrInvalid)
}

// testParts: ManifestPart reads one part of a multipart object,
// UpdatePart moves that part's shards by compare-and-swap on the part
// alone, and both agree with Manifest, UpdateManifest and the usage
// counters.
func testParts(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "mps")
	m := bigManifest("mps", "obj", "v1", 3)
	noErr(t, "commit", s.CommitManifest(ctx, m, ""))
	one, err := s.ManifestPart(ctx, "mps", "obj", 2)
	noErr(t, "ManifestPart", err)
	if len(one.Parts) != 1 || one.Parts[0].Number != 2 || one.Version != "v1" || one.Size != m.Size {
		t.Fatalf("ManifestPart(2) = %+v", one)
	}
	_, err = s.ManifestPart(ctx, "mps", "obj", 4)
	wantErr(t, "ManifestPart of a missing part", err, cairn.ErrNotFound)
	_, err = s.ManifestPart(ctx, "mps", "nothing", 1)
	wantErr(t, "ManifestPart of a missing object", err, cairn.ErrNotFound)

	prev := one.Parts[0]
	moved := prev
	moved.Shards = slices.Clone(prev.Shards)
	moved.Shards[1].Disk = "node9/disk9"
	wantErr(t, "UpdatePart of another version", s.UpdatePart(ctx, "mps", "obj", "v0", moved, prev), cairn.ErrConflict)
	bad := moved
	bad.Number = 3
	wantErr(t, "UpdatePart renumbering", s.UpdatePart(ctx, "mps", "obj", "v1", bad, prev), cairn.ErrInvalid)
	noErr(t, "UpdatePart", s.UpdatePart(ctx, "mps", "obj", "v1", moved, prev))
	noErr(t, "UpdatePart retried", s.UpdatePart(ctx, "mps", "obj", "v1", moved, prev))
	other := prev
	other.Shards = slices.Clone(prev.Shards)
	other.Shards[1].Disk = "node8/disk8"
	wantErr(t, "UpdatePart over a stale part", s.UpdatePart(ctx, "mps", "obj", "v1", other, prev), cairn.ErrConflict)
	got, err := s.Manifest(ctx, "mps", "obj")
	noErr(t, "Manifest", err)
	want := *m
	want.Parts = slices.Clone(m.Parts)
	want.Parts[1] = moved
	sameManifest(t, "after UpdatePart", got, &want)
	u, err := s.Usage(ctx)
	noErr(t, "Usage", err)
	if d := u.Disks["node9/disk9"]; d.Files != 1 {
		t.Fatalf("the part's new disk counts %+v", d)
	}
	if d := u.Disks["node2/disk1"]; d.Files != 2 {
		t.Fatalf("the part's old disk counts %+v, want 2 files", d)
	}
	if qs, err := s.Cleanups(ctx, time.Now().Add(time.Hour), 10); err != nil || len(qs) != 1 || len(qs[0].Files) != 1 || qs[0].Reason != cairn.CleanupRepair {
		t.Fatalf("cleanup of the moved shard: %+v, %v", qs, err)
	}
	// Whole-manifest updates see the moved part.
	again := *got
	again.Parts = slices.Clone(got.Parts)
	again.Parts[0].Shards = slices.Clone(got.Parts[0].Shards)
	again.Parts[0].Shards[0].Disk = "node7/disk7"
	wantErr(t, "UpdateManifest over the manifest before UpdatePart", s.UpdateManifest(ctx, &again, m), cairn.ErrConflict)
	noErr(t, "UpdateManifest", s.UpdateManifest(ctx, &again, got))
	if p, err := s.ManifestPart(ctx, "mps", "obj", 1); err != nil || p.Parts[0].Shards[0].Disk != "node7/disk7" {
		t.Fatalf("ManifestPart after UpdateManifest: %+v, %v", p, err)
	}
	// An overwrite by a single-part object drops the parts.
	noErr(t, "overwrite", s.CommitManifest(ctx, manifest("mps", "obj", "v2"), "v1"))
	_, err = s.ManifestPart(ctx, "mps", "obj", 1)
	wantErr(t, "ManifestPart of a single-part object", err, cairn.ErrNotFound)
	wantErr(t, "UpdatePart after the overwrite", s.UpdatePart(ctx, "mps", "obj", "v1", moved, moved), cairn.ErrConflict)
	_, err = s.DeleteManifest(ctx, "mps", "obj", "")
	noErr(t, "delete", err)
	noErr(t, "commit again", s.CommitManifest(ctx, bigManifest("mps", "obj", "v3", 2), ""))
	d, err := s.DeleteManifest(ctx, "mps", "obj", "")
	if err != nil || len(d.Parts) != 2 {
		t.Fatalf("DeleteManifest returned %+v, %v", d, err)
	}
	if u, _ := s.Usage(ctx); u.Buckets["mps"].Objects != 0 || len(u.Disks) != 0 && u.Disks["node1/disk1"].Files != 0 {
		t.Fatalf("usage after deleting everything: %+v", u)
	}
}

// testManyRecords: listings that return everything (Buckets, Uploads,
// Parts) return more records than a page (meta.MaxPage) holds, in order.
func testManyRecords(t *testing.T, s meta.Store) {
	ctx := t.Context()
	const n = meta.MaxPage + 3
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	work := make(chan func() error)
	for range 8 {
		wg.Go(func() {
			for f := range work {
				if err := f(); err != nil {
					errs <- err
				}
			}
		})
	}
	mkBucket(t, s, "many")
	id := func(i int) string { return fmt.Sprintf("%032x", i) }
	noErr(t, "CreateUpload", s.CreateUpload(ctx, cairn.Upload{Bucket: "many", ID: id(0), Key: "k", Policy: "rs-2-1"}))
	for i := 1; i <= n; i++ {
		work <- func() error {
			return s.CreateBucket(ctx, cairn.Bucket{Name: fmt.Sprintf("b%05d", i), Policy: "rs-2-1"})
		}
		work <- func() error {
			return s.CreateUpload(ctx, cairn.Upload{Bucket: "many", ID: id(i), Key: fmt.Sprintf("k%05d", i), Policy: "rs-2-1"})
		}
		work <- func() error {
			_, err := s.PutPart(ctx, "many", id(0), part(i, fmt.Sprint("pv", i), "node1/disk1", "node2/disk1", "node3/disk2"))
			return err
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	bs, err := s.Buckets(ctx)
	noErr(t, "Buckets", err)
	if len(bs) != n+1 || !slices.IsSortedFunc(bs, func(a, b cairn.Bucket) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("Buckets: %d, want %d, sorted", len(bs), n+1)
	}
	us, err := s.Uploads(ctx, "many")
	noErr(t, "Uploads", err)
	if len(us) != n+1 || !slices.IsSortedFunc(us, meta.CompareUploads) {
		t.Fatalf("Uploads: %d, want %d, sorted", len(us), n+1)
	}
	all, err := s.Uploads(ctx, "")
	noErr(t, "Uploads of all buckets", err)
	if len(all) != n+1 {
		t.Fatalf("Uploads of all buckets: %d, want %d", len(all), n+1)
	}
	ps, _, err := s.Parts(ctx, "many", id(0))
	noErr(t, "Parts", err)
	if len(ps) != n {
		t.Fatalf("Parts: %d, want %d", len(ps), n)
	}
	for i, p := range ps {
		if p.Number != i+1 {
			t.Fatalf("Parts[%d] is part %d", i, p.Number)
		}
	}
	testPages(t, s, n, id)
}

// testPages: the paged listings (BucketPage, UploadPage, PartPage) of
// testManyRecords' records return them all, once each, in order, in
// pages no larger than asked, with more set exactly when records follow;
// and they check their arguments.
func testPages(t *testing.T, s meta.Store, n int, id func(int) string) {
	ctx := t.Context()
	noErr(t, "CreateUpload", s.CreateUpload(ctx, cairn.Upload{Bucket: "b00001", ID: id(7), Key: "other", Policy: "rs-2-1"}))
	// pageAll pages with limit and returns every record's position.
	pageAll := func(what string, limit int, next func(after string) ([]string, bool, error)) []string {
		t.Helper()
		var all []string
		after := ""
		for {
			got, more, err := next(after)
			noErr(t, what, err)
			if len(got) > limit {
				t.Fatalf("%s: a page of %d, limit %d", what, len(got), limit)
			}
			all = append(all, got...)
			if !more {
				return all
			}
			if len(got) == 0 {
				t.Fatalf("%s: an empty page says more follow", what)
			}
			after = got[len(got)-1]
		}
	}
	sortedOnce := func(what string, got []string, want int) {
		t.Helper()
		if len(got) != want || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != want {
			t.Fatalf("%s: %d records (sorted: %v), want %d, each once, sorted", what, len(got), slices.IsSorted(got), want)
		}
	}
	buckets := pageAll("BucketPage", 400, func(after string) ([]string, bool, error) {
		bs, more, err := s.BucketPage(ctx, after, 400)
		var out []string
		for _, b := range bs {
			out = append(out, b.Name)
		}
		return out, more, err
	})
	sortedOnce("BucketPage", buckets, n+1)
	uploads := func(bucket string, limit int) []string {
		return pageAll("UploadPage", limit, func(after string) ([]string, bool, error) {
			us, more, err := s.UploadPage(ctx, bucket, after, limit)
			var out []string
			for _, u := range us {
				if bucket != "" && u.Bucket != bucket {
					t.Fatalf("UploadPage of %s returned an upload of %s", bucket, u.Bucket)
				}
				out = append(out, meta.UploadPosition(u))
			}
			return out, more, err
		})
	}
	sortedOnce("UploadPage of one bucket", uploads("many", 333), n+1)
	sortedOnce("UploadPage of all buckets", uploads("", 1000), n+2)
	if got := uploads("b00001", 1); len(got) != 1 || got[0] != "b00001/"+id(7) {
		t.Fatalf("UploadPage of b00001: %v", got)
	}
	// A page starting in another bucket's positions starts at this one's.
	if us, _, err := s.UploadPage(ctx, "many", "b00001/"+id(7), 2); err != nil || len(us) != 2 || us[0].ID != id(0) {
		t.Fatalf("UploadPage of many after a position in b00001: %v, %v", us, err)
	}
	var numbers []int
	after := 0
	for {
		ps, more, err := s.PartPage(ctx, "many", id(0), after, 250)
		noErr(t, "PartPage", err)
		for _, p := range ps {
			numbers = append(numbers, p.Number)
		}
		if !more {
			break
		}
		after = ps[len(ps)-1].Number
	}
	if len(numbers) != n || !slices.IsSorted(numbers) || numbers[0] != 1 || numbers[n-1] != n {
		t.Fatalf("PartPage: %d parts, want 1..%d", len(numbers), n)
	}
	if ps, more, err := s.PartPage(ctx, "many", id(0), n-2, meta.MaxPage); err != nil || more || len(ps) != 2 || ps[0].Number != n-1 {
		t.Fatalf("PartPage after part %d: %d parts (more %v), %v; want parts %d and %d", n-2, len(ps), more, err, n-1, n)
	}
	if _, _, err := s.PartPage(ctx, "many", id(99999), 0, 10); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("PartPage of a missing upload: %v, want ErrNotFound", err)
	}
	for _, limit := range []int{0, meta.MaxPage + 1} {
		_, _, e1 := s.BucketPage(ctx, "", limit)
		_, _, e2 := s.UploadPage(ctx, "", "", limit)
		_, _, e3 := s.PartPage(ctx, "many", id(0), 0, limit)
		for _, err := range []error{e1, e2, e3} {
			if !errors.Is(err, cairn.ErrInvalid) {
				t.Fatalf("a page limit of %d: %v, want ErrInvalid", limit, err)
			}
		}
	}
}
