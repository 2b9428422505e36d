package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"cairn"
)

func TestMultipart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024, MinPartSize: 10000, WindowBytes: 8192})
	sizes := []int{10000, 12345, 777}
	u, err := e.c.CreateUpload(ctx, "bkt", "obj", PutOptions{ContentType: "text/x", UserMeta: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	var list []CompletePart
	md := md5.New()
	for i, n := range sizes {
		b := randBytes(uint64(i), n)
		data = append(data, b...)
		sum := md5.Sum(b)
		md.Write(sum[:])
		list = append(list, CompletePart{Number: i + 1, ETag: `"` + hex.EncodeToString(sum[:]) + `"`})
	}
	// Upload out of order, part 2 twice (the first copy must vanish), and
	// a part 9 that Complete leaves out.
	for _, i := range []int{2, 1, 0, 1} {
		if _, err := e.c.UploadPart(ctx, "bkt", "obj", u.ID, i+1, bytes.NewReader(data[offset(sizes, i):offset(sizes, i+1)]), PutOptions{Size: int64(sizes[i])}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.c.UploadPart(ctx, "bkt", "obj", u.ID, 9, bytes.NewReader([]byte("x")), PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	if _, parts, _, err := e.c.ListPartsPage(ctx, "bkt", "obj", u.ID, 0, 1000); err != nil || len(parts) != 4 || parts[3].Number != 9 {
		t.Fatalf("ListParts: %v %v", parts, err)
	}
	if _, err := e.c.CompleteUpload(ctx, "bkt", "obj", u.ID, []CompletePart{list[1], list[0]}); !errors.Is(err, ErrInvalidPartOrder) {
		t.Fatalf("order: %v", err)
	}
	if _, err := e.c.CompleteUpload(ctx, "bkt", "obj", u.ID, []CompletePart{{1, "00"}}); !errors.Is(err, ErrInvalidPart) {
		t.Fatalf("etag: %v", err)
	}
	if _, err := e.c.CompleteUpload(ctx, "bkt", "obj", u.ID, []CompletePart{list[2], {9, md5hex([]byte("x"))}}); !errors.Is(err, ErrEntityTooSmall) {
		t.Fatalf("small: %v", err)
	}
	m, err := e.c.CompleteUpload(ctx, "bkt", "obj", u.ID, list)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%s-3", hex.EncodeToString(md.Sum(nil))); m.ETag != want || m.Size != int64(len(data)) || m.ContentType != "text/x" {
		t.Fatalf("manifest: etag %s (want %s) size %d", m.ETag, want, m.Size)
	}
	// Only the chosen parts' shards remain: 3 parts × 6 shards.
	if n := e.files(t); n != 18 {
		t.Fatalf("%d shard files, want 18", n)
	}
	if _, err := e.c.UploadPart(ctx, "bkt", "obj", u.ID, 1, bytes.NewReader(nil), PutOptions{Size: 0}); !errors.Is(err, ErrNoSuchUpload) {
		t.Fatalf("after complete: %v", err)
	}
	for _, r := range [][2]int64{{0, -1}, {9990, 20}, {9000, 13000}, {22344, 1}, {22345, 777}, {5, 0}, {int64(len(data)) - 3, -1}} {
		_, rc, err := e.c.Get(ctx, "bkt", "obj", r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		end := int64(len(data))
		if r[1] >= 0 {
			end = min(end, r[0]+r[1])
		}
		if err != nil || !bytes.Equal(got, data[r[0]:end]) {
			t.Fatalf("range %v: %d bytes, %v", r, len(got), err)
		}
	}
	// Overwriting the object deletes its parts' shards.
	if _, err := e.c.Put(ctx, "bkt", "obj", bytes.NewReader([]byte("small")), PutOptions{Size: 5}); err != nil {
		t.Fatal(err)
	}
	if n := e.files(t); n != 3 { // a small object: 3 replicas
		t.Fatalf("%d shard files after overwrite, want 3", n)
	}
	if err := e.c.Delete(ctx, "bkt", "obj"); err != nil || e.files(t) != 0 {
		t.Fatalf("delete: %v, %d shard files", err, e.files(t))
	}
}

func TestMultipartDeleteAndAbort(t *testing.T) {
	for _, policy := range []string{"rs-4-2", "lt-16-3"} {
		t.Run(policy, func(t *testing.T) { testMultipartDeleteAndAbort(t, policy) })
	}
}

// testMultipartDeleteAndAbort: a completed object's delete and an
// upload's abort leave no shard (or block) file behind; a part reads back.
func testMultipartDeleteAndAbort(t *testing.T, policy string) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, policy, Config{BlockSize: 1024, MinPartSize: 100})
	u, err := e.c.CreateUpload(ctx, "bkt", "k", PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.c.UploadPart(ctx, "bkt", "k", u.ID, 1, bytes.NewReader(randBytes(1, 5000)), PutOptions{Size: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CompleteUpload(ctx, "bkt", "k", u.ID, []CompletePart{{1, p.ETag}}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, "k", 0, -1); !bytes.Equal(got, randBytes(1, 5000)) {
		t.Fatal("the completed object reads back differently")
	}
	if err := e.c.Delete(ctx, "bkt", "k"); err != nil || e.files(t) != 0 {
		t.Fatalf("delete: %v, %d shard files", err, e.files(t))
	}
	u, err = e.c.CreateUpload(ctx, "bkt", "k", PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.UploadPart(ctx, "bkt", "k", u.ID, 1, bytes.NewReader(randBytes(1, 5000)), PutOptions{Size: 5000}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.AbortUpload(ctx, "bkt", "other-key", u.ID); !errors.Is(err, ErrNoSuchUpload) {
		t.Fatalf("abort with the wrong key: %v", err)
	}
	if err := e.c.AbortUpload(ctx, "bkt", "k", u.ID); err != nil || e.files(t) != 0 {
		t.Fatalf("abort: %v, %d shard files", err, e.files(t))
	}
	if err := e.c.AbortUpload(ctx, "bkt", "k", u.ID); !errors.Is(err, ErrNoSuchUpload) {
		t.Fatalf("abort twice: %v", err)
	}
}

func TestSweepUploads(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i, age := range []time.Duration{8 * 24 * time.Hour, 24 * time.Hour} {
		created := t0.Add(-age)
		u, err := e.c.CreateUpload(ctx, "bkt", fmt.Sprintf("k%d", i), PutOptions{Now: func() time.Time { return created }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.UploadPart(ctx, "bkt", u.Key, u.ID, 1, bytes.NewReader([]byte("data")), PutOptions{Size: 4}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	n, err := e.c.SweepUploads(ctx, t0, DefaultUploadMaxAge)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	us, err := e.c.ListUploads(ctx, "")
	if err != nil || len(us) != 1 || us[0].ID != ids[1] {
		t.Fatalf("uploads after sweep: %v %v", us, err)
	}
	if c := e.files(t); c != 6 {
		t.Fatalf("%d shard files, want 6 (the young upload's part)", c)
	}
	if n, err := e.c.SweepUploads(ctx, t0.Add(7*24*time.Hour), DefaultUploadMaxAge); err != nil || n != 1 || e.files(t) != 0 {
		t.Fatalf("second sweep: %d %v, %d shard files", n, err, e.files(t))
	}
}

func offset(sizes []int, i int) int {
	o := 0
	for _, n := range sizes[:i] {
		o += n
	}
	return o
}

func md5hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

// uploadReads counts the metadata store's Upload calls.
type uploadReads struct {
	Meta
	n int
}

func (m *uploadReads) Upload(ctx context.Context, bucket, id string) (cairn.Upload, error) {
	m.n++
	return m.Meta.Upload(ctx, bucket, id)
}

// TestUploadPartWithRecord: a caller that read the upload's record (the
// gateway does, for SSE-C) passes it and UploadPart reads it no more; a
// record of another upload is refused.
func TestUploadPartWithRecord(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024, MinPartSize: 1})
	reads := &uploadReads{Meta: e.meta}
	c := New(reads, e.shards, Config{BlockSize: 1024, MinPartSize: 1})
	u, err := c.CreateUpload(ctx, "bkt", "obj", PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := c.UploadPart(ctx, "bkt", "obj", u.ID, 1, bytes.NewReader([]byte("one")), PutOptions{Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	if reads.n != 1 {
		t.Fatalf("UploadPart without a record read it %d times, want 1", reads.n)
	}
	got, err := c.Upload(ctx, "bkt", "obj", u.ID)
	if err != nil {
		t.Fatal(err)
	}
	reads.n = 0
	p2, err := c.UploadPart(ctx, "bkt", "obj", u.ID, 2, bytes.NewReader([]byte("two")), PutOptions{Size: 3, Upload: &got})
	if err != nil {
		t.Fatal(err)
	}
	if reads.n != 0 {
		t.Fatalf("UploadPart with the record read it again (%d times)", reads.n)
	}
	other := got
	other.Key = "other"
	if _, err := c.UploadPart(ctx, "bkt", "obj", u.ID, 3, bytes.NewReader([]byte("x")), PutOptions{Size: 1, Upload: &other}); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("UploadPart with another upload's record: %v, want ErrInvalid", err)
	}
	m, err := c.CompleteUpload(ctx, "bkt", "obj", u.ID, []CompletePart{{Number: 1, ETag: p1.ETag}, {Number: 2, ETag: p2.ETag}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Size != 6 {
		t.Fatalf("completed size %d, want 6", m.Size)
	}
}
