package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"cairn"
	"cairn/access"
)

// Bucket policies and Block Public Access (docs/design/s3.md, "Access
// control"): Get/Put/DeleteBucketPolicy, GetBucketPolicyStatus and
// Get/Put/DeletePublicAccessBlock, kept in cairn.Bucket.Access and
// managed by the bucket's owner (or root) only (authorize).

// Errors of bucket policies and public access blocks, as S3 answers them.
var (
	ErrMalformedPolicy     = &Error{"MalformedPolicy", http.StatusBadRequest, "Policy has invalid resource."}
	ErrNoSuchBucketPolicy  = &Error{"NoSuchBucketPolicy", http.StatusNotFound, "The bucket policy does not exist"}
	ErrNoSuchPublicAccess  = &Error{"NoSuchPublicAccessBlockConfiguration", http.StatusNotFound, "The public access block configuration was not found"}
	ErrPublicPolicyBlocked = &Error{"AccessDenied", http.StatusForbidden, "Access Denied: public policies are blocked by the BlockPublicPolicy block public access setting."}
	ErrPublicACLBlocked    = &Error{"AccessDenied", http.StatusForbidden, "Access Denied: public ACLs are blocked by the BlockPublicAcls block public access setting."}
)

// malformedPolicy turns a policy refusal into S3's MalformedPolicy with
// AWS's reason as the message.
func malformedPolicy(err error) error {
	var me *access.MalformedError
	if errors.As(err, &me) {
		return &Error{ErrMalformedPolicy.Code, ErrMalformedPolicy.Status, me.Reason}
	}
	return err
}

// bucketPolicy serves GET, PUT and DELETE ?policy of a bucket.
func (h *Handler) bucketPolicy(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	switch q.r.Method {
	case http.MethodGet:
		if b.Access == nil || b.Access.Policy == "" {
			return ErrNoSuchBucketPolicy
		}
		q.w.Header().Set("Content-Type", "application/json")
		q.w.Header().Set("Content-Length", strconv.Itoa(len(b.Access.Policy)))
		q.w.WriteHeader(http.StatusOK)
		_, err := io.WriteString(q.w, b.Access.Policy)
		return err
	case http.MethodPut:
		doc, err := h.readSmallBody(q)
		if err != nil {
			return err
		}
		p, err := access.Parse(doc, q.bucket)
		if err != nil {
			return malformedPolicy(err)
		}
		return h.setAccess(q, http.StatusNoContent, func(a *cairn.BucketAccess) error {
			if a.PublicAccessBlock != nil && a.PublicAccessBlock.BlockPublicPolicy && p.IsPublic() {
				return ErrPublicPolicyBlocked
			}
			a.Policy = string(doc)
			return nil
		})
	case http.MethodDelete:
		return h.setAccess(q, http.StatusNoContent, func(a *cairn.BucketAccess) error { a.Policy = ""; return nil })
	}
	return ErrMethodNotAllowed
}

type policyStatus struct {
	XMLName  xml.Name `xml:"PolicyStatus"`
	NS       string   `xml:"xmlns,attr"`
	IsPublic bool     `xml:"IsPublic"`
}

// bucketPolicyStatus serves GET ?policyStatus: whether the bucket's
// policy is public (access.Policy.IsPublic); NoSuchBucketPolicy without
// one, as S3.
func (h *Handler) bucketPolicyStatus(q *request) error {
	if q.r.Method != http.MethodGet {
		return ErrMethodNotAllowed
	}
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	if b.Access == nil || b.Access.Policy == "" {
		return ErrNoSuchBucketPolicy
	}
	p, err := h.policies.parse(b.Name, b.Access.Policy)
	if err != nil {
		return withCause(ErrInternal, err)
	}
	return h.writeXML(q, http.StatusOK, policyStatus{NS: s3NS, IsPublic: p.IsPublic()})
}

// publicAccessBlockConfiguration is the XML document of
// Put/GetPublicAccessBlock.
type publicAccessBlockConfiguration struct {
	XMLName               xml.Name `xml:"PublicAccessBlockConfiguration"`
	NS                    string   `xml:"xmlns,attr,omitempty"`
	BlockPublicAcls       *bool    `xml:"BlockPublicAcls"`
	IgnorePublicAcls      *bool    `xml:"IgnorePublicAcls"`
	BlockPublicPolicy     *bool    `xml:"BlockPublicPolicy"`
	RestrictPublicBuckets *bool    `xml:"RestrictPublicBuckets"`
}

// publicAccessBlock serves GET, PUT and DELETE ?publicAccessBlock of a
// bucket. A setting left out of a PUT is false, as in S3.
func (h *Handler) publicAccessBlock(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	switch q.r.Method {
	case http.MethodGet:
		if b.Access == nil || b.Access.PublicAccessBlock == nil {
			return ErrNoSuchPublicAccess
		}
		p := b.Access.PublicAccessBlock
		return h.writeXML(q, http.StatusOK, publicAccessBlockConfiguration{NS: s3NS, BlockPublicAcls: &p.BlockPublicAcls,
			IgnorePublicAcls: &p.IgnorePublicAcls, BlockPublicPolicy: &p.BlockPublicPolicy, RestrictPublicBuckets: &p.RestrictPublicBuckets})
	case http.MethodPut:
		var c publicAccessBlockConfiguration
		if err := h.readXML(q, &c); err != nil {
			return err
		}
		if c.BlockPublicAcls == nil && c.IgnorePublicAcls == nil && c.BlockPublicPolicy == nil && c.RestrictPublicBuckets == nil {
			return fmt.Errorf("%w: the PublicAccessBlockConfiguration sets nothing", ErrInvalidRequest)
		}
		pab := &cairn.PublicAccessBlock{BlockPublicAcls: deref(c.BlockPublicAcls), IgnorePublicAcls: deref(c.IgnorePublicAcls),
			BlockPublicPolicy: deref(c.BlockPublicPolicy), RestrictPublicBuckets: deref(c.RestrictPublicBuckets)}
		return h.setAccess(q, http.StatusOK, func(a *cairn.BucketAccess) error { a.PublicAccessBlock = pab; return nil })
	case http.MethodDelete:
		return h.setAccess(q, http.StatusNoContent, func(a *cairn.BucketAccess) error { a.PublicAccessBlock = nil; return nil })
	}
	return ErrMethodNotAllowed
}

// setAccess changes the bucket's access control with change (on a copy,
// never nil; its error ends the update, nothing changed) in the store's
// compare-and-swap, then answers status.
func (h *Handler) setAccess(q *request, status int, change func(*cairn.BucketAccess) error) error {
	err := h.cfg.Meta.UpdateBucketAccess(q.r.Context(), q.bucket, func(a *cairn.BucketAccess) (*cairn.BucketAccess, error) {
		if a == nil {
			a = &cairn.BucketAccess{}
		}
		return a, change(a)
	})
	if err != nil {
		return h.bucketErr(err)
	}
	q.w.WriteHeader(status)
	return nil
}

func deref(b *bool) bool { return b != nil && *b }
