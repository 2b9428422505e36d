package s3

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Signature Version 2, the older S3 signature (docs/design/s3.md,
// "Authentication"): the aws CLI v1 presigns URLs with it and s3cmd
// signs with it when told to. The signature is
//
//	Base64(HMAC-SHA1(secret, StringToSign))
//
//	StringToSign = Method \n Content-MD5 \n Content-Type \n Date \n
//	               CanonicalizedAmzHeaders CanonicalizedResource
//
// where Date is the Date header ("" when x-amz-date is sent), or the
// Expires parameter of a presigned URL; CanonicalizedAmzHeaders is one
// "name:v1,v2\n" per x-amz-* header (lower-case names, sorted, values
// trimmed); CanonicalizedResource is the request path as sent (path
// style: it starts with the bucket) and the subresources among the query
// parameters, sorted by name, values decoded ("?acl", "?partNumber=1&uploadId=x").
// It travels as "Authorization: AWS AccessKey:Signature", or as the
// AWSAccessKeyId, Expires and Signature query parameters.
//
// SigV2 signs no body: the body is checked as for UNSIGNED-PAYLOAD
// (Content-MD5, which the signature covers, and checksums), or against an
// x-amz-content-sha256 header the client sends anyway.

const sigV2Prefix = "AWS "

// sigV2Subresources are the query parameters the CanonicalizedResource
// holds: AWS's list (subresources and the response-* overrides of
// GetObject) and those botocore and MinIO sign since.
var sigV2Subresources = map[string]bool{
	"accelerate": true, "acl": true, "analytics": true, "cors": true, "defaultObjectAcl": true, "delete": true,
	"encryption": true, "inventory": true, "legal-hold": true, "lifecycle": true, "location": true, "logging": true,
	"metrics": true, "notification": true, "object-lock": true, "partNumber": true, "policy": true,
	"replication": true, "requestPayment": true, "response-cache-control": true, "response-content-disposition": true,
	"response-content-encoding": true, "response-content-language": true, "response-content-type": true,
	"response-expires": true, "restore": true, "retention": true, "select": true, "select-type": true,
	"storageClass": true, "tagging": true, "torrent": true, "uploadId": true, "uploads": true, "versionId": true,
	"versioning": true, "versions": true, "website": true,
}

// ErrMissingV2Query: a presigned SigV2 URL lacks one of its parameters.
var ErrMissingV2Query = &Error{"AccessDenied", http.StatusForbidden, "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters."}

// authV2Header verifies "Authorization: AWS AccessKey:Signature" against
// cfg.Credentials and the clock (the same skew limit as SigV4).
func (h *Handler) authV2Header(r *http.Request, v string) (*authResult, error) {
	access, sig, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(v, sigV2Prefix)), ":")
	if !ok || access == "" || sig == "" {
		return nil, fmt.Errorf("%w: expected AWS AccessKey:Signature", ErrAuthHeaderMalformed)
	}
	// The Date position: "" when x-amz-date is sent (AWS's rule), the
	// Date header otherwise; a client that sends both and signs Date
	// is accepted too.
	var dates []string
	tv := r.Header.Get("X-Amz-Date")
	if tv != "" {
		dates = append(dates, "")
	} else {
		tv = r.Header.Get("Date")
	}
	if d := r.Header.Get("Date"); d != "" {
		dates = append(dates, d)
	}
	t, err := parseV2Date(tv)
	if err != nil {
		return nil, fmt.Errorf("%w: SigV2 needs a valid Date or x-amz-date header", ErrAccessDenied)
	}
	if skew := h.cfg.Now().Sub(t); skew > h.cfg.MaxSkew || skew < -h.cfg.MaxSkew {
		return nil, ErrRequestTimeTooSkewed
	}
	return h.verifyV2(r, access, sig, dates)
}

// authV2Presigned verifies a presigned SigV2 URL: AWSAccessKeyId,
// Expires (Unix seconds, checked against the server's clock) and
// Signature.
func (h *Handler) authV2Presigned(r *http.Request, q url.Values) (*authResult, error) {
	access, exp := q.Get("AWSAccessKeyId"), q.Get("Expires")
	// A '+' of the base64 signature sent unescaped decodes as a space.
	sig := strings.ReplaceAll(q.Get("Signature"), " ", "+")
	if access == "" || exp == "" || sig == "" {
		return nil, ErrMissingV2Query
	}
	secs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: Expires %q", ErrMissingV2Query, exp)
	}
	if h.cfg.Now().Unix() > secs {
		return nil, ErrExpiredPresign
	}
	return h.verifyV2(r, access, sig, []string{exp})
}

// verifyV2 finds the identity and checks the signature with each
// candidate Date position.
func (h *Handler) verifyV2(r *http.Request, access, sig string, dates []string) (*authResult, error) {
	id, ok := h.cfg.Credentials.Lookup(access)
	if !ok {
		return nil, ErrInvalidAccessKeyID
	}
	payload := unsignedPayload
	switch v := r.Header.Get("X-Amz-Content-Sha256"); {
	case v == "" || v == unsignedPayload:
	case isHexSHA256(v), v == streamingUnsignedTrailer:
		payload = v
	default:
		return nil, fmt.Errorf("%w: x-amz-content-sha256 %q needs Signature Version 4", ErrInvalidRequest, v)
	}
	want, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(want) != sha1.Size {
		return nil, ErrSignatureDoesNotMatch
	}
	sub, ok := sigV2Subresource(r.URL.RawQuery)
	if !ok {
		return nil, ErrSignatureDoesNotMatch
	}
	for _, path := range requestPaths(r) {
		for _, date := range dates {
			if hmac.Equal(hmacSHA1(id.SecretKey, sigV2StringToSign(r, date, path+sub)), want) {
				return &authResult{id: id, payload: payload}, nil
			}
		}
	}
	return nil, ErrSignatureDoesNotMatch
}

// sigV2StringToSign is the StringToSign of r with the given Date
// position and CanonicalizedResource.
func sigV2StringToSign(r *http.Request, date, resource string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(strings.TrimSpace(r.Header.Get("Content-Md5")))
	b.WriteByte('\n')
	b.WriteString(strings.TrimSpace(r.Header.Get("Content-Type")))
	b.WriteByte('\n')
	b.WriteString(date)
	b.WriteByte('\n')
	var names []string
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-amz-") {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	for _, name := range names {
		b.WriteString(strings.ToLower(name))
		b.WriteByte(':')
		for i, v := range r.Header[name] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.TrimSpace(v))
		}
		b.WriteByte('\n')
	}
	b.WriteString(resource)
	return b.String()
}

// sigV2Subresource renders the subresources of a raw query string:
// "?name[=decoded value]&...", sorted by name, or "" if there are none.
// ok is false for a query that does not decode.
func sigV2Subresource(raw string) (string, bool) {
	type kv struct{ k, v string }
	var kvs []kv
	for part := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		dk, err1 := url.QueryUnescape(k)
		dv, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return "", false
		}
		if sigV2Subresources[dk] {
			kvs = append(kvs, kv{dk, dv})
		}
	}
	if len(kvs) == 0 {
		return "", true
	}
	slices.SortStableFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	var b strings.Builder
	for i, e := range kvs {
		b.WriteByte("?&"[min(i, 1)])
		b.WriteString(e.k)
		if e.v != "" {
			b.WriteByte('=')
			b.WriteString(e.v)
		}
	}
	return b.String(), true
}

// requestPaths are the forms of the request path a client may have
// signed: as sent on the wire (AWS's rule), then as AWS encodes the
// decoded path (for a proxy that re-encoded it).
func requestPaths(r *http.Request) []string {
	wire, _, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(wire, "/") { // absolute-form or a client-side request
		wire = r.URL.EscapedPath()
	}
	if wire == "" {
		wire = "/"
	}
	if enc := uriEncode(r.URL.Path, false); enc != wire && enc != "" {
		return []string{wire, enc}
	}
	return []string{wire}
}

// parseV2Date parses a Date or x-amz-date value: an HTTP date (RFC 1123
// with a zone name or a numeric offset, RFC 850, ANSI C) or ISO 8601
// basic.
func parseV2Date(v string) (time.Time, error) {
	if t, err := http.ParseTime(v); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.RFC1123Z, time.RFC1123, amzDateFormat} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: date %q", ErrAccessDenied, v)
}

func hmacSHA1(key, data string) []byte {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(data))
	return m.Sum(nil)
}
