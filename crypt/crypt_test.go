package crypt

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"cairn"
)

const S = cairn.SegmentSize

// fixed is a deterministic "random" source for known answers.
type fixed struct{ b byte }

func (f *fixed) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = f.b
		f.b++
	}
	return len(p), nil
}

func testStream(t testing.TB, version string) *StreamCipher {
	t.Helper()
	dk := bytes.Repeat([]byte{7}, KeySize)
	c, err := NewStreamCipher(dk, Stream{Bucket: "b", Key: "k", Version: version})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func plaintext(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i/251)
	}
	return p
}

func encrypt(t testing.TB, c *StreamCipher, p []byte) []byte {
	t.Helper()
	ct, err := io.ReadAll(NewEncrypter(c, bytes.NewReader(p)))
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// oneByte hands out one byte per Read, to catch assumptions about full reads.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

func TestRoundTrip(t *testing.T) {
	c := testStream(t, "v1")
	for _, n := range []int{0, 1, 100, S - 1, S, S + 1, 2 * S, 3*S + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := plaintext(n)
			ct := encrypt(t, c, p)
			if int64(len(ct)) != cairn.EncryptedSize(int64(n)) {
				t.Fatalf("ciphertext %d bytes, want EncryptedSize %d", len(ct), cairn.EncryptedSize(int64(n)))
			}
			if back, err := cairn.DecryptedSize(int64(len(ct))); err != nil || back != int64(n) {
				t.Fatalf("DecryptedSize(%d) = %d, %v; want %d", len(ct), back, err, n)
			}
			if bytes.Contains(ct, p[:min(n, 64)]) && n >= 16 {
				t.Fatal("the ciphertext holds plaintext")
			}
			slow, err := io.ReadAll(NewEncrypter(c, oneByte{bytes.NewReader(p)}))
			if err != nil || !bytes.Equal(slow, ct) {
				t.Fatalf("encrypting byte by byte differs (err %v)", err)
			}
			rg, err := Range(0, int64(n), int64(n))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(NewDecrypter(c, oneByte{bytes.NewReader(ct)}, rg))
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("round trip: %d bytes back, err %v", len(got), err)
			}
		})
	}
}

func TestDecryptedSizeRejects(t *testing.T) {
	for _, c := range []int64{0, 1, 15, S + 16 + 1 + 15, S + 16 + 16 - 1} {
		if _, err := cairn.DecryptedSize(c); !errors.Is(err, cairn.ErrCorrupt) {
			t.Errorf("DecryptedSize(%d): err %v, want ErrCorrupt", c, err)
		}
	}
	for p := int64(0); p < 3*S+40; p += 997 {
		if got, err := cairn.DecryptedSize(cairn.EncryptedSize(p)); err != nil || got != p {
			t.Fatalf("DecryptedSize(EncryptedSize(%d)) = %d, %v", p, got, err)
		}
	}
}

// TestRangeMapping checks every range over boundary offsets of several
// sizes: the ciphertext range is whole segments, the least that hold the
// plaintext range, and mapping it back covers the range; decrypting it
// gives exactly the range's bytes.
func TestRangeMapping(t *testing.T) {
	c := testStream(t, "v1")
	for _, size := range []int{0, 1, S - 1, S, S + 1, 2*S + 7} {
		p := plaintext(size)
		ct := encrypt(t, c, p)
		var points []int64
		for _, o := range []int{0, 1, S - 1, S, S + 1, 2*S - 1, 2 * S, 2*S + 1, size - 1, size} {
			if o >= 0 && o <= size {
				points = append(points, int64(o))
			}
		}
		for _, off := range points {
			for _, end := range points {
				if end < off {
					continue
				}
				rg, err := Range(off, end, int64(size))
				if err != nil {
					t.Fatal(err)
				}
				checkRange(t, rg, int64(size))
				got, err := io.ReadAll(NewDecrypter(c, bytes.NewReader(ct[rg.CipherOff:rg.CipherEnd]), rg))
				if err != nil || !bytes.Equal(got, p[off:end]) {
					t.Fatalf("size %d range [%d, %d): %d bytes, err %v", size, off, end, len(got), err)
				}
			}
		}
	}
	if _, err := Range(5, 4, 10); !errors.Is(err, cairn.ErrInvalid) {
		t.Errorf("a backward range: %v", err)
	}
	if _, err := Range(0, 11, 10); !errors.Is(err, cairn.ErrInvalid) {
		t.Errorf("a range past the end: %v", err)
	}
}

func checkRange(t *testing.T, rg CipherRange, size int64) {
	t.Helper()
	seg := int64(S + cairn.SegmentOverhead)
	if rg.Off == rg.End {
		if rg.CipherEnd != rg.CipherOff {
			t.Fatalf("empty range %+v reads ciphertext", rg)
		}
		return
	}
	last := (rg.CipherEnd - 1) / seg
	switch {
	case rg.CipherOff != rg.First*seg:
		t.Fatalf("%+v: does not start at a segment", rg)
	case rg.CipherEnd != min((last+1)*seg, cairn.EncryptedSize(size)):
		t.Fatalf("%+v: does not end at a segment", rg)
	case rg.First*S > rg.Off || (rg.First+1)*S <= rg.Off:
		t.Fatalf("%+v: the first segment does not hold the first byte", rg)
	case last*S > rg.End-1 || (last+1)*S <= rg.End-1:
		t.Fatalf("%+v: the last segment does not hold the last byte", rg)
	case rg.Skip != rg.Off-rg.First*S:
		t.Fatalf("%+v: skip", rg)
	}
}

// TestRangeRandom decrypts random ranges of a random size (seeded).
func TestRangeRandom(t *testing.T) {
	seed := uint64(1)
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 0))
	c := testStream(t, "v1")
	for range 20 {
		size := rnd.Int64N(4 * S)
		p := plaintext(int(size))
		ct := encrypt(t, c, p)
		off := rnd.Int64N(size + 1)
		end := off + rnd.Int64N(size-off+1)
		rg, err := Range(off, end, size)
		if err != nil {
			t.Fatal(err)
		}
		checkRange(t, rg, size)
		got, err := io.ReadAll(NewDecrypter(c, bytes.NewReader(ct[rg.CipherOff:rg.CipherEnd]), rg))
		if err != nil || !bytes.Equal(got, p[off:end]) {
			t.Fatalf("size %d range [%d, %d): err %v", size, off, end, err)
		}
	}
}

func decryptAll(c *StreamCipher, ct []byte, size int64) ([]byte, error) {
	rg, err := Range(0, size, size)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(NewDecrypter(c, bytes.NewReader(ct), rg))
}

func TestTamper(t *testing.T) {
	c := testStream(t, "v1")
	size := int64(2*S + 100)
	p := plaintext(int(size))
	ct := encrypt(t, c, p)
	wantAuth := func(what string, got []byte, err error) {
		t.Helper()
		if !errors.Is(err, ErrAuthentication) || !errors.Is(err, cairn.ErrCorrupt) {
			t.Fatalf("%s: err %v, want ErrAuthentication", what, err)
		}
		// Whatever came before the failing segment is genuine plaintext.
		if !bytes.HasPrefix(p, got) {
			t.Fatalf("%s: returned bytes that are not the plaintext", what)
		}
	}
	rnd := rand.New(rand.NewPCG(2, 0))
	for range 64 {
		i := rnd.IntN(len(ct))
		bad := bytes.Clone(ct)
		bad[i] ^= 1 << rnd.IntN(8)
		got, err := decryptAll(c, bad, size)
		wantAuth(fmt.Sprintf("bit flipped at %d", i), got, err)
	}
	seg := S + cairn.SegmentOverhead
	// Segments 0 and 1 swapped.
	swapped := slices3(ct[seg:2*seg], ct[:seg], ct[2*seg:])
	got, err := decryptAll(c, swapped, size)
	wantAuth("segments reordered", got, err)
	// Truncated at a segment boundary: the first two segments claimed as
	// a whole stream of 2·S bytes; the second is not a final segment.
	got, err = decryptAll(c, ct[:2*seg], 2*S)
	wantAuth("truncated", got, err)
	// Another object's segments (same data key, other version or key).
	other := encrypt(t, testStream(t, "v2"), p)
	got, err = decryptAll(c, other, size)
	wantAuth("another version's ciphertext", got, err)
	dk := bytes.Repeat([]byte{7}, KeySize)
	ok, _ := NewStreamCipher(dk, Stream{Bucket: "b", Key: "other", Version: "v1"})
	got, err = decryptAll(ok, ct, size)
	wantAuth("another key's name", got, err)
	// Cut short inside a segment: ErrCorrupt, not a panic or a short read.
	got, err = decryptAll(c, ct[:len(ct)-1], size)
	if !errors.Is(err, cairn.ErrCorrupt) || !bytes.HasPrefix(p, got) {
		t.Fatalf("cut short: %v", err)
	}
}

func slices3(a, b, c []byte) []byte {
	return append(append(append([]byte{}, a...), b...), c...)
}

// TestKnownAnswer pins the format: the ciphertext of a fixed key, stream
// and plaintext, and segment 0 rebuilt from docs/design/encryption.md
// with the standard library alone.
func TestKnownAnswer(t *testing.T) {
	dk := make([]byte, KeySize)
	for i := range dk {
		dk[i] = byte(i)
	}
	s := Stream{Bucket: "bkt", Key: "a/b", Version: "0123456789abcdef0123456789abcdef"}
	c, err := NewStreamCipher(dk, s)
	if err != nil {
		t.Fatal(err)
	}
	p := plaintext(S + 3)
	ct := encrypt(t, c, p)
	sum := sha256.Sum256(ct)
	const want = "d7aa529e1ff5e5910e7b90e84033c5bb0351b45b83d4201e7a93028cd94643ff"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Errorf("ciphertext SHA-256 %s, want %s", got, want)
	}
	// The spec, step by step.
	sk, _ := hkdf.Key(sha256.New, dk, nil, "cairn sse stream v1\x00"+s.Version, 32)
	blk, _ := aes.NewCipher(sk)
	g, _ := cipher.NewGCM(blk)
	ad := []byte("cairn-sse-v1\x00\x03bkt\x00\x03a/b\x00\x200123456789abcdef0123456789abcdef")
	nonce := make([]byte, 12)
	seg0 := g.Seal(nil, nonce, p[:S], append(bytes.Clone(ad), 0, 0, 0, 0, 0, 0, 0, 0, 0))
	nonce[11] = 1
	seg1 := g.Seal(nil, nonce, p[S:], append(bytes.Clone(ad), 0, 0, 0, 0, 0, 0, 0, 1, 1))
	if !bytes.Equal(ct, append(seg0, seg1...)) {
		t.Error("the ciphertext differs from the format's definition")
	}
	sealed, err := Seal(dk, bytes.Repeat([]byte{9}, KeySize), "sse-s3\x00k1", &fixed{})
	if err != nil {
		t.Fatal(err)
	}
	const wantSealed = "000102030405060708090a0b4e0bdf12cceccb1284489e82b8e071648adf8e3df9725675316eec8c146009bb2e4bd21b0f8456beaf5c3cceb817bf3d"
	if got := hex.EncodeToString(sealed); got != wantSealed {
		t.Errorf("sealed key %s, want %s", got, wantSealed)
	}
}

func TestSealUnseal(t *testing.T) {
	kek := bytes.Repeat([]byte{1}, KeySize)
	dk := bytes.Repeat([]byte{2}, KeySize)
	sealed, err := Seal(kek, dk, "l", &fixed{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Unseal(kek, sealed, "l"); err != nil || !bytes.Equal(got, dk) {
		t.Fatalf("unseal: %v", err)
	}
	if _, err := Unseal(kek, sealed, "other"); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another label: %v", err)
	}
	if _, err := Unseal(bytes.Repeat([]byte{3}, KeySize), sealed, "l"); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another key: %v", err)
	}
	if _, err := Unseal(kek, sealed[:10], "l"); !errors.Is(err, ErrAuthentication) {
		t.Errorf("short: %v", err)
	}
	if _, err := Seal(kek[:5], dk, "l", &fixed{}); !errors.Is(err, ErrKeySize) {
		t.Errorf("short key: %v", err)
	}
}

func TestKeyring(t *testing.T) {
	ctx := context.Background()
	rnd := &fixed{}
	k1, err := NewKeyring(rnd)
	if err != nil {
		t.Fatal(err)
	}
	dk := bytes.Repeat([]byte{5}, KeySize)
	id1, sealed, err := k1.Seal(ctx, dk, rnd)
	if err != nil || id1 != k1.Current() {
		t.Fatalf("seal: %s %v", id1, err)
	}
	k2, err := k1.Rotate(rnd)
	if err != nil {
		t.Fatal(err)
	}
	if k2.Current() == id1 || len(k2.IDs()) != 2 || len(k1.IDs()) != 1 {
		t.Fatalf("rotate: current %s, ids %v (old %v)", k2.Current(), k2.IDs(), k1.IDs())
	}
	parsed, err := ParseKeyring(k2.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := parsed.Unseal(ctx, id1, sealed); err != nil || !bytes.Equal(got, dk) {
		t.Fatalf("an old key's data key after rotation: %v", err)
	}
	if _, err := k1.Unseal(ctx, "nope", sealed); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := k2.Unseal(ctx, k2.Current(), sealed); !errors.Is(err, ErrAuthentication) {
		t.Errorf("wrong key ID for the sealed key: %v", err)
	}
	for _, bad := range []string{``, `{}`, `{"current":"a","keys":{"a":"AAAA"}}`, `{"current":"b","keys":{"a":"` + string(bytes.Repeat([]byte("A"), 44)) + `"}}`} {
		if _, err := ParseKeyring([]byte(bad)); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("ParseKeyring(%q): %v", bad, err)
		}
	}
}

func TestCustomerKey(t *testing.T) {
	key := bytes.Repeat([]byte{0xc}, KeySize)
	dk := bytes.Repeat([]byte{0xd}, KeySize)
	sealed, salt, mac, err := SealCustomer(key, dk, &fixed{})
	if err != nil {
		t.Fatal(err)
	}
	e := &cairn.Encryption{Scheme: cairn.SSEC, SealedKey: sealed, KeySalt: salt, KeyHMAC: mac}
	if got, err := UnsealCustomer(key, e); err != nil || !bytes.Equal(got, dk) {
		t.Fatalf("right key: %v", err)
	}
	wrong := bytes.Repeat([]byte{0xe}, KeySize)
	if _, err := UnsealCustomer(wrong, e); !errors.Is(err, ErrWrongKey) || !errors.Is(err, cairn.ErrAuth) {
		t.Errorf("wrong key: %v", err)
	}
	if bytes.Contains(sealed, key) || bytes.Contains(mac, key) {
		t.Error("the customer key is stored")
	}
}

// TestRemaining resumes a range after a segment failed, from a clean copy
// of the ciphertext: what Read returned and what the resumed reader
// returns make up the range exactly.
func TestRemaining(t *testing.T) {
	c := testStream(t, "v1")
	size := int64(3*S + 50)
	p := plaintext(int(size))
	ct := encrypt(t, c, p)
	bad := bytes.Clone(ct)
	bad[S+cairn.SegmentOverhead+7] ^= 1 // segment 1
	for _, r := range [][2]int64{{0, size}, {10, 2*S + 3}, {S + 5, size}} {
		rg, err := Range(r[0], r[1], size)
		if err != nil {
			t.Fatal(err)
		}
		d := NewDecrypter(c, bytes.NewReader(bad[rg.CipherOff:rg.CipherEnd]), rg)
		got, err := io.ReadAll(d)
		if !errors.Is(err, ErrAuthentication) {
			t.Fatalf("range %v: err %v", r, err)
		}
		rest := d.Remaining()
		checkRange(t, rest, size)
		again := NewDecrypter(c, bytes.NewReader(ct[rest.CipherOff:rest.CipherEnd]), rest)
		if err := again.Peek(); err != nil {
			t.Fatalf("range %v: Peek of the clean copy: %v", r, err)
		}
		tail, err := io.ReadAll(again)
		if err != nil || !bytes.Equal(append(got, tail...), p[r[0]:r[1]]) {
			t.Fatalf("range %v: resumed: %v", r, err)
		}
	}
}

// FuzzDecrypt feeds arbitrary ciphertext and ranges to the decrypter:
// it must fail or return exactly the range of what was sealed, never
// other bytes, and never panic.
func FuzzDecrypt(f *testing.F) {
	c := testStream(f, "v1")
	p := plaintext(S + 100)
	ct := encrypt(f, c, p)
	f.Add(ct, uint32(0), uint32(S+100), uint32(0), byte(0))
	f.Add(ct[:S], uint32(5), uint32(S+1), uint32(7), byte(1))
	f.Fuzz(func(t *testing.T, data []byte, off, end, flip uint32, bit byte) {
		size := int64(S + 100)
		o, e := int64(off)%(size+1), int64(end)%(size+1)
		if e < o {
			o, e = e, o
		}
		rg, err := Range(o, e, size)
		if err != nil {
			t.Fatal(err)
		}
		in := bytes.Clone(ct)
		if len(data) > 0 {
			in = append(in[:int(flip)%len(in)], data...) // replace the tail with fuzz
		} else {
			in[int(flip)%len(in)] ^= 1 << (bit % 8)
		}
		if rg.CipherEnd > int64(len(in)) {
			in = append(in, make([]byte, rg.CipherEnd-int64(len(in)))...)
		}
		got, err := io.ReadAll(NewDecrypter(c, bytes.NewReader(in[rg.CipherOff:rg.CipherEnd]), rg))
		want := p[o:e]
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("range [%d, %d): wrong bytes without an error", o, e)
		}
		if err != nil && !bytes.HasPrefix(want, got) {
			t.Fatalf("range [%d, %d): unauthenticated bytes before the error", o, e)
		}
	})
}
