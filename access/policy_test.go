package access

import (
	"errors"
	"strings"
	"testing"

	"cairn"
)

const bucket = "photos"

func mustParse(t *testing.T, doc string) *Policy {
	t.Helper()
	p, err := Parse([]byte(doc), bucket)
	if err != nil {
		t.Fatalf("Parse(%s): %v", doc, err)
	}
	return p
}

func TestParseRefuses(t *testing.T) {
	ok := `"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"`
	tests := []struct {
		name, doc, reason string
	}{
		{"not JSON", `Version: 1`, "Policies must be valid JSON and the first byte must be '{'"},
		{"array", `[{}]`, "Policies must be valid JSON and the first byte must be '{'"},
		{"trailing", `{"Statement":[{` + ok + `}]} {}`, "Policies must be valid JSON and the first byte must be '{'"},
		{"bad version", `{"Version":"2020-01-01","Statement":[{` + ok + `}]}`, "The policy must contain a valid version string"},
		{"unknown field", `{"Statment":[]}`, "Unknown field Statment"},
		{"no statement", `{"Version":"2012-10-17"}`, "Missing required field Statement"},
		{"empty statement", `{"Statement":[]}`, "Could not parse the policy: Statement is empty!"},
		{"no effect", `{"Statement":[{"Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`, "Missing required field Effect"},
		{"bad effect", `{"Statement":[{"Effect":"Maybe","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`, "Invalid effect: Maybe"},
		{"no principal", `{"Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`, "Missing required field Principal"},
		{"account principal", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:user/bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`, "Invalid principal in policy"},
		{"service principal", `{"Statement":[{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`, "Invalid principal in policy"},
		{"no action", `{"Statement":[{"Effect":"Allow","Principal":"*","Resource":"arn:aws:s3:::photos/*"}]}`, "Missing required field Action"},
		{"iam action", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"iam:PassRole","Resource":"arn:aws:s3:::photos/*"}]}`, "Policy has invalid action"},
		{"unknown action", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObjekt","Resource":"arn:aws:s3:::photos/*"}]}`, "Policy has invalid action"},
		{"no resource", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject"}]}`, "Missing required field Resource"},
		{"other bucket", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::videos/*"}]}`, "Policy has invalid resource"},
		{"not s3", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:sqs:::photos/*"}]}`, "Policy has invalid resource"},
		{"object action on bucket", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos"}]}`, "Action does not apply to any resource(s) in statement"},
		{"bucket action on objects", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::photos/*"}]}`, "Action does not apply to any resource(s) in statement"},
		{"both actions", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","NotAction":"s3:PutObject","Resource":"arn:aws:s3:::photos/*"}]}`, "Statement cannot have both Action and NotAction"},
		{"bad operator", `{"Statement":[{` + ok + `,"Condition":{"StringSortOf":{"s3:prefix":"a"}}}]}`, "Invalid Condition type : StringSortOf"},
		{"bad set", `{"Statement":[{` + ok + `,"Condition":{"ForSomeValues:StringLike":{"s3:prefix":"a"}}}]}`, "Invalid Condition type : ForSomeValues:StringLike"},
		{"bad key", `{"Statement":[{` + ok + `,"Condition":{"StringEquals":{"s3:colour":"blue"}}}]}`, "Policy has an invalid condition key"},
		{"bad ip", `{"Statement":[{` + ok + `,"Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.300/8"}}}]}`, `Invalid value "10.0.0.300/8" for condition IpAddress`},
		{"bad number", `{"Statement":[{` + ok + `,"Condition":{"NumericLessThan":{"s3:max-keys":"ten"}}}]}`, `Invalid value "ten" for condition NumericLessThan`},
		{"duplicate sid", `{"Statement":[{"Sid":"a",` + ok + `},{"Sid":"a",` + ok + `}]}`, "Statement IDs (SID) in a single policy must be unique"},
		{"too big", `{"Id":"` + strings.Repeat("x", MaxPolicySize) + `","Statement":[{` + ok + `}]}`, "Policy exceeds the maximum allowed document size."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), bucket)
			var me *MalformedError
			if !errors.As(err, &me) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse: %v, want a MalformedError", err)
			}
			if me.Reason != tt.reason {
				t.Fatalf("reason %q, want %q", me.Reason, tt.reason)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	p := mustParse(t, `{
	  "Version": "2012-10-17", "Id": "web",
	  "Statement": {
	    "Sid": "one", "Effect": "Allow",
	    "Principal": {"AWS": ["arn:aws:iam:::user/alice", "*"], "CanonicalUser": "bob"},
	    "Action": ["s3:Get*", "s3:listbucket"],
	    "Resource": ["arn:aws:s3:::photos", "arn:aws:s3:::photos/*"],
	    "Condition": {"Bool": {"aws:SecureTransport": true}, "NumericLessThanEquals": {"s3:max-keys": 100},
	                  "ForAnyValue:StringLikeIfExists": {"s3:prefix": ["a/*", "b/*"]}}
	  }
	}`)
	if len(p.Statements) != 1 || p.ID != "web" {
		t.Fatalf("parsed %+v", p)
	}
	s := p.Statements[0]
	if len(s.Principal) != 3 || len(s.Action) != 2 || len(s.Resource) != 2 || len(s.Conditions) != 3 {
		t.Fatalf("statement %+v", s)
	}
	for _, c := range s.Conditions {
		if c.Op == "StringLike" && (c.Set != "ForAnyValue" || !c.IfExists || c.Key != "s3:prefix") {
			t.Fatalf("condition %+v", c)
		}
		if c.Op == "Bool" && (c.Values[0] != "true" || c.Key != "aws:securetransport") {
			t.Fatalf("condition %+v", c)
		}
	}
	// A Resource "*" and a bucket-name pattern are accepted.
	mustParse(t, `{"Statement":[{"Effect":"Deny","NotPrincipal":{"AWS":"arn:aws:iam:::root"},"NotAction":"s3:Get*","Resource":"*"}]}`)
	mustParse(t, `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::photo*"}]}`)
}

// ctx is the context of a plain request: signed by user (or anonymous
// when user is ""), from ip.
func ctx(user, ip string, secure bool) map[string][]string {
	who := Principal{User: user, Anonymous: user == ""}
	return Context(who, ip, secure, "2026-11-27T12:00:00Z", 1795780800, "REST-HEADER")
}

// testPolicy is a policy of the kinds of statements real deployments
// write: public reads of a prefix, per-user homes, IP and TLS conditions.
const testPolicy = `{"Version":"2012-10-17","Statement":[
	  {"Sid":"read public","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/public/*"},
	  {"Sid":"alice lists","Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/alice"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::photos",
	   "Condition":{"StringLike":{"s3:prefix":["home/alice/*","public/*"]}}},
	  {"Sid":"home","Effect":"Allow","Principal":{"AWS":"*"},"Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::photos/home/${aws:username}/*"},
	  {"Sid":"no secrets","Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::photos/public/secret*"},
	  {"Sid":"tls only","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::photos/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}},
	  {"Sid":"office","Effect":"Allow","Principal":{"CanonicalUser":"bob"},"NotAction":"s3:Delete*","Resource":"arn:aws:s3:::photos/office/*",
	   "Condition":{"IpAddress":{"aws:SourceIp":["192.0.2.0/24","2001:db8::/32"]},"NotIpAddress":{"aws:SourceIp":"192.0.2.66"}}},
	  {"Sid":"small pages","Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/carol"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::photos",
	   "Condition":{"NumericLessThanEquals":{"s3:max-keys":"10"}}},
	  {"Sid":"no acl","Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::photos/*",
	   "Condition":{"StringEquals":{"s3:x-amz-acl":["public-read","public-read-write"]}}}
	]}`

func TestEvaluate(t *testing.T) {
	public := mustParse(t, testPolicy)
	with := func(c map[string][]string, kv ...string) map[string][]string {
		for i := 0; i < len(kv); i += 2 {
			Set(c, kv[i], kv[i+1], true)
		}
		return c
	}
	tests := []struct {
		name   string
		user   string // "" anonymous
		action string
		key    string
		ctx    map[string][]string
		want   Decision
	}{
		{"anonymous reads public", "", "s3:GetObject", "public/cat.jpg", ctx("", "203.0.113.9", false), Allowed},
		{"anonymous reads private", "", "s3:GetObject", "private/cat.jpg", ctx("", "203.0.113.9", false), NoDecision},
		{"anonymous writes public", "", "s3:PutObject", "public/cat.jpg", ctx("", "203.0.113.9", true), NoDecision},
		{"version read is another action", "", "s3:GetObjectVersion", "public/cat.jpg", ctx("", "203.0.113.9", false), NoDecision},
		{"deny beats allow", "", "s3:GetObject", "public/secret.txt", ctx("", "203.0.113.9", false), Denied},
		{"alice lists her prefix", "alice", "s3:ListBucket", "", with(ctx("alice", "", true), "s3:prefix", "home/alice/x"), Allowed},
		{"alice lists another", "alice", "s3:ListBucket", "", with(ctx("alice", "", true), "s3:prefix", "home/bob/"), NoDecision},
		{"alice lists without a prefix", "alice", "s3:ListBucket", "", ctx("alice", "", true), NoDecision},
		{"bob is not alice", "bob", "s3:ListBucket", "", with(ctx("bob", "", true), "s3:prefix", "public/"), NoDecision},
		{"home of the caller", "alice", "s3:PutObject", "home/alice/a.txt", ctx("alice", "", true), Allowed},
		{"home of another", "alice", "s3:PutObject", "home/bob/a.txt", ctx("alice", "", true), NoDecision},
		{"home over plain http", "alice", "s3:PutObject", "home/alice/a.txt", ctx("alice", "", false), Denied},
		{"anonymous has no home", "", "s3:GetObject", "home//a.txt", ctx("", "", true), NoDecision},
		{"bob from the office", "bob", "s3:PutObject", "office/plan.txt", ctx("bob", "192.0.2.7", true), Allowed},
		{"bob from office v6", "bob", "s3:GetObject", "office/plan.txt", ctx("bob", "2001:db8::1", true), Allowed},
		{"bob from the excluded host", "bob", "s3:PutObject", "office/plan.txt", ctx("bob", "192.0.2.66", true), NoDecision},
		{"bob from home", "bob", "s3:PutObject", "office/plan.txt", ctx("bob", "198.51.100.1", true), NoDecision},
		{"bob may not delete", "bob", "s3:DeleteObject", "office/plan.txt", ctx("bob", "192.0.2.7", true), NoDecision},
		{"carol small page", "carol", "s3:ListBucket", "", with(ctx("carol", "", true), "s3:max-keys", "10"), Allowed},
		{"carol big page", "carol", "s3:ListBucket", "", with(ctx("carol", "", true), "s3:max-keys", "1000"), NoDecision},
		{"public acl denied", "alice", "s3:PutObject", "home/alice/a", with(ctx("alice", "", true), "s3:x-amz-acl", "public-read"), Denied},
		{"private acl fine", "alice", "s3:PutObject", "home/alice/a", with(ctx("alice", "", true), "s3:x-amz-acl", "private"), Allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{Principal: Principal{User: tt.user, Anonymous: tt.user == ""}, Action: tt.action, Bucket: bucket, Key: tt.key, Context: tt.ctx}
			if got := public.Evaluate(r); got != tt.want {
				t.Fatalf("Evaluate(%s %s/%s) = %v, want %v", tt.action, bucket, tt.key, got, tt.want)
			}
		})
	}
	if (*Policy)(nil).Evaluate(Request{Action: "s3:GetObject"}) != NoDecision {
		t.Fatal("a nil policy decided")
	}
}

func TestConditionOperators(t *testing.T) {
	tests := []struct {
		cond string
		ctx  map[string][]string
		want bool
	}{
		{`{"StringNotEquals":{"s3:prefix":"a"}}`, map[string][]string{}, true}, // absent satisfies a negated operator
		{`{"StringEquals":{"s3:prefix":"a"}}`, map[string][]string{}, false},
		{`{"StringEqualsIfExists":{"s3:prefix":"a"}}`, map[string][]string{}, true},
		{`{"StringEqualsIfExists":{"s3:prefix":"a"}}`, map[string][]string{"s3:prefix": {"b"}}, false},
		{`{"StringEqualsIgnoreCase":{"s3:prefix":"ABC"}}`, map[string][]string{"s3:prefix": {"abc"}}, true},
		{`{"StringNotLike":{"s3:prefix":["a*","b*"]}}`, map[string][]string{"s3:prefix": {"c"}}, true},
		{`{"StringNotLike":{"s3:prefix":["a*","b*"]}}`, map[string][]string{"s3:prefix": {"bob"}}, false},
		{`{"StringLike":{"s3:prefix":"a?c"}}`, map[string][]string{"s3:prefix": {"abc"}}, true},
		{`{"Null":{"s3:prefix":"true"}}`, map[string][]string{}, true},
		{`{"Null":{"s3:prefix":"false"}}`, map[string][]string{}, false},
		{`{"NumericGreaterThan":{"s3:max-keys":"5"}}`, map[string][]string{"s3:max-keys": {"6"}}, true},
		{`{"NumericGreaterThan":{"s3:max-keys":"5"}}`, map[string][]string{"s3:max-keys": {"x"}}, false},
		{`{"DateLessThan":{"aws:CurrentTime":"2027-01-01T00:00:00Z"}}`, map[string][]string{"aws:currenttime": {"2026-11-27T12:00:00Z"}}, true},
		{`{"DateGreaterThan":{"aws:CurrentTime":"2027-01-01T00:00:00Z"}}`, map[string][]string{"aws:currenttime": {"2026-11-27T12:00:00Z"}}, false},
		{`{"ForAllValues:StringEquals":{"s3:requestobjecttagkeys":["a","b"]}}`, map[string][]string{"s3:requestobjecttagkeys": {"a", "b"}}, true},
		{`{"ForAllValues:StringEquals":{"s3:requestobjecttagkeys":["a","b"]}}`, map[string][]string{"s3:requestobjecttagkeys": {"a", "c"}}, false},
		{`{"ForAllValues:StringEquals":{"s3:requestobjecttagkeys":["a"]}}`, map[string][]string{}, true},
		{`{"ForAnyValue:StringEquals":{"s3:requestobjecttagkeys":["a"]}}`, map[string][]string{"s3:requestobjecttagkeys": {"c", "a"}}, true},
		{`{"ForAnyValue:StringEquals":{"s3:requestobjecttagkeys":["a"]}}`, map[string][]string{}, false},
		{`{"IpAddress":{"aws:SourceIp":"10.1.2.3"}}`, map[string][]string{"aws:sourceip": {"10.1.2.3"}}, true},
		{`{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}`, map[string][]string{"aws:sourceip": {"::ffff:10.9.9.9"}}, true},
		{`{"Bool":{"aws:SecureTransport":"True"}}`, map[string][]string{"aws:securetransport": {"true"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			p := mustParse(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::photos","Condition":`+tt.cond+`}]}`)
			got := p.Evaluate(Request{Principal: Principal{Anonymous: true}, Action: "s3:ListBucket", Bucket: bucket, Context: tt.ctx}) == Allowed
			if got != tt.want {
				t.Fatalf("holds = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"a*c", "abbbc", true}, {"a*c", "abcd", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"*/*", "b/k", true}, {"*x*y*", "axbxcy", true},
		{"abc", "ABC", false},
	}
	for _, tt := range tests {
		if got := match(tt.pat, tt.s); got != tt.want {
			t.Errorf("match(%q, %q) = %v", tt.pat, tt.s, got)
		}
	}
	if !matchFold("S3:get*", "s3:GetObject") {
		t.Error("actions match case-insensitively")
	}
	// ${*} is a literal star, not a wildcard.
	e, lit, ok := expandVars("a${*}b/${aws:username}", map[string][]string{"aws:username": {"al?ce"}})
	if !ok || e != "a*b/al?ce" || matchLit(e, lit, "axb/al?ce", false) || !matchLit(e, lit, "a*b/al?ce", false) || matchLit(e, lit, "a*b/alice", false) {
		t.Fatalf("expandVars: %q %v %v", e, lit, ok)
	}
	if _, _, ok := expandVars("${aws:username}", map[string][]string{}); ok {
		t.Fatal("a missing variable expanded")
	}
}

func TestIsPublic(t *testing.T) {
	stmt := func(principal, cond string) string {
		s := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":` + principal + `,"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"`
		if cond != "" {
			s += `,"Condition":` + cond
		}
		return s + `}]}`
	}
	tests := []struct {
		name, doc string
		want      bool
	}{
		{"star", stmt(`"*"`, ""), true},
		{"aws star", stmt(`{"AWS":"*"}`, ""), true},
		{"a user", stmt(`{"AWS":"arn:aws:iam:::user/alice"}`, ""), false},
		{"narrow ip", stmt(`"*"`, `{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}`), false},
		{"wide ip", stmt(`"*"`, `{"IpAddress":{"aws:SourceIp":"0.0.0.0/1"}}`), true},
		{"tls only", stmt(`"*"`, `{"Bool":{"aws:SecureTransport":"true"}}`), true},
		{"username wildcard", stmt(`"*"`, `{"StringLike":{"aws:username":"a*"}}`), true},
		{"username fixed", stmt(`"*"`, `{"StringEquals":{"aws:username":"alice"}}`), false},
		{"deny only", `{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::photos/*"}]}`, false},
		{"not principal", `{"Statement":[{"Effect":"Allow","NotPrincipal":{"AWS":"arn:aws:iam:::user/eve"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`, true},
	}
	for _, tt := range tests {
		if got := mustParse(t, tt.doc).IsPublic(); got != tt.want {
			t.Errorf("%s: IsPublic = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestACL(t *testing.T) {
	anon, alice := Principal{Anonymous: true}, Principal{User: "alice"}
	read, _ := Canned(CannedPublicRead)
	rw, _ := Canned(CannedPublicReadWrite)
	auth, _ := Canned(CannedAuthenticatedRead)
	tests := []struct {
		name   string
		grants []cairn.Grant
		of     Kind
		who    Principal
		action string
		ignore bool
		want   bool
	}{
		{"public-read object", read, KindObject, anon, "s3:GetObject", false, true},
		{"public-read bucket lists", read, KindBucket, anon, "s3:ListBucket", false, true},
		{"public-read bucket no write", read, KindBucket, anon, "s3:PutObject", false, false},
		{"public-read-write writes", rw, KindBucket, anon, "s3:PutObject", false, true},
		{"ignore public acls", rw, KindBucket, anon, "s3:PutObject", true, false},
		{"authenticated-read: not anonymous", auth, KindObject, anon, "s3:GetObject", false, false},
		{"authenticated-read: a user", auth, KindObject, alice, "s3:GetObject", false, true},
		{"user grant", []cairn.Grant{{User: "alice", Permission: PermFullControl}}, KindBucket, alice, "s3:PutBucketAcl", false, true},
		{"user grant, other user", []cairn.Grant{{User: "alice", Permission: PermFullControl}}, KindBucket, Principal{User: "bob"}, "s3:ListBucket", false, false},
		{"read_acp", []cairn.Grant{{User: "alice", Permission: PermReadACP}}, KindObject, alice, "s3:GetObject", false, false},
	}
	for _, tt := range tests {
		if got := ACLAllows(tt.grants, tt.of, tt.who, tt.action, tt.ignore); got != tt.want {
			t.Errorf("%s: ACLAllows = %v, want %v", tt.name, got, tt.want)
		}
	}
	if g, err := Canned(CannedPrivate); err != nil || g != nil {
		t.Fatalf("private: %v %v", g, err)
	}
	if _, err := Canned("public"); !errors.Is(err, ErrInvalidCanned) {
		t.Fatalf("Canned(public): %v", err)
	}
	if !PublicACL(auth) || PublicACL([]cairn.Grant{{User: "bob", Permission: PermRead}}) {
		t.Fatal("PublicACL")
	}
	for _, bad := range []cairn.Grant{{User: "a", Group: cairn.GroupAllUsers, Permission: PermRead}, {Permission: PermRead}, {User: "a", Permission: "ALL"}, {Group: "Everyone", Permission: PermRead}} {
		if CheckGrant(bad) == nil {
			t.Errorf("CheckGrant(%+v) accepted", bad)
		}
	}
}

// TestOperationsAreActions: every action the operation table names is a
// known action, so no operation can be checked against a name no policy
// could grant.
func TestOperationsAreActions(t *testing.T) {
	for op, a := range Operations {
		if _, ok := KnownAction(a); !ok {
			t.Errorf("operation %s: unknown action %s", op, a)
		}
		if _, ok := KnownAction(VersionAction(a)); !ok {
			t.Errorf("operation %s: unknown version action %s", op, VersionAction(a))
		}
	}
	if VersionAction("s3:GetObject") != "s3:GetObjectVersion" || VersionAction("s3:ListBucket") != "s3:ListBucket" {
		t.Fatal("VersionAction")
	}
}
