package access

import (
	"fmt"

	"cairn"
)

// ACL permissions.
const (
	PermRead        = "READ"
	PermWrite       = "WRITE"
	PermReadACP     = "READ_ACP"
	PermWriteACP    = "WRITE_ACP"
	PermFullControl = "FULL_CONTROL"
)

// Canned ACLs (x-amz-acl).
const (
	CannedPrivate                = "private"
	CannedPublicRead             = "public-read"
	CannedPublicReadWrite        = "public-read-write"
	CannedAuthenticatedRead      = "authenticated-read"
	CannedBucketOwnerRead        = "bucket-owner-read"
	CannedBucketOwnerFullControl = "bucket-owner-full-control"
	CannedLogDeliveryWrite       = "log-delivery-write"
)

// ErrInvalidCanned is an x-amz-acl value that names no canned ACL.
var ErrInvalidCanned = fmt.Errorf("not a canned ACL")

// Canned returns the grants of a canned ACL beyond the owner's implicit
// FULL_CONTROL. In cairn the bucket owner owns every object of its bucket
// (docs/design/s3.md, "Object ownership"), so bucket-owner-read and
// bucket-owner-full-control grant nothing beyond it, as private.
func Canned(name string) ([]cairn.Grant, error) {
	switch name {
	case CannedPrivate, CannedBucketOwnerRead, CannedBucketOwnerFullControl:
		return nil, nil
	case CannedPublicRead:
		return []cairn.Grant{{Group: cairn.GroupAllUsers, Permission: PermRead}}, nil
	case CannedPublicReadWrite:
		return []cairn.Grant{{Group: cairn.GroupAllUsers, Permission: PermRead}, {Group: cairn.GroupAllUsers, Permission: PermWrite}}, nil
	case CannedAuthenticatedRead:
		return []cairn.Grant{{Group: cairn.GroupAuthenticatedUsers, Permission: PermRead}}, nil
	case CannedLogDeliveryWrite:
		return []cairn.Grant{{Group: cairn.GroupLogDelivery, Permission: PermWrite}, {Group: cairn.GroupLogDelivery, Permission: PermReadACP}}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrInvalidCanned, name)
}

// CheckGrant reports why g cannot be stored: an unknown permission or
// group, or neither or both of a user and a group.
func CheckGrant(g cairn.Grant) error {
	switch g.Permission {
	case PermRead, PermWrite, PermReadACP, PermWriteACP, PermFullControl:
	default:
		return fmt.Errorf("unknown permission %q", g.Permission)
	}
	switch {
	case (g.User == "") == (g.Group == ""):
		return fmt.Errorf("a grant names a user or a group")
	case g.User != "" && !validUserName(g.User):
		return fmt.Errorf("grantee ID %q is not a cairn user name", g.User)
	case g.Group != "" && g.Group != cairn.GroupAllUsers && g.Group != cairn.GroupAuthenticatedUsers && g.Group != cairn.GroupLogDelivery:
		return fmt.Errorf("unknown group %q", g.Group)
	}
	return nil
}

// aclActions are the actions each permission grants, on a bucket's ACL
// and on an object's (S3's mapping of ACL permissions to policy actions).
var aclActions = map[Kind]map[string][]string{
	KindBucket: {
		PermRead:     {"s3:ListBucket", "s3:ListBucketVersions", "s3:ListBucketMultipartUploads"},
		PermWrite:    {"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload"},
		PermReadACP:  {"s3:GetBucketAcl"},
		PermWriteACP: {"s3:PutBucketAcl"},
	},
	KindObject: {
		PermRead:     {"s3:GetObject", "s3:GetObjectVersion"},
		PermReadACP:  {"s3:GetObjectAcl", "s3:GetObjectVersionAcl"},
		PermWriteACP: {"s3:PutObjectAcl", "s3:PutObjectVersionAcl"},
	},
}

// ACLAllows reports whether grants (a bucket's ACL when of is KindBucket,
// an object's when KindObject) give who the action. ignorePublic drops
// the grants to the public groups (Block Public Access's
// IgnorePublicAcls).
func ACLAllows(grants []cairn.Grant, of Kind, who Principal, action string, ignorePublic bool) bool {
	for _, g := range grants {
		if ignorePublic && IsPublicGrant(g) {
			continue
		}
		switch {
		case g.Group == cairn.GroupAllUsers:
		case g.Group == cairn.GroupAuthenticatedUsers && !who.Anonymous:
		case g.User != "" && !who.Anonymous && g.User == who.User:
		default:
			continue
		}
		perms := []string{g.Permission}
		if g.Permission == PermFullControl {
			perms = []string{PermRead, PermWrite, PermReadACP, PermWriteACP}
		}
		for _, p := range perms {
			for _, a := range aclActions[of][p] {
				if a == action {
					return true
				}
			}
		}
	}
	return false
}

// IsPublicGrant reports whether g grants to everyone or to every
// signed-in user: what Block Public Access calls a public ACL.
func IsPublicGrant(g cairn.Grant) bool {
	return g.Group == cairn.GroupAllUsers || g.Group == cairn.GroupAuthenticatedUsers
}

// PublicACL reports whether grants hold a public grant.
func PublicACL(grants []cairn.Grant) bool {
	for _, g := range grants {
		if IsPublicGrant(g) {
			return true
		}
	}
	return false
}
