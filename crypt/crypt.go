package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"cairn"
)

// KeySize is the bytes of a data key, a master key and a customer key
// (AES-256).
const KeySize = 32

// Errors.
var (
	// ErrAuthentication: a segment or a sealed key failed its GCM tag:
	// the bytes were changed, cut, reordered, or belong to another object
	// (or the key is not the one that sealed them). Wraps cairn.ErrCorrupt.
	ErrAuthentication = fmt.Errorf("%w: encrypted data failed authentication", cairn.ErrCorrupt)
	// ErrKeySize: a key is not KeySize bytes. Wraps cairn.ErrInvalid.
	ErrKeySize = fmt.Errorf("%w: a key must be %d bytes", cairn.ErrInvalid, KeySize)
)

// Stream identifies the bytes one stream cipher seals: an object version
// or a part version. Every segment's additional data names it.
type Stream struct {
	Bucket, Key, Version string
}

// NewDataKey draws a fresh data key from rand.
func NewDataKey(rand io.Reader) ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := io.ReadFull(rand, k); err != nil {
		return nil, fmt.Errorf("drawing a data key: %w", err)
	}
	return k, nil
}

// StreamCipher seals and opens the segments of one stream. It is safe for
// concurrent use.
type StreamCipher struct {
	aead cipher.AEAD
	ad   []byte // the additional data's prefix: format tag and stream identity
}

// streamInfo is HKDF's info prefix for a stream key; the version follows.
const streamInfo = "cairn sse stream v1\x00"

// adTag starts every segment's additional data.
const adTag = "cairn-sse-v1"

// NewStreamCipher returns the cipher of stream s under dataKey.
func NewStreamCipher(dataKey []byte, s Stream) (*StreamCipher, error) {
	if len(dataKey) != KeySize {
		return nil, ErrKeySize
	}
	if len(s.Bucket) > 0xffff || len(s.Key) > 0xffff || len(s.Version) > 0xffff {
		return nil, fmt.Errorf("%w: stream name too long", cairn.ErrInvalid)
	}
	sk, err := hkdf.Key(sha256.New, dataKey, nil, streamInfo+s.Version, KeySize)
	if err != nil {
		return nil, fmt.Errorf("deriving a stream key: %w", err)
	}
	aead, err := newGCM(sk)
	if err != nil {
		return nil, err
	}
	ad := []byte(adTag)
	for _, f := range []string{s.Bucket, s.Key, s.Version} {
		ad = binary.BigEndian.AppendUint16(ad, uint16(len(f)))
		ad = append(ad, f...)
	}
	return &StreamCipher{aead: aead, ad: ad}, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, ErrKeySize
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// segment returns the nonce and additional data of segment i.
func (c *StreamCipher) segment(i int64, final bool) (nonce [12]byte, ad []byte) {
	binary.BigEndian.PutUint64(nonce[4:], uint64(i))
	ad = binary.BigEndian.AppendUint64(c.ad[:len(c.ad):len(c.ad)], uint64(i))
	f := byte(0)
	if final {
		f = 1
	}
	return nonce, append(ad, f)
}

// SealSegment appends to dst the ciphertext of plain as segment i of the
// stream (final: the stream's last segment). plain must be SegmentSize
// bytes unless final.
func (c *StreamCipher) SealSegment(dst, plain []byte, i int64, final bool) []byte {
	nonce, ad := c.segment(i, final)
	return c.aead.Seal(dst, nonce[:], plain, ad)
}

// OpenSegment appends to dst the plaintext of ct, segment i of the stream
// (final: its last). ErrAuthentication if ct is not exactly what
// SealSegment made for that segment of this stream.
func (c *StreamCipher) OpenSegment(dst, ct []byte, i int64, final bool) ([]byte, error) {
	nonce, ad := c.segment(i, final)
	out, err := c.aead.Open(dst, nonce[:], ct, ad)
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", i, ErrAuthentication)
	}
	return out, nil
}

// sealInfo starts the additional data of a sealed data key.
const sealInfo = "cairn sealed data key v1\x00"

// Seal seals dataKey under kek (a master key or a customer key) with a
// fresh nonce from rand; label (the scheme and key ID) is bound into it,
// so Unseal needs the same label. The result is nonce ‖ ciphertext ‖ tag.
func Seal(kek, dataKey []byte, label string, rand io.Reader) ([]byte, error) {
	aead, err := newGCM(kek)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(dataKey)+aead.Overhead())
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return nil, fmt.Errorf("drawing a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, dataKey, []byte(sealInfo+label)), nil
}

// Unseal opens what Seal made under kek with label: ErrAuthentication if
// kek or label differ or the bytes were changed.
func Unseal(kek, sealed []byte, label string) ([]byte, error) {
	aead, err := newGCM(kek)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("sealed key of %d bytes: %w", len(sealed), ErrAuthentication)
	}
	ns := aead.NonceSize()
	dk, err := aead.Open(nil, sealed[:ns], sealed[ns:], []byte(sealInfo+label))
	if err != nil {
		return nil, fmt.Errorf("unsealing the data key: %w", ErrAuthentication)
	}
	if len(dk) != KeySize {
		return nil, fmt.Errorf("unsealed a %d-byte data key: %w", len(dk), ErrAuthentication)
	}
	return dk, nil
}

// errShort: the ciphertext ended before the segments the range needs.
var errShort = errors.New("ciphertext ends early")
