package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"cairn"
)

// CORS (docs/design/s3.md, "CORS"): a bucket's rules (PutBucketCors,
// kept in cairn.Bucket.CORS) decide which browser origins may use it. A
// preflight (OPTIONS with Origin and Access-Control-Request-Method) is
// answered from the first rule whose origin, method and every requested
// header match, without authentication, as S3 does; 403 if none does. An
// actual request with an Origin gets the matching rule's
// Access-Control-* headers on its answer, success or error.

const maxCORSRules = 100

// CORS errors, as S3 answers them.
var (
	ErrNoSuchCORSConfiguration = &Error{"NoSuchCORSConfiguration", http.StatusNotFound, "The CORS configuration does not exist"}
	ErrCORSForbidden           = &Error{"AccessForbidden", http.StatusForbidden, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec."}
	ErrCORSBadPreflight        = &Error{"BadRequest", http.StatusBadRequest, "Insufficient information. Origin request header needed."}
)

// corsConfiguration is the XML document of Put/GetBucketCors.
type corsConfiguration struct {
	XMLName xml.Name   `xml:"CORSConfiguration"`
	NS      string     `xml:"xmlns,attr,omitempty"`
	Rules   []corsRule `xml:"CORSRule"`
}

type corsRule struct {
	ID             string   `xml:"ID,omitempty"`
	AllowedHeaders []string `xml:"AllowedHeader"`
	AllowedMethods []string `xml:"AllowedMethod"`
	AllowedOrigins []string `xml:"AllowedOrigin"`
	ExposeHeaders  []string `xml:"ExposeHeader"`
	MaxAgeSeconds  *int     `xml:"MaxAgeSeconds"`
}

// corsMethods are the methods a CORS rule may allow.
var corsMethods = []string{"GET", "PUT", "HEAD", "POST", "DELETE"}

// parseCORS checks a PutBucketCors document and returns its rules.
func parseCORS(c corsConfiguration) ([]cairn.CORSRule, error) {
	if len(c.Rules) == 0 || len(c.Rules) > maxCORSRules {
		return nil, fmt.Errorf("%w: %d CORS rules (1 to %d allowed)", ErrMalformedXML, len(c.Rules), maxCORSRules)
	}
	out := make([]cairn.CORSRule, 0, len(c.Rules))
	for _, r := range c.Rules {
		if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 {
			return nil, fmt.Errorf("%w: a CORSRule needs an AllowedOrigin and an AllowedMethod", ErrMalformedXML)
		}
		for _, m := range r.AllowedMethods {
			if !slices.Contains(corsMethods, m) {
				return nil, fmt.Errorf("%w: Found unsupported HTTP method in CORS config. Unsupported method is %s", ErrInvalidRequest, m)
			}
		}
		for _, o := range r.AllowedOrigins {
			if strings.Count(o, "*") > 1 {
				return nil, fmt.Errorf("%w: AllowedOrigin %q can not have more than one wildcard", ErrInvalidRequest, o)
			}
		}
		for _, h := range r.AllowedHeaders {
			if strings.Count(h, "*") > 1 {
				return nil, fmt.Errorf("%w: AllowedHeader %q can not have more than one wildcard", ErrInvalidRequest, h)
			}
		}
		rule := cairn.CORSRule{ID: r.ID, AllowedOrigins: r.AllowedOrigins, AllowedMethods: r.AllowedMethods,
			AllowedHeaders: r.AllowedHeaders, ExposeHeaders: r.ExposeHeaders}
		if r.MaxAgeSeconds != nil {
			if *r.MaxAgeSeconds < 0 {
				return nil, fmt.Errorf("%w: MaxAgeSeconds %d", ErrMalformedXML, *r.MaxAgeSeconds)
			}
			rule.MaxAgeSeconds = *r.MaxAgeSeconds
		}
		out = append(out, rule)
	}
	return out, nil
}

// bucketCORS serves GET, PUT and DELETE ?cors of a bucket.
func (h *Handler) bucketCORS(q *request) error {
	ctx := q.r.Context()
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	switch q.r.Method {
	case http.MethodGet:
		if len(b.CORS) == 0 {
			return ErrNoSuchCORSConfiguration
		}
		out := corsConfiguration{NS: s3NS}
		for _, r := range b.CORS {
			cr := corsRule{ID: r.ID, AllowedHeaders: r.AllowedHeaders, AllowedMethods: r.AllowedMethods,
				AllowedOrigins: r.AllowedOrigins, ExposeHeaders: r.ExposeHeaders}
			if r.MaxAgeSeconds > 0 {
				cr.MaxAgeSeconds = &r.MaxAgeSeconds
			}
			out.Rules = append(out.Rules, cr)
		}
		return h.writeXML(q, http.StatusOK, out)
	case http.MethodPut:
		var c corsConfiguration
		if err := h.readXML(q, &c); err != nil {
			return err
		}
		rules, err := parseCORS(c)
		if err != nil {
			return err
		}
		if err := h.cfg.Meta.SetBucketCORS(ctx, q.bucket, rules); err != nil {
			return h.bucketErr(err)
		}
		q.w.WriteHeader(http.StatusOK)
		return nil
	case http.MethodDelete:
		if err := h.cfg.Meta.SetBucketCORS(ctx, q.bucket, nil); err != nil {
			return h.bucketErr(err)
		}
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return ErrMethodNotAllowed
}

// wildcardMatch matches s against a pattern with at most one "*" (any
// run of characters); fold compares without case.
func wildcardMatch(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	pre, suf, ok := strings.Cut(pattern, "*")
	if !ok {
		return pattern == s
	}
	return len(s) >= len(pre)+len(suf) && strings.HasPrefix(s, pre) && strings.HasSuffix(s, suf)
}

// matchCORS returns the first rule that allows origin, method and every
// one of headers, or nil.
func matchCORS(rules []cairn.CORSRule, origin, method string, headers []string) *cairn.CORSRule {
	for i, r := range rules {
		if !slices.ContainsFunc(r.AllowedOrigins, func(p string) bool { return wildcardMatch(p, origin, false) }) ||
			!slices.Contains(r.AllowedMethods, method) {
			continue
		}
		allHeaders := true
		for _, hd := range headers {
			if !slices.ContainsFunc(r.AllowedHeaders, func(p string) bool { return wildcardMatch(p, hd, true) }) {
				allHeaders = false
				break
			}
		}
		if allHeaders {
			return &rules[i]
		}
	}
	return nil
}

// setCORSHeaders writes the Access-Control-* headers rule grants origin.
func setCORSHeaders(w http.ResponseWriter, rule *cairn.CORSRule, origin string) {
	hd := w.Header()
	if slices.Contains(rule.AllowedOrigins, "*") {
		hd.Set("Access-Control-Allow-Origin", "*")
	} else {
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Credentials", "true")
	}
	if len(rule.ExposeHeaders) > 0 {
		hd.Set("Access-Control-Expose-Headers", strings.Join(rule.ExposeHeaders, ", "))
	}
	hd.Set("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method")
}

// preflight answers an OPTIONS request from the bucket's CORS rules. A
// missing bucket, one without rules and one whose rules do not match
// all get the same 403, so a preflight tells nobody which buckets exist.
func (h *Handler) preflight(q *request) error {
	origin := q.r.Header.Get("Origin")
	if origin == "" {
		return ErrCORSBadPreflight
	}
	method := q.r.Header.Get("Access-Control-Request-Method")
	if method == "" {
		return fmt.Errorf("%w: Invalid Access-Control-Request-Method: null", ErrInvalidRequest)
	}
	var headers []string
	for _, v := range q.r.Header.Values("Access-Control-Request-Headers") {
		for hd := range strings.SplitSeq(v, ",") {
			if hd = strings.TrimSpace(hd); hd != "" {
				headers = append(headers, hd)
			}
		}
	}
	if q.bucket == "" || cairn.ValidateBucketName(q.bucket) != nil {
		return ErrCORSForbidden
	}
	b, err := h.cfg.Meta.Bucket(q.r.Context(), q.bucket)
	if errors.Is(err, cairn.ErrNotFound) && !errors.Is(err, cairn.ErrUnavailable) {
		return ErrCORSForbidden // missing: the same answer as no rule
	}
	if err != nil {
		return err
	}
	rule := matchCORS(b.CORS, origin, method, headers)
	if rule == nil {
		return ErrCORSForbidden
	}
	setCORSHeaders(q.w, rule, origin)
	hd := q.w.Header()
	hd.Set("Access-Control-Allow-Methods", strings.Join(rule.AllowedMethods, ", "))
	if len(headers) > 0 {
		hd.Set("Access-Control-Allow-Headers", strings.Join(headers, ", "))
	}
	if rule.MaxAgeSeconds > 0 {
		hd.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeSeconds))
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// corsHeaders adds the Access-Control-* headers to the answer of an
// actual cross-origin request (one with an Origin) that a rule of its
// bucket allows. Best effort: a bucket that cannot be read gets none.
func (h *Handler) corsHeaders(q *request) {
	origin := q.r.Header.Get("Origin")
	if origin == "" || q.bucket == "" || cairn.ValidateBucketName(q.bucket) != nil {
		return
	}
	b, err := h.cfg.Meta.Bucket(q.r.Context(), q.bucket)
	if err != nil || len(b.CORS) == 0 {
		return
	}
	if rule := matchCORS(b.CORS, origin, q.r.Method, nil); rule != nil {
		setCORSHeaders(q.w, rule, origin)
	}
}
