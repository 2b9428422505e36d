package s3

import (
	"bufio"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/access"
	"cairn/client"
)

const (
	metaPrefix  = "X-Amz-Meta-"
	maxUserMeta = 2 << 10 // bytes of x-amz-meta-* names and values, as S3
	// storedPrefix marks standard headers kept in Manifest.UserMeta.
	// Header names cannot contain ':', so these never clash with
	// x-amz-meta-* names.
	storedPrefix = ":"
)

// storedHeaders are the standard headers a PUT sets and GET returns, besides
// Content-Type (which has its own manifest field).
var storedHeaders = []string{"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

func decodeContentMD5(v string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) != 16 {
		return nil, ErrInvalidDigest
	}
	return b, nil
}

// requestMeta collects x-amz-meta-* (lower-cased names) and the stored
// standard headers of a PUT or a REPLACE copy.
func requestMeta(hd http.Header) (map[string]string, error) {
	m := map[string]string{}
	size := 0
	for name, vals := range hd {
		if k, ok := strings.CutPrefix(name, metaPrefix); ok && k != "" {
			k = strings.ToLower(k)
			v := strings.Join(vals, ",")
			m[k] = v
			size += len(k) + len(v)
		}
	}
	if size > maxUserMeta {
		return nil, ErrMetadataTooLarge
	}
	for _, name := range storedHeaders {
		v := hd.Get(name)
		if name == "Content-Encoding" { // aws-chunked is the transfer's, not the object's
			var keep []string
			for e := range strings.SplitSeq(v, ",") {
				if e = strings.TrimSpace(e); e != "" && e != "aws-chunked" {
					keep = append(keep, e)
				}
			}
			v = strings.Join(keep, ",")
		}
		if v != "" {
			m[storedPrefix+strings.ToLower(name)] = v
		}
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// conditionHeaders are the conditional-write headers: honoured on
// PutObject and CompleteMultipartUpload (writeCondition), refused where
// the gateway does not check them (CopyObject's destination,
// CreateMultipartUpload) rather than ignored.
var conditionHeaders = []string{"If-Match", "If-None-Match"}

// checkPutHeaders refuses the headers a write cannot honour (rather
// than ignoring them, which would break the client's expectations);
// conditional says whether this write honours conditionHeaders. Headers
// that only relax access (x-amz-acl) are ignored.
func checkPutHeaders(hd http.Header, conditional bool) error {
	if conditional {
		return nil
	}
	for _, name := range conditionHeaders {
		if hd.Get(name) != "" {
			return fmt.Errorf("%w: header %s", ErrNotImplemented, name)
		}
	}
	return nil
}

// writeCondition is the condition of a conditional write (AWS S3's
// conditional writes, docs/design/s3.md): If-None-Match: * (the key must
// not exist) and If-Match: ETAG (the current object must have that ETag).
// S3 takes only "*" in If-None-Match on a write; another value is
// NotImplemented rather than ignored. The data path checks the condition
// in the compare-and-swap that commits.
func writeCondition(hd http.Header) (client.Condition, error) {
	var c client.Condition
	if v := strings.TrimSpace(hd.Get("If-None-Match")); v != "" {
		if v != "*" {
			return c, fmt.Errorf("%w: If-None-Match on a write takes only *, not %q", ErrNotImplemented, v)
		}
		c.IfNoneMatch = true
	}
	c.IfMatch = strings.TrimSpace(hd.Get("If-Match"))
	return c, nil
}

// conditionErr maps a conditional write's failure to its S3 error: 412
// PreconditionFailed, 409 ConditionalRequestConflict (the key kept
// changing under the write's compare-and-swap; S3 tells the client to
// retry). Other errors pass through: If-Match on a missing key is the data
// path's cairn.ErrNotFound, which objectErr makes 404 NoSuchKey, as S3
// answers.
func conditionErr(err error) error {
	switch {
	case errors.Is(err, client.ErrPreconditionFailed):
		return withCause(ErrPreconditionFailed, err)
	case errors.Is(err, client.ErrConditionalConflict):
		return withCause(ErrConditionalRequestConflict, err)
	}
	return err
}

// limitReader fails a body of unknown length that grows past n bytes.
type limitReader struct {
	r io.Reader
	n int64 // bytes still allowed
}

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, ErrEntityTooLarge
	}
	return n, err
}

// ErrInvalidStorageClass: x-amz-storage-class names no configured class.
var ErrInvalidStorageClass = &Error{"InvalidStorageClass", http.StatusBadRequest, "The storage class you specified is not valid."}

// objectPolicy is the per-object policy: x-cairn-policy (signed and
// allowed: choosePolicy), else the policy of x-amz-storage-class, else ""
// (the bucket's default).
func (h *Handler) objectPolicy(q *request) (string, error) {
	hd := q.r.Header
	p := hd.Get(policyHeader)
	if p == "" {
		class := hd.Get("X-Amz-Storage-Class")
		if class == "" {
			return "", nil
		}
		cp, ok := h.cfg.StorageClasses[class]
		if !ok {
			return "", fmt.Errorf("%w: %q", ErrInvalidStorageClass, class)
		}
		return cp, nil
	}
	if err := h.choosePolicy(q, p); err != nil {
		return "", err
	}
	return p, nil
}

// storageClass is the class whose policy an object has (the first in
// name order), else STANDARD.
func (h *Handler) storageClass(policy string) string {
	for _, class := range slices.Sorted(maps.Keys(h.cfg.StorageClasses)) {
		if p := h.cfg.StorageClasses[class]; p != "" && p == policy {
			return class
		}
	}
	return "STANDARD"
}

func (h *Handler) putObject(q *request) error {
	ctx := q.r.Context()
	if err := h.checkBucket(q, q.bucket); err != nil {
		return err
	}
	size, err := h.bodySize(q, h.cfg.MaxObjectSize)
	if err != nil {
		return err
	}
	if err := checkPutHeaders(q.r.Header, true); err != nil {
		return err
	}
	cond, err := writeCondition(q.r.Header)
	if err != nil {
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
	sse, ck, err := h.requestSSE(q)
	if err != nil {
		return err
	}
	lock, err := h.putLock(q, true)
	if err != nil {
		return err
	}
	body, err := h.dataBody(q, size, h.cfg.MaxObjectSize)
	if err != nil {
		return err
	}
	m, err := h.cfg.Objects.Put(ctx, q.bucket, q.key, body, client.PutOptions{
		Policy: policy, ContentType: q.r.Header.Get("Content-Type"), UserMeta: um, Size: size,
		Now: h.cfg.Now, SSE: sse, If: cond, Tags: tags, ACL: acl, Checksum: q.checksumFunc(),
		Retention: lock.retention, LegalHold: lock.hold,
	})
	if err != nil {
		return h.writeErr(ctx, q.bucket, conditionErr(err))
	}
	setSSEHeaders(q.w, m.Encryption, ck)
	setWrittenVersion(q.w, m)
	setChecksumHeaders(q.w, m.Checksum)
	q.w.Header().Set("ETag", etag(m))
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// setWrittenVersion sets x-amz-version-id for a version a write made in
// a bucket whose versioning is Enabled (a null version's is not sent).
func setWrittenVersion(w http.ResponseWriter, m *cairn.Manifest) {
	if m.Versioned {
		w.Header().Set("X-Amz-Version-Id", m.Version)
	}
}

// bodySize is the announced size of a data body (-1 if unknown):
// ErrEntityTooLarge above limit.
func (h *Handler) bodySize(q *request, limit int64) (int64, error) {
	size := q.r.ContentLength
	if q.isStreaming() {
		v := q.r.Header.Get("X-Amz-Decoded-Content-Length")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, ErrMissingContentLength
		}
		size = n
	}
	if size > limit {
		return 0, ErrEntityTooLarge
	}
	return size, nil
}

// dataBody is the body of a PutObject or UploadPart, checked (see body)
// and against Content-MD5, and limited to limit bytes if its size is
// unknown.
func (h *Handler) dataBody(q *request, size, limit int64) (io.Reader, error) {
	body, err := h.body(q)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		body = &limitReader{r: body, n: limit}
	}
	if v := q.r.Header.Get("Content-Md5"); v != "" {
		want, err := decodeContentMD5(v)
		if err != nil {
			return nil, err
		}
		body = newMD5Reader(body, want)
	}
	return body, nil
}

func etag(m *cairn.Manifest) string { return `"` + m.ETag + `"` }

func lastModified(m *cairn.Manifest) time.Time { return m.Created.UTC().Truncate(time.Second) }

// setObjectHeaders writes the stored headers of m.
func setObjectHeaders(w http.ResponseWriter, m *cairn.Manifest, query url.Values) {
	hd := w.Header()
	ct := m.ContentType
	if ct == "" {
		ct = "binary/octet-stream"
	}
	hd.Set("Content-Type", ct)
	hd.Set("ETag", etag(m))
	hd.Set("Last-Modified", lastModified(m).Format(http.TimeFormat))
	hd.Set("Accept-Ranges", "bytes")
	hd.Set("X-Cairn-Policy", m.Policy)
	for k, v := range m.UserMeta {
		if name, ok := strings.CutPrefix(k, storedPrefix); ok {
			hd.Set(name, v)
		} else {
			hd["X-Amz-Meta-"+k] = []string{v}
		}
	}
	for _, name := range []string{"Content-Type", "Content-Language", "Expires", "Cache-Control", "Content-Disposition", "Content-Encoding"} {
		if v := query.Get("response-" + strings.ToLower(name)); v != "" {
			hd.Set(name, v)
		}
	}
}

// etagMatches reports whether an If-Match style list names the ETag.
func etagMatches(list, tag string) bool {
	for e := range strings.SplitSeq(list, ",") {
		e = strings.TrimSpace(e)
		e = strings.TrimPrefix(e, "W/")
		if e == "*" || strings.Trim(e, `"`) == tag {
			return true
		}
	}
	return false
}

// preconditions evaluates If-Match, If-Unmodified-Since, If-None-Match and
// If-Modified-Since (in that order, as S3 and RFC 7232 do). names are the
// four header names (the copy-source variants for CopyObject).
func preconditions(hd http.Header, m *cairn.Manifest, names [4]string, notModified error) error {
	mod := lastModified(m)
	if v := hd.Get(names[0]); v != "" {
		if !etagMatches(v, m.ETag) {
			return ErrPreconditionFailed
		}
	} else if v := hd.Get(names[1]); v != "" {
		if t, err := http.ParseTime(v); err == nil && mod.After(t) {
			return ErrPreconditionFailed
		}
	}
	if v := hd.Get(names[2]); v != "" {
		if etagMatches(v, m.ETag) {
			return notModified
		}
	} else if v := hd.Get(names[3]); v != "" {
		if t, err := http.ParseTime(v); err == nil && !mod.After(t) {
			return notModified
		}
	}
	return nil
}

var getConditions = [4]string{"If-Match", "If-Unmodified-Since", "If-None-Match", "If-Modified-Since"}

// parseRange parses a single "bytes=a-b", "bytes=a-" or "bytes=-n" range
// against an object of size bytes. ok is false for a header that is absent
// or not a single byte range (S3 then serves the whole object); an
// unsatisfiable range is ErrInvalidRange.
func parseRange(v string, size int64) (off, n int64, ok bool, err error) {
	spec, found := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, nil
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false, nil
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	switch {
	case a == "" && b == "":
		return 0, 0, false, nil
	case a == "": // suffix
		k, perr := strconv.ParseInt(b, 10, 64)
		if perr != nil || k < 0 {
			return 0, 0, false, nil
		}
		if k == 0 || size == 0 {
			return 0, 0, false, ErrInvalidRange
		}
		k = min(k, size)
		return size - k, k, true, nil
	}
	start, perr := strconv.ParseInt(a, 10, 64)
	if perr != nil || start < 0 {
		return 0, 0, false, nil
	}
	end := size - 1
	if b != "" {
		e, perr := strconv.ParseInt(b, 10, 64)
		if perr != nil || e < start {
			return 0, 0, false, nil
		}
		end = min(e, size-1)
	}
	if start >= size {
		return 0, 0, false, ErrInvalidRange
	}
	return start, end - start + 1, true, nil
}

// partNumber is the ?partNumber= of a GET or HEAD (0 if absent):
// InvalidArgument unless it is an integer from 1 to cairn.MaxParts, and
// InvalidRequest alongside a Range header (S3 takes one or the other).
func partNumber(q *request) (int, error) {
	query := q.r.URL.Query()
	if !query.Has("partNumber") {
		return 0, nil
	}
	v := query.Get("partNumber")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > cairn.MaxParts {
		return 0, fmt.Errorf("%w: partNumber %q: part number must be an integer between 1 and %d, inclusive", ErrInvalidArgument, v, cairn.MaxParts)
	}
	if q.r.Header.Get("Range") != "" {
		return 0, fmt.Errorf("%w: cannot specify both Range header and partNumber query parameter", ErrInvalidRequest)
	}
	return n, nil
}

// partRange is where part n lies in m's content, and how many parts m
// has (0 for an object not uploaded in parts, whose only part is number 1,
// all of it). n is the part's own number, as uploaded: an upload completed
// with parts 1 and 3 has a part 3 and no part 2 (ErrInvalidPartNumber, as
// for a number above every part's). The parts' content sizes come from the
// manifest: nothing is read to find the range.
func partRange(m *cairn.Manifest, n int) (off, size int64, count int, err error) {
	if len(m.Parts) == 0 {
		if n != 1 {
			return 0, 0, 0, fmt.Errorf("%w: part %d of an object uploaded in one piece", ErrInvalidPartNumber, n)
		}
		return 0, m.ContentSize(), 0, nil
	}
	for _, p := range m.Parts {
		ps := p.Size
		if m.Encryption != nil {
			if ps, err = cairn.DecryptedSize(p.Size); err != nil {
				return 0, 0, 0, fmt.Errorf("%w: stored part %d: %v", cairn.ErrCorrupt, p.Number, err)
			}
		}
		if p.Number == n {
			return off, ps, len(m.Parts), nil
		}
		off += ps
	}
	return 0, 0, 0, fmt.Errorf("%w: the object has no part %d", ErrInvalidPartNumber, n)
}

func (h *Handler) getObject(q *request, head bool) error {
	ctx := q.r.Context()
	if err := h.checkBucket(q, q.bucket); err != nil {
		return err
	}
	ck, err := h.sseCustomerKey(q, false)
	if err != nil {
		return err
	}
	pn, err := partNumber(q)
	if err != nil {
		return err
	}
	vid := q.r.URL.Query().Get("versionId")
	m, err := h.statVersion(ctx, q.w, q.bucket, q.key, vid)
	if err != nil {
		return err
	}
	if err := checkObjectKey(m, ck); err != nil {
		return err
	}
	if m.Versioned || vid != "" {
		q.w.Header().Set("X-Amz-Version-Id", m.VersionID())
	}
	size := m.ContentSize()
	if err := preconditions(q.r.Header, m, getConditions, ErrNotModified); err != nil {
		if errors.Is(err, ErrNotModified) {
			q.w.Header().Set("ETag", etag(m))
			q.w.Header().Set("Last-Modified", lastModified(m).Format(http.TimeFormat))
		}
		return err
	}
	off, n, partial, err := parseRange(q.r.Header.Get("Range"), size)
	if err != nil {
		q.w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		return err
	}
	if !partial {
		off, n = 0, size
	}
	if pn > 0 {
		// A part is a range (206 and Content-Range, as S3), but of an
		// empty object there is no byte to name: all of it, 200.
		var parts int
		if off, n, parts, err = partRange(m, pn); err != nil {
			return err
		}
		partial = size > 0
		if parts > 0 {
			q.w.Header().Set("X-Amz-Mp-Parts-Count", strconv.Itoa(parts))
		}
	}
	var body io.Reader
	if !head {
		// The data opens from the manifest the conditions were checked
		// on: no second read of it (issue 22), and never another version.
		_, rc, err := h.cfg.Objects.OpenWith(ctx, m, off, n, client.GetOptions{CustomerKey: ck.keyOf()})
		if err != nil {
			return h.objectErr(ctx, q.bucket, err)
		}
		defer rc.Close()
		body = rc
		if n > 0 {
			// Wait for the first window before the status line: a GET
			// that cannot be served (too few shards readable) still
			// gets an S3 error, not a 200 and a cut connection.
			br := bufio.NewReader(rc)
			if _, err := br.Peek(1); err != nil {
				if err == io.EOF {
					err = fmt.Errorf("%w: the data path returned no bytes of %d", cairn.ErrCorrupt, n)
				}
				return h.objectErr(ctx, q.bucket, err)
			}
			body = br
		}
	}
	setObjectHeaders(q.w, m, q.r.URL.Query())
	setSSEHeaders(q.w, m.Encryption, ck)
	setTagCount(q.w, m)
	setLockHeaders(q.w, m)
	if checksumMode(q.r.Header) {
		setChecksumHeaders(q.w, servedChecksum(m, pn, partial))
	}
	if class := h.storageClass(m.Policy); class != "STANDARD" { // S3 omits STANDARD
		q.w.Header().Set("X-Amz-Storage-Class", class)
	}
	q.w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	status := http.StatusOK
	if partial {
		q.w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, size))
		status = http.StatusPartialContent
	}
	q.w.WriteHeader(status)
	if head {
		return nil
	}
	if _, err := io.Copy(q.w, body); err != nil {
		// Headers are gone: cut the connection so the client sees a
		// short body rather than a complete-looking one.
		h.cfg.Logger.Warn("s3 GET aborted", "request_id", q.id, "bucket", q.bucket, "key", q.key, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (h *Handler) deleteObject(q *request) error {
	ctx := q.r.Context()
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	bypass, err := h.bypassGovernance(q, q.key)
	if err != nil {
		return err
	}
	v, ok, err := h.deleteVersioned(ctx, b, q.key, q.r.URL.Query().Get("versionId"), bypass)
	if err != nil {
		return err
	}
	if ok {
		setVersionHeaders(q.w, v)
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

type deleteRequest struct {
	XMLName xml.Name `xml:"Delete"`
	Quiet   bool     `xml:"Quiet"`
	Objects []struct {
		Key       string `xml:"Key"`
		VersionID string `xml:"VersionId"`
	} `xml:"Object"`
}

type deleteResult struct {
	XMLName xml.Name        `xml:"DeleteResult"`
	NS      string          `xml:"xmlns,attr"`
	Deleted []deletedObject `xml:"Deleted"`
	Errors  []deleteError   `xml:"Error"`
}

type deletedObject struct {
	Key                   string `xml:"Key"`
	VersionID             string `xml:"VersionId,omitempty"`
	DeleteMarker          bool   `xml:"DeleteMarker,omitempty"`
	DeleteMarkerVersionID string `xml:"DeleteMarkerVersionId,omitempty"`
}

type deleteError struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId,omitempty"`
	Code      string `xml:"Code"`
	Message   string `xml:"Message"`
}

// maxDeleteObjects is the most keys one DeleteObjects may name, as S3.
const maxDeleteObjects = 1000

// deleteParallelism bounds the concurrent deletes of one DeleteObjects.
const deleteParallelism = 16

// parseDeleteRequest parses a DeleteObjects body.
func parseDeleteRequest(b []byte) (*deleteRequest, error) {
	var d deleteRequest
	if err := parseXML(b, &d); err != nil {
		return nil, err
	}
	if len(d.Objects) == 0 || len(d.Objects) > maxDeleteObjects {
		return nil, fmt.Errorf("%w: %d objects (1 to %d allowed)", ErrMalformedXML, len(d.Objects), maxDeleteObjects)
	}
	return &d, nil
}

func (h *Handler) deleteObjects(q *request) error {
	ctx := q.r.Context()
	bk, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	b, err := h.readSmallBody(q)
	if err != nil {
		return err
	}
	d, err := parseDeleteRequest(b)
	if err != nil {
		return err
	}
	bypass, err := bypassRequested(q) // allowed or not key by key
	if err != nil {
		return err
	}
	// Delete in parallel (each delete waits for its shard files), report
	// in request order.
	errs := make([]error, len(d.Objects))
	done := make([]deletedObject, len(d.Objects))
	var g errgroup.Group // not WithContext: each key reports its own result
	g.SetLimit(deleteParallelism)
	for i, o := range d.Objects {
		if err := checkKey(o.Key); err != nil {
			errs[i] = err
			continue
		}
		if o.VersionID != "" {
			if err := validVersionID(o.VersionID); err != nil {
				errs[i] = err
				continue
			}
		}
		if q.access != nil { // not root: an explicit Deny binds the owner too
			action := "s3:DeleteObject"
			if o.VersionID != "" {
				action = access.VersionAction(action)
			}
			if err := h.may(q, q.access, action, o.Key); err != nil {
				errs[i] = err
				continue
			}
		}
		if bypass && !h.mayBypassGovernance(q, o.Key) {
			errs[i] = ErrAccessDenied
			continue
		}
		g.Go(func() error {
			v, ok, err := h.deleteVersioned(ctx, bk, o.Key, o.VersionID, bypass)
			errs[i], done[i] = err, deletedObject{Key: o.Key, VersionID: o.VersionID}
			if ok && v.Marker {
				done[i].DeleteMarker = true
				if o.VersionID == "" {
					done[i].DeleteMarkerVersionID = v.ID()
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	out := deleteResult{NS: s3NS}
	for i, o := range d.Objects {
		if err := errs[i]; err != nil {
			e := apiError(err)
			out.Errors = append(out.Errors, deleteError{Key: o.Key, VersionID: o.VersionID, Code: e.Code, Message: e.Message})
		} else if !d.Quiet {
			out.Deleted = append(out.Deleted, done[i])
		}
	}
	return h.writeXML(q, http.StatusOK, out)
}

type copyObjectResult struct {
	XMLName      xml.Name `xml:"CopyObjectResult"`
	NS           string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

var copyConditions = [4]string{"X-Amz-Copy-Source-If-Match", "X-Amz-Copy-Source-If-Unmodified-Since", "X-Amz-Copy-Source-If-None-Match", "X-Amz-Copy-Source-If-Modified-Since"}

// parseCopySource parses x-amz-copy-source: "[/]bucket/key[?versionId=…]",
// URL-encoded.
func parseCopySource(v string) (bucket, key, version string, err error) {
	path, query, _ := strings.Cut(v, "?")
	if query != "" {
		vs, _ := url.ParseQuery(query)
		if vs.Has("versionId") {
			version = vs.Get("versionId")
			if err := validVersionID(version); err != nil {
				return "", "", "", err
			}
		}
	}
	dec, err := url.PathUnescape(path)
	if err != nil {
		return "", "", "", ErrInvalidCopySource
	}
	bucket, key, ok := strings.Cut(strings.TrimPrefix(dec, "/"), "/")
	if !ok || bucket == "" || key == "" {
		return "", "", "", ErrInvalidCopySource
	}
	if err := cairn.ValidateBucketName(bucket); err != nil {
		return "", "", "", fmt.Errorf("%w: %v", ErrInvalidBucketName, err)
	}
	if err := checkKey(key); err != nil {
		return "", "", "", err
	}
	return bucket, key, version, nil
}

func (h *Handler) copyObject(q *request) error {
	ctx := q.r.Context()
	sb, sk, sv, err := parseCopySource(q.r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	if err := h.checkBucket(q, q.bucket); err != nil {
		return err
	}
	if err := h.checkSource(q, sb, sk, sv); err != nil {
		return err
	}
	if err := checkPutHeaders(q.r.Header, false); err != nil {
		return err
	}
	directive := q.r.Header.Get("X-Amz-Metadata-Directive")
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return fmt.Errorf("%w: x-amz-metadata-directive %q", ErrInvalidArgument, directive)
	}
	policy, err := h.objectPolicy(q)
	if err != nil {
		return err
	}
	sse, ck, err := h.requestSSE(q)
	if err != nil {
		return err
	}
	srcKey, err := h.sseCustomerKey(q, true)
	if err != nil {
		return err
	}
	alg, err := checksumAlgorithm(q.r.Header)
	if err != nil {
		return err
	}
	lock, err := h.putLock(q, false)
	if err != nil {
		return err
	}
	if sb == q.bucket && sk == q.key && sv == "" && directive != "REPLACE" && policy == "" && sse == nil {
		return ErrInvalidCopyRequest
	}
	if err := h.drainBody(q); err != nil {
		return err
	}
	m, rc, err := h.openCopySource(q, sb, sk, sv, srcKey, nil)
	if err != nil {
		return err
	}
	defer rc.Close()
	// The copy's Object Lock is the request's (or the bucket's default),
	// never the source's, as S3.
	opts := client.PutOptions{Policy: policy, ContentType: m.ContentType, UserMeta: m.UserMeta, Size: m.ContentSize(), Now: h.cfg.Now, SSE: sse,
		Retention: lock.retention, LegalHold: lock.hold}
	if opts.Tags, err = copyTags(q.r.Header, m); err != nil {
		return err
	}
	if opts.ACL, err = h.writeACL(q); err != nil { // a copy's ACL is its own: private unless asked
		return err
	}
	if m.Checksum != nil && m.Checksum.Type == cairn.ChecksumFullObject {
		opts.Checksum = func() *cairn.Checksum { return m.Checksum } // the same content
	}
	if directive == "REPLACE" {
		if opts.UserMeta, err = requestMeta(q.r.Header); err != nil {
			return err
		}
		opts.ContentType = q.r.Header.Get("Content-Type")
	}
	var src io.Reader = rc
	if alg != "" {
		if src, opts.Checksum, err = hashed(rc, alg); err != nil {
			return err
		}
	}
	nm, err := h.cfg.Objects.Put(ctx, q.bucket, q.key, src, opts)
	if err != nil {
		return h.writeErr(ctx, q.bucket, err)
	}
	setSSEHeaders(q.w, nm.Encryption, ck)
	setWrittenVersion(q.w, nm)
	if sv != "" {
		q.w.Header().Set("X-Amz-Copy-Source-Version-Id", sv)
	}
	return h.writeXML(q, http.StatusOK, copyObjectResult{NS: s3NS, LastModified: isoTime(nm.Created), ETag: etag(nm)})
}
