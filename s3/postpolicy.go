package s3

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// POST policy documents (docs/design/s3.md, "POST uploads"): a browser
// form upload carries a base64 JSON document,
//
//	{"expiration": "2026-01-01T12:00:00.000Z",
//	 "conditions": [{"bucket": "b"}, ["starts-with", "$key", "user/"],
//	                ["eq", "$Content-Type", "image/png"], ["content-length-range", 1, 1048576]]}
//
// signed like a request (postAuth); the gateway stores the file only if
// the form satisfies every condition and names no field the conditions do
// not cover. This file is the pure part: parsing and checking, no I/O.

// ErrInvalidPolicyDocument: the policy is not base64 JSON of the shape
// above (the detail says what is wrong).
var ErrInvalidPolicyDocument = &Error{"InvalidPolicyDocument", http.StatusBadRequest, "Invalid Policy"}

// policyDenied is S3's refusal of a form its policy does not allow:
// 403 AccessDenied "Invalid according to Policy: <reason>". 403 messages
// carry no appended detail (publicMessage), so each reason is its own
// error value.
func policyDenied(reason string) *Error {
	return &Error{"AccessDenied", http.StatusForbidden, "Invalid according to Policy: " + reason}
}

// postCondition is one condition of a policy: Op is "eq", "starts-with"
// or "content-length-range"; Field is the form field's lower-case name
// without "$" ("bucket", "key", "content-type", ...); Raw is the
// condition as the document wrote it, for the refusal's message.
type postCondition struct {
	Op       string
	Field    string
	Value    string
	Min, Max int64 // content-length-range, bytes inclusive
	Raw      string
}

// postPolicy is a parsed policy document.
type postPolicy struct {
	Expiration time.Time
	Conditions []postCondition
}

// lengthRange is the policy's content-length-range (min 0, max -1 when it
// has none).
func (p *postPolicy) lengthRange() (lo, hi int64) {
	lo, hi = 0, -1
	for _, c := range p.Conditions {
		if c.Op == "content-length-range" {
			lo, hi = c.Min, c.Max
		}
	}
	return lo, hi
}

func invalidPolicy(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidPolicyDocument}, args...)...)
}

// parsePostPolicy decodes a base64 policy document. Every failure is an
// InvalidPolicyDocument saying what is wrong.
func parsePostPolicy(b64 string) (*postPolicy, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, invalidPolicy("the policy is not base64")
	}
	var doc struct {
		Expiration *string            `json:"expiration"`
		Conditions *[]json.RawMessage `json:"conditions"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		return nil, invalidPolicy("Invalid JSON")
	}
	if doc.Expiration == nil {
		return nil, invalidPolicy("Policy missing expiration")
	}
	exp, err := time.Parse(time.RFC3339, *doc.Expiration)
	if err != nil {
		return nil, invalidPolicy("Invalid 'expiration' value: %q", *doc.Expiration)
	}
	if doc.Conditions == nil {
		return nil, invalidPolicy("Policy missing conditions")
	}
	p := &postPolicy{Expiration: exp}
	for _, rc := range *doc.Conditions {
		cs, err := parseCondition(rc)
		if err != nil {
			return nil, err
		}
		p.Conditions = append(p.Conditions, cs...)
	}
	return p, nil
}

// parseCondition parses one element of "conditions": an object of exact
// matches ({"acl": "public-read"}, each member a condition) or an array
// [op, "$field", value] / ["content-length-range", min, max].
func parseCondition(rc json.RawMessage) ([]postCondition, error) {
	raw := string(rc)
	var obj map[string]any
	if err := json.Unmarshal(rc, &obj); err == nil {
		var out []postCondition
		for k, v := range obj {
			s, ok := v.(string)
			if !ok {
				return nil, invalidPolicy("Invalid Policy: Invalid Simple-Condition: value must be a string: %s", raw)
			}
			out = append(out, postCondition{Op: "eq", Field: strings.ToLower(strings.TrimPrefix(k, "$")), Value: s, Raw: raw})
		}
		return out, nil
	}
	var arr []any
	if err := json.Unmarshal(rc, &arr); err != nil || len(arr) != 3 {
		return nil, invalidPolicy("Invalid Condition: %s", raw)
	}
	op, ok := arr[0].(string)
	if !ok {
		return nil, invalidPolicy("Invalid Condition: %s", raw)
	}
	op = strings.ToLower(op)
	switch op {
	case "eq", "starts-with":
		f, ok1 := arr[1].(string)
		v, ok2 := arr[2].(string)
		if !ok1 || !ok2 || !strings.HasPrefix(f, "$") || len(f) < 2 {
			return nil, invalidPolicy("Invalid Condition: %s", raw)
		}
		return []postCondition{{Op: op, Field: strings.ToLower(f[1:]), Value: v, Raw: raw}}, nil
	case "content-length-range":
		lo, ok1 := policyInt(arr[1])
		hi, ok2 := policyInt(arr[2])
		if !ok1 || !ok2 || lo < 0 || hi < lo {
			return nil, invalidPolicy("Invalid content-length-range: %s", raw)
		}
		return []postCondition{{Op: op, Min: lo, Max: hi, Raw: raw}}, nil
	}
	return nil, invalidPolicy("Invalid Condition: unknown operation %q", op)
}

// policyInt reads a content-length-range bound, a JSON number or a
// decimal string.
func policyInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x != float64(int64(x)) {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// postExempt are the form fields no condition needs to cover (S3: the
// signature, the file, the policy itself; x-ignore-* by prefix), and
// those of Signature V2 (AWSAccessKeyId and signature).
var postExempt = map[string]bool{
	"x-amz-signature": true, "file": true, "policy": true, "awsaccesskeyid": true, "signature": true,
}

// check checks a form (lower-case field names → values; "bucket" is the
// bucket of the request's path) against the policy at now: an expired
// policy, a failed condition or a field no condition covers is
// policyDenied. The content length is checked as the file streams
// (lengthRange).
func (p *postPolicy) check(now time.Time, fields map[string]string) error {
	if !now.Before(p.Expiration) {
		return policyDenied("Policy expired.")
	}
	covered := map[string]bool{}
	for _, c := range p.Conditions {
		if c.Op == "content-length-range" {
			continue
		}
		covered[c.Field] = true
		v := fields[c.Field]
		ok := false
		switch c.Op {
		case "eq":
			ok = v == c.Value
		case "starts-with":
			ok = strings.HasPrefix(v, c.Value)
			if c.Field == "content-type" && strings.Contains(v, ",") {
				// S3: each of several comma-separated types must match.
				ok = true
				for t := range strings.SplitSeq(v, ",") {
					ok = ok && strings.HasPrefix(strings.TrimSpace(t), c.Value)
				}
			}
		}
		if !ok {
			return policyDenied("Policy Condition failed: " + c.Raw)
		}
	}
	var extra []string
	for name := range fields {
		if !covered[name] && !postExempt[name] && !strings.HasPrefix(name, "x-ignore-") && name != "bucket" {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return policyDenied("Extra input fields: " + strings.Join(extra, ", "))
	}
	return nil
}
