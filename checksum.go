package cairn

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
)

// Checksum is an S3 additional checksum of an object or a part
// (docs/design/s3.md, "Checksums"): the value a client sent as
// x-amz-checksum-<algorithm> and the gateway verified, or a multipart
// object's composite of its parts' checksums.
type Checksum struct {
	Algorithm string `json:"algorithm"` // one of ChecksumAlgorithms
	// Value is the base64 digest; a composite's ends in "-N", N the
	// number of parts.
	Value string `json:"value"`
	Type  string `json:"type"` // ChecksumFullObject or ChecksumComposite
}

// Checksum types (S3's x-amz-checksum-type).
const (
	ChecksumFullObject = "FULL_OBJECT" // the digest of the whole content
	ChecksumComposite  = "COMPOSITE"   // the digest of the parts' digests, "-N"
)

// CRC64NVME is the polynomial of S3's CRC64NVME checksum (reversed form;
// the NVM Express specification's CRC-64).
const CRC64NVME = 0x9a6c9329ac4bc9b5

var (
	crc32cTable    = crc32.MakeTable(crc32.Castagnoli)
	crc64NVMETable = crc64.MakeTable(CRC64NVME)
)

// ChecksumAlgorithms are the S3 checksum algorithms, in S3's spelling.
var ChecksumAlgorithms = []string{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"}

// NewChecksumHash returns a hash of algorithm (one of
// ChecksumAlgorithms), or an error wrapping ErrInvalid.
func NewChecksumHash(algorithm string) (hash.Hash, error) {
	switch algorithm {
	case "CRC32":
		return crc32.NewIEEE(), nil
	case "CRC32C":
		return crc32.New(crc32cTable), nil
	case "CRC64NVME":
		return crc64.New(crc64NVMETable), nil
	case "SHA1":
		return sha1.New(), nil
	case "SHA256":
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("%w: checksum algorithm %q (want one of %v)", ErrInvalid, algorithm, ChecksumAlgorithms)
}

// CompositeChecksum returns the composite checksum of a multipart object
// made of parts, as S3 computes it: the algorithm's digest of the
// concatenated binary digests of the parts, in base64, then "-N". Every
// part must carry a full checksum of algorithm (ErrInvalid otherwise).
// CRC64NVME has no composite form in S3 (ErrInvalid).
func CompositeChecksum(algorithm string, parts []Part) (*Checksum, error) {
	if algorithm == "CRC64NVME" {
		return nil, fmt.Errorf("%w: CRC64NVME has no composite checksum", ErrInvalid)
	}
	h, err := NewChecksumHash(algorithm)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		c := p.Checksum
		if c == nil || c.Algorithm != algorithm || c.Type != ChecksumFullObject {
			return nil, fmt.Errorf("%w: part %d has no %s checksum", ErrInvalid, p.Number, algorithm)
		}
		b, err := base64.StdEncoding.DecodeString(c.Value)
		if err != nil || len(b) != h.Size() {
			return nil, fmt.Errorf("%w: part %d: checksum %q", ErrInvalid, p.Number, c.Value)
		}
		h.Write(b)
	}
	return &Checksum{Algorithm: algorithm, Type: ChecksumComposite,
		Value: fmt.Sprintf("%s-%d", base64.StdEncoding.EncodeToString(h.Sum(nil)), len(parts))}, nil
}

// FullObjectChecksum returns the full-object checksum of a multipart
// object made of parts (S3's FULL_OBJECT type, the only one of
// CRC64NVME): the CRC of the whole content, combined from the parts' CRCs
// and content sizes (sizes[i] bytes of part i) without reading the data.
// Only the CRCs combine: SHA1 and SHA256 have no full-object form
// (ErrInvalid), and every part must carry a checksum of algorithm.
func FullObjectChecksum(algorithm string, parts []Part, sizes []int64) (*Checksum, error) {
	var poly uint64
	width := 32
	switch algorithm {
	case "CRC32":
		poly = crc32.IEEE
	case "CRC32C":
		poly = crc32.Castagnoli
	case "CRC64NVME":
		poly, width = CRC64NVME, 64
	default:
		return nil, fmt.Errorf("%w: %s has no full-object checksum of a multipart object", ErrInvalid, algorithm)
	}
	if len(sizes) != len(parts) {
		return nil, fmt.Errorf("%w: %d sizes for %d parts", ErrInvalid, len(sizes), len(parts))
	}
	c := newCRCMath(poly, width)
	var crc, op uint64 // op shifts a CRC past lastSize bytes
	lastSize := int64(-1)
	for i, p := range parts {
		pc := p.Checksum
		if pc == nil || pc.Algorithm != algorithm || pc.Type != ChecksumFullObject {
			return nil, fmt.Errorf("%w: part %d has no %s checksum", ErrInvalid, p.Number, algorithm)
		}
		b, err := base64.StdEncoding.DecodeString(pc.Value)
		if err != nil || len(b) != width/8 {
			return nil, fmt.Errorf("%w: part %d: checksum %q", ErrInvalid, p.Number, pc.Value)
		}
		var v uint64
		for _, x := range b { // big-endian, as S3 encodes a CRC
			v = v<<8 | uint64(x)
		}
		if i == 0 {
			crc = v
			continue
		}
		if sizes[i] != lastSize { // parts mostly share one size
			op, lastSize = c.xPow8n(sizes[i]), sizes[i]
		}
		crc = c.mul(op, crc) ^ v // the CRC of A‖B from those of A and B
	}
	out := make([]byte, width/8)
	for i := range out {
		out[len(out)-1-i] = byte(crc >> (8 * i))
	}
	return &Checksum{Algorithm: algorithm, Value: base64.StdEncoding.EncodeToString(out), Type: ChecksumFullObject}, nil
}

// crcMath is arithmetic modulo a CRC's polynomial, in the reflected
// bit order of the CRCs S3 uses (all with initial value and final XOR all
// ones): zlib's crc32_combine, for any width up to 64. The CRC of A‖B is
// mul(xPow8n(len(B)), crc(A)) ^ crc(B).
type crcMath struct {
	poly  uint64 // reflected
	width int
	// pow[k] is x^(8·2^k) modulo the polynomial: the operator that shifts
	// a CRC past 2^k bytes.
	pow [63]uint64
}

func newCRCMath(poly uint64, width int) *crcMath {
	c := &crcMath{poly: poly, width: width}
	p := uint64(1) << (width - 2) // x^1
	for range 3 {                 // x^8: bytes, not bits
		p = c.mul(p, p)
	}
	for k := range c.pow {
		c.pow[k] = p
		p = c.mul(p, p)
	}
	return c
}

// mul returns a·b modulo the polynomial.
func (c *crcMath) mul(a, b uint64) uint64 {
	m := uint64(1) << (c.width - 1)
	var p uint64
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ c.poly
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow8n returns x^(8n) modulo the polynomial (n ≥ 0): the operator that
// shifts a CRC past n zero bytes.
func (c *crcMath) xPow8n(n int64) uint64 {
	p := uint64(1) << (c.width - 1) // x^0
	for k := 0; n > 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			p = c.mul(c.pow[k], p)
		}
	}
	return p
}
