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
