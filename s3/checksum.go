package s3

import (
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"

	"cairn"
)

// Flexible checksums (docs/design/s3.md, "Checksums"): a client may send
// x-amz-checksum-<algorithm> as a header, or name it in x-amz-trailer and
// send it after an aws-chunked body. The gateway checks every algorithm
// S3 defines as the body streams by, stores the verified value in the
// manifest (cairn.Manifest.Checksum, cairn.Part.Checksum) and returns it
// on GET and HEAD with x-amz-checksum-mode: ENABLED. A multipart upload
// created with x-amz-checksum-algorithm gets the composite of its parts'
// checksums (cairn.CompositeChecksum).

// ErrBadChecksum: the body does not match its x-amz-checksum-* value.
var ErrBadChecksum = &Error{"BadDigest", http.StatusBadRequest, "The checksum you specified did not match what we received."}

// ErrInvalidChecksum: an x-amz-checksum-* value or x-amz-trailer is malformed.
var ErrInvalidChecksum = &Error{"InvalidRequest", http.StatusBadRequest, "The x-amz-checksum or x-amz-trailer value is invalid."}

// checksumAlgorithms maps an x-amz-checksum-* header (lower case) to its hash.
var checksumAlgorithms = func() map[string]func() hash.Hash {
	m := map[string]func() hash.Hash{}
	for _, alg := range cairn.ChecksumAlgorithms {
		m[checksumHeader(alg)] = func() hash.Hash { h, _ := cairn.NewChecksumHash(alg); return h }
	}
	return m
}()

// checksumHeader is the x-amz-checksum-* header (lower case) of an
// algorithm in S3's spelling ("CRC32").
func checksumHeader(alg string) string { return "x-amz-checksum-" + strings.ToLower(alg) }

// bodySum is the checksum a request body carries, in a header or a
// trailer, and the hash its reader (digestReader, chunkedReader) checks
// it with.
type bodySum struct {
	alg string // S3's spelling: "CRC32"
	h   hash.Hash
}

// newBodySum is the bodySum of checksum header name, hashed by h (nil if
// h is).
func newBodySum(name string, h hash.Hash) *bodySum {
	if h == nil {
		return nil
	}
	return &bodySum{alg: strings.ToUpper(strings.TrimPrefix(name, "x-amz-checksum-")), h: h}
}

// checksum is the body's checksum: valid only once the body has been
// read to its end without error, when its reader has compared it.
func (b *bodySum) checksum() *cairn.Checksum {
	return &cairn.Checksum{Algorithm: b.alg, Value: base64.StdEncoding.EncodeToString(b.h.Sum(nil)), Type: cairn.ChecksumFullObject}
}

// checksumFunc is client.PutOptions.Checksum for q's body (nil if it
// carries no checksum); body must have made the body reader.
func (q *request) checksumFunc() func() *cairn.Checksum {
	if q.sum == nil {
		return nil
	}
	return q.sum.checksum
}

// setChecksumHeaders writes a stored checksum as S3 returns it:
// x-amz-checksum-<algorithm> and x-amz-checksum-type.
func setChecksumHeaders(w http.ResponseWriter, c *cairn.Checksum) {
	if c == nil {
		return
	}
	w.Header().Set(checksumHeader(c.Algorithm), c.Value)
	w.Header().Set("X-Amz-Checksum-Type", c.Type)
}

// checksumMode reports whether a GET or HEAD asked for the checksum
// (x-amz-checksum-mode: ENABLED).
func checksumMode(hd http.Header) bool {
	return strings.EqualFold(hd.Get("X-Amz-Checksum-Mode"), "ENABLED")
}

// checksumAlgorithm parses x-amz-checksum-algorithm (CreateMultipartUpload,
// CopyObject): "" if absent, else one of cairn.ChecksumAlgorithms.
func checksumAlgorithm(hd http.Header) (string, error) {
	v := strings.ToUpper(strings.TrimSpace(hd.Get("X-Amz-Checksum-Algorithm")))
	if v == "" {
		return "", nil
	}
	if _, err := cairn.NewChecksumHash(v); err != nil {
		return "", fmt.Errorf("%w: x-amz-checksum-algorithm %q", ErrInvalidChecksum, v)
	}
	return v, nil
}

// hashingReader hashes what it reads: a copy's new checksum.
type hashingReader struct {
	r   io.Reader
	sum bodySum
}

// hashed wraps r to hash what it reads with alg (one of
// cairn.ChecksumAlgorithms, else an error wrapping cairn.ErrInvalid),
// and returns the checksum of it, valid once r has been read to its end.
func hashed(r io.Reader, alg string) (io.Reader, func() *cairn.Checksum, error) {
	h, err := cairn.NewChecksumHash(alg)
	if err != nil {
		return nil, nil, err
	}
	hr := &hashingReader{r: r, sum: bodySum{alg: alg, h: h}}
	return hr, hr.sum.checksum, nil
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.sum.h.Write(p[:n])
	return n, err
}

// checksumXML is the checksum of an object or part in an XML answer
// (CompleteMultipartUpload, GetObjectAttributes): one of the fields.
type checksumXML struct {
	CRC32     string `xml:"ChecksumCRC32,omitempty"`
	CRC32C    string `xml:"ChecksumCRC32C,omitempty"`
	CRC64NVME string `xml:"ChecksumCRC64NVME,omitempty"`
	SHA1      string `xml:"ChecksumSHA1,omitempty"`
	SHA256    string `xml:"ChecksumSHA256,omitempty"`
}

// xmlChecksum is c as checksumXML.
func xmlChecksum(c *cairn.Checksum) checksumXML {
	var x checksumXML
	if c == nil {
		return x
	}
	switch c.Algorithm {
	case "CRC32":
		x.CRC32 = c.Value
	case "CRC32C":
		x.CRC32C = c.Value
	case "CRC64NVME":
		x.CRC64NVME = c.Value
	case "SHA1":
		x.SHA1 = c.Value
	case "SHA256":
		x.SHA256 = c.Value
	}
	return x
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

// servedChecksum is the checksum a GET or HEAD of m returns: the
// object's for all of it; for part pn (> 0) of a multipart object, that
// part's; none for a byte range (S3 has none to give).
func servedChecksum(m *cairn.Manifest, pn int, partial bool) *cairn.Checksum {
	switch {
	case pn > 0 && len(m.Parts) > 0:
		for _, p := range m.Parts {
			if p.Number == pn {
				return p.Checksum
			}
		}
		return nil
	case partial && pn == 0:
		return nil
	}
	return m.Checksum
}

// uploadChecksum is the checksum of a CreateMultipartUpload:
// x-amz-checksum-algorithm, and x-amz-checksum-type, COMPOSITE or
// FULL_OBJECT, defaulting as in S3 to FULL_OBJECT for CRC64NVME (its only
// form) and COMPOSITE for the others. SHA1 and SHA256 have no full-object
// form (InvalidRequest). ("", "") without an algorithm.
func uploadChecksum(hd http.Header) (alg, typ string, err error) {
	if alg, err = checksumAlgorithm(hd); err != nil {
		return "", "", err
	}
	typ = strings.ToUpper(strings.TrimSpace(hd.Get("X-Amz-Checksum-Type")))
	switch {
	case typ != "" && typ != cairn.ChecksumComposite && typ != cairn.ChecksumFullObject:
		return "", "", fmt.Errorf("%w: x-amz-checksum-type %q", ErrInvalidChecksum, typ)
	case typ != "" && alg == "":
		return "", "", fmt.Errorf("%w: x-amz-checksum-type without x-amz-checksum-algorithm", ErrInvalidChecksum)
	case alg == "":
		return "", "", nil
	case typ == "" && alg == "CRC64NVME":
		typ = cairn.ChecksumFullObject
	case typ == "":
		typ = cairn.ChecksumComposite
	case typ == cairn.ChecksumComposite && alg == "CRC64NVME",
		typ == cairn.ChecksumFullObject && (alg == "SHA1" || alg == "SHA256"):
		return "", "", fmt.Errorf("%w: The %s checksum type cannot be used with the %s checksum algorithm", ErrInvalidChecksum, typ, strings.ToLower(alg))
	}
	return alg, typ, nil
}

// checkPartChecksum refuses a part of an upload created with a checksum
// algorithm that does not carry a checksum of that algorithm: Complete
// could not compose the object's.
func checkPartChecksum(u cairn.Upload, sum *bodySum) error {
	if u.ChecksumAlgorithm == "" {
		return nil
	}
	if sum == nil || sum.alg != u.ChecksumAlgorithm {
		got := "none"
		if sum != nil {
			got = sum.alg
		}
		return fmt.Errorf("%w: the upload was created with a %s checksum, the part has %s", ErrInvalidChecksum, u.ChecksumAlgorithm, got)
	}
	return nil
}

// value is the checksum of algorithm alg in x ("" if none).
func (x checksumXML) value(alg string) string {
	switch alg {
	case "CRC32":
		return x.CRC32
	case "CRC32C":
		return x.CRC32C
	case "CRC64NVME":
		return x.CRC64NVME
	case "SHA1":
		return x.SHA1
	case "SHA256":
		return x.SHA256
	}
	return ""
}

// checkCompleteChecksums compares the checksums a CompleteMultipartUpload
// carries with the stored ones before anything commits: each part's in
// the XML (InvalidPart if it differs from the part's, as S3), and the
// object's in an x-amz-checksum-* header, with what completing the listed
// parts would store (BadDigest; objectSum holds the request's
// x-amz-checksum-* header: takeChecksumHeader). A request with neither
// reads nothing.
// A part replaced between this check and the completion has another ETag
// (Complete refuses it) or the same content.
func (h *Handler) checkCompleteChecksums(q *request, id string, req completeRequest, objectSum http.Header) error {
	var hdrName, got string
	for name := range checksumAlgorithms {
		if v := objectSum.Get(name); v != "" {
			if hdrName != "" {
				return fmt.Errorf("%w: more than one checksum header", ErrInvalidChecksum)
			}
			hdrName, got = name, strings.TrimSpace(v)
		}
	}
	partSums := false
	for _, p := range req.Parts {
		partSums = partSums || p.checksumXML != (checksumXML{})
	}
	if hdrName == "" && !partSums {
		return nil
	}
	u, have, err := h.allParts(q, id)
	if err != nil {
		return err
	}
	byNum := make(map[int]cairn.Part, len(have))
	for _, p := range have {
		byNum[p.Number] = p
	}
	parts := make([]cairn.Part, 0, len(req.Parts))
	sizes := make([]int64, 0, len(req.Parts))
	for _, rp := range req.Parts {
		p, ok := byNum[rp.Number]
		if !ok {
			return fmt.Errorf("%w: part %d", ErrInvalidPart, rp.Number)
		}
		for _, alg := range cairn.ChecksumAlgorithms {
			v := rp.value(alg)
			if v != "" && (p.Checksum == nil || p.Checksum.Algorithm != alg || p.Checksum.Value != v) {
				return fmt.Errorf("%w: the %s checksum of part %d differs from the part's", ErrInvalidPart, alg, rp.Number)
			}
		}
		parts, sizes = append(parts, p), append(sizes, partSize(u, p))
	}
	if hdrName == "" {
		return nil
	}
	alg := strings.ToUpper(strings.TrimPrefix(hdrName, "x-amz-checksum-"))
	if alg != u.ChecksumAlgorithm {
		return fmt.Errorf("%w: %s on the completion of an upload with checksum algorithm %q", ErrInvalidChecksum, hdrName, u.ChecksumAlgorithm)
	}
	var want *cairn.Checksum
	if u.ChecksumType == cairn.ChecksumFullObject {
		want, err = cairn.FullObjectChecksum(alg, parts, sizes)
	} else {
		want, err = cairn.CompositeChecksum(alg, parts)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidPart, err)
	}
	if got != want.Value && got != strings.Split(want.Value, "-")[0] {
		return fmt.Errorf("%w: %s", ErrBadChecksum, hdrName)
	}
	return nil
}

// takeChecksumHeader removes the x-amz-checksum-<algorithm> headers from
// hd and returns them: on CompleteMultipartUpload they are the object's
// checksum, not its XML body's, which body would check them against.
func takeChecksumHeader(hd http.Header) http.Header {
	out := http.Header{}
	for name := range checksumAlgorithms {
		if v := hd.Values(name); len(v) > 0 {
			out[http.CanonicalHeaderKey(name)] = v
			hd.Del(name)
		}
	}
	return out
}
