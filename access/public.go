package access

import "strings"

// fixingKeys are the condition keys that, tested for equality, tie an
// Allow statement to specific callers, so that a grant to "*" under them
// is not public (S3's definition for Block Public Access and
// GetBucketPolicyStatus).
var fixingKeys = map[string]bool{
	"aws:sourceip": true, "aws:sourcearn": true, "aws:sourcevpc": true, "aws:sourcevpce": true,
	"aws:sourceaccount": true, "aws:sourceowner": true, "aws:principalaccount": true,
	"aws:principalarn": true, "aws:principalorgid": true, "aws:userid": true, "aws:username": true,
	"s3:dataaccesspointarn": true, "s3:dataaccesspointaccount": true,
}

// IsPublic reports whether p grants anything to everyone: an Allow
// statement with Principal "*" (or a NotPrincipal) that no condition
// ties to fixed callers. A condition fixes the callers if it tests one of
// the keys above for equality with values free of wildcards; for
// aws:SourceIp, with CIDR blocks no wider than /8 (IPv4) or /32 (IPv6).
func (p *Policy) IsPublic() bool {
	if p == nil {
		return false
	}
	for _, s := range p.Statements {
		if s.Effect != Allow {
			continue
		}
		everyone := s.NotPrincipal != nil
		for _, id := range s.Principal {
			everyone = everyone || id.Any
		}
		if everyone && !fixed(s.Conditions) {
			return true
		}
	}
	return false
}

func fixed(cs []Condition) bool {
	for _, c := range cs {
		if !fixingKeys[c.Key] || c.IfExists || c.Set == "ForAllValues" {
			continue
		}
		switch c.Op {
		case "IpAddress":
			if c.Key == "aws:sourceip" && narrowBlocks(c.Values) {
				return true
			}
		case "StringEquals", "StringEqualsIgnoreCase", "ArnEquals", "StringLike", "ArnLike":
			if noWildcards(c.Values) {
				return true
			}
		}
	}
	return false
}

func narrowBlocks(vals []string) bool {
	for _, v := range vals {
		p, ok := prefix(v)
		if !ok || p.Addr().Is4() && p.Bits() < 8 || !p.Addr().Is4() && p.Bits() < 32 {
			return false
		}
	}
	return true
}

func noWildcards(vals []string) bool {
	for _, v := range vals {
		if strings.ContainsAny(v, "*?") || strings.Contains(v, "${") {
			return false
		}
	}
	return true
}
