package s3

import (
	"errors"
	"net"
	"sync"

	"cairn"
	"cairn/access"
)

// Authorization (docs/design/s3.md, "Access control"): once a request is
// authenticated (or found unsigned: anonymous), authorize decides whether
// its principal may do the operation to the bucket or object it names.
// Root may do anything; a bucket's owner anything its bucket policy does
// not explicitly deny (the policy, ACL and public access block of its
// own bucket always); anyone else, anonymous included, only what the
// bucket policy or an ACL (the bucket's, or for reads the object's)
// grants and the policy does not deny, within the bucket's Block Public
// Access settings.

// bucketAccess is what authorize found about the request's bucket.
type bucketAccess struct {
	b      cairn.Bucket
	owner  bool           // the requester owns the bucket
	policy *access.Policy // nil: none
	pab    cairn.PublicAccessBlock
}

// ownerOnly are the operations only the bucket owner (or root) may
// perform whatever a policy says: managing the policy and the public
// access block, and deleting the bucket.
var ownerOnly = map[string]bool{
	"GetBucketPolicy": true, "PutBucketPolicy": true, "DeleteBucketPolicy": true, "GetBucketPolicyStatus": true,
	"GetPublicAccessBlock": true, "PutPublicAccessBlock": true, "DeletePublicAccessBlock": true,
	"GetBucketOwnershipControls": true, "PutBucketOwnershipControls": true, "DeleteBucketOwnershipControls": true,
	"DeleteBucket": true,
}

// ownerKeeps are the operations an explicit Deny of the bucket's policy
// does not take from its owner, so that no policy locks the owner out
// of changing it.
var ownerKeeps = map[string]bool{
	"GetBucketPolicy": true, "PutBucketPolicy": true, "DeleteBucketPolicy": true,
	"GetPublicAccessBlock": true, "PutPublicAccessBlock": true, "DeletePublicAccessBlock": true,
	"GetBucketAcl": true, "PutBucketAcl": true,
}

// principal is the request's principal as package access sees it.
func (q *request) principal() access.Principal {
	if q.auth.anonymous {
		return access.Principal{Anonymous: true}
	}
	return access.Principal{User: q.auth.id.Name, Root: q.auth.id.Root}
}

// authorize decides the request before it is routed: nil lets it
// through (the handler may still refuse it), ErrAccessDenied stops it.
// A request on a bucket that does not exist passes: its handler answers
// NoSuchBucket, as S3 does for anyone.
func (h *Handler) authorize(q *request) error {
	if q.auth.id.Root {
		return nil
	}
	op := Operation(q.r)
	switch {
	case q.bucket == "" || op == "CreateBucket":
		if q.auth.anonymous {
			return ErrAccessDenied
		}
		return nil // ListBuckets lists the requester's own; admin checks root itself
	case op == "Preflight" || cairn.ValidateBucketName(q.bucket) != nil:
		return nil // route answers InvalidBucketName
	case op == "PostObject":
		return nil // its key and signer are in its form: authorizePost
	}
	ba, err := h.loadAccess(q, q.bucket)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	q.access = ba
	action, ok := access.Operations[op]
	if !ok {
		// Unsupported or Other: not granted here. Its handler decides
		// its action with allowed, or h.bucket refuses whoever is not
		// the owner.
		return nil
	}
	if op == "DeleteObjects" {
		// Checked key by key (may); the owner's own bucket check here.
		if ba.owner {
			return nil
		}
		q.granted = true
		return nil
	}
	key := q.key
	if q.r.URL.Query().Has("versionId") && key != "" {
		action = access.VersionAction(action)
	}
	if ownerOnly[op] && !ba.owner {
		return ErrAccessDenied
	}
	if err := h.may(q, ba, action, key); err != nil {
		return err
	}
	q.granted = true
	return nil
}

// loadAccess reads bucket name's record and parses its policy.
func (h *Handler) loadAccess(q *request, name string) (*bucketAccess, error) {
	b, err := h.cfg.Meta.Bucket(q.r.Context(), name)
	if err != nil {
		return nil, err
	}
	ba := &bucketAccess{b: b, owner: !q.auth.anonymous && b.Owner == q.auth.id.Name}
	if a := b.Access; a != nil {
		if a.Policy != "" {
			// A stored policy was validated when it was put; one that no
			// longer parses (a stricter gateway) is a corrupt record.
			p, err := h.policies.parse(b.Name, a.Policy)
			if err != nil {
				return nil, withCause(ErrInternal, err)
			}
			ba.policy = p
		}
		if a.PublicAccessBlock != nil {
			ba.pab = *a.PublicAccessBlock
		}
	}
	return ba, nil
}

// policyCache holds parsed bucket policies, keyed by bucket and policy
// text, so that a request does not parse its bucket's policy again
// (BenchmarkParse: ~0.2 ms for a policy of 8 statements). A parsed
// Policy is never changed, so requests share it. A changed policy is a
// new key; the cache forgets everything when it reaches maxPolicies.
type policyCache struct {
	mu sync.Mutex
	m  map[string]*access.Policy // guarded by mu
}

const maxPolicies = 256

func (c *policyCache) parse(bucket, doc string) (*access.Policy, error) {
	k := bucket + "\x00" + doc
	c.mu.Lock()
	p, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := access.Parse([]byte(doc), bucket)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxPolicies {
		c.m = make(map[string]*access.Policy)
	}
	c.m[k] = p
	return p, nil
}

// may decides whether the request's principal may do action to key of
// the bucket ba describes ("" for a bucket action): nil or
// ErrAccessDenied. Root may do anything; the owner anything the policy
// does not deny (ownerKeeps excepted); anyone else what the policy or an
// ACL grants and the policy does not deny.
//
// Other handlers use it for a second action of one request: the source
// of a copy (s3:GetObject), each key of DeleteObjects (s3:DeleteObject),
// a bypass of governance retention (s3:BypassGovernanceRetention).
func (h *Handler) may(q *request, ba *bucketAccess, action, key string) error {
	if q.auth.id.Root {
		return nil
	}
	op := Operation(q.r)
	who := q.principal()
	d := access.NoDecision
	if ba.policy != nil {
		d = ba.policy.Evaluate(access.Request{Principal: who, Action: action, Bucket: ba.b.Name, Key: key, Context: h.conditionContext(q)})
	}
	if d == access.Denied && !(ba.owner && ownerKeeps[op]) {
		return ErrAccessDenied
	}
	if ba.owner {
		return nil
	}
	if d == access.Allowed && !(ba.pab.RestrictPublicBuckets && who.Anonymous && ba.policy.IsPublic()) {
		return nil
	}
	if ba.b.Access.ACLsDisabled() {
		return ErrAccessDenied
	}
	var grants []cairn.Grant
	if ba.b.Access != nil {
		grants = ba.b.Access.ACL
	}
	if access.ACLAllows(grants, access.KindBucket, who, action, ba.pab.IgnorePublicAcls) {
		return nil
	}
	if kind, _ := access.KnownAction(action); kind == access.KindObject && key != "" && objectACLAction(action) {
		vid := "" // the version the request names, if key is its key
		if key == q.key && ba.b.Name == q.bucket {
			vid = q.r.URL.Query().Get("versionId")
		}
		m, err := h.statVersion(q.r.Context(), nil, ba.b.Name, key, vid)
		if err == nil && access.ACLAllows(m.ACL, access.KindObject, who, action, ba.pab.IgnorePublicAcls) {
			return nil
		}
	}
	return ErrAccessDenied
}

// objectACLAction reports whether an object's ACL can grant action.
func objectACLAction(action string) bool {
	switch action {
	case "s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectAcl", "s3:GetObjectVersionAcl", "s3:PutObjectAcl", "s3:PutObjectVersionAcl":
		return true
	}
	return false
}

// conditionContext builds the policy condition keys of the request.
func (h *Handler) conditionContext(q *request) map[string][]string {
	r := q.r
	ip := r.RemoteAddr
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	now := h.cfg.Now().UTC()
	authType, sigVersion := "REST-HEADER", "AWS4-HMAC-SHA256"
	query := r.URL.Query()
	switch {
	case q.auth.anonymous:
		authType, sigVersion = "", ""
	case q.form != nil:
		authType = "POST" // signed in a browser form (post.go)
	case query.Has("X-Amz-Signature") || query.Has("Signature"):
		authType = "REST-QUERY-STRING"
	}
	if !q.auth.anonymous && q.auth.signed == nil {
		sigVersion = "AWS"
	}
	ctx := access.Context(q.principal(), ip, r.TLS != nil, now.Format("2006-01-02T15:04:05Z"), now.Unix(), authType)
	access.Set(ctx, "s3:signatureversion", sigVersion, false)
	for _, p := range []string{"prefix", "delimiter", "max-keys"} {
		if query.Has(p) {
			access.Set(ctx, "s3:"+p, query.Get(p), true)
		}
	}
	if query.Has("versionId") {
		access.Set(ctx, "s3:versionid", query.Get("versionId"), true)
	}
	access.Set(ctx, "aws:Referer", r.Header.Get("Referer"), false)
	access.Set(ctx, "aws:UserAgent", r.Header.Get("User-Agent"), false)
	for _, hd := range []string{"x-amz-acl", "x-amz-copy-source", "x-amz-metadata-directive", "x-amz-server-side-encryption",
		"x-amz-storage-class", "x-amz-content-sha256", "x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp",
		"x-amz-grant-write-acp", "x-amz-grant-full-control"} {
		v := r.Header.Get(hd)
		if q.form != nil {
			v = q.form.Get(hd) // a POST upload's fields, not its headers
		}
		if v != "" {
			access.Set(ctx, "s3:"+hd, v, true)
		}
	}
	return ctx
}

// hideMissing turns NoSuchKey into AccessDenied for a requester that is
// neither root nor the owner and may not list the bucket (s3:ListBucket),
// as S3 does: whoever may not list a bucket must not learn which keys it
// lacks.
func (h *Handler) hideMissing(q *request, err error) error {
	if err == nil || q.access == nil || q.access.owner || apiError(err) != ErrNoSuchKey {
		return err
	}
	if h.may(q, q.access, "s3:ListBucket", "") != nil {
		return ErrAccessDenied
	}
	return err
}

// checkSource checks that the requester may read the source of a copy:
// s3:GetObject (s3:GetObjectVersion with a version) on bucket/key.
func (h *Handler) checkSource(q *request, bucket, key, version string) error {
	if q.auth.id.Root {
		return nil
	}
	ba, err := h.loadAccess(q, bucket)
	if errors.Is(err, cairn.ErrNotFound) {
		return withCause(ErrNoSuchBucket, err)
	}
	if err != nil {
		return err
	}
	action := "s3:GetObject"
	if version != "" {
		action = access.VersionAction(action)
	}
	return h.may(q, ba, action, key)
}

// allowed decides one more action of the request on key of its own
// bucket ("" for a bucket action), as may: nil or ErrAccessDenied (or the
// metadata store's error; NoSuchBucket). For handlers whose operation is
// not in access.Operations, or that need a second action: a bypass of
// governance retention (mayBypassGovernance).
func (h *Handler) allowed(q *request, action, key string) error {
	if q.auth.id.Root {
		return nil
	}
	ba := q.access
	if ba == nil || ba.b.Name != q.bucket {
		var err error
		if ba, err = h.loadAccess(q, q.bucket); errors.Is(err, cairn.ErrNotFound) {
			return withCause(ErrNoSuchBucket, err)
		} else if err != nil {
			return err
		}
	}
	return h.may(q, ba, action, key)
}

// authorizePost decides a browser POST upload (post.go) as a PutObject
// of q.key (access.Operations["PostObject"]): q.auth is the form's signer,
// or anonymous for a form without signature fields. Root and the owner
// may; anyone else as far as the bucket's policy or ACL grants it, with
// the policy's conditions on headers read from the form's fields
// (q.form). It records the bucket's access in q as authorize does, so
// that the upload's own bucket lookups (h.bucket) let a granted request
// through. NoSuchBucket if the bucket does not exist.
func (h *Handler) authorizePost(q *request) error {
	if q.auth.id.Root {
		return nil
	}
	ba, err := h.loadAccess(q, q.bucket)
	if errors.Is(err, cairn.ErrNotFound) {
		return withCause(ErrNoSuchBucket, err)
	}
	if err != nil {
		return err
	}
	q.access = ba
	if err := h.may(q, ba, access.Operations["PostObject"], q.key); err != nil {
		return err
	}
	q.granted = true
	return nil
}

// mayBypassGovernance reports whether the request may bypass governance
// retention (s3:BypassGovernanceRetention on the object), for object
// lock: the owner unless the policy denies it, root, or whom the policy
// grants it.
func (h *Handler) mayBypassGovernance(q *request, key string) bool {
	return h.allowed(q, "s3:BypassGovernanceRetention", key) == nil
}
