package s3

import (
	"encoding/xml"
	"fmt"
	"net/http"

	"cairn"
)

// Object ownership (docs/design/s3.md, "Access control"): cairn's objects
// are always the bucket owner's; the setting only says whether ACLs are
// enabled. BucketOwnerEnforced disables them: requests that would set an
// ACL granting anything beyond the owner fail with
// AccessControlListNotSupported, and stored grants count for nothing.
// Without a setting (and under BucketOwnerPreferred or ObjectWriter)
// ACLs are honoured.

// Errors of object ownership, as S3 answers them.
var (
	ErrACLNotSupported        = &Error{"AccessControlListNotSupported", http.StatusBadRequest, "The bucket does not allow ACLs"}
	ErrACLWithOwnership       = &Error{"InvalidBucketAclWithObjectOwnership", http.StatusBadRequest, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"}
	ErrNoOwnershipControls    = &Error{"OwnershipControlsNotFoundError", http.StatusNotFound, "The bucket ownership controls were not found"}
	errInvalidObjectOwnership = fmt.Errorf("%w: ObjectOwnership must be BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter", ErrInvalidArgument)
)

// ownershipControls is the XML document of Get/PutBucketOwnershipControls.
type ownershipControls struct {
	XMLName xml.Name `xml:"OwnershipControls"`
	NS      string   `xml:"xmlns,attr,omitempty"`
	Rules   []struct {
		ObjectOwnership string `xml:"ObjectOwnership"`
	} `xml:"Rule"`
}

func validOwnership(s string) bool {
	return s == cairn.OwnershipEnforced || s == cairn.OwnershipPreferred || s == cairn.OwnershipObjectWriter
}

// checkACLAllowed refuses an ACL that grants more than the owner's
// FULL_CONTROL on a bucket whose ACLs are disabled.
func checkACLAllowed(a *cairn.BucketAccess, grants []cairn.Grant) error {
	if a.ACLsDisabled() && len(grants) > 0 {
		return ErrACLNotSupported
	}
	return nil
}

// bucketOwnershipControls serves GET, PUT and DELETE ?ownershipControls.
func (h *Handler) bucketOwnershipControls(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	switch q.r.Method {
	case http.MethodGet:
		if b.Access == nil || b.Access.Ownership == "" {
			return ErrNoOwnershipControls
		}
		out := ownershipControls{NS: s3NS}
		out.Rules = append(out.Rules, struct {
			ObjectOwnership string `xml:"ObjectOwnership"`
		}{b.Access.Ownership})
		return h.writeXML(q, http.StatusOK, out)
	case http.MethodPut:
		var c ownershipControls
		if err := h.readXML(q, &c); err != nil {
			return err
		}
		if len(c.Rules) != 1 {
			return fmt.Errorf("%w: OwnershipControls takes one Rule", ErrMalformedXML)
		}
		o := c.Rules[0].ObjectOwnership
		if !validOwnership(o) {
			return fmt.Errorf("%w: ObjectOwnership %q", ErrMalformedXML, o)
		}
		return h.setAccess(q, http.StatusOK, func(a *cairn.BucketAccess) error {
			if o == cairn.OwnershipEnforced && len(a.ACL) > 0 {
				return ErrACLWithOwnership
			}
			a.Ownership = o
			return nil
		})
	case http.MethodDelete:
		return h.setAccess(q, http.StatusNoContent, func(a *cairn.BucketAccess) error { a.Ownership = ""; return nil })
	}
	return ErrMethodNotAllowed
}
