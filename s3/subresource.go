package s3

import (
	"fmt"
	"net/url"
)

// subresource returns the handler of a request for a subresource served
// outside the main routes (tagging, object attributes, CORS, bucket
// policies, ACLs, public access blocks, ownership controls, Object Lock),
// or nil.
func (h *Handler) subresource(q *request, query url.Values) func(*request) error {
	if q.key == "" {
		switch {
		case query.Has("tagging"):
			return h.bucketTagging
		case query.Has("cors"):
			return h.bucketCORS
		case query.Has("lifecycle"):
			return h.bucketLifecycle
		case query.Has("policy"):
			return h.bucketPolicy
		case query.Has("policyStatus"):
			return h.bucketPolicyStatus
		case query.Has("publicAccessBlock"):
			return h.publicAccessBlock
		case query.Has("acl"):
			return h.bucketACL
		case query.Has("ownershipControls"):
			return h.bucketOwnershipControls
		case query.Has("object-lock"):
			return h.bucketObjectLock
		case query.Has("retention") || query.Has("legal-hold"):
			return misplaced
		}
		return nil
	}
	switch {
	case query.Has("tagging"):
		return keyChecked(h.objectTagging)
	case query.Has("attributes"):
		return keyChecked(h.objectAttributes)
	case query.Has("lifecycle"): // a bucket's subresource only
		return func(*request) error { return fmt.Errorf("%w: ?lifecycle on an object", ErrNotImplemented) }
	case query.Has("acl"):
		return keyChecked(h.objectACL)
	case query.Has("retention"):
		return keyChecked(h.objectRetention)
	case query.Has("legal-hold"):
		return keyChecked(h.objectLegalHold)
	case query.Has("object-lock"):
		return misplaced
	}
	return nil
}

// misplaced serves a subresource of objects asked of a bucket or the
// reverse (?retention of a bucket, ?object-lock of a key): NotImplemented,
// rather than a plain GET or PUT it would be mistaken for.
func misplaced(q *request) error {
	return fmt.Errorf("%w: this subresource on this resource", ErrNotImplemented)
}

// keyChecked runs serve once the request's key passed checkKey and its
// versionId (if any) names the one version an object has (checkVersionID):
// tagging and attributes serve the current version.
func keyChecked(serve func(*request) error) func(*request) error {
	return func(q *request) error {
		if err := checkKey(q.key); err != nil {
			return err
		}
		if err := checkVersionID(q.r.URL.Query()); err != nil {
			return err
		}
		return serve(q)
	}
}
