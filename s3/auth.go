package s3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Identity is who signed a request.
type Identity struct {
	Name      string // recorded as the owner of the buckets it creates
	AccessKey string
	SecretKey string
	Root      bool // sees and touches every bucket, and may choose any policy
	// Policies is the identity's allow-list of policies it may choose with
	// x-cairn-policy (docs/design/s3.md, "Choosing a policy"); empty: the
	// gateway's (Config.AllowedPolicies). Ignored for root.
	Policies []string
}

// Credentials finds the identity behind an access key. It is the seam for
// more users (a reloadable users file, the users of the metadata store);
// implementations must be safe for
// concurrent use and must not block on I/O for long: it runs on every
// request.
type Credentials interface {
	// Lookup returns the identity whose access key is accessKey, or
	// ok == false if there is none.
	Lookup(accessKey string) (id Identity, ok bool)
}

// StaticCredentials is a fixed set of identities keyed by access key.
type StaticCredentials map[string]Identity

var _ Credentials = StaticCredentials(nil)

// Lookup implements Credentials.
func (s StaticCredentials) Lookup(accessKey string) (Identity, bool) {
	id, ok := s[accessKey]
	return id, ok
}

// RootCredentials returns credentials holding only the root identity.
func RootCredentials(accessKey, secretKey string) StaticCredentials {
	return StaticCredentials{accessKey: {Name: "root", AccessKey: accessKey, SecretKey: secretKey, Root: true}}
}

// Values of x-amz-content-sha256 other than a hex SHA-256.
const (
	unsignedPayload          = "UNSIGNED-PAYLOAD"
	streamingPayload         = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingPayloadTrailer  = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"

	sigV4Algorithm  = "AWS4-HMAC-SHA256"
	amzDateFormat   = "20060102T150405Z"
	scopeDateFormat = "20060102"
	emptySHA256     = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	maxPresignTTL   = 7 * 24 * time.Hour
)

// sigV4Header is a parsed Authorization header (or the equivalent
// presigned query parameters).
type sigV4Header struct {
	AccessKey     string
	Date          string // scope date, yyyymmdd
	Region        string
	Service       string
	SignedHeaders []string
	Signature     string // lower-case hex
}

func (s sigV4Header) scope() string {
	return s.Date + "/" + s.Region + "/" + s.Service + "/aws4_request"
}

// parseCredential parses "AKID/20130524/us-east-1/s3/aws4_request".
func parseCredential(cred string, into *sigV4Header) bool {
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return false
	}
	n := len(parts)
	into.AccessKey = strings.Join(parts[:n-4], "/")
	into.Date, into.Region, into.Service = parts[n-4], parts[n-3], parts[n-2]
	if parts[n-1] != "aws4_request" || into.AccessKey == "" || into.Service != "s3" || into.Region == "" {
		return false
	}
	if _, err := time.Parse(scopeDateFormat, into.Date); err != nil {
		return false
	}
	return true
}

func parseSignedHeaders(s string) ([]string, bool) {
	if s == "" {
		return nil, false
	}
	hs := strings.Split(s, ";")
	for _, h := range hs {
		if h == "" || strings.ToLower(h) != h {
			return nil, false
		}
	}
	return hs, slices.Contains(hs, "host")
}

func validSignature(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// parseAuthHeader parses an AWS4-HMAC-SHA256 Authorization header:
//
//	AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=fe5f…
//
// It returns ErrUnsupportedAuth for other schemes and
// ErrAuthHeaderMalformed when a part is missing or ill-formed.
func parseAuthHeader(v string) (sigV4Header, error) {
	var h sigV4Header
	alg, rest, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || alg != sigV4Algorithm {
		if alg == "AWS" || strings.HasPrefix(v, "AWS ") {
			return h, ErrUnsupportedAuth
		}
		return h, ErrAuthHeaderMalformed
	}
	var haveCred, haveHeaders, haveSig bool
	for part := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return h, ErrAuthHeaderMalformed
		}
		switch k {
		case "Credential":
			if haveCred || !parseCredential(val, &h) {
				return h, ErrAuthHeaderMalformed
			}
			haveCred = true
		case "SignedHeaders":
			hs, ok := parseSignedHeaders(val)
			if haveHeaders || !ok {
				return h, ErrAuthHeaderMalformed
			}
			h.SignedHeaders, haveHeaders = hs, true
		case "Signature":
			if haveSig || !validSignature(val) {
				return h, ErrAuthHeaderMalformed
			}
			h.Signature, haveSig = val, true
		default:
			return h, ErrAuthHeaderMalformed
		}
	}
	if !haveCred || !haveHeaders || !haveSig {
		return h, ErrAuthHeaderMalformed
	}
	return h, nil
}

// authResult is what a verified request carries on to the body readers.
type authResult struct {
	id         Identity
	payload    string // the x-amz-content-sha256 value the signature covers
	signingKey []byte
	amzDate    string // request time, ISO 8601 basic
	scope      string
	seedSig    string // the request's signature: chunk 1 chains from it
	// anonymous: the request carries no signature at all; id is empty
	// and only grants to everyone apply (authz.go).
	anonymous bool
	// signed lists the headers the signature covers (lower case); nil
	// for Signature V2, which signs no x-cairn-* header.
	signed []string
}

// authenticate verifies a request's Signature V4 or V2 (header or
// presigned query; sigv2.go) against cfg.Credentials and the clock. It
// does not read the body; bodyReader checks the payload against
// auth.payload.
func (h *Handler) authenticate(r *http.Request) (*authResult, error) {
	q := r.URL.Query()
	if q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential") {
		if r.Header.Get("Authorization") != "" {
			return nil, fmt.Errorf("%w: both an Authorization header and presign parameters", ErrInvalidArgument)
		}
		return h.authPresigned(r, q)
	}
	if q.Has("AWSAccessKeyId") {
		if r.Header.Get("Authorization") != "" {
			return nil, fmt.Errorf("%w: both an Authorization header and presign parameters", ErrInvalidArgument)
		}
		return h.authV2Presigned(r, q)
	}
	av := r.Header.Get("Authorization")
	if av == "" {
		return anonymousAuth(r)
	}
	if strings.HasPrefix(av, sigV2Prefix) {
		return h.authV2Header(r, av)
	}
	sh, err := parseAuthHeader(av)
	if err != nil {
		return nil, err
	}
	t, err := requestTime(r)
	if err != nil {
		return nil, err
	}
	if t.Format(scopeDateFormat) != sh.Date {
		return nil, fmt.Errorf("%w: the credential scope date %s is not the request date", ErrAuthHeaderMalformed, sh.Date)
	}
	if skew := h.cfg.Now().Sub(t); skew > h.cfg.MaxSkew || skew < -h.cfg.MaxSkew {
		return nil, ErrRequestTimeTooSkewed
	}
	id, ok := h.cfg.Credentials.Lookup(sh.AccessKey)
	if !ok {
		return nil, ErrInvalidAccessKeyID
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			return nil, ErrMissingContentSHA256
		}
		payload = emptySHA256
	}
	if !validPayloadHash(payload) {
		return nil, fmt.Errorf("%w: x-amz-content-sha256 %q", ErrInvalidArgument, payload)
	}
	amzDate := t.Format(amzDateFormat)
	key := signingKey(id.SecretKey, sh.Date, sh.Region, sh.Service)
	if !signatureMatches(r, sh, amzDate, payload, key, false) {
		return nil, ErrSignatureDoesNotMatch
	}
	if err := checkAmzSigned(r, sh.SignedHeaders); err != nil {
		return nil, err
	}
	return &authResult{id: id, payload: payload, signingKey: key, amzDate: amzDate, scope: sh.scope(), seedSig: sh.Signature, signed: sh.SignedHeaders}, nil
}

// anonymousAuth is the authResult of an unsigned request: its body is
// checked against an x-amz-content-sha256 it names (a hex SHA-256 or
// UNSIGNED-PAYLOAD), never chunk signatures, which need a key.
func anonymousAuth(r *http.Request) (*authResult, error) {
	payload := unsignedPayload
	switch v := r.Header.Get("X-Amz-Content-Sha256"); {
	case v == "" || v == unsignedPayload:
	case isHexSHA256(v):
		payload = v
	default:
		return nil, fmt.Errorf("%w: an unsigned request with x-amz-content-sha256 %q", ErrAccessDenied, v)
	}
	return &authResult{payload: payload, anonymous: true}, nil
}

func (h *Handler) authPresigned(r *http.Request, q url.Values) (*authResult, error) {
	var sh sigV4Header
	if q.Get("X-Amz-Algorithm") != sigV4Algorithm {
		return nil, fmt.Errorf("%w: X-Amz-Algorithm must be %s", ErrAuthQueryMalformed, sigV4Algorithm)
	}
	if !parseCredential(q.Get("X-Amz-Credential"), &sh) {
		return nil, fmt.Errorf("%w: X-Amz-Credential", ErrAuthQueryMalformed)
	}
	hs, ok := parseSignedHeaders(q.Get("X-Amz-SignedHeaders"))
	if !ok {
		return nil, fmt.Errorf("%w: X-Amz-SignedHeaders", ErrAuthQueryMalformed)
	}
	sh.SignedHeaders = hs
	if sh.Signature = q.Get("X-Amz-Signature"); !validSignature(sh.Signature) {
		return nil, fmt.Errorf("%w: X-Amz-Signature", ErrAuthQueryMalformed)
	}
	t, err := time.Parse(amzDateFormat, q.Get("X-Amz-Date"))
	if err != nil || t.Format(scopeDateFormat) != sh.Date {
		return nil, fmt.Errorf("%w: X-Amz-Date", ErrAuthQueryMalformed)
	}
	secs, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxPresignTTL {
		return nil, fmt.Errorf("%w: X-Amz-Expires must be 1 to 604800 seconds", ErrAuthQueryMalformed)
	}
	now := h.cfg.Now()
	if t.Sub(now) > h.cfg.MaxSkew {
		return nil, ErrRequestTimeTooSkewed
	}
	if now.After(t.Add(time.Duration(secs) * time.Second)) {
		return nil, ErrExpiredPresign
	}
	id, ok := h.cfg.Credentials.Lookup(sh.AccessKey)
	if !ok {
		return nil, ErrInvalidAccessKeyID
	}
	payload := unsignedPayload
	if v := q.Get("X-Amz-Content-Sha256"); v != "" {
		payload = v
	}
	if payload != unsignedPayload && !isHexSHA256(payload) {
		return nil, fmt.Errorf("%w: X-Amz-Content-Sha256", ErrAuthQueryMalformed)
	}
	amzDate := t.Format(amzDateFormat)
	key := signingKey(id.SecretKey, sh.Date, sh.Region, sh.Service)
	if !signatureMatches(r, sh, amzDate, payload, key, true) {
		return nil, ErrSignatureDoesNotMatch
	}
	if err := checkAmzSigned(r, sh.SignedHeaders); err != nil {
		return nil, err
	}
	return &authResult{id: id, payload: payload, signingKey: key, amzDate: amzDate, scope: sh.scope(), seedSig: sh.Signature, signed: sh.SignedHeaders}, nil
}

// ErrHeadersNotSigned: a Signature V4 request carries an x-amz-* header
// its signature does not cover, which anyone on the way could have added
// to a captured request (a copy source, a server-side encryption choice,
// metadata). S3 refuses these with this code and message.
var ErrHeadersNotSigned = &Error{"AccessDenied", http.StatusForbidden, "There were headers present in the request which were not signed"}

// checkAmzSigned refuses (ErrHeadersNotSigned) a Signature V4 request, by
// header or presigned, carrying an x-amz-* header not in signed (lower
// case). x-amz-content-sha256 is exempt, as S3 exempts it: it names how
// the body is checked, and a value other than the signed one fails that
// check (the presigned payload mode is a query parameter, and a header
// hash is always in the canonical request as the payload line). Other
// prefixes (x-amzn-trace-id, which SDKs deliberately leave unsigned, or
// x-cairn-*, checked where used) are not x-amz-*.
func checkAmzSigned(r *http.Request, signed []string) error {
	var unsigned []string
	for name := range r.Header {
		l := strings.ToLower(name)
		if strings.HasPrefix(l, "x-amz-") && l != "x-amz-content-sha256" && !slices.Contains(signed, l) {
			unsigned = append(unsigned, l)
		}
	}
	if len(unsigned) == 0 {
		return nil
	}
	slices.Sort(unsigned)
	return fmt.Errorf("%w: %s", ErrHeadersNotSigned, strings.Join(unsigned, ", "))
}

// requestTime is X-Amz-Date, or else the Date header.
func requestTime(r *http.Request) (time.Time, error) {
	if v := r.Header.Get("X-Amz-Date"); v != "" {
		t, err := time.Parse(amzDateFormat, v)
		if err != nil {
			return t, fmt.Errorf("%w: X-Amz-Date %q", ErrAccessDenied, v)
		}
		return t, nil
	}
	if v := r.Header.Get("Date"); v != "" {
		t, err := http.ParseTime(v)
		if err != nil {
			return t, fmt.Errorf("%w: Date %q", ErrAccessDenied, v)
		}
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%w: the request has neither X-Amz-Date nor Date", ErrAccessDenied)
}

func isHexSHA256(s string) bool { return validSignature(s) }

func validPayloadHash(s string) bool {
	switch s {
	case unsignedPayload, streamingPayload, streamingPayloadTrailer, streamingUnsignedTrailer:
		return true
	}
	return isHexSHA256(s)
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

// signatureMatches computes the request's signature the way the client
// must have and compares it with the claimed one in constant time. The
// canonical URI is tried as sent on the wire and, failing that, as AWS
// encodes the decoded path (clients differ on characters like '!' or '*').
func signatureMatches(r *http.Request, sh sigV4Header, amzDate, payload string, key []byte, presigned bool) bool {
	want, err := hex.DecodeString(sh.Signature)
	if err != nil {
		return false
	}
	query, ok := canonicalQuery(r.URL.RawQuery, presigned)
	if !ok {
		return false
	}
	headers := canonicalHeaders(r, sh.SignedHeaders)
	uris := []string{r.URL.EscapedPath(), uriEncode(r.URL.Path, false)}
	for i, uri := range uris {
		if uri == "" {
			uri = "/"
		}
		if i > 0 && uri == uris[0] {
			continue
		}
		creq := r.Method + "\n" + uri + "\n" + query + "\n" + headers + "\n" + strings.Join(sh.SignedHeaders, ";") + "\n" + payload
		sts := sigV4Algorithm + "\n" + amzDate + "\n" + sh.scope() + "\n" + sha256Hex(creq)
		if hmac.Equal(hmacSHA256(key, sts), want) {
			return true
		}
	}
	return false
}

// canonicalQuery sorts and re-encodes the query string (without
// X-Amz-Signature when presigned).
func canonicalQuery(raw string, presigned bool) (string, bool) {
	type kv struct{ k, v string }
	var kvs []kv
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		dk, err1 := url.QueryUnescape(k)
		dv, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return "", false
		}
		if presigned && dk == "X-Amz-Signature" {
			continue
		}
		kvs = append(kvs, kv{uriEncode(dk, true), uriEncode(dv, true)})
	}
	slices.SortFunc(kvs, func(a, b kv) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	var b strings.Builder
	for i, e := range kvs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(e.k)
		b.WriteByte('=')
		b.WriteString(e.v)
	}
	return b.String(), true
}

// canonicalHeaders renders "name:value\n" for each signed header. Go's
// server moves Host, Content-Length and Transfer-Encoding out of
// r.Header, so they are read from the request fields.
func canonicalHeaders(r *http.Request, signed []string) string {
	var b strings.Builder
	for _, name := range signed {
		var vals []string
		switch name {
		case "host":
			vals = []string{r.Host}
		case "content-length":
			vals = r.Header.Values("Content-Length")
			if len(vals) == 0 && r.ContentLength >= 0 {
				vals = []string{strconv.FormatInt(r.ContentLength, 10)}
			}
		case "transfer-encoding":
			vals = r.Header.Values("Transfer-Encoding")
			if len(vals) == 0 {
				vals = r.TransferEncoding
			}
		default:
			vals = r.Header.Values(name)
		}
		b.WriteString(name)
		b.WriteByte(':')
		for i, v := range vals {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.Join(strings.Fields(v), " "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// uriEncode is the AWS URI encoding: every byte but the unreserved
// characters A-Z a-z 0-9 - . _ ~ is %XX-encoded (upper-case hex); '/' too
// unless it separates path segments (encodeSlash false).
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}
