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
	// Read is how a reader asks for a stripe's shards, written after the
	// code as "/read=all" or "/read=k+N": "all" asks every shard at once
	// and decodes from the first to arrive (RobuSTore mode), "k+N" asks K
	// plus δ = N (0 ≤ N ≤ 255). "" leaves it to the reader (K+1 by
	// default; fountain codes always read all). It does not change the
	// code.
	Read string
}

// String prints the policy in the form ParsePolicy reads.
func (p Policy) String() string {
	var b strings.Builder
	b.WriteString(p.Scheme)
	for _, a := range p.Args {
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(a))
	}
	if p.Read != "" {
		b.WriteString("/read=")
		b.WriteString(p.Read)
	}
	return b.String()
}

// ReadExtra reports the policy's read mode: all (ask every shard), or
// δ ≥ 0, or −1 when the policy leaves it to the reader.
func (p Policy) ReadExtra() (all bool, extra int) {
	switch {
	case p.Read == "all":
		return true, 0
	case strings.HasPrefix(p.Read, "k+"):
		n, err := strconv.Atoi(p.Read[2:])
		if err == nil {
			return false, n
		}
	}
	return false, -1
}

// ParsePolicy parses the syntax SCHEME-N[-N...][/read=all|/read=k+N] with
// a lower-case ASCII scheme and decimal non-negative arguments. The error wraps
// ErrInvalidParams and quotes the input.
func ParsePolicy(s string) (Policy, error) {
	bad := func(why string) (Policy, error) {
		return Policy{}, fmt.Errorf("%w: policy %q: %s (want e.g. rs-10-4, lrc-12-2-2, rep-3)", ErrInvalidParams, s, why)
	}
	if len(s) > 64 {
		return bad("too long")
	}
	code, opt, hasOpt := strings.Cut(s, "/")
	read := ""
	if hasOpt {
		v, ok := strings.CutPrefix(opt, "read=")
		n, err := strconv.Atoi(strings.TrimPrefix(v, "k+"))
		switch {
		case !ok:
			return bad(fmt.Sprintf("unknown option %q (the one option is read=all or read=k+N)", opt))
		case v == "all":
		case strings.HasPrefix(v, "k+") && err == nil && n >= 0 && n <= 255 && strconv.Itoa(n) == v[2:]:
		default:
			return bad(fmt.Sprintf("read=%s: want read=all or read=k+N with 0 ≤ N ≤ 255", v))
		}
		read = v
	}
	parts := strings.Split(code, "-")
	scheme := parts[0]
	if scheme == "" {
		return bad("missing scheme name")
	}
	for _, r := range scheme {
		if r < 'a' || r > 'z' {
			return bad("scheme name must be lower-case letters")
		}
	}
	p := Policy{Scheme: scheme, Read: read}
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
