package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"cairn"
	"cairn/client"
)

// UploadPartCopy (PUT ?partNumber&uploadId with x-amz-copy-source): a
// part made of an existing object's bytes, all of them or the
// x-amz-copy-source-range, subject to the x-amz-copy-source-if-*
// conditions. The source is streamed into the part as a GET streams it
// to a client: no more of it is held than the data path's windows.

type copyPartResult struct {
	XMLName      xml.Name `xml:"CopyPartResult"`
	NS           string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	checksumXML
}

// parseCopyRange parses x-amz-copy-source-range ("bytes=first-last",
// both offsets given, inclusive) against a source of size bytes; without
// the header, the whole source.
func parseCopyRange(v string, size int64) (off, n int64, err error) {
	if v == "" {
		return 0, size, nil
	}
	bad := fmt.Errorf("%w: The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy", ErrInvalidArgument)
	spec, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !ok {
		return 0, 0, bad
	}
	a, b, ok := strings.Cut(spec, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, 0, bad
	}
	if last >= size {
		return 0, 0, fmt.Errorf("%w: Range specified is not valid for source object of size: %d", ErrInvalidArgument, size)
	}
	return first, last - first + 1, nil
}

func (h *Handler) uploadPartCopy(q *request, id string, n int) error {
	ctx := q.r.Context()
	sb, sk, sv, err := parseCopySource(q.r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	if err := h.checkSource(q, sb, sk, sv); err != nil {
		return err
	}
	ck, err := h.sseCustomerKey(q, false)
	if err != nil {
		return err
	}
	srcKey, err := h.sseCustomerKey(q, true)
	if err != nil {
		return err
	}
	u, err := h.cfg.Objects.Upload(ctx, q.bucket, q.key, id)
	if err != nil {
		return h.uploadErr(q, err)
	}
	if err := checkUploadKey(u, ck); err != nil {
		return err
	}
	if err := h.drainBody(q); err != nil {
		return err
	}
	var size int64
	_, rc, err := h.openCopySource(q, sb, sk, sv, srcKey, func(total int64) (off, n int64, err error) {
		off, n, err = parseCopyRange(q.r.Header.Get("X-Amz-Copy-Source-Range"), total)
		if err == nil && n > maxPartSize {
			err = fmt.Errorf("%w: a copied part holds at most %d bytes", ErrEntityTooLarge, int64(maxPartSize))
		}
		size = n
		return off, n, err
	})
	if err != nil {
		return err
	}
	defer rc.Close()
	opts := client.PutOptions{Size: size, Now: h.cfg.Now, Upload: &u}
	if ck != nil {
		opts.SSE = &client.SSE{Scheme: cairn.SSEC, CustomerKey: ck.key}
	}
	var src io.Reader = rc
	if alg := u.ChecksumAlgorithm; alg != "" {
		if src, opts.Checksum, err = hashed(rc, alg); err != nil {
			return err
		}
	}
	p, err := h.cfg.Objects.UploadPart(ctx, q.bucket, q.key, id, n, src, opts)
	if errors.Is(err, cairn.ErrConflict) {
		return h.writeErr(ctx, q.bucket, err)
	}
	if err != nil {
		return h.uploadErr(q, err)
	}
	setSSEHeaders(q.w, u.Encryption, ck)
	if sv != "" {
		q.w.Header().Set("X-Amz-Copy-Source-Version-Id", sv)
	}
	return h.writeXML(q, http.StatusOK, copyPartResult{NS: s3NS, LastModified: isoTime(p.Created), ETag: `"` + p.ETag + `"`,
		checksumXML: xmlChecksum(p.Checksum)})
}

// drainBody reads the (normally empty) body of a copy so that a signed
// payload is checked.
func (h *Handler) drainBody(q *request) error {
	body, err := h.body(q)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, body)
	return err
}

// openCopySource opens the copy source sb/sk — its version sv, or the
// current one if sv is "" — once it meets the request's
// x-amz-copy-source-if-* conditions and the source's SSE-C key is
// srcKey: the bytes rng picks of its content size (nil: all of them).
// A current source overwritten between the stat that checked it and the
// open is checked and opened again (three times at most, then
// OperationAborted). A source version that is a delete marker is an
// InvalidRequest, as S3. The caller closes rc.
func (h *Handler) openCopySource(q *request, sb, sk, sv string, srcKey *customerKey, rng func(size int64) (off, n int64, err error)) (*cairn.Manifest, io.ReadCloser, error) {
	ctx := q.r.Context()
	m, err := h.statVersion(ctx, nil, sb, sk, sv)
	if errors.Is(err, ErrDeleteMarker) {
		return nil, nil, fmt.Errorf("%w: the source version is a delete marker", ErrInvalidCopySourceVersion)
	} else if err != nil {
		return nil, nil, err
	}
	if err := checkObjectKey(m, srcKey); err != nil {
		return nil, nil, err
	}
	if err := preconditions(q.r.Header, m, copyConditions, ErrPreconditionFailed); err != nil {
		return nil, nil, err
	}
	off, n := int64(0), int64(-1)
	if rng != nil {
		if off, n, err = rng(m.ContentSize()); err != nil {
			return nil, nil, err
		}
	}
	_, rc, err := h.cfg.Objects.OpenWith(ctx, m, off, n, client.GetOptions{CustomerKey: srcKey.keyOf()})
	if err != nil {
		return nil, nil, h.objectErr(ctx, sb, err)
	}
	return m, rc, nil
}
