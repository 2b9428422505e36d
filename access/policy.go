package access

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MaxPolicySize is the largest bucket policy accepted, in bytes (S3's
// 20 KB).
const MaxPolicySize = 20 << 10

// Policy versions IAM knows. Policy variables (${aws:username}) are
// expanded only under Version2012.
const (
	Version2012 = "2012-10-17"
	Version2008 = "2008-10-17"
)

// Effect is what a statement does to the requests it matches.
type Effect string

// Effects.
const (
	Allow Effect = "Allow"
	Deny  Effect = "Deny"
)

// Policy is a parsed, validated bucket policy. The zero Policy allows
// nothing.
type Policy struct {
	Version    string
	ID         string
	Statements []Statement
}

// Statement is one statement of a policy. Exactly one of Principal and
// NotPrincipal, of Action and NotAction, of Resource and NotResource is
// set (non-nil).
type Statement struct {
	Sid                     string
	Effect                  Effect
	Principal, NotPrincipal []PrincipalID
	Action, NotAction       []string // patterns, e.g. "s3:Get*"
	Resource, NotResource   []string // ARN patterns, e.g. "arn:aws:s3:::b/public/*"
	Conditions              []Condition
}

// PrincipalID is one entry of a statement's Principal: everyone ("*",
// which includes anonymous requests), a cairn user, or cairn's root
// users. See docs/design/s3.md, "Principals".
type PrincipalID struct {
	Any  bool   // "*" or {"AWS": "*"}
	Root bool   // arn:aws:iam:::root
	User string // arn:aws:iam:::user/NAME or {"CanonicalUser": "NAME"}
}

// MalformedError is a policy that cannot be accepted: S3's
// MalformedPolicy, with AWS's reason as its message.
type MalformedError struct{ Reason string }

func (e *MalformedError) Error() string { return "malformed policy: " + e.Reason }

// ErrMalformed matches every *MalformedError (errors.Is).
var ErrMalformed = errors.New("malformed policy")

// Is makes errors.Is(err, ErrMalformed) true for a *MalformedError.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

func malformed(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

// Parse parses and validates doc as the policy of bucket: the JSON
// subset of docs/design/s3.md, "Bucket policies". Every refusal is a
// *MalformedError carrying AWS's reason.
func Parse(doc []byte, bucket string) (*Policy, error) {
	if len(doc) > MaxPolicySize {
		return nil, malformed("Policy exceeds the maximum allowed document size.")
	}
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' {
		return nil, malformed("Policies must be valid JSON and the first byte must be '{'")
	}
	var top map[string]json.RawMessage
	if err := strictJSON(doc, &top); err != nil {
		return nil, malformed("Policies must be valid JSON and the first byte must be '{'")
	}
	p := &Policy{}
	for k, v := range top {
		var err error
		switch k {
		case "Version":
			err = json.Unmarshal(v, &p.Version)
			if err == nil && p.Version != Version2012 && p.Version != Version2008 {
				err = errors.New("bad version")
			}
			if err != nil {
				return nil, malformed("The policy must contain a valid version string")
			}
		case "Id":
			if json.Unmarshal(v, &p.ID) != nil {
				return nil, malformed("Invalid policy syntax.")
			}
		case "Statement":
		default:
			return nil, malformed("Unknown field %s", k)
		}
	}
	raw, ok := top["Statement"]
	if !ok {
		return nil, malformed("Missing required field Statement")
	}
	var stmts []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		stmts = []json.RawMessage{raw}
	} else if json.Unmarshal(raw, &stmts) != nil {
		return nil, malformed("Invalid policy syntax.")
	}
	if len(stmts) == 0 {
		return nil, malformed("Could not parse the policy: Statement is empty!")
	}
	sids := map[string]bool{}
	for _, raw := range stmts {
		s, err := parseStatement(raw, bucket)
		if err != nil {
			return nil, err
		}
		if s.Sid != "" {
			if sids[s.Sid] {
				return nil, malformed("Statement IDs (SID) in a single policy must be unique")
			}
			sids[s.Sid] = true
		}
		p.Statements = append(p.Statements, s)
	}
	return p, nil
}

// strictJSON decodes one JSON value and refuses trailing data.
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}

func parseStatement(raw json.RawMessage, bucket string) (Statement, error) {
	var s Statement
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return s, malformed("Invalid policy syntax.")
	}
	has := func(k string) bool { _, ok := m[k]; return ok }
	for k, v := range m {
		var err error
		switch k {
		case "Sid":
			err = json.Unmarshal(v, &s.Sid)
		case "Effect":
			err = json.Unmarshal(v, &s.Effect)
			if err == nil && s.Effect != Allow && s.Effect != Deny {
				return s, malformed("Invalid effect: %s", s.Effect)
			}
		case "Principal":
			s.Principal, err = parsePrincipal(v)
		case "NotPrincipal":
			s.NotPrincipal, err = parsePrincipal(v)
		case "Action":
			s.Action, err = stringList(v)
		case "NotAction":
			s.NotAction, err = stringList(v)
		case "Resource":
			s.Resource, err = stringList(v)
		case "NotResource":
			s.NotResource, err = stringList(v)
		case "Condition":
			s.Conditions, err = parseConditions(v)
		default:
			return s, malformed("Unknown field %s", k)
		}
		if err != nil {
			var me *MalformedError
			if errors.As(err, &me) {
				return s, err
			}
			return s, malformed("Invalid policy syntax.")
		}
	}
	switch {
	case s.Effect == "":
		return s, malformed("Missing required field Effect")
	case !has("Principal") && !has("NotPrincipal"):
		return s, malformed("Missing required field Principal")
	case has("Principal") && has("NotPrincipal"):
		return s, malformed("Statement cannot have both Principal and NotPrincipal")
	case !has("Action") && !has("NotAction"):
		return s, malformed("Missing required field Action")
	case has("Action") && has("NotAction"):
		return s, malformed("Statement cannot have both Action and NotAction")
	case !has("Resource") && !has("NotResource"):
		return s, malformed("Missing required field Resource")
	case has("Resource") && has("NotResource"):
		return s, malformed("Statement cannot have both Resource and NotResource")
	}
	actions := append(append([]string(nil), s.Action...), s.NotAction...)
	if len(actions) == 0 {
		return s, malformed("Missing required field Action")
	}
	for _, a := range actions {
		if !validAction(a) {
			return s, malformed("Policy has invalid action")
		}
	}
	resources := append(append([]string(nil), s.Resource...), s.NotResource...)
	if len(resources) == 0 {
		return s, malformed("Missing required field Resource")
	}
	for _, r := range resources {
		if !validResource(r, bucket) {
			return s, malformed("Policy has invalid resource")
		}
	}
	if s.Action != nil && s.Resource != nil && !actionsApply(s.Action, s.Resource) {
		return s, malformed("Action does not apply to any resource(s) in statement")
	}
	return s, nil
}

// stringList decodes a JSON string or array of strings (IAM accepts
// either wherever a list is expected).
func stringList(v json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(v, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(v, &many); err != nil {
		return nil, err
	}
	if many == nil {
		many = []string{}
	}
	return many, nil
}

// principalARNPrefix is how every cairn principal ARN starts: IAM's,
// with an empty account (cairn is one account; docs/design/s3.md,
// "Principals").
const principalARNPrefix = "arn:aws:iam:::"

func parsePrincipal(v json.RawMessage) ([]PrincipalID, error) {
	var star string
	if json.Unmarshal(v, &star) == nil {
		if star != "*" {
			return nil, malformed("Invalid principal in policy")
		}
		return []PrincipalID{{Any: true}}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, err
	}
	var out []PrincipalID
	for kind, raw := range m {
		ids, err := stringList(raw)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			p, ok := principalID(kind, id)
			if !ok {
				return nil, malformed("Invalid principal in policy")
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, malformed("Invalid principal in policy")
	}
	return out, nil
}

func principalID(kind, id string) (PrincipalID, bool) {
	switch kind {
	case "AWS":
		switch {
		case id == "*":
			return PrincipalID{Any: true}, true
		case id == principalARNPrefix+"root":
			return PrincipalID{Root: true}, true
		case strings.HasPrefix(id, principalARNPrefix+"user/"):
			name := strings.TrimPrefix(id, principalARNPrefix+"user/")
			return PrincipalID{User: name}, validUserName(name)
		}
	case "CanonicalUser":
		return PrincipalID{User: id}, validUserName(id)
	}
	return PrincipalID{}, false
}

// validUserName is cairn.ValidateUserName's alphabet, without importing
// its error wording: a principal names a user that may not exist yet.
func validUserName(n string) bool {
	if n == "" || len(n) > 64 || n[0] == '.' {
		return false
	}
	for _, c := range []byte(n) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' || c == '@') {
			return false
		}
	}
	return true
}

// validAction: "*", or an "s3:" pattern matching at least one S3 action.
func validAction(a string) bool {
	if a == "*" {
		return true
	}
	if len(a) < 4 || !strings.EqualFold(a[:3], "s3:") {
		return false
	}
	for name := range actionKinds {
		if matchFold(a, name) {
			return true
		}
	}
	return false
}

// resourcePrefix starts every S3 resource ARN.
const resourcePrefix = "arn:aws:s3:::"

// validResource: "*", or an S3 ARN whose bucket part can name bucket.
func validResource(r, bucket string) bool {
	if r == "*" {
		return true
	}
	rest, ok := strings.CutPrefix(r, resourcePrefix)
	if !ok || rest == "" {
		return false
	}
	b, _, hasKey := strings.Cut(rest, "/")
	if hasKey {
		return match(b, bucket) || strings.Contains(b, "${")
	}
	// No "/": a bucket ARN, or a pattern like "bucket*" that also covers
	// its objects.
	return match(rest, bucket) || match(rest, bucket+"/") || strings.Contains(rest, "${")
}

// actionsApply reports whether some action matched by the patterns has a
// resource of its kind among resources.
func actionsApply(actions, resources []string) bool {
	var bucketRes, objectRes bool
	for _, r := range resources {
		switch rest := strings.TrimPrefix(r, resourcePrefix); {
		case r == "*":
			bucketRes, objectRes = true, true
		case strings.Contains(rest, "/"):
			objectRes = true
		case strings.HasSuffix(rest, "*") || strings.Contains(rest, "${"):
			bucketRes, objectRes = true, true
		default:
			bucketRes = true
		}
	}
	for _, a := range actions {
		for name, k := range actionKinds {
			if !matchFold(a, name) {
				continue
			}
			if k == KindObject && objectRes || k != KindObject && bucketRes {
				return true
			}
		}
	}
	return false
}
