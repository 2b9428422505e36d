package access

import "strings"

// match reports whether s matches pattern, where '*' matches any run of
// bytes (also none) and '?' any one byte: IAM's wildcards, case-sensitive
// as resource ARNs and StringLike are.
func match(pattern, s string) bool { return matchLit(pattern, nil, s, false) }

// matchFold is match ignoring ASCII case: how IAM matches actions.
func matchFold(pattern, s string) bool { return matchLit(pattern, nil, s, true) }

// matchLit is match where lit[i] (if lit is not nil) marks pattern[i] as
// a literal byte even if it is '*' or '?' (a ${*} or ${?} policy
// variable). The loop keeps the last star to backtrack to: linear in
// practice, O(len(pattern)·len(s)) at worst.
func matchLit(pattern string, lit []bool, s string, fold bool) bool {
	isLit := func(i int) bool { return lit != nil && lit[i] }
	eq := func(a, b byte) bool {
		if fold {
			return lower(a) == lower(b)
		}
		return a == b
	}
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*' && !isLit(p):
			star, mark = p, i
			p++
		case p < len(pattern) && (pattern[p] == '?' && !isLit(p) || eq(pattern[p], s[i])):
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' && !isLit(p) {
		p++
	}
	return p == len(pattern)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// expandVars replaces the policy variables of a Version 2012-10-17
// pattern: ${key} by the request context's (single) value of key, and
// ${*}, ${?}, ${$} by the literal character, marked in the returned mask
// so that it matches only itself. ok is false if a variable's key is
// absent (or has several values): the pattern then matches nothing, as
// in IAM.
func expandVars(pattern string, ctx map[string][]string) (out string, lit []bool, ok bool) {
	if !strings.Contains(pattern, "${") {
		return pattern, nil, true
	}
	var b strings.Builder
	for {
		i := strings.Index(pattern, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(pattern[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(pattern[:i])
		for range i {
			lit = append(lit, false)
		}
		name := pattern[i+2 : i+j]
		switch name {
		case "*", "?", "$":
			b.WriteString(name)
			lit = append(lit, true)
		default:
			vals := ctx[strings.ToLower(name)]
			if len(vals) != 1 {
				return "", nil, false
			}
			b.WriteString(vals[0])
			for range len(vals[0]) {
				lit = append(lit, true)
			}
		}
		pattern = pattern[i+j+1:]
	}
	b.WriteString(pattern)
	for range len(pattern) {
		lit = append(lit, false)
	}
	return b.String(), lit, true
}
