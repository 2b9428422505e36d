package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"time"

	"cairn"
)

const s3NS = "http://s3.amazonaws.com/doc/2006-03-01/"

// policyHeader names the cairn policy of a new bucket (its default) or of
// one object (overriding the bucket's default).
const policyHeader = "X-Cairn-Policy"

// ErrInvalidLocation: CreateBucket asked for a region the gateway does not serve.
var ErrInvalidLocation = &Error{"InvalidLocationConstraint", http.StatusBadRequest, "The specified location-constraint is not valid."}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type listAllMyBucketsResult struct {
	XMLName xml.Name      `xml:"ListAllMyBucketsResult"`
	NS      string        `xml:"xmlns,attr"`
	Owner   owner         `xml:"Owner"`
	Buckets []bucketEntry `xml:"Buckets>Bucket"`
}

type bucketEntry struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
}

type createBucketConfiguration struct {
	XMLName            xml.Name `xml:"CreateBucketConfiguration"`
	LocationConstraint string   `xml:"LocationConstraint"`
}

type locationConstraint struct {
	XMLName xml.Name `xml:"LocationConstraint"`
	NS      string   `xml:"xmlns,attr"`
	Region  string   `xml:",chardata"`
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (h *Handler) listBuckets(q *request) error {
	bs, err := h.cfg.Meta.Buckets(q.r.Context())
	if err != nil {
		return err
	}
	out := listAllMyBucketsResult{NS: s3NS, Owner: owner{ID: q.auth.id.Name, DisplayName: q.auth.id.Name}, Buckets: []bucketEntry{}}
	for _, b := range bs {
		if q.auth.id.Root || b.Owner == q.auth.id.Name {
			out.Buckets = append(out.Buckets, bucketEntry{Name: b.Name, CreationDate: isoTime(b.Created)})
		}
	}
	return h.writeXML(q, http.StatusOK, out)
}

func (h *Handler) createBucket(q *request) error {
	policy := h.cfg.DefaultPolicy
	if p := q.r.Header.Get(policyHeader); p != "" {
		if err := h.choosePolicy(q, p); err != nil {
			return err
		}
		policy = p
	}
	grants, _, err := headerACL(q.r.Header, q.auth.id.Name)
	if err != nil {
		return err
	}
	acc := &cairn.BucketAccess{ACL: grants}
	if o := q.r.Header.Get("X-Amz-Object-Ownership"); o != "" {
		if !validOwnership(o) {
			return errInvalidObjectOwnership
		}
		acc.Ownership = o
	}
	if acc.ACLsDisabled() && len(grants) > 0 {
		return ErrACLWithOwnership
	}
	if acc.IsZero() {
		acc = nil
	}
	if q.r.ContentLength != 0 || q.isStreaming() {
		var cfg createBucketConfiguration
		if err := h.readXML(q, &cfg); err != nil {
			return err
		}
		if l := cfg.LocationConstraint; l != "" && l != h.cfg.Region && !(l == "US" && h.cfg.Region == "us-east-1") {
			return fmt.Errorf("%w: %q", ErrInvalidLocation, l)
		}
	}
	err = h.cfg.Meta.CreateBucket(q.r.Context(), cairn.Bucket{Name: q.bucket, Policy: policy, Owner: q.auth.id.Name, Created: h.cfg.Now().UTC(), Access: acc})
	if errors.Is(err, cairn.ErrExists) {
		if b, berr := h.cfg.Meta.Bucket(q.r.Context(), q.bucket); berr == nil && b.Owner != q.auth.id.Name && !q.auth.id.Root {
			return ErrBucketAlreadyExists
		}
		return withCause(ErrBucketAlreadyOwnedByYou, err)
	}
	if errors.Is(err, cairn.ErrInvalid) {
		return withCause(ErrInvalidBucketName, err)
	}
	if err != nil {
		return err
	}
	q.w.Header().Set("Location", "/"+q.bucket)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// ErrBucketAlreadyExists: another identity owns the bucket name.
var ErrBucketAlreadyExists = &Error{"BucketAlreadyExists", http.StatusConflict, "The requested bucket name is not available."}

func (h *Handler) headBucket(q *request) error {
	if _, err := h.bucket(q, q.bucket); err != nil {
		return err
	}
	q.w.Header().Set("X-Amz-Bucket-Region", h.cfg.Region)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) deleteBucket(q *request) error {
	if _, err := h.bucket(q, q.bucket); err != nil {
		return err
	}
	err := h.cfg.Meta.DeleteBucket(q.r.Context(), q.bucket)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return withCause(ErrNoSuchBucket, err)
	case err != nil:
		return err
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) bucketLocation(q *request) error {
	if _, err := h.bucket(q, q.bucket); err != nil {
		return err
	}
	region := h.cfg.Region
	if region == "us-east-1" {
		region = "" // as S3 reports it
	}
	return h.writeXML(q, http.StatusOK, locationConstraint{NS: s3NS, Region: region})
}
