package s3

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"cairn"
	"cairn/client"
)

// maxPartSize is the largest part S3 accepts.
const maxPartSize = 5 << 30

// multipart routes the object requests naming ?uploads or ?uploadId.
func (h *Handler) multipart(q *request) error {
	query := q.r.URL.Query()
	id := query.Get("uploadId")
	if !query.Has("uploads") && id == "" {
		return fmt.Errorf("%w: empty uploadId", ErrNoSuchUpload)
	}
	if err := h.checkBucket(q, q.bucket); err != nil {
		return err
	}
	switch {
	case q.r.Method == http.MethodPost && query.Has("uploads"):
		return h.createUpload(q)
	case q.r.Method == http.MethodPut && query.Has("partNumber"):
		return h.uploadPart(q, id)
	case q.r.Method == http.MethodPost:
		return h.completeUpload(q, id)
	case q.r.Method == http.MethodDelete:
		return h.abortUpload(q, id)
	case q.r.Method == http.MethodGet:
		return h.listParts(q, id)
	}
	return ErrMethodNotAllowed
}

// uploadErr is objectErr that keeps NoSuchUpload.
func (h *Handler) uploadErr(q *request, err error) error {
	if errors.Is(err, client.ErrNoSuchUpload) && !errors.Is(err, cairn.ErrUnavailable) {
		return err
	}
	return h.objectErr(q.r.Context(), q.bucket, err)
}

type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	NS       string   `xml:"xmlns,attr"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

func (h *Handler) createUpload(q *request) error {
	if err := checkPutHeaders(q.r.Header, false); err != nil {
		return err
	}
	policy, err := h.objectPolicy(q)
	if err != nil {
		return err
	}
	um, err := requestMeta(q.r.Header)
	if err != nil {
		return err
	}
	tags, err := headerTags(q.r.Header)
	if err != nil {
		return err
	}
	acl, err := h.writeACL(q)
	if err != nil {
		return err
	}
	alg, typ, err := uploadChecksum(q.r.Header)
	if err != nil {
		return err
	}
	sse, ck, err := h.requestSSE(q)
	if err != nil {
		return err
	}
	lock, err := h.putLock(q, false)
	if err != nil {
		return err
	}
	if _, err := h.readSmallBody(q); err != nil { // normally empty; checks the signature's payload hash
		return err
	}
	u, err := h.cfg.Objects.CreateUpload(q.r.Context(), q.bucket, q.key, client.PutOptions{
		Policy: policy, ContentType: q.r.Header.Get("Content-Type"), UserMeta: um, Now: h.cfg.Now, SSE: sse,
		Tags: tags, ACL: acl, ChecksumAlgorithm: alg, ChecksumType: typ, Retention: lock.retention, LegalHold: lock.hold,
	})
	if err != nil {
		return h.uploadErr(q, err)
	}
	setSSEHeaders(q.w, u.Encryption, ck)
	if alg != "" {
		q.w.Header().Set("X-Amz-Checksum-Algorithm", alg)
		q.w.Header().Set("X-Amz-Checksum-Type", typ)
	}
	return h.writeXML(q, http.StatusOK, initiateResult{NS: s3NS, Bucket: q.bucket, Key: q.key, UploadID: u.ID})
}

func (h *Handler) uploadPart(q *request, id string) error {
	n, err := strconv.Atoi(q.r.URL.Query().Get("partNumber"))
	if err != nil || n < 1 || n > cairn.MaxParts {
		return fmt.Errorf("%w: partNumber must be an integer from 1 to %d", ErrInvalidArgument, cairn.MaxParts)
	}
	if q.r.Header.Get("X-Amz-Copy-Source") != "" {
		return h.uploadPartCopy(q, id, n)
	}
	size, err := h.bodySize(q, min(h.cfg.MaxObjectSize, maxPartSize))
	if err != nil {
		return err
	}
	ck, err := h.sseCustomerKey(q, false)
	if err != nil {
		return err
	}
	u, err := h.cfg.Objects.Upload(q.r.Context(), q.bucket, q.key, id)
	if err != nil {
		return h.uploadErr(q, err)
	}
	if err := checkUploadKey(u, ck); err != nil {
		return err
	}
	opts := client.PutOptions{Size: size, Now: h.cfg.Now, Upload: &u}
	if ck != nil {
		opts.SSE = &client.SSE{Scheme: cairn.SSEC, CustomerKey: ck.key}
	}
	body, err := h.dataBody(q, size, min(h.cfg.MaxObjectSize, maxPartSize))
	if err != nil {
		return err
	}
	if err := checkPartChecksum(u, q.sum); err != nil {
		return err
	}
	opts.Checksum = q.checksumFunc()
	p, err := h.cfg.Objects.UploadPart(q.r.Context(), q.bucket, q.key, id, n, body, opts)
	if errors.Is(err, cairn.ErrConflict) {
		return h.writeErr(q.r.Context(), q.bucket, err)
	}
	if err != nil {
		return h.uploadErr(q, err)
	}
	setSSEHeaders(q.w, u.Encryption, ck)
	setChecksumHeaders(q.w, p.Checksum)
	q.w.Header().Del("X-Amz-Checksum-Type") // a part's answer has none
	q.w.Header().Set("ETag", `"`+p.ETag+`"`)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

type completeRequest struct {
	XMLName xml.Name `xml:"CompleteMultipartUpload"`
	Parts   []struct {
		Number int    `xml:"PartNumber"`
		ETag   string `xml:"ETag"`
		checksumXML
	} `xml:"Part"`
}

type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	NS       string   `xml:"xmlns,attr"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
	checksumXML
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

func (h *Handler) completeUpload(q *request, id string) error {
	var req completeRequest
	objectSum := takeChecksumHeader(q.r.Header) // the object's, not the XML body's
	if err := h.readXML(q, &req); err != nil {
		return err
	}
	if len(req.Parts) == 0 || len(req.Parts) > cairn.MaxParts {
		return fmt.Errorf("%w: %d parts (1 to %d allowed)", ErrMalformedXML, len(req.Parts), cairn.MaxParts)
	}
	// The SSE-C headers are optional here (S3 wants them only for
	// checksummed uploads); sent, they must be the upload's key.
	ck, err := h.sseCustomerKey(q, false)
	if err != nil {
		return err
	}
	cond, err := writeCondition(q.r.Header)
	if err != nil {
		return err
	}
	m, err := h.complete(q, id, req, ck, cond, objectSum)
	if errors.Is(err, client.ErrNoSuchUpload) {
		m, err = h.completedBy(q, id, ck, err)
	}
	if err != nil {
		return h.uploadErr(q, conditionErr(err))
	}
	setSSEHeaders(q.w, m.Encryption, ck)
	setWrittenVersion(q.w, m)
	res := completeResult{NS: s3NS, Location: objectURL(q.r, q.bucket, q.key),
		Bucket: q.bucket, Key: q.key, ETag: etag(m), checksumXML: xmlChecksum(m.Checksum)}
	if m.Checksum != nil {
		res.ChecksumType = m.Checksum.Type
	}
	return h.writeXML(q, http.StatusOK, res)
}

// complete completes upload id with the parts of req, checking the SSE-C
// key ck (if sent) against the upload's, if the object it replaces meets
// cond.
func (h *Handler) complete(q *request, id string, req completeRequest, ck *customerKey, cond client.Condition, objectSum http.Header) (*cairn.Manifest, error) {
	if ck != nil {
		u, err := h.cfg.Objects.Upload(q.r.Context(), q.bucket, q.key, id)
		if err != nil {
			return nil, err
		}
		if err := checkUploadKey(u, ck); err != nil {
			return nil, err
		}
	}
	if err := h.checkCompleteChecksums(q, id, req, objectSum); err != nil {
		return nil, err
	}
	parts := make([]client.CompletePart, len(req.Parts))
	for i, p := range req.Parts {
		parts[i] = client.CompletePart{Number: p.Number, ETag: strings.TrimSpace(p.ETag)}
	}
	return h.cfg.Objects.CompleteUploadIf(q.r.Context(), q.bucket, q.key, id, parts, cond)
}

// completedBy answers a CompleteMultipartUpload of an upload that is no
// longer in progress as S3 does: with the object it committed, while that
// object is still the key's current one (its manifest names the upload),
// else with noUpload, the NoSuchUpload error.
func (h *Handler) completedBy(q *request, id string, ck *customerKey, noUpload error) (*cairn.Manifest, error) {
	m, err := h.cfg.Objects.Stat(q.r.Context(), q.bucket, q.key)
	if err != nil {
		if errors.Is(err, cairn.ErrNotFound) {
			return nil, noUpload
		}
		return nil, err
	}
	if m.Upload != id {
		return nil, noUpload
	}
	if ck != nil { // optional here, as on the first completion
		if err := checkObjectKey(m, ck); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// objectURL is the absolute URL of an object as S3 gives it in the
// Location of CompleteMultipartUpload: the scheme (https if the request
// came over TLS, or a proxy in front says so in X-Forwarded-Proto) and
// host the client used, path style (the only addressing the gateway
// serves), the key URI-encoded.
func objectURL(r *http.Request, bucket, key string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	return scheme + "://" + r.Host + "/" + bucket + "/" + uriEncode(key, false)
}

func (h *Handler) abortUpload(q *request, id string) error {
	if err := h.cfg.Objects.AbortUpload(q.r.Context(), q.bucket, q.key, id); err != nil {
		return h.uploadErr(q, err)
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

type listPartsResult struct {
	XMLName              xml.Name    `xml:"ListPartsResult"`
	NS                   string      `xml:"xmlns,attr"`
	Bucket               string      `xml:"Bucket"`
	Key                  string      `xml:"Key"`
	UploadID             string      `xml:"UploadId"`
	StorageClass         string      `xml:"StorageClass"`
	PartNumberMarker     int         `xml:"PartNumberMarker"`
	NextPartNumberMarker int         `xml:"NextPartNumberMarker"`
	MaxParts             int         `xml:"MaxParts"`
	IsTruncated          bool        `xml:"IsTruncated"`
	Parts                []partEntry `xml:"Part"`
}

type partEntry struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	checksumXML
}

// intParam parses a non-negative integer query parameter (def if absent).
func intParam(q *request, name string, def int) (int, error) {
	v := q.r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s", ErrInvalidArgument, name)
	}
	return n, nil
}

func (h *Handler) listParts(q *request, id string) error {
	maxParts, err := intParam(q, "max-parts", 1000)
	if err != nil {
		return err
	}
	maxParts = min(maxParts, 1000)
	marker, err := intParam(q, "part-number-marker", 0)
	if err != nil {
		return err
	}
	// One page of the store's, of max-parts (at least one, to learn
	// whether any part follows a max-parts of 0).
	u, parts, more, err := h.cfg.Objects.ListPartsPage(q.r.Context(), q.bucket, q.key, id, marker, max(maxParts, 1))
	if err != nil {
		return h.uploadErr(q, err)
	}
	out := listPartsResult{NS: s3NS, Bucket: q.bucket, Key: q.key, UploadID: id, PartNumberMarker: marker, MaxParts: maxParts,
		StorageClass: h.storageClass(uploadPolicy(u)), IsTruncated: more || len(parts) > maxParts}
	for _, p := range parts[:min(len(parts), maxParts)] {
		out.Parts = append(out.Parts, partEntry{PartNumber: p.Number, LastModified: isoTime(p.Created), ETag: `"` + p.ETag + `"`, Size: partSize(u, p),
			checksumXML: xmlChecksum(p.Checksum)})
		out.NextPartNumberMarker = p.Number
	}
	return h.writeXML(q, http.StatusOK, out)
}

// allParts reads every part of an upload (up to cairn.MaxParts), a page
// of 1000 at a time.
func (h *Handler) allParts(q *request, id string) (cairn.Upload, []cairn.Part, error) {
	var u cairn.Upload
	var all []cairn.Part
	for after := 0; ; {
		up, parts, more, err := h.cfg.Objects.ListPartsPage(q.r.Context(), q.bucket, q.key, id, after, 1000)
		if err != nil {
			return up, nil, err
		}
		u, all = up, append(all, parts...)
		if !more || len(parts) == 0 {
			return u, all, nil
		}
		after = parts[len(parts)-1].Number
	}
}

type listUploadsResult struct {
	XMLName            xml.Name       `xml:"ListMultipartUploadsResult"`
	NS                 string         `xml:"xmlns,attr"`
	Bucket             string         `xml:"Bucket"`
	KeyMarker          string         `xml:"KeyMarker"`
	UploadIDMarker     string         `xml:"UploadIdMarker"`
	NextKeyMarker      string         `xml:"NextKeyMarker,omitempty"`
	NextUploadIDMarker string         `xml:"NextUploadIdMarker,omitempty"`
	Prefix             string         `xml:"Prefix"`
	Delimiter          string         `xml:"Delimiter,omitempty"`
	EncodingType       string         `xml:"EncodingType,omitempty"`
	MaxUploads         int            `xml:"MaxUploads"`
	IsTruncated        bool           `xml:"IsTruncated"`
	Uploads            []uploadEntry  `xml:"Upload"`
	CommonPrefixes     []commonPrefix `xml:"CommonPrefixes"`
}

type uploadEntry struct {
	Key          string `xml:"Key"`
	UploadID     string `xml:"UploadId"`
	Initiated    string `xml:"Initiated"`
	StorageClass string `xml:"StorageClass"`
	// ChecksumAlgorithm and ChecksumType: the upload's checksum, if any.
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}

// listUploads serves ListMultipartUploads: prefix, delimiter (keys
// rolled into common prefixes, as ListObjects), key-marker,
// upload-id-marker, max-uploads and encoding-type, in key order and, within a key, by
// initiation time. It reads the store's key-ordered index a page at a time
// (meta.Store.UploadKeyPage), never every upload of the bucket.
func (h *Handler) listUploads(q *request) error {
	if _, err := h.bucket(q, q.bucket); err != nil {
		return err
	}
	query := q.r.URL.Query()
	delim := query.Get("delimiter")
	maxUploads, err := intParam(q, "max-uploads", maxListKeys)
	if err != nil {
		return err
	}
	maxUploads = min(maxUploads, maxListKeys)
	prefix, keyMarker, idMarker := query.Get("prefix"), query.Get("key-marker"), query.Get("upload-id-marker")
	l := listQuery{enc: query.Get("encoding-type")}
	if l.enc != "" && l.enc != "url" {
		return fmt.Errorf("%w: encoding-type %q", ErrInvalidArgument, l.enc)
	}
	out := listUploadsResult{NS: s3NS, Bucket: q.bucket, KeyMarker: l.encode(keyMarker), UploadIDMarker: idMarker, Prefix: l.encode(prefix),
		Delimiter: l.encode(delim), MaxUploads: maxUploads, EncodingType: l.enc}
	p, err := listUploadsPage(q.r.Context(), h.cfg.Meta, q.bucket, prefix, delim, keyMarker, idMarker, maxUploads)
	if errors.Is(err, cairn.ErrNotFound) {
		return withCause(ErrNoSuchBucket, err)
	}
	if err != nil {
		return err
	}
	for _, u := range p.uploads {
		out.Uploads = append(out.Uploads, uploadEntry{Key: l.encode(u.Key), UploadID: u.ID, Initiated: isoTime(u.Created),
			StorageClass: h.storageClass(uploadPolicy(u)), ChecksumAlgorithm: u.ChecksumAlgorithm, ChecksumType: uploadChecksumType(u)})
	}
	for _, cp := range p.prefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, commonPrefix{Prefix: l.encode(cp)})
	}
	if out.IsTruncated = p.truncated; p.truncated {
		out.NextKeyMarker, out.NextUploadIDMarker = l.encode(p.nextKey), p.nextID
	}
	return h.writeXML(q, http.StatusOK, out)
}

// uploadPolicy is the policy of the object upload u completes: its cold
// policy if it is staged for one (its parts are stored with u.Policy).
func uploadPolicy(u cairn.Upload) string {
	if u.Cold != "" {
		return u.Cold
	}
	return u.Policy
}

// uploadChecksumType is the ChecksumType an upload lists: its own, or
// COMPOSITE for an upload with an algorithm recorded before types were.
func uploadChecksumType(u cairn.Upload) string {
	if u.ChecksumAlgorithm != "" && u.ChecksumType == "" {
		return cairn.ChecksumComposite
	}
	return u.ChecksumType
}

// uploadsPage is one page of ListMultipartUploads: uploads and common
// prefixes (each in key order; together up to max-uploads), whether more
// follow, and the position of the last entry.
type uploadsPage struct {
	uploads         []cairn.Upload
	prefixes        []string
	truncated       bool
	nextKey, nextID string
}

// listUploadsPage lists up to max uploads and common prefixes of bucket
// under prefix, rolled up at delim, after the position (keyMarker,
// idMarker). A key-marker that is itself a common prefix (and no
// upload-id-marker) skips every key under it: the previous page returned
// that prefix. As list does, it reads small batches of the index while it
// skips keys under a common prefix (cp+"\xff" sorts after all of them).
func listUploadsPage(ctx context.Context, m Meta, bucket, prefix, delim, keyMarker, idMarker string, max int) (uploadsPage, error) {
	var p uploadsPage
	key, id := keyMarker, idMarker
	if key == "" {
		id = "" // S3 ignores upload-id-marker without key-marker
	}
	if cp, ok := rollUp(key, prefix, delim); ok && id == "" && cp == key {
		key += "\xff"
	}
	batch := maxListKeys
	if delim != "" {
		batch = skipBatch
	}
	count, lastCP, skipping := 0, "", false
	for {
		us, more, err := m.UploadKeyPage(ctx, bucket, prefix, key, id, min(max-count+1, batch))
		if err != nil {
			return p, err
		}
		for _, u := range us {
			skipping = false
			cp, rolled := rollUp(u.Key, prefix, delim)
			if rolled && cp == lastCP {
				skipping = true
				continue
			}
			if count == max {
				p.truncated = true
				return p, nil
			}
			count++
			if rolled {
				p.prefixes = append(p.prefixes, cp)
				lastCP, p.nextKey, p.nextID, key, id = cp, cp, "", cp+"\xff", ""
				skipping = true // its other uploads likely follow
				continue
			}
			p.uploads = append(p.uploads, u)
			p.nextKey, p.nextID, key, id = u.Key, u.ID, u.Key, u.ID
		}
		if !more || len(us) == 0 {
			return p, nil
		}
		if skipping {
			batch = skipBatch
		} else {
			batch = min(batch*4, maxListKeys)
		}
	}
}

// partSize is the content bytes of a part: its size, or the plaintext's
// of an encrypted upload's part.
func partSize(u cairn.Upload, p cairn.Part) int64 {
	if u.Encryption != nil {
		if n, err := cairn.DecryptedSize(p.Size); err == nil {
			return n
		}
	}
	return p.Size
}

// rollUp returns the common prefix key rolls into under prefix and
// delimiter delim: prefix and the rest of key up to and including the
// first delim after prefix (false if delim is "", key does not start with
// prefix or delim is not there).
func rollUp(key, prefix, delim string) (string, bool) {
	if delim == "" || !strings.HasPrefix(key, prefix) {
		return "", false
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return "", false
	}
	return key[:len(prefix)+i+len(delim)], true
}
