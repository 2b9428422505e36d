package s3

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Choosing a policy over S3 (docs/design/s3.md, "Choosing a policy"):
// x-cairn-policy on CreateBucket (the bucket's default), PutObject,
// CopyObject or CreateMultipartUpload. The header must be signed, since an
// unsigned header could be added to a captured request, and the policy
// must be on the requester's allow-list.

// errPolicyUnsigned: x-cairn-policy is present but not signed.
var errPolicyUnsigned = &Error{"AccessDenied", http.StatusForbidden,
	"The x-cairn-policy header must be signed: sign it with Signature V4 and list it in SignedHeaders."}

// choosePolicy checks that the requester may choose policy p: the header
// is signed, p is a valid policy (ErrInvalidPolicy), and p's code is on
// the allow-list (root: any policy; else Identity.Policies, or
// Config.AllowedPolicies if the identity has none). A refusal is a 403
// AccessDenied whose message names the allowed policies.
func (h *Handler) choosePolicy(q *request, p string) error {
	if !slices.Contains(q.auth.signed, strings.ToLower(policyHeader)) {
		return errPolicyUnsigned
	}
	if err := h.cfg.CheckPolicy(p); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	id := q.auth.id
	if id.Root {
		return nil
	}
	allowed := id.Policies
	if len(allowed) == 0 {
		allowed = h.cfg.AllowedPolicies
	}
	if policyAllowed(p, allowed) {
		return nil
	}
	return &Error{"AccessDenied", http.StatusForbidden, fmt.Sprintf(
		"The policy %s is not allowed for %s: the allowed policies are %s.", p, id.Name, strings.Join(allowed, ", "))}
}

// policyAllowed reports whether p's code (what comes before "/", the read
// mode being the client's business) is the code of a policy in allowed.
func policyAllowed(p string, allowed []string) bool {
	code, _, _ := strings.Cut(p, "/")
	for _, a := range allowed {
		if ac, _, _ := strings.Cut(a, "/"); ac == code {
			return true
		}
	}
	return false
}
