package s3

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	XMLName           xml.Name      `xml:"ListAllMyBucketsResult"`
	NS                string        `xml:"xmlns,attr"`
	Owner             owner         `xml:"Owner"`
	Buckets           []bucketEntry `xml:"Buckets>Bucket"`
	ContinuationToken string        `xml:"ContinuationToken,omitempty"`
	Prefix            string        `xml:"Prefix,omitempty"`
}

type bucketEntry struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion"`
}

// maxBuckets is the most buckets a ListBuckets page returns, its
// max-buckets when the request sets none, and the most bucket records one
// request reads (so a user who owns few of very many buckets gets pages
// that may be short, each with a continuation token, as S3 allows).
const maxBuckets = 10000

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

// listBuckets serves ListBuckets: the buckets the identity owns (root:
// all), in name order, paged by max-buckets (1 to maxBuckets; default
// maxBuckets) and continuation-token, under prefix; bucket-region
// filters by the one region the gateway serves. It reads the store a page
// at a time (bucketsPage), never the whole bucket list.
func (h *Handler) listBuckets(q *request) error {
	query := q.r.URL.Query()
	limit := maxBuckets
	if v := query.Get("max-buckets"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxBuckets {
			return fmt.Errorf("%w: max-buckets %q (1 to %d)", ErrInvalidArgument, v, maxBuckets)
		}
		limit = n
	}
	prefix, after := query.Get("prefix"), ""
	if tok := query.Get("continuation-token"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return fmt.Errorf("%w: continuation-token", ErrInvalidArgument)
		}
		after = string(b)
	}
	out := listAllMyBucketsResult{NS: s3NS, Owner: owner{ID: q.auth.id.Name, DisplayName: q.auth.id.Name}, Buckets: []bucketEntry{}, Prefix: prefix}
	if r := query.Get("bucket-region"); r != "" && r != h.cfg.Region {
		return h.writeXML(q, http.StatusOK, out) // every bucket is in the gateway's region
	}
	bs, next, err := bucketsPage(q.r.Context(), h.cfg.Meta, prefix, after, limit, func(b cairn.Bucket) bool {
		return q.auth.id.Root || b.Owner == q.auth.id.Name
	})
	if err != nil {
		return err
	}
	for _, b := range bs {
		out.Buckets = append(out.Buckets, bucketEntry{Name: b.Name, CreationDate: isoTime(b.Created), BucketRegion: h.cfg.Region})
	}
	if next != "" {
		out.ContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return h.writeXML(q, http.StatusOK, out)
}

// bucketsPage returns up to limit buckets whose names start with prefix,
// sort after after and that visible keeps, in name order, reading the
// store a page (BucketPage) at a time and at most maxBuckets records, and
// the name to continue after ("" if no bucket under prefix follows).
// Bucket names hold no byte 0xff, so the names after prefix's predecessor
// (its last byte lowered, then 0xff) are those from prefix on.
func bucketsPage(ctx context.Context, m Meta, prefix, after string, limit int, visible func(cairn.Bucket) bool) ([]cairn.Bucket, string, error) {
	if n := len(prefix); n > 0 && prefix[n-1] > 0 {
		after = max(after, prefix[:n-1]+string(prefix[n-1]-1)+"\xff")
	}
	var out []cairn.Bucket
	batch := min(limit+1, maxListKeys)
	for read := 0; ; {
		bs, more, err := m.BucketPage(ctx, after, batch)
		if err != nil {
			return nil, "", err
		}
		for _, b := range bs {
			if !strings.HasPrefix(b.Name, prefix) {
				return out, "", nil // past the names under prefix
			}
			if visible(b) {
				if len(out) == limit {
					return out, after, nil
				}
				out = append(out, b)
			}
			after = b.Name
		}
		read += len(bs)
		switch {
		case !more || len(bs) == 0:
			return out, "", nil
		case read >= maxBuckets:
			return out, after, nil // enough work for one request
		}
		batch = min(batch*4, maxListKeys)
	}
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
	nb := cairn.Bucket{Name: q.bucket, Policy: policy, Owner: q.auth.id.Name, Created: h.cfg.Now().UTC(), Access: acc}
	switch v := strings.ToLower(strings.TrimSpace(q.r.Header.Get(lockEnabledHeader))); v {
	case "", "false":
	case "true": // Object Lock turns versioning on for good
		nb.ObjectLock, nb.Versioning = &cairn.ObjectLock{}, cairn.VersioningEnabled
	default:
		return fmt.Errorf("%w: x-amz-bucket-object-lock-enabled %q", ErrInvalidArgument, v)
	}
	err = h.cfg.Meta.CreateBucket(q.r.Context(), nb)
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
