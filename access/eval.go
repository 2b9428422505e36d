package access

import (
	"strconv"
	"strings"
)

// Principal is who makes a request, as a policy or ACL sees it.
type Principal struct {
	Anonymous bool   // an unsigned request
	User      string // the cairn user's name (empty when Anonymous)
	Root      bool   // a root user (who needs no grant: the gateway never asks)
}

// Request is what an access decision is about.
type Request struct {
	Principal Principal
	Action    string // an S3 action, e.g. "s3:GetObject" (Operations)
	Bucket    string
	// Key is the object's key for an object action ("" for a bucket
	// action): the resource is arn:aws:s3:::Bucket/Key, else
	// arn:aws:s3:::Bucket.
	Key string
	// Context holds the request's condition keys, lower case (Context
	// builds the common ones), e.g. "aws:sourceip" → ["192.0.2.7"].
	Context map[string][]string
}

// Resource returns the request's resource ARN.
func (r Request) Resource() string {
	if kind, _ := KnownAction(r.Action); kind == KindObject {
		return resourcePrefix + r.Bucket + "/" + r.Key
	}
	return resourcePrefix + r.Bucket
}

// Decision is the outcome of evaluating a policy or an ACL.
type Decision int

// Decisions, in IAM's order of precedence: an explicit Deny wins over
// any Allow, and no matching statement at all is an implicit deny.
const (
	NoDecision Decision = iota // nothing matched: implicitly denied
	Allowed
	Denied // an explicit Deny statement matched
)

func (d Decision) String() string {
	switch d {
	case Allowed:
		return "allowed"
	case Denied:
		return "denied"
	}
	return "no decision"
}

// Evaluate decides r under p: Denied if a Deny statement matches,
// else Allowed if an Allow statement matches, else NoDecision. A nil
// policy decides nothing.
func (p *Policy) Evaluate(r Request) Decision {
	if p == nil {
		return NoDecision
	}
	d := NoDecision
	for _, s := range p.Statements {
		if !p.matches(s, r) {
			continue
		}
		if s.Effect == Deny {
			return Denied
		}
		d = Allowed
	}
	return d
}

// matches reports whether statement s applies to r.
func (p *Policy) matches(s Statement, r Request) bool {
	if s.Principal != nil && !principalIn(s.Principal, r.Principal) {
		return false
	}
	if s.NotPrincipal != nil && principalIn(s.NotPrincipal, r.Principal) {
		return false
	}
	if s.Action != nil && !anyFold(s.Action, r.Action) {
		return false
	}
	if s.NotAction != nil && anyFold(s.NotAction, r.Action) {
		return false
	}
	res := r.Resource()
	if s.Resource != nil && !p.anyResource(s.Resource, res, r.Context) {
		return false
	}
	if s.NotResource != nil && p.anyResource(s.NotResource, res, r.Context) {
		return false
	}
	for _, c := range s.Conditions {
		got, present := r.Context[c.Key]
		if !c.holds(got, present, func(v string) (string, []bool, bool) { return p.expand(v, r.Context) }) {
			return false
		}
	}
	return true
}

// expand expands a value's policy variables under Version 2012-10-17;
// older policies take "${" literally.
func (p *Policy) expand(v string, ctx map[string][]string) (string, []bool, bool) {
	if p.Version != Version2012 {
		return v, nil, true
	}
	return expandVars(v, ctx)
}

func (p *Policy) anyResource(patterns []string, res string, ctx map[string][]string) bool {
	for _, pat := range patterns {
		if pat == "*" {
			return true
		}
		e, lit, ok := p.expand(pat, ctx)
		if ok && matchLit(e, lit, res, false) {
			return true
		}
	}
	return false
}

func anyFold(patterns []string, action string) bool {
	for _, pat := range patterns {
		if pat == "*" || matchFold(pat, action) {
			return true
		}
	}
	return false
}

func principalIn(ids []PrincipalID, who Principal) bool {
	for _, id := range ids {
		switch {
		case id.Any:
			return true
		case who.Anonymous:
		case id.Root && who.Root, id.User != "" && id.User == who.User:
			return true
		}
	}
	return false
}

// Context builds the condition keys of a request that every S3 request
// has: aws:SourceIp, aws:SecureTransport, aws:username and aws:userid
// (absent for anonymous requests), aws:CurrentTime and aws:EpochTime
// (taken as arguments: the core reads no clock), s3:authType and
// s3:signatureversion. Callers add the operation's own keys (s3:prefix,
// s3:max-keys, s3:x-amz-acl, ...) with Set.
func Context(who Principal, sourceIP string, secure bool, currentTime string, epoch int64, authType string) map[string][]string {
	ctx := map[string][]string{
		"aws:securetransport": {boolString(secure)},
		"aws:currenttime":     {currentTime},
		"aws:epochtime":       {strconv.FormatInt(epoch, 10)},
	}
	if sourceIP != "" {
		ctx["aws:sourceip"] = []string{sourceIP}
	}
	if !who.Anonymous {
		ctx["aws:username"] = []string{who.User}
		ctx["aws:userid"] = []string{who.User}
		ctx["aws:principaltype"] = []string{"User"}
	} else {
		ctx["aws:principaltype"] = []string{"Anonymous"}
	}
	if authType != "" {
		ctx["s3:authtype"] = []string{authType}
	}
	return ctx
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Set adds condition key k (any case) with value v to ctx, replacing a
// value it had; an empty v removes nothing and adds nothing unless keep.
func Set(ctx map[string][]string, k, v string, keep bool) {
	if v == "" && !keep {
		return
	}
	ctx[strings.ToLower(k)] = []string{v}
}
