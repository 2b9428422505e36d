package access

import (
	"encoding/json"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Condition is one test of a statement's Condition block: operator Op
// applied to context key Key and the policy's Values. A statement
// matches only if all its conditions hold; a condition holds if any of
// its values matches (none, for a negated operator).
type Condition struct {
	Op       string // the base operator, e.g. "StringLike", "IpAddress", "Null"
	IfExists bool   // ...IfExists: holds when the key is absent
	// Set is "", "ForAnyValue" or "ForAllValues": how a key with several
	// values in the request is tested.
	Set    string
	Key    string // lower case, e.g. "aws:sourceip", "s3:prefix"
	Values []string
}

// operators maps each base operator to whether it negates (holds when no
// value matches, and when the key is absent).
var operators = map[string]bool{
	"StringEquals": false, "StringNotEquals": true,
	"StringEqualsIgnoreCase": false, "StringNotEqualsIgnoreCase": true,
	"StringLike": false, "StringNotLike": true,
	"NumericEquals": false, "NumericNotEquals": true,
	"NumericLessThan": false, "NumericLessThanEquals": false,
	"NumericGreaterThan": false, "NumericGreaterThanEquals": false,
	"DateEquals": false, "DateNotEquals": true,
	"DateLessThan": false, "DateLessThanEquals": false,
	"DateGreaterThan": false, "DateGreaterThanEquals": false,
	"Bool":      false,
	"IpAddress": false, "NotIpAddress": true,
	"ArnEquals": false, "ArnNotEquals": true,
	"ArnLike": false, "ArnNotLike": true,
	"BinaryEquals": false,
	"Null":         false,
}

// s3Keys are the s3: condition keys cairn accepts in a policy (any aws:
// global key is accepted; those the gateway does not set are absent).
var s3Keys = map[string]bool{
	"s3:prefix": true, "s3:delimiter": true, "s3:max-keys": true,
	"s3:x-amz-acl": true, "s3:x-amz-content-sha256": true, "s3:x-amz-copy-source": true,
	"s3:x-amz-metadata-directive": true, "s3:x-amz-server-side-encryption": true,
	"s3:x-amz-storage-class": true, "s3:versionid": true, "s3:signatureversion": true,
	"s3:authtype": true, "s3:signatureage": true, "s3:existingobjecttag": true,
	"s3:requestobjecttagkeys": true, "s3:requestobjecttag": true,
	"s3:object-lock-mode": true, "s3:object-lock-retain-until-date": true,
	"s3:object-lock-legal-hold": true, "s3:object-lock-remaining-retention-days": true,
	"s3:locationconstraint": true, "s3:x-amz-grant-read": true, "s3:x-amz-grant-write": true,
	"s3:x-amz-grant-read-acp": true, "s3:x-amz-grant-write-acp": true, "s3:x-amz-grant-full-control": true,
	"s3:tlsversion": true, "s3:resourceaccount": true,
}

// validKey: any aws: key, an s3: key cairn knows (tag keys take a
// "/tag-key" suffix).
func validKey(k string) bool {
	if strings.HasPrefix(k, "aws:") && len(k) > 4 {
		return true
	}
	base, _, _ := strings.Cut(k, "/")
	return s3Keys[base]
}

func parseConditions(v json.RawMessage) ([]Condition, error) {
	var block map[string]map[string]json.RawMessage
	if err := json.Unmarshal(v, &block); err != nil {
		return nil, err
	}
	var out []Condition
	for op, keys := range block {
		c := Condition{Op: op}
		if set, rest, ok := strings.Cut(op, ":"); ok {
			if set != "ForAnyValue" && set != "ForAllValues" {
				return nil, malformed("Invalid Condition type : %s", op)
			}
			c.Set, c.Op = set, rest
		}
		if base, ok := strings.CutSuffix(c.Op, "IfExists"); ok && c.Op != "Null" {
			c.Op, c.IfExists = base, true
		}
		if _, ok := operators[c.Op]; !ok || (c.Op == "Null" && (c.IfExists || c.Set != "")) {
			return nil, malformed("Invalid Condition type : %s", op)
		}
		for key, raw := range keys {
			c.Key = strings.ToLower(key)
			if !validKey(c.Key) {
				return nil, malformed("Policy has an invalid condition key")
			}
			vals, err := conditionValues(raw)
			if err != nil {
				return nil, err
			}
			for _, val := range vals {
				if !validValue(c.Op, val) {
					return nil, malformed("Invalid value %q for condition %s", val, op)
				}
			}
			c.Values = vals
			out = append(out, c)
		}
	}
	return out, nil
}

// conditionValues decodes a condition's value: a string, bool or number,
// or an array of them, all as strings.
func conditionValues(raw json.RawMessage) ([]string, error) {
	var many []any
	if json.Unmarshal(raw, &many) != nil {
		var one any
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, err
		}
		many = []any{one}
	}
	if len(many) == 0 {
		return nil, malformed("Invalid policy syntax.")
	}
	out := make([]string, 0, len(many))
	for _, v := range many {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case bool:
			out = append(out, strconv.FormatBool(v))
		case float64:
			out = append(out, strconv.FormatFloat(v, 'f', -1, 64))
		default:
			return nil, malformed("Invalid policy syntax.")
		}
	}
	return out, nil
}

// validValue checks a policy value against its operator's type. Values
// holding a policy variable are checked once expanded.
func validValue(op, v string) bool {
	if strings.Contains(v, "${") {
		return true
	}
	switch {
	case strings.HasPrefix(op, "Numeric"):
		_, ok := number(v)
		return ok
	case strings.HasPrefix(op, "Date"):
		_, ok := date(v)
		return ok
	case op == "Bool" || op == "Null":
		return strings.EqualFold(v, "true") || strings.EqualFold(v, "false")
	case op == "IpAddress" || op == "NotIpAddress":
		_, ok := prefix(v)
		return ok
	}
	return true
}

func number(s string) (*big.Float, bool) {
	f, ok := new(big.Float).SetString(strings.TrimSpace(s))
	return f, ok
}

func date(s string) (time.Time, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// prefix parses an IpAddress value: a CIDR block or one address.
func prefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// holds evaluates c against the request's context values of its key
// (nil: the key is absent), with policy variables expanded by vars.
func (c Condition) holds(got []string, present bool, expand func(string) (string, []bool, bool)) bool {
	if c.Op == "Null" {
		return strings.EqualFold(c.Values[0], "true") != present
	}
	neg := operators[c.Op]
	if !present {
		switch {
		case c.IfExists, c.Set == "ForAllValues":
			return true
		case c.Set == "ForAnyValue":
			return false
		}
		return neg
	}
	// one reports whether a single request value satisfies the operator
	// (for a negated operator: matches none of the policy's values).
	one := func(v string) bool {
		for _, want := range c.Values {
			pat, lit, ok := expand(want)
			if ok && c.valueMatches(pat, lit, v) {
				return !neg
			}
		}
		return neg
	}
	if c.Set == "ForAllValues" {
		for _, v := range got {
			if !one(v) {
				return false
			}
		}
		return true
	}
	if neg && c.Set == "" {
		// Negated, single-valued: no request value matches any policy value.
		for _, v := range got {
			if !one(v) {
				return false
			}
		}
		return true
	}
	for _, v := range got {
		if one(v) {
			return true
		}
	}
	return false
}

// valueMatches is the positive form of the operator: does request value
// v match policy value want (lit marks want's literal wildcard bytes)?
func (c Condition) valueMatches(want string, lit []bool, v string) bool {
	switch c.Op {
	case "StringEquals", "StringNotEquals", "ArnEquals", "ArnNotEquals", "BinaryEquals":
		return want == v
	case "StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase":
		return strings.EqualFold(want, v)
	case "StringLike", "StringNotLike", "ArnLike", "ArnNotLike":
		return matchLit(want, lit, v, false)
	case "Bool":
		return strings.EqualFold(want, v)
	case "IpAddress", "NotIpAddress":
		p, ok1 := prefix(want)
		a, err := netip.ParseAddr(v)
		return ok1 && err == nil && p.Contains(a.Unmap())
	}
	if strings.HasPrefix(c.Op, "Numeric") {
		w, ok1 := number(want)
		g, ok2 := number(v)
		return ok1 && ok2 && compare(c.Op, g.Cmp(w))
	}
	if strings.HasPrefix(c.Op, "Date") {
		w, ok1 := date(want)
		g, ok2 := date(v)
		return ok1 && ok2 && compare(c.Op, g.Compare(w))
	}
	return false
}

// compare turns a three-way comparison of request value to policy value
// into the Numeric/Date operator's verdict.
func compare(op string, cmp int) bool {
	switch {
	case strings.HasSuffix(op, "GreaterThanEquals"):
		return cmp >= 0
	case strings.HasSuffix(op, "GreaterThan"):
		return cmp > 0
	case strings.HasSuffix(op, "LessThanEquals"):
		return cmp <= 0
	case strings.HasSuffix(op, "LessThan"):
		return cmp < 0
	}
	return cmp == 0 // Equals, NotEquals (negated by the caller)
}
