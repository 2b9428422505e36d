package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"cairn"
	"cairn/access"
)

// ACLs (docs/design/s3.md, "Access control"): a bucket's ACL lives in
// cairn.Bucket.Access, an object's in its manifest (cairn.Manifest.ACL).
// Either is set by a canned ACL (x-amz-acl), by x-amz-grant-* headers, or
// by an AccessControlPolicy body (PutBucketAcl, PutObjectAcl); the owner's
// FULL_CONTROL is implicit and never stored. The bucket owner owns every
// object of its bucket.

// Errors of ACLs, as S3 answers them.
var (
	ErrMalformedACL      = &Error{"MalformedACLError", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	ErrUnexpectedContent = &Error{"UnexpectedContent", http.StatusBadRequest, "This request does not support content."}
	ErrInvalidACLHeaders = &Error{"InvalidRequest", http.StatusBadRequest, "Specifying both Canned ACLs and Header Grants is not allowed"}
)

// The URIs of S3's predefined groups.
const (
	allUsersURI  = "http://acs.amazonaws.com/groups/global/AllUsers"
	authUsersURI = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	logDeliURI   = "http://acs.amazonaws.com/groups/s3/LogDelivery"
	xsiNS        = "http://www.w3.org/2001/XMLSchema-instance"
)

var groupURIs = map[string]string{allUsersURI: cairn.GroupAllUsers, authUsersURI: cairn.GroupAuthenticatedUsers, logDeliURI: cairn.GroupLogDelivery}

// accessControlPolicy is the XML document of Get/PutBucketAcl and
// Get/PutObjectAcl.
type accessControlPolicy struct {
	XMLName xml.Name   `xml:"AccessControlPolicy"`
	NS      string     `xml:"xmlns,attr,omitempty"`
	Owner   *owner     `xml:"Owner"`
	Grants  []aclGrant `xml:"AccessControlList>Grant"`
}

type aclGrant struct {
	Grantee    aclGrantee `xml:"Grantee"`
	Permission string     `xml:"Permission"`
}

// aclGrantee is written with its xsi:type; read by which field it has
// (ID, URI or EmailAddress), as the type attribute's prefix is the
// client's choice.
type aclGrantee struct {
	XSI          string `xml:"xmlns:xsi,attr,omitempty"`
	Type         string `xml:"xsi:type,attr,omitempty"`
	ID           string `xml:"ID,omitempty"`
	DisplayName  string `xml:"DisplayName,omitempty"`
	URI          string `xml:"URI,omitempty"`
	EmailAddress string `xml:"EmailAddress,omitempty"`
}

// aclDocument renders the ACL of something owner owns.
func aclDocument(ownerName string, grants []cairn.Grant) accessControlPolicy {
	out := accessControlPolicy{NS: s3NS, Owner: &owner{ID: ownerName, DisplayName: ownerName}}
	out.Grants = append(out.Grants, aclGrant{Grantee: aclGrantee{XSI: xsiNS, Type: "CanonicalUser", ID: ownerName, DisplayName: ownerName}, Permission: access.PermFullControl})
	for _, g := range grants {
		ge := aclGrantee{XSI: xsiNS, Type: "CanonicalUser", ID: g.User, DisplayName: g.User}
		if g.Group != "" {
			ge = aclGrantee{XSI: xsiNS, Type: "Group"}
			for uri, name := range groupURIs {
				if name == g.Group {
					ge.URI = uri
				}
			}
		}
		out.Grants = append(out.Grants, aclGrant{Grantee: ge, Permission: g.Permission})
	}
	return out
}

// grantOf turns one grantee and permission into a cairn.Grant.
func grantOf(id, uri, email, perm string) (cairn.Grant, error) {
	g := cairn.Grant{User: id, Permission: perm}
	switch {
	case email != "":
		return g, fmt.Errorf("%w: grants by e-mail address", ErrNotImplemented)
	case uri != "":
		name, ok := groupURIs[uri]
		if !ok {
			return g, fmt.Errorf("%w: Invalid group uri", ErrInvalidArgument)
		}
		g = cairn.Grant{Group: name, Permission: perm}
	}
	switch perm {
	case access.PermRead, access.PermWrite, access.PermReadACP, access.PermWriteACP, access.PermFullControl:
	default:
		return g, fmt.Errorf("%w: permission %q", ErrMalformedACL, perm)
	}
	if err := access.CheckGrant(g); err != nil {
		return g, fmt.Errorf("%w: Invalid id: %v", ErrInvalidArgument, err)
	}
	return g, nil
}

// grantHeaders are the x-amz-grant-* headers and the permission each gives.
var grantHeaders = []struct{ header, perm string }{
	{"X-Amz-Grant-Read", access.PermRead}, {"X-Amz-Grant-Write", access.PermWrite},
	{"X-Amz-Grant-Read-Acp", access.PermReadACP}, {"X-Amz-Grant-Write-Acp", access.PermWriteACP},
	{"X-Amz-Grant-Full-Control", access.PermFullControl},
}

// headerACL reads the ACL a request asks for in its headers: a canned
// x-amz-acl or x-amz-grant-* lists (id="name", uri="group URI"). set is
// false if it names none. The owner's own grants are dropped (implicit).
func headerACL(hd http.Header, ownerName string) (grants []cairn.Grant, set bool, err error) {
	canned := hd.Get("X-Amz-Acl")
	for _, gh := range grantHeaders {
		v := hd.Get(gh.header)
		if v == "" {
			continue
		}
		if canned != "" {
			return nil, false, ErrInvalidACLHeaders
		}
		set = true
		for item := range strings.SplitSeq(v, ",") {
			kind, val, ok := strings.Cut(strings.TrimSpace(item), "=")
			val = strings.Trim(val, `"`)
			if !ok || val == "" {
				return nil, false, fmt.Errorf("%w: %s %q", ErrInvalidArgument, gh.header, v)
			}
			var g cairn.Grant
			switch strings.ToLower(kind) {
			case "id":
				g, err = grantOf(val, "", "", gh.perm)
			case "uri":
				g, err = grantOf("", val, "", gh.perm)
			case "emailaddress":
				g, err = grantOf("", "", val, gh.perm)
			default:
				err = fmt.Errorf("%w: %s %q", ErrInvalidArgument, gh.header, v)
			}
			if err != nil {
				return nil, false, err
			}
			grants = append(grants, g)
		}
	}
	if canned != "" {
		g, err := access.Canned(canned)
		if err != nil {
			return nil, false, fmt.Errorf("%w: x-amz-acl %q", ErrInvalidArgument, canned)
		}
		return g, true, nil
	}
	return dropOwner(grants, ownerName), set, nil
}

// dropOwner removes the grants to the owner, who has FULL_CONTROL anyway.
func dropOwner(grants []cairn.Grant, ownerName string) []cairn.Grant {
	return slices.DeleteFunc(grants, func(g cairn.Grant) bool { return g.User != "" && g.User == ownerName })
}

// requestACL is the ACL a PUT ?acl asks for: its headers' or its body's
// (not both).
func (h *Handler) requestACL(q *request, ownerName string) ([]cairn.Grant, error) {
	grants, set, err := headerACL(q.r.Header, ownerName)
	if err != nil {
		return nil, err
	}
	body, err := h.readSmallBody(q)
	if err != nil {
		return nil, err
	}
	if set {
		if len(strings.TrimSpace(string(body))) > 0 {
			return nil, ErrUnexpectedContent
		}
		return grants, nil
	}
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: an ACL needs x-amz-acl, x-amz-grant-* or an AccessControlPolicy", ErrMissingSecurityHeader)
	}
	var doc accessControlPolicy
	if err := xml.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedACL, err)
	}
	for _, g := range doc.Grants {
		gr, err := grantOf(g.Grantee.ID, g.Grantee.URI, g.Grantee.EmailAddress, g.Permission)
		if err != nil {
			return nil, err
		}
		grants = append(grants, gr)
	}
	return dropOwner(grants, ownerName), nil
}

// ErrMissingSecurityHeader: a PUT ?acl with neither headers nor a body.
var ErrMissingSecurityHeader = &Error{"MissingSecurityHeader", http.StatusBadRequest, "Your request was missing a required header."}

// checkPublicACL refuses a public ACL on a bucket whose Block Public
// Access blocks them.
func checkPublicACL(b cairn.Bucket, grants []cairn.Grant) error {
	if b.Access != nil && b.Access.PublicAccessBlock != nil && b.Access.PublicAccessBlock.BlockPublicAcls && access.PublicACL(grants) {
		return ErrPublicACLBlocked
	}
	return nil
}

// writeACL reads the ACL a write (PutObject, CopyObject,
// CreateMultipartUpload) asks for in its headers, checked against the
// bucket's Block Public Access: nil for none.
func (h *Handler) writeACL(q *request) ([]cairn.Grant, error) {
	if q.r.Header.Get("X-Amz-Acl") == "" && !slices.ContainsFunc(grantHeaders, func(g struct{ header, perm string }) bool { return q.r.Header.Get(g.header) != "" }) {
		return nil, nil
	}
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return nil, err
	}
	grants, _, err := headerACL(q.r.Header, b.Owner)
	if err != nil {
		return nil, err
	}
	if err := checkACLAllowed(b.Access, grants); err != nil {
		return nil, err
	}
	if err := checkPublicACL(b, grants); err != nil {
		return nil, err
	}
	return grants, nil
}

// bucketACL serves GET and PUT ?acl of a bucket.
func (h *Handler) bucketACL(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	switch q.r.Method {
	case http.MethodGet:
		var grants []cairn.Grant
		if b.Access != nil && !b.Access.ACLsDisabled() {
			grants = b.Access.ACL
		}
		return h.writeXML(q, http.StatusOK, aclDocument(b.Owner, grants))
	case http.MethodPut:
		grants, err := h.requestACL(q, b.Owner)
		if err != nil {
			return err
		}
		return h.setAccess(q, http.StatusOK, func(a *cairn.BucketAccess) error {
			if err := checkACLAllowed(a, grants); err != nil {
				return err
			}
			if err := checkPublicACL(cairn.Bucket{Access: a}, grants); err != nil {
				return err
			}
			a.ACL = grants
			return nil
		})
	}
	return ErrMethodNotAllowed
}

// objectACL serves GET and PUT ?acl of an object: of the version
// ?versionId= names, else the current one. PUT changes the current
// version only (a versionId naming another → NotImplemented).
func (h *Handler) objectACL(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	ctx := q.r.Context()
	vid := q.r.URL.Query().Get("versionId")
	m, err := h.statVersion(ctx, q.w, q.bucket, q.key, vid)
	if err != nil {
		return err
	}
	if vid != "" {
		q.w.Header().Set("X-Amz-Version-Id", m.VersionID())
	}
	switch q.r.Method {
	case http.MethodGet:
		grants := m.ACL
		if b.Access.ACLsDisabled() {
			grants = nil
		}
		return h.writeXML(q, http.StatusOK, aclDocument(b.Owner, grants))
	case http.MethodPut:
		grants, err := h.requestACL(q, b.Owner)
		if err != nil {
			return err
		}
		if err := checkACLAllowed(b.Access, grants); err != nil {
			return err
		}
		if err := checkPublicACL(b, grants); err != nil {
			return err
		}
		if vid != "" {
			if cur, err := h.cfg.Objects.Stat(ctx, q.bucket, q.key); err != nil || cur.Version != m.Version {
				return fmt.Errorf("%w: PutObjectAcl of a version that is not the current one", ErrNotImplemented)
			}
		}
		err = h.updateCurrent(q, func(m *cairn.Manifest) bool {
			if slices.Equal(m.ACL, grants) {
				return false
			}
			m.ACL = grants
			return true
		})
		if err != nil {
			return err
		}
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	return ErrMethodNotAllowed
}

// updateCurrent changes the current version of the object with change (on
// a copy of its manifest; false: nothing to change), a compare-and-swap
// on the manifest (meta.Store.UpdateManifest): a concurrent overwrite
// wins, and the update is retried on the new version a few times.
func (h *Handler) updateCurrent(q *request, change func(*cairn.Manifest) bool) error {
	ctx := q.r.Context()
	for range 4 {
		m, err := h.cfg.Objects.Stat(ctx, q.bucket, q.key)
		if err != nil {
			return h.objectErr(ctx, q.bucket, err)
		}
		next := *m
		if !change(&next) {
			return nil
		}
		err = h.cfg.Meta.UpdateManifest(ctx, &next, m)
		if err == nil {
			return nil
		}
		if !errors.Is(err, cairn.ErrConflict) && !errors.Is(err, cairn.ErrNotFound) {
			return err
		}
	}
	return ErrOperationAborted
}
