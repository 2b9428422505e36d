package s3

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"cairn"
	"cairn/client"
)

// PostObject (docs/design/s3.md, "POST uploads"): a browser uploads a file
// with an HTML form, POST /bucket as multipart/form-data. The form's
// fields (key, policy, the signature's fields, Content-Type, x-amz-meta-*,
// tagging, ...) come first and the file last; fields after the file are
// ignored, as S3 ignores them. The request carries no Authorization: the
// signature is over the base64 policy document (postpolicy.go), which
// bounds what the form may ask for. The file streams into the data path,
// checked against the policy's content-length-range as it goes, so a
// failed condition stores nothing.

// maxPostFields bounds the bytes of the form fields before the file, as S3
// does (20 KB).
const maxPostFields = 20 << 10

// PostObject errors, as S3 answers them.
var (
	ErrPostPreDataTooLarge = &Error{"MaxPostPreDataLengthExceeded", http.StatusBadRequest, "Your POST request fields preceding the upload file were too large."}
	ErrPostMalformed       = &Error{"MalformedPOSTRequest", http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."}
	ErrPostNoFile          = &Error{"InvalidArgument", http.StatusBadRequest, "POST requires exactly one file upload per request."}
	ErrPostEntityTooSmall  = &Error{"EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed size"}
	ErrPostEntityTooLarge  = &Error{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed size"}
)

// errPostMissing is S3's answer to a form without a required field.
func errPostMissing(field string) error {
	return &Error{"InvalidArgument", http.StatusBadRequest, "Bucket POST must contain a field named '" + field + "'.  If it is specified, please check the order of the fields."}
}

// isPostObject reports whether r is a browser form upload: a POST on a
// bucket (no key, no subresource) with a multipart/form-data body.
func isPostObject(r *http.Request, bucket, key string) bool {
	if r.Method != http.MethodPost || bucket == "" || key != "" || r.URL.RawQuery != "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

// postForm is a parsed form: its fields (lower-case names; values as
// sent) up to the file, and the file's part, to be streamed.
type postForm struct {
	fields map[string]string
	file   *multipart.Part
}

// readPostForm reads the fields of a form up to its file part.
func readPostForm(body io.Reader, contentType string) (*postForm, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["boundary"] == "" {
		return nil, fmt.Errorf("%w: no multipart boundary", ErrPostMalformed)
	}
	mr := multipart.NewReader(body, params["boundary"])
	f := &postForm{fields: map[string]string{}}
	budget := int64(maxPostFields)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, ErrPostNoFile
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrPostMalformed, err)
		}
		name := strings.ToLower(part.FormName())
		if name == "" {
			return nil, fmt.Errorf("%w: a part without a form field name", ErrPostMalformed)
		}
		if name == "file" {
			f.file = part
			return f, nil
		}
		b, err := io.ReadAll(io.LimitReader(part, budget+1))
		if err != nil {
			return nil, err
		}
		if budget -= int64(len(b)); budget < 0 {
			return nil, ErrPostPreDataTooLarge
		}
		if _, dup := f.fields[name]; dup {
			return nil, fmt.Errorf("%w: the form field %q appears more than once", ErrInvalidArgument, name)
		}
		f.fields[name] = string(b)
	}
}

// postAuth verifies a form's signature over its policy: Signature V4
// (x-amz-algorithm, x-amz-credential, x-amz-date, x-amz-signature) or V2
// (AWSAccessKeyId, signature). A form with none of these fields is
// anonymous: postObject lets it in only where the bucket grants
// s3:PutObject to everyone (authz.go).
func (h *Handler) postAuth(fields map[string]string) (*authResult, error) {
	signed := slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	})
	switch {
	case fields["x-amz-signature"] != "" || fields["x-amz-credential"] != "" || fields["x-amz-algorithm"] != "" || fields["x-amz-date"] != "":
		for _, f := range []string{"x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature", "policy"} {
			if fields[f] == "" {
				return nil, errPostMissing(f)
			}
		}
		if fields["x-amz-algorithm"] != sigV4Algorithm {
			return nil, fmt.Errorf("%w: x-amz-algorithm must be %s", ErrInvalidArgument, sigV4Algorithm)
		}
		var sh sigV4Header
		if !parseCredential(fields["x-amz-credential"], &sh) {
			return nil, fmt.Errorf("%w: x-amz-credential %q", ErrInvalidArgument, fields["x-amz-credential"])
		}
		t, err := time.Parse(amzDateFormat, fields["x-amz-date"])
		if err != nil || t.Format(scopeDateFormat) != sh.Date {
			return nil, fmt.Errorf("%w: x-amz-date %q is not the credential's date", ErrInvalidArgument, fields["x-amz-date"])
		}
		id, ok := h.cfg.Credentials.Lookup(sh.AccessKey)
		if !ok {
			return nil, ErrInvalidAccessKeyID
		}
		want, err := hex.DecodeString(fields["x-amz-signature"])
		key := signingKey(id.SecretKey, sh.Date, sh.Region, sh.Service)
		if err != nil || !hmac.Equal(hmacSHA256(key, fields["policy"]), want) {
			return nil, ErrSignatureDoesNotMatch
		}
		return &authResult{id: id, payload: unsignedPayload, signed: signed}, nil
	case fields["awsaccesskeyid"] != "":
		for _, f := range []string{"signature", "policy"} {
			if fields[f] == "" {
				return nil, errPostMissing(f)
			}
		}
		id, ok := h.cfg.Credentials.Lookup(fields["awsaccesskeyid"])
		if !ok {
			return nil, ErrInvalidAccessKeyID
		}
		want, err := base64.StdEncoding.DecodeString(fields["signature"])
		if err != nil || len(want) != sha1.Size || !hmac.Equal(hmacSHA1(id.SecretKey, fields["policy"]), want) {
			return nil, ErrSignatureDoesNotMatch
		}
		return &authResult{id: id, payload: unsignedPayload, signed: signed}, nil
	case fields["signature"] != "":
		return nil, errPostMissing("AWSAccessKeyId")
	}
	return &authResult{payload: unsignedPayload, anonymous: true}, nil
}

// formHeader is a form's fields as the request headers a PutObject would
// carry (Content-Type, Cache-Control, x-amz-meta-*, x-amz-checksum-*,
// x-amz-storage-class, x-amz-server-side-encryption*, ...), so that the
// checks and options of PutObject apply to them unchanged.
func formHeader(fields map[string]string) http.Header {
	hd := http.Header{}
	for name, v := range fields {
		switch {
		case name == "content-type", name == "expires", name == "content-md5", slices.Contains(storedHeaders, http.CanonicalHeaderKey(name)),
			strings.HasPrefix(name, "x-amz-") && !slices.Contains([]string{"x-amz-signature", "x-amz-credential", "x-amz-algorithm", "x-amz-date"}, name),
			name == strings.ToLower(policyHeader):
			hd.Set(name, v)
		}
	}
	return hd
}

// postTags parses the form's tagging field, a Tagging XML document as
// PutObjectTagging takes (S3's POST form has no x-amz-tagging).
func postTags(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	var t tagging
	if err := parseXML([]byte(v), &t); err != nil {
		return nil, err
	}
	return tagSet(t.TagSet, maxObjectTags, ErrTooManyObjectTags)
}

// rangeReader fails a file outside [min, max] bytes: EntityTooLarge as
// soon as it passes max, EntityTooSmall at its end.
type rangeReader struct {
	r        io.Reader
	min, max int64
	n        int64
}

func (l *rangeReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		return n, ErrPostEntityTooLarge
	}
	if err == io.EOF && l.n < l.min {
		return n, ErrPostEntityTooSmall
	}
	return n, err
}

// postResponse is the body of success_action_status 201.
type postResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// postObject serves a browser form upload.
func (h *Handler) postObject(q *request) error {
	ctx := q.r.Context()
	if err := cairn.ValidateBucketName(q.bucket); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidBucketName, err)
	}
	form, err := readPostForm(h.wireBody(q), q.r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	fields := form.fields
	if b, ok := fields["bucket"]; ok && b != q.bucket {
		return fmt.Errorf("%w: the form's bucket field %q is not the bucket of the URL", ErrInvalidArgument, b)
	}
	fields["bucket"] = q.bucket
	a, err := h.postAuth(fields)
	if err != nil {
		return err
	}
	q.auth = a
	// A signed form needs its policy; an anonymous one may send one,
	// which then binds it as it would a signed form.
	pol := &postPolicy{}
	if !a.anonymous || fields["policy"] != "" {
		if pol, err = parsePostPolicy(fields["policy"]); err != nil {
			return err
		}
		if err := pol.check(h.cfg.Now(), fields); err != nil {
			return err
		}
	}
	key, ok := fields["key"]
	if !ok {
		return errPostMissing("key")
	}
	key = strings.ReplaceAll(key, "${filename}", form.file.FileName())
	if err := checkKey(key); err != nil {
		return err
	}
	q.key = key
	hd := formHeader(fields)
	q.form = hd
	if err := h.authorizePost(q); err != nil {
		return err
	}
	// The form's fields stand in for PutObject's headers from here on.
	fq := *q
	fq.r = q.r.WithContext(ctx)
	fq.r.Header = hd
	if err := checkPutHeaders(hd, false); err != nil {
		return err
	}
	policy, err := h.objectPolicy(&fq)
	if err != nil {
		return err
	}
	um, err := requestMeta(hd)
	if err != nil {
		return err
	}
	tags, err := postTags(fields["tagging"])
	if err != nil {
		return err
	}
	sse, ck, err := h.requestSSE(&fq)
	if err != nil {
		return err
	}
	lock, err := h.putLock(&fq, true)
	if err != nil {
		return err
	}
	lo, hi := pol.lengthRange()
	if hi < 0 || hi > h.cfg.MaxObjectSize {
		hi = h.cfg.MaxObjectSize
	}
	var body io.Reader = &rangeReader{r: form.file, min: lo, max: hi}
	name, sum, want, err := headerChecksum(hd)
	if err != nil {
		return err
	}
	if sum != nil {
		body = &digestReader{r: body, h: sum, want: want, mismatch: fmt.Errorf("%w: %s", ErrBadChecksum, name)}
		fq.sum = newBodySum(name, sum)
	}
	if v := hd.Get("Content-Md5"); v != "" {
		want, err := decodeContentMD5(v)
		if err != nil {
			return err
		}
		body = newMD5Reader(body, want)
	}
	m, err := h.cfg.Objects.Put(ctx, q.bucket, key, body, client.PutOptions{
		Policy: policy, ContentType: hd.Get("Content-Type"), UserMeta: um, Size: -1,
		Now: h.cfg.Now, SSE: sse, Tags: tags, Checksum: fq.checksumFunc(),
		Retention: lock.retention, LegalHold: lock.hold,
	})
	for _, e := range []*Error{ErrPostEntityTooLarge, ErrPostEntityTooSmall} {
		if errors.Is(err, e) {
			return e // S3's message, without the data path's detail
		}
	}
	if err != nil {
		return h.writeErr(ctx, q.bucket, err)
	}
	return h.postSuccess(q, fields, m, ck)
}

// postSuccess answers a stored form upload as the form asks:
// success_action_redirect (or the older redirect) to a valid http(s) URL
// is a 303 to it with bucket, key and etag added to its query;
// success_action_status 200 or 201 (with a PostResponse document) is that
// status; anything else is 204.
func (h *Handler) postSuccess(q *request, fields map[string]string, m *cairn.Manifest, ck *customerKey) error {
	setSSEHeaders(q.w, m.Encryption, ck)
	setWrittenVersion(q.w, m)
	setChecksumHeaders(q.w, m.Checksum)
	q.w.Header().Set("ETag", etag(m))
	scheme := "http"
	if q.r.TLS != nil {
		scheme = "https"
	}
	loc := scheme + "://" + q.r.Host + "/" + uriEncode(q.bucket, true) + "/" + uriEncode(m.Key, false)
	q.w.Header().Set("Location", loc)
	redirect := fields["success_action_redirect"]
	if redirect == "" {
		redirect = fields["redirect"]
	}
	if u, err := url.Parse(redirect); redirect != "" && err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		v := u.Query()
		v.Set("bucket", q.bucket)
		v.Set("key", m.Key)
		v.Set("etag", etag(m))
		u.RawQuery = v.Encode()
		q.w.Header().Set("Location", u.String())
		q.w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	switch fields["success_action_status"] {
	case "200":
		q.w.WriteHeader(http.StatusOK)
	case "201":
		return h.writeXML(q, http.StatusCreated, postResponse{Location: loc, Bucket: q.bucket, Key: m.Key, ETag: etag(m)})
	default:
		q.w.WriteHeader(http.StatusNoContent)
	}
	return nil
}
