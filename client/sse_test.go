package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"cairn"
	"cairn/crypt"
	"cairn/meta/mem"
)

const seg = cairn.SegmentSize

func testKeyring(t testing.TB) *crypt.Keyring {
	t.Helper()
	k, err := crypt.NewKeyring(strings.NewReader(strings.Repeat("master key bytes", 4)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var customerKey = bytes.Repeat([]byte{0xc5}, 32)

func (e *env) getWith(t *testing.T, key string, off, n int64, opts GetOptions) ([]byte, error) {
	t.Helper()
	_, rc, err := e.c.GetWith(context.Background(), "bkt", key, off, n, opts)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// noPlaintext fails if any shard file holds a 32-byte run of data.
func (e *env) noPlaintext(t *testing.T, data []byte) {
	t.Helper()
	e.shards.Mu.Lock()
	defer e.shards.Mu.Unlock()
	for i := 0; i+32 <= len(data); i += 997 {
		for name, f := range e.shards.Files {
			if bytes.Contains(f, data[i:i+32]) {
				t.Fatalf("shard %s holds plaintext bytes %d..%d", name, i, i+32)
			}
		}
	}
}

func TestSSERoundTrip(t *testing.T) {
	for _, policy := range []string{"rs-4-2", "lt-16-2"} {
		for _, scheme := range []string{cairn.SSES3, cairn.SSEC} {
			t.Run(policy+"/"+scheme, func(t *testing.T) {
				ctx := context.Background()
				e := newEnv(t, 6, 2, policy, Config{BlockSize: 4096, WindowBytes: 3 * 4096 * 4, Keys: testKeyring(t)})
				sse := &SSE{Scheme: scheme}
				get := GetOptions{}
				if scheme == cairn.SSEC {
					sse.CustomerKey, get.CustomerKey = customerKey, customerKey
				}
				for _, size := range []int{0, 10, seg - 1, seg + 1, 3*seg + 100} {
					data := randBytes(uint64(size), size)
					key := fmt.Sprintf("o%d", size)
					m, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(data), PutOptions{Size: int64(size), SSE: sse})
					if err != nil {
						t.Fatal(err)
					}
					if m.Size != cairn.EncryptedSize(int64(size)) || m.ContentSize() != int64(size) {
						t.Fatalf("size %d: stored %d, content %d", size, m.Size, m.ContentSize())
					}
					sum := md5.Sum(data)
					if plainMD5 := hex.EncodeToString(sum[:]); (m.ETag == plainMD5) != (scheme == cairn.SSES3) {
						t.Errorf("%s ETag %s; MD5 of the data %s", scheme, m.ETag, plainMD5)
					}
					e.noPlaintext(t, data)
					got, err := e.getWith(t, key, 0, -1, get)
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("size %d: %d bytes back, err %v", size, len(got), err)
					}
					for _, r := range [][2]int64{{0, 1}, {seg - 1, 2}, {seg, seg}, {5, 3 * seg}, {int64(size) - 1, 1}} {
						off, n := r[0], r[1]
						if off < 0 || off >= int64(size) {
							continue
						}
						got, err := e.getWith(t, key, off, n, get)
						want := data[off:min(off+n, int64(size))]
						if err != nil || !bytes.Equal(got, want) {
							t.Fatalf("size %d range %d+%d: %d bytes, err %v", size, off, n, len(got), err)
						}
					}
				}
			})
		}
	}
}

func TestSSEKeys(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 4096, Keys: testKeyring(t)})
	data := randBytes(1, 5000)
	if _, err := e.c.Put(ctx, "bkt", "c", bytes.NewReader(data), PutOptions{Size: -1, SSE: &SSE{Scheme: cairn.SSEC, CustomerKey: customerKey}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Put(ctx, "bkt", "s3", bytes.NewReader(data), PutOptions{Size: -1, SSE: &SSE{Scheme: cairn.SSES3}}); err != nil {
		t.Fatal(err)
	}
	wrong := bytes.Repeat([]byte{1}, 32)
	if _, err := e.getWith(t, "c", 0, -1, GetOptions{CustomerKey: wrong}); !errors.Is(err, crypt.ErrWrongKey) || !errors.Is(err, cairn.ErrAuth) {
		t.Errorf("wrong customer key: %v", err)
	}
	if _, err := e.getWith(t, "c", 0, -1, GetOptions{}); !errors.Is(err, ErrEncryptionMismatch) {
		t.Errorf("SSE-C object without its key: %v", err)
	}
	if _, err := e.getWith(t, "s3", 0, -1, GetOptions{CustomerKey: customerKey}); !errors.Is(err, ErrEncryptionMismatch) {
		t.Errorf("a customer key for an SSE-S3 object: %v", err)
	}
	if _, err := e.c.Put(ctx, "bkt", "x", bytes.NewReader(data), PutOptions{Size: -1, SSE: &SSE{Scheme: cairn.SSEC, CustomerKey: wrong[:5]}}); !errors.Is(err, cairn.ErrInvalid) {
		t.Errorf("a short customer key: %v", err)
	}
	nokeys := New(e.meta, e.shards, Config{})
	if _, err := nokeys.Put(ctx, "bkt", "x", bytes.NewReader(data), PutOptions{Size: -1, SSE: &SSE{Scheme: cairn.SSES3}}); !errors.Is(err, ErrNoKeyService) {
		t.Errorf("SSE-S3 without a key service: %v", err)
	}
	if _, _, err := nokeys.Get(ctx, "bkt", "s3", 0, -1); !errors.Is(err, ErrNoKeyService) {
		t.Errorf("reading SSE-S3 without a key service: %v", err)
	}
	other := New(e.meta, e.shards, Config{Keys: testKeyringOther(t)})
	if _, _, err := other.Get(ctx, "bkt", "s3", 0, -1); !errors.Is(err, cairn.ErrCorrupt) {
		t.Errorf("reading SSE-S3 with another key file: %v", err)
	}
	if _, err := e.c.Put(ctx, "bkt", "x", bytes.NewReader(data), PutOptions{Size: 4999, SSE: &SSE{Scheme: cairn.SSES3}}); !errors.Is(err, cairn.ErrInvalid) {
		t.Errorf("a body longer than announced: %v", err)
	}
}

func testKeyringOther(t testing.TB) *crypt.Keyring {
	k, err := crypt.NewKeyring(strings.NewReader(strings.Repeat("another key file", 4)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSSETampered changes stored bytes behind the shards' checksums (the
// fake checks none): the decoded ciphertext fails authentication, the
// reader reads around the shard that holds them and reports it; with more
// shards changed than that can get around, the read fails and no byte of
// a changed segment reaches the reader. Windows of one stripe keep every
// shard read ranged, so the whole-shard CRC check (which would catch the
// change first) does not apply and authentication is what is tested.
func TestSSETampered(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 8192, WindowBytes: 4 * 8192, Keys: testKeyring(t), ReadExtra: -1})
	data := randBytes(2, 3*seg)
	m, err := e.c.Put(ctx, "bkt", "o", bytes.NewReader(data), PutOptions{Size: -1, SSE: &SSE{Scheme: cairn.SSES3}})
	if err != nil {
		t.Fatal(err)
	}
	tamper := func(i int) {
		// Shard i of stripe 3 holds ciphertext of segment 1.
		name := string(m.Shards[i].Disk) + "/" + cairn.ShardName(m.Version, i)
		e.shards.Set(func() { e.shards.Files[name][3*8192+100] ^= 0x40 })
	}
	tamper(1)
	got, err := e.getWith(t, "o", 0, -1, GetOptions{})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("one tampered shard: %d bytes, err %v", len(got), err)
	}
	if len(e.damage) != 1 || e.damage[0].Shard != 1 || !errors.Is(e.damage[0].Err, cairn.ErrCorrupt) {
		t.Fatalf("damage reported: %+v", e.damage)
	}
	tamper(2)
	tamper(4)
	got, err = e.getWith(t, "o", 0, -1, GetOptions{})
	if !errors.Is(err, crypt.ErrAuthentication) || !errors.Is(err, cairn.ErrCorrupt) {
		t.Fatalf("three tampered shards: err %v", err)
	}
	if len(got) > seg || !bytes.HasPrefix(data, got) {
		t.Fatalf("returned %d bytes that are not all genuine", len(got))
	}
	// A range that does not touch the changed segment reads fine.
	if got, err := e.getWith(t, "o", 2*seg, seg, GetOptions{}); err != nil || !bytes.Equal(got, data[2*seg:]) {
		t.Fatalf("untouched range: %v", err)
	}
}

func TestSSEMultipart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 4096, MinPartSize: 100, Keys: testKeyring(t)})
	sse := &SSE{Scheme: cairn.SSEC, CustomerKey: customerKey}
	u, err := e.c.CreateUpload(ctx, "bkt", "mp", PutOptions{SSE: sse})
	if err != nil {
		t.Fatal(err)
	}
	if u.Encryption == nil || u.Encryption.Scheme != cairn.SSEC {
		t.Fatalf("upload encryption %+v", u.Encryption)
	}
	data := randBytes(3, seg+500+seg/2)
	cuts := []int{0, seg + 500, len(data)}
	var list []CompletePart
	for i := range 2 {
		part := data[cuts[i]:cuts[i+1]]
		if _, err := e.c.UploadPart(ctx, "bkt", "mp", u.ID, i+1, bytes.NewReader(part), PutOptions{Size: -1, SSE: &SSE{Scheme: cairn.SSEC, CustomerKey: bytes.Repeat([]byte{9}, 32)}}); !errors.Is(err, cairn.ErrAuth) {
			t.Fatalf("part with the wrong key: %v", err)
		}
		if _, err := e.c.UploadPart(ctx, "bkt", "mp", u.ID, i+1, bytes.NewReader(part), PutOptions{Size: -1}); !errors.Is(err, ErrEncryptionMismatch) {
			t.Fatalf("part without the key: %v", err)
		}
		p, err := e.c.UploadPart(ctx, "bkt", "mp", u.ID, i+1, bytes.NewReader(part), PutOptions{Size: int64(len(part)), SSE: sse})
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, CompletePart{Number: p.Number, ETag: p.ETag})
	}
	m, err := e.c.CompleteUpload(ctx, "bkt", "mp", u.ID, list)
	if err != nil {
		t.Fatal(err)
	}
	if m.ContentSize() != int64(len(data)) || m.Encryption.Scheme != cairn.SSEC {
		t.Fatalf("completed: content %d, encryption %+v", m.ContentSize(), m.Encryption)
	}
	e.noPlaintext(t, data)
	get := GetOptions{CustomerKey: customerKey}
	for _, r := range [][2]int64{{0, -1}, {seg, 1000}, {seg + 499, 2}, {10, int64(len(data)) - 20}, {int64(len(data)) - 1, 1}} {
		got, err := e.getWith(t, "mp", r[0], r[1], get)
		end := int64(len(data))
		if r[1] >= 0 {
			end = min(end, r[0]+r[1])
		}
		if err != nil || !bytes.Equal(got, data[r[0]:end]) {
			t.Fatalf("range %v: %d bytes, err %v", r, len(got), err)
		}
	}
	if _, err := e.c.CreateUpload(ctx, "bkt", "plain", PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// resealingMeta re-seals an upload's data key (as cairn admin keys reseal
// does) right after the client read the upload record, once armed: the
// worst moment for a completion.
type resealingMeta struct {
	*mem.Store
	keys  *crypt.Keyring
	armed bool
	t     *testing.T
}

func (m *resealingMeta) Upload(ctx context.Context, bucket, id string) (cairn.Upload, error) {
	u, err := m.Store.Upload(ctx, bucket, id)
	if err != nil || !m.armed {
		return u, err
	}
	m.armed = false
	dk, err := m.keys.Unseal(ctx, u.Encryption.KeyID, u.Encryption.SealedKey)
	if err != nil {
		m.t.Fatal(err)
	}
	ne := *u.Encryption
	if ne.KeyID, ne.SealedKey, err = m.keys.Seal(ctx, dk, strings.NewReader(strings.Repeat("nonce", 10))); err != nil {
		m.t.Fatal(err)
	}
	if err := m.UpdateUploadEncryption(ctx, bucket, id, &ne, u.Encryption); err != nil {
		m.t.Fatal(err)
	}
	return u, nil // the record as it was before the reseal
}

// TestCompleteUploadRacesReseal: an upload re-sealed while it completes
// commits the new sealing, never the one it read first (the old master
// key may leave the key file once reseal is done).
func TestCompleteUploadRacesReseal(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 4096})
	old := testKeyring(t)
	rotated, err := old.Rotate(strings.NewReader(strings.Repeat("rotated key byte", 4)))
	if err != nil {
		t.Fatal(err)
	}
	rm := &resealingMeta{Store: e.meta, keys: rotated, t: t}
	c := New(rm, e.shards, Config{BlockSize: 4096, Keys: rotated})
	u, err := New(e.meta, e.shards, Config{BlockSize: 4096, Keys: old}).CreateUpload(ctx, "bkt", "mp", PutOptions{SSE: &SSE{Scheme: cairn.SSES3}})
	if err != nil {
		t.Fatal(err)
	}
	data := randBytes(3, 9000)
	p, err := c.UploadPart(ctx, "bkt", "mp", u.ID, 1, bytes.NewReader(data), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	rm.armed = true
	m, err := c.CompleteUpload(ctx, "bkt", "mp", u.ID, []CompletePart{{Number: 1, ETag: p.ETag}})
	if err != nil {
		t.Fatal(err)
	}
	if rm.armed || m.Encryption.KeyID != rotated.Current() {
		t.Fatalf("completed with the sealing by %s (reseal ran: %v), want %s", m.Encryption.KeyID, !rm.armed, rotated.Current())
	}
	if got, _ := e.meta.Manifest(ctx, "bkt", "mp"); got.Encryption.KeyID != rotated.Current() {
		t.Fatalf("stored manifest sealed by %s", got.Encryption.KeyID)
	}
}
