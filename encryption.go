package cairn

import "fmt"

// Encryption at rest (docs/design/encryption.md): an encrypted object's
// shards hold ciphertext, made before erasure coding, so no k shards
// reveal anything without the object's data key, and that key is stored
// only sealed (by the cluster's master key, or by the customer's key).
//
// The ciphertext is the plaintext cut into segments of SegmentSize bytes
// (the last one shorter, an empty object one empty segment), each sealed
// with AES-256-GCM and followed by its 16-byte tag. The layout (Manifest
// Size, every Layout and Part Size) describes the ciphertext; the object's
// content size is Encryption.Size (Manifest.ContentSize).

// Encryption schemes (Encryption.Scheme).
const (
	// SSES3 is S3's SSE-S3: the data key is sealed by a master key of the
	// cluster's key service (Encryption.KeyID names it).
	SSES3 = "sse-s3"
	// SSEC is S3's SSE-C: the data key is sealed by the key the customer
	// sends with every request; only a salted HMAC of that key is kept
	// to tell a wrong key (KeyHMAC).
	SSEC = "sse-c"
)

// Cipher names the segment format of docs/design/encryption.md
// (Encryption.Cipher): AES-256-GCM over SegmentSize-byte segments, a
// per-stream key derived from the data key and the stream's version.
const Cipher = "aes-256-gcm-64k"

// SegmentSize is the plaintext bytes of every segment but the last.
const SegmentSize = 64 << 10

// SegmentOverhead is the bytes a segment's ciphertext has beyond its
// plaintext: the GCM tag.
const SegmentOverhead = 16

// Encryption says how an object (every part of it, for a multipart object)
// is encrypted. It holds the data key only sealed.
type Encryption struct {
	Scheme string `json:"scheme"` // SSES3 or SSEC
	Cipher string `json:"cipher"` // Cipher
	// KeyID names the master key that sealed the data key (SSE-S3), so
	// key rotation can re-seal data keys without touching the data.
	KeyID     string `json:"key_id,omitempty"`
	SealedKey []byte `json:"sealed_key"`         // the data key, sealed (AES-GCM: nonce ‖ ciphertext ‖ tag)
	KeySalt   []byte `json:"key_salt,omitempty"` // SSE-C: the salt of KeyHMAC
	KeyHMAC   []byte `json:"key_hmac,omitempty"` // SSE-C: HMAC-SHA256(salt, customer key)
	Size      int64  `json:"size"`               // plaintext bytes of the object
}

// Segments returns the number of segments of plain bytes of plaintext (at
// least 1: an empty stream is one empty, authenticated segment).
func Segments(plain int64) int64 {
	return max(1, (plain+SegmentSize-1)/SegmentSize)
}

// EncryptedSize returns the ciphertext bytes of plain bytes of plaintext.
func EncryptedSize(plain int64) int64 { return plain + Segments(plain)*SegmentOverhead }

// DecryptedSize returns the plaintext bytes of a ciphertext of c bytes,
// or an error wrapping ErrCorrupt if no plaintext encrypts to c bytes.
func DecryptedSize(c int64) (int64, error) {
	const seg = SegmentSize + SegmentOverhead
	n := max(1, (c+seg-1)/seg)
	p := c - n*SegmentOverhead
	if p < 0 || EncryptedSize(p) != c {
		return 0, fmt.Errorf("%w: %d bytes are no encrypted stream's size", ErrCorrupt, c)
	}
	return p, nil
}

// ContentSize returns the bytes of m's content: Size, or the plaintext
// size of an encrypted object.
func (m *Manifest) ContentSize() int64 {
	if m.Encryption != nil {
		return m.Encryption.Size
	}
	return m.Size
}

// problem returns the first rule e breaks ("" if none) for an object whose
// stored bytes are size (single-part) or whose parts are parts.
func (e *Encryption) problem(size int64, parts []Part) string {
	switch {
	case e.Scheme != SSES3 && e.Scheme != SSEC:
		return fmt.Sprintf("encryption scheme %q (want %q or %q)", e.Scheme, SSES3, SSEC)
	case e.Cipher != Cipher:
		return fmt.Sprintf("cipher %q (want %q)", e.Cipher, Cipher)
	case len(e.SealedKey) == 0:
		return "encrypted without a sealed data key"
	case e.Scheme == SSES3 && e.KeyID == "":
		return "sse-s3 without a key ID"
	case e.Scheme == SSEC && (len(e.KeyHMAC) == 0 || len(e.KeySalt) == 0):
		return "sse-c without the key's HMAC and salt"
	case e.Size < 0:
		return fmt.Sprintf("plaintext size %d", e.Size)
	}
	if len(parts) == 0 {
		if EncryptedSize(e.Size) != size {
			return fmt.Sprintf("plaintext size %d encrypts to %d bytes, not %d", e.Size, EncryptedSize(e.Size), size)
		}
		return ""
	}
	var sum int64
	for _, p := range parts {
		n, err := DecryptedSize(p.Size)
		if err != nil {
			return fmt.Sprintf("part %d: %d bytes are no encrypted part's size", p.Number, p.Size)
		}
		sum += n
	}
	if sum != e.Size {
		return fmt.Sprintf("parts hold %d plaintext bytes, the object %d", sum, e.Size)
	}
	return ""
}
