package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	"cairn/crypt"
)

// TestReseal: after a rotation, reseal moves every SSE-S3 object (and
// only those) to the current key, once; the objects then read with a key
// file that no longer holds the old key.
func TestReseal(t *testing.T) {
	ctx := t.Context()
	st, _ := diskCluster(t)
	shards := clienttest.NewMemShards()
	old, err := crypt.NewKeyring(strings.NewReader(strings.Repeat("old master key..", 4)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(st, shards, client.Config{BlockSize: 4096, Keys: old})
	data := bytes.Repeat([]byte("reseal me "), 3000)
	put := func(key string, sse *client.SSE) {
		t.Helper()
		if _, err := c.Put(ctx, "bkt", key, bytes.NewReader(data), client.PutOptions{Size: -1, SSE: sse}); err != nil {
			t.Fatal(err)
		}
	}
	put("s3-a", &client.SSE{Scheme: cairn.SSES3})
	put("s3-b", &client.SSE{Scheme: cairn.SSES3})
	put("c", &client.SSE{Scheme: cairn.SSEC, CustomerKey: bytes.Repeat([]byte{3}, 32)})
	put("clear", nil)
	before, _ := st.Manifest(ctx, "bkt", "s3-a")
	// Multipart uploads in progress: SSE-S3 (re-sealed), SSE-C (not).
	upload := func(key string, sse *client.SSE) cairn.Upload {
		t.Helper()
		u, err := c.CreateUpload(ctx, "bkt", key, client.PutOptions{SSE: sse})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	mp := upload("mp", &client.SSE{Scheme: cairn.SSES3})
	upload("mp-c", &client.SSE{Scheme: cairn.SSEC, CustomerKey: bytes.Repeat([]byte{4}, 32)})
	p1, err := c.UploadPart(ctx, "bkt", "mp", mp.ID, 1, bytes.NewReader(data), client.PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}

	rotated, err := old.Rotate(strings.NewReader(strings.Repeat("new master key..", 4)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := reseal(ctx, st, rotated)
	if err != nil || got != (resealStats{objects: 2, resealed: 2, uploads: 1, uploadsResealed: 1}) {
		t.Fatalf("reseal: %+v, %v", got, err)
	}
	if got, err := reseal(ctx, st, rotated); err != nil || got != (resealStats{objects: 2, uploads: 1}) {
		t.Fatalf("reseal again: %+v, %v", got, err)
	}
	after, _ := st.Manifest(ctx, "bkt", "s3-a")
	if after.Version != before.Version || after.Encryption.KeyID != rotated.Current() || bytes.Equal(after.Encryption.SealedKey, before.Encryption.SealedKey) {
		t.Fatalf("re-sealed manifest: version %s (was %s), key %s", after.Version, before.Version, after.Encryption.KeyID)
	}

	// The key file without the old key.
	var f keyFile
	if err := json.Unmarshal(rotated.Marshal(), &f); err != nil {
		t.Fatal(err)
	}
	delete(f.Keys, old.Current())
	b, _ := json.Marshal(f)
	newOnly, err := crypt.ParseKeyring(b)
	if err != nil {
		t.Fatal(err)
	}
	reader := client.New(st, shards, client.Config{BlockSize: 4096, Keys: newOnly, MinPartSize: 1})
	// The upload takes a part and completes with only the new key; both
	// parts read back.
	p2, err := reader.UploadPart(ctx, "bkt", "mp", mp.ID, 2, bytes.NewReader(data), client.PutOptions{Size: -1})
	if err != nil {
		t.Fatalf("a part of the re-sealed upload with only the new key: %v", err)
	}
	m, err := reader.CompleteUpload(ctx, "bkt", "mp", mp.ID, []client.CompletePart{{Number: 1, ETag: p1.ETag}, {Number: 2, ETag: p2.ETag}})
	if err != nil {
		t.Fatalf("completing the re-sealed upload with only the new key: %v", err)
	}
	if m.Encryption.KeyID != rotated.Current() {
		t.Fatalf("completed object sealed by %s, want %s", m.Encryption.KeyID, rotated.Current())
	}
	_, rc, err := reader.Get(ctx, "bkt", "mp", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(back, append(slices.Clone(data), data...)) {
		t.Fatalf("the completed upload with only the new key: %v", err)
	}
	for _, key := range []string{"s3-a", "s3-b"} {
		_, rc, err := reader.Get(ctx, "bkt", key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		back, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("%s with only the new key: %v", key, err)
		}
	}
}

// keyFile is the key file's JSON (crypt's format) for editing in tests.
type keyFile struct {
	Current string            `json:"current"`
	Keys    map[string]string `json:"keys"`
}
