package s3

import (
	"fmt"
	"net/url"
)

// subresource returns the handler of a request for a subresource served
// outside the main routes (tagging, object attributes, CORS, Object
// Lock), or nil.
func (h *Handler) subresource(q *request, query url.Values) func(*request) error {
	if q.key == "" {
		switch {
		case query.Has("tagging"):
			return h.bucketTagging
		case query.Has("cors"):
			return h.bucketCORS
		case query.Has("lifecycle"):
			return h.bucketLifecycle
		case query.Has("object-lock"):
			return h.bucketObjectLock
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
	case query.Has("retention"):
		return keyChecked(h.objectRetention)
	case query.Has("legal-hold"):
		return keyChecked(h.objectLegalHold)
	}
	return nil
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
