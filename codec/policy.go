package codec

import (
	"fmt"
	"strconv"
	"strings"
)

// Policy names a code and its parameters, written as a dash-separated
// string: a scheme followed by integer arguments, e.g. "rs-10-4",
// "lrc-12-2-2", "rep-3". ParsePolicy checks only the syntax; whether the
// numbers make a valid code is decided by the code's constructor (see
// package codec/all, which does both).
type Policy struct {
	Scheme string // lower-case scheme name: "rs", "lrc", "rep", ...
	Args   []int  // the scheme's integer parameters, in order
}

// String prints the policy in the form ParsePolicy reads.
func (p Policy) String() string {
	var b strings.Builder
	b.WriteString(p.Scheme)
	for _, a := range p.Args {
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(a))
	}
	return b.String()
}

// ParsePolicy parses the syntax SCHEME-N[-N...] with a lower-case ASCII
// scheme and decimal non-negative arguments. The error wraps
// ErrInvalidParams and quotes the input.
func ParsePolicy(s string) (Policy, error) {
	bad := func(why string) (Policy, error) {
		return Policy{}, fmt.Errorf("%w: policy %q: %s (want e.g. rs-10-4, lrc-12-2-2, rep-3)", ErrInvalidParams, s, why)
	}
	if len(s) > 64 {
		return bad("too long")
	}
	parts := strings.Split(s, "-")
	scheme := parts[0]
	if scheme == "" {
		return bad("missing scheme name")
	}
	for _, r := range scheme {
		if r < 'a' || r > 'z' {
			return bad("scheme name must be lower-case letters")
		}
	}
	p := Policy{Scheme: scheme}
	for _, a := range parts[1:] {
		if a == "" || len(a) > 6 {
			return bad(fmt.Sprintf("argument %q is not a number", a))
		}
		for _, r := range a {
			if r < '0' || r > '9' {
				return bad(fmt.Sprintf("argument %q is not a number", a))
			}
		}
		n, _ := strconv.Atoi(a)
		p.Args = append(p.Args, n)
	}
	return p, nil
}
