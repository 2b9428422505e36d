package metatest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// testUploadsByKey: UploadKeyPage pages more uploads than a page holds in
// key order and, within a key, by creation time (not ID), each once, from
// any position (key-marker, upload-id-marker), under a prefix; keys that
// hold NUL sort as keys; an upload completed, aborted or deleted with its
// bucket leaves the listing; and it checks its arguments.
func testUploadsByKey(t *testing.T, s meta.Store) {
	ctx := t.Context()
	mkBucket(t, s, "ubk")
	mkBucket(t, s, "other")
	t0 := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	var want []cairn.Upload
	add := func(key, id string, created time.Time) cairn.Upload {
		u := cairn.Upload{Bucket: "ubk", Key: key, ID: id, Created: created, Policy: "rs-2-1",
			UserMeta: map[string]string{"m": "v"}, ChecksumAlgorithm: "CRC32", ChecksumType: cairn.ChecksumComposite}
		want = append(want, meta.UploadSummary(u))
		return u
	}
	var us []cairn.Upload
	// 350 keys of 3 uploads each, whose IDs sort against their creation
	// times, and keys that hold NUL or extend one another.
	for i := range 350 {
		for j := range 3 {
			us = append(us, add(fmt.Sprintf("k%04d", i), fmt.Sprintf("%04d%d", i, 2-j), t0.Add(time.Duration(j)*time.Hour)))
		}
	}
	for i, k := range []string{"a", "a\x00", "a\x00b", "a\x01", "ab", "dir/x", "dir/y/z"} {
		us = append(us, add(k, fmt.Sprintf("n%d", i), t0.Add(-time.Duration(i)*time.Second)))
	}
	us = append(us, add("k0007", "later", t0.Add(24*time.Hour)))
	slices.SortFunc(want, meta.CompareUploads)

	var wg sync.WaitGroup
	errs := make(chan error, len(us))
	work := make(chan cairn.Upload)
	for range 8 {
		wg.Go(func() {
			for u := range work {
				if err := s.CreateUpload(ctx, u); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, u := range us {
		work <- u
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	noErr(t, "CreateUpload in another bucket", s.CreateUpload(ctx, cairn.Upload{Bucket: "other", Key: "k0001", ID: "x", Policy: "rs-2-1"}))

	// all pages with limit from a position, as S3's paginators go on.
	all := func(prefix, keyMarker, idMarker string, limit int) []cairn.Upload {
		t.Helper()
		var out []cairn.Upload
		for {
			page, more, err := s.UploadKeyPage(ctx, "ubk", prefix, keyMarker, idMarker, limit)
			noErr(t, "UploadKeyPage", err)
			if len(page) > limit {
				t.Fatalf("UploadKeyPage: a page of %d, limit %d", len(page), limit)
			}
			out = append(out, page...)
			if !more {
				return out
			}
			if len(page) == 0 {
				t.Fatal("UploadKeyPage: an empty page says more follow")
			}
			keyMarker, idMarker = page[len(page)-1].Key, page[len(page)-1].ID
		}
	}
	same := func(what string, got, want []cairn.Upload) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d uploads, want %d", what, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if !g.Created.Equal(w.Created) {
				t.Fatalf("%s: upload %d created %v, want %v", what, i, g.Created, w.Created)
			}
			g.Created, w.Created = time.Time{}, time.Time{}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: upload %d is\n %+v, want\n %+v", what, i, g, w)
			}
		}
	}
	same("pages of 1000", all("", "", "", meta.MaxPage), want)
	same("pages of 7", all("", "", "", 7), want)
	if page, more, err := s.UploadKeyPage(ctx, "ubk", "", "", "", meta.MaxPage); err != nil || len(page) != meta.MaxPage || !more {
		t.Fatalf("a first page of %d: %d uploads, more %v, %v", meta.MaxPage, len(page), more, err)
	}
	under := func(prefix string) []cairn.Upload {
		var out []cairn.Upload
		for _, u := range want {
			if strings.HasPrefix(u.Key, prefix) {
				out = append(out, u)
			}
		}
		return out
	}
	same("prefix k01", all("k01", "", "", 13), under("k01"))
	same("prefix a\\x00", all("a\x00", "", "", 1), under("a\x00"))
	same("prefix dir/", all("dir/", "", "", 1000), under("dir/"))
	same("prefix none", all("zzz", "", "", 10), nil)

	// A key-marker alone: keys after it; with an upload-id-marker: that
	// key's uploads after the marker's (in creation order), then later
	// keys; an upload-id-marker alone is ignored, as S3 does.
	idx := slices.IndexFunc(want, func(u cairn.Upload) bool { return u.Key == "k0007" && u.ID == "00071" })
	after7 := slices.IndexFunc(want, func(u cairn.Upload) bool { return u.Key == "k0008" })
	same("after key k0007", all("", "k0007", "", 500), want[after7:])
	same("after upload 00071 of k0007", all("", "k0007", "00071", 500), want[idx+1:])
	same("after key a", all("", "a", "", 1000), want[1:])
	same("upload-id-marker alone", all("", "", "00071", 1000), want)
	same("after key k0007 under prefix k00", all("k00", "k0007", "", 1000), under("k00")[slices.IndexFunc(under("k00"), func(u cairn.Upload) bool { return u.Key == "k0008" }):])
	// A marker upload that is gone (or of another key) starts at the
	// key's first upload.
	first7 := slices.IndexFunc(want, func(u cairn.Upload) bool { return u.Key == "k0007" })
	same("after a missing upload of k0007", all("", "k0007", "nosuch", 1000), want[first7:])
	same("after an upload of another key", all("", "k0007", "00001", 1000), want[first7:])

	// Completed, aborted or deleted with the bucket: gone from the index.
	m := manifest("ubk", "k0007", "mv")
	m.Layout, m.Size = cairn.Layout{}, 5000
	m.Parts = []cairn.Part{part(1, "pv", "node1/disk1")}
	_, err := s.PutPart(ctx, "ubk", "00071", m.Parts[0])
	noErr(t, "PutPart", err)
	_, stamp, err := s.Parts(ctx, "ubk", "00071")
	noErr(t, "Parts", err)
	_, err = s.CompleteUpload(ctx, m, "", "00071", stamp)
	noErr(t, "CompleteUpload", err)
	_, err = s.DeleteUpload(ctx, "ubk", "later")
	noErr(t, "DeleteUpload", err)
	gone := slices.DeleteFunc(slices.Clone(want), func(u cairn.Upload) bool { return u.ID == "00071" || u.ID == "later" })
	same("after a complete and an abort", all("", "", "", 1000), gone)
	page, _, err := s.UploadKeyPage(ctx, "ubk", "k0007", "", "", 10)
	noErr(t, "UploadKeyPage of k0007", err)
	if len(page) != 2 || page[0].ID != "00072" || page[1].ID != "00070" {
		t.Fatalf("uploads of k0007 after a complete and an abort: %+v", page)
	}
	if page, _, err := s.UploadKeyPage(ctx, "other", "", "", "", 10); err != nil || len(page) != 1 || page[0].ID != "x" {
		t.Fatalf("uploads of the other bucket: %+v, %v", page, err)
	}
	noErr(t, "DeleteBucket other", s.DeleteBucket(ctx, "other"))
	mkBucket(t, s, "other")
	if page, more, err := s.UploadKeyPage(ctx, "other", "", "", "", 10); err != nil || len(page) != 0 || more {
		t.Fatalf("uploads of a bucket deleted and created again: %+v, %v, %v", page, more, err)
	}

	_, _, err = s.UploadKeyPage(ctx, "nosuch", "", "", "", 10)
	wantErr(t, "UploadKeyPage of a missing bucket", err, cairn.ErrNotFound)
	for _, limit := range []int{0, meta.MaxPage + 1} {
		if _, _, err := s.UploadKeyPage(ctx, "ubk", "", "", "", limit); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("UploadKeyPage with limit %d: %v, want ErrInvalid", limit, err)
		}
	}
}
