package s3

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"strings"
)

// Flexible checksums: a client may send x-amz-checksum-<algorithm> as a
// header, or name it in x-amz-trailer and send it after an aws-chunked
// body. The gateway checks every algorithm S3 defines; the value is not
// stored (GET does not return it).

// ErrBadChecksum: the body does not match its x-amz-checksum-* value.
var ErrBadChecksum = &Error{"BadDigest", http.StatusBadRequest, "The checksum you specified did not match what we received."}

// ErrInvalidChecksum: an x-amz-checksum-* value or x-amz-trailer is malformed.
var ErrInvalidChecksum = &Error{"InvalidRequest", http.StatusBadRequest, "The x-amz-checksum or x-amz-trailer value is invalid."}

var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// checksumAlgorithms maps an x-amz-checksum-* header (lower case) to its hash.
var checksumAlgorithms = map[string]func() hash.Hash{
	"x-amz-checksum-crc32":     func() hash.Hash { return crc32.NewIEEE() },
	"x-amz-checksum-crc32c":    func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"x-amz-checksum-crc64nvme": func() hash.Hash { return crc64.New(crc64NVME) },
	"x-amz-checksum-sha1":      sha1.New,
	"x-amz-checksum-sha256":    sha256.New,
}

// decodeChecksum decodes a base64 checksum value of the hash's size.
func decodeChecksum(name, v string, h hash.Hash) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(b) != h.Size() {
		return nil, fmt.Errorf("%w: %s", ErrInvalidChecksum, name)
	}
	return b, nil
}

// headerChecksum returns the x-amz-checksum-* header of a request, if any
// (at most one may be given).
func headerChecksum(hd http.Header) (name string, h hash.Hash, want []byte, err error) {
	for n, newHash := range checksumAlgorithms {
		v := hd.Get(n)
		if v == "" {
			continue
		}
		if h != nil {
			return "", nil, nil, fmt.Errorf("%w: more than one checksum header", ErrInvalidChecksum)
		}
		name, h = n, newHash()
		if want, err = decodeChecksum(n, v, h); err != nil {
			return "", nil, nil, err
		}
	}
	return name, h, want, nil
}

// trailerChecksum returns the hash for the checksum that x-amz-trailer
// announces ("" if none).
func trailerChecksum(hd http.Header) (string, hash.Hash, error) {
	name := strings.ToLower(strings.TrimSpace(hd.Get("X-Amz-Trailer")))
	if name == "" {
		return "", nil, nil
	}
	newHash, ok := checksumAlgorithms[name]
	if !ok {
		return "", nil, fmt.Errorf("%w: x-amz-trailer %q", ErrInvalidChecksum, name)
	}
	return name, newHash(), nil
}
