package cairn

import "slices"

// BucketAccess is a bucket's access control beyond its owner
// (docs/design/s3.md, "Access control"): its bucket policy, its ACL and
// its Block Public Access settings. The zero value (and a nil
// *BucketAccess) is private: only the owner and root get in.
type BucketAccess struct {
	// Policy is the bucket policy as the owner sent it (IAM JSON, at
	// most 20 KB, validated by package access); "" for none.
	Policy string `json:"policy,omitempty"`
	// ACL is the bucket's ACL beyond the owner's implicit FULL_CONTROL;
	// nil: private.
	ACL []Grant `json:"acl,omitempty"`
	// PublicAccessBlock is the bucket's Block Public Access
	// configuration; nil: none (nothing blocked).
	PublicAccessBlock *PublicAccessBlock `json:"public_access_block,omitempty"`
	// Ownership is the bucket's object ownership setting
	// (PutBucketOwnershipControls): OwnershipEnforced disables ACLs;
	// OwnershipPreferred and OwnershipObjectWriter keep them, as does ""
	// (none set). cairn's objects are always the bucket owner's.
	Ownership string `json:"ownership,omitempty"`
}

// Object ownership settings (S3's ObjectOwnership).
const (
	OwnershipEnforced     = "BucketOwnerEnforced"
	OwnershipPreferred    = "BucketOwnerPreferred"
	OwnershipObjectWriter = "ObjectWriter"
)

// ACLsDisabled reports whether the bucket's ACLs are disabled
// (OwnershipEnforced): they are neither set nor honoured.
func (a *BucketAccess) ACLsDisabled() bool {
	return a != nil && a.Ownership == OwnershipEnforced
}

// IsZero reports whether a holds nothing (a private bucket).
func (a *BucketAccess) IsZero() bool {
	return a == nil || a.Policy == "" && len(a.ACL) == 0 && a.PublicAccessBlock == nil && a.Ownership == ""
}

// Clone returns a deep copy of a (nil stays nil).
func (a *BucketAccess) Clone() *BucketAccess {
	if a == nil {
		return nil
	}
	c := *a
	c.ACL = slices.Clone(a.ACL)
	if a.PublicAccessBlock != nil {
		pab := *a.PublicAccessBlock
		c.PublicAccessBlock = &pab
	}
	return &c
}

// Grant is one grant of an S3 access control list: Permission to a user
// (by name, which is its canonical ID) or to a group.
type Grant struct {
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"` // GroupAllUsers, GroupAuthenticatedUsers, GroupLogDelivery
	// Permission is READ, WRITE, READ_ACP, WRITE_ACP or FULL_CONTROL.
	Permission string `json:"permission"`
}

// The groups an ACL grant may name (S3's predefined groups).
const (
	GroupAllUsers           = "AllUsers"           // everyone, anonymous requests included
	GroupAuthenticatedUsers = "AuthenticatedUsers" // every signed request
	GroupLogDelivery        = "LogDelivery"        // S3's log delivery: grants nothing in cairn
)

// PublicAccessBlock is S3's Block Public Access configuration of a
// bucket (PutPublicAccessBlock).
type PublicAccessBlock struct {
	BlockPublicAcls       bool `json:"block_public_acls,omitempty"`
	IgnorePublicAcls      bool `json:"ignore_public_acls,omitempty"`
	BlockPublicPolicy     bool `json:"block_public_policy,omitempty"`
	RestrictPublicBuckets bool `json:"restrict_public_buckets,omitempty"`
}
