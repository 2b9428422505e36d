package access

import "strings"

// Kind is the kind of resource an action applies to: a bucket
// (arn:aws:s3:::bucket), an object (arn:aws:s3:::bucket/key) or neither
// (ListAllMyBuckets, CreateBucket's account-level check is on the bucket).
type Kind int

// Kinds of resource.
const (
	KindBucket Kind = iota + 1
	KindObject
	KindAccount // no resource ARN of its own: s3:ListAllMyBuckets
)

// actionKinds are the S3 actions a bucket policy may name, with the kind
// of resource each applies to. It holds every action the gateway checks
// (Operations) and the other S3 actions of AWS's list that a policy
// written for AWS names, so such a policy validates here too; the ones
// cairn does not serve simply never match a request.
var actionKinds = map[string]Kind{
	"s3:ListAllMyBuckets":                 KindAccount,
	"s3:CreateBucket":                     KindBucket,
	"s3:DeleteBucket":                     KindBucket,
	"s3:ListBucket":                       KindBucket,
	"s3:ListBucketVersions":               KindBucket,
	"s3:ListBucketMultipartUploads":       KindBucket,
	"s3:GetBucketLocation":                KindBucket,
	"s3:GetBucketVersioning":              KindBucket,
	"s3:PutBucketVersioning":              KindBucket,
	"s3:GetBucketTagging":                 KindBucket,
	"s3:PutBucketTagging":                 KindBucket,
	"s3:GetBucketCORS":                    KindBucket,
	"s3:PutBucketCORS":                    KindBucket,
	"s3:GetEncryptionConfiguration":       KindBucket,
	"s3:PutEncryptionConfiguration":       KindBucket,
	"s3:GetBucketPolicy":                  KindBucket,
	"s3:PutBucketPolicy":                  KindBucket,
	"s3:DeleteBucketPolicy":               KindBucket,
	"s3:GetBucketPolicyStatus":            KindBucket,
	"s3:GetBucketAcl":                     KindBucket,
	"s3:PutBucketAcl":                     KindBucket,
	"s3:GetBucketPublicAccessBlock":       KindBucket,
	"s3:PutBucketPublicAccessBlock":       KindBucket,
	"s3:GetBucketOwnershipControls":       KindBucket,
	"s3:PutBucketOwnershipControls":       KindBucket,
	"s3:GetBucketObjectLockConfiguration": KindBucket,
	"s3:PutBucketObjectLockConfiguration": KindBucket,
	"s3:GetLifecycleConfiguration":        KindBucket,
	"s3:PutLifecycleConfiguration":        KindBucket,
	"s3:GetBucketWebsite":                 KindBucket,
	"s3:PutBucketWebsite":                 KindBucket,
	"s3:DeleteBucketWebsite":              KindBucket,
	"s3:GetBucketLogging":                 KindBucket,
	"s3:PutBucketLogging":                 KindBucket,
	"s3:GetBucketNotification":            KindBucket,
	"s3:PutBucketNotification":            KindBucket,
	"s3:GetReplicationConfiguration":      KindBucket,
	"s3:PutReplicationConfiguration":      KindBucket,
	"s3:GetAccelerateConfiguration":       KindBucket,
	"s3:PutAccelerateConfiguration":       KindBucket,
	"s3:GetBucketRequestPayment":          KindBucket,
	"s3:PutBucketRequestPayment":          KindBucket,
	"s3:GetObject":                        KindObject,
	"s3:GetObjectVersion":                 KindObject,
	"s3:PutObject":                        KindObject,
	"s3:DeleteObject":                     KindObject,
	"s3:DeleteObjectVersion":              KindObject,
	"s3:AbortMultipartUpload":             KindObject,
	"s3:ListMultipartUploadParts":         KindObject,
	"s3:GetObjectTagging":                 KindObject,
	"s3:GetObjectVersionTagging":          KindObject,
	"s3:PutObjectTagging":                 KindObject,
	"s3:PutObjectVersionTagging":          KindObject,
	"s3:DeleteObjectTagging":              KindObject,
	"s3:DeleteObjectVersionTagging":       KindObject,
	"s3:GetObjectAttributes":              KindObject,
	"s3:GetObjectVersionAttributes":       KindObject,
	"s3:GetObjectAcl":                     KindObject,
	"s3:GetObjectVersionAcl":              KindObject,
	"s3:PutObjectAcl":                     KindObject,
	"s3:PutObjectVersionAcl":              KindObject,
	"s3:GetObjectRetention":               KindObject,
	"s3:PutObjectRetention":               KindObject,
	"s3:GetObjectLegalHold":               KindObject,
	"s3:PutObjectLegalHold":               KindObject,
	"s3:BypassGovernanceRetention":        KindObject,
	"s3:RestoreObject":                    KindObject,
	"s3:GetObjectTorrent":                 KindObject,
	"s3:GetObjectVersionTorrent":          KindObject,
	"s3:ReplicateObject":                  KindObject,
	"s3:ReplicateDelete":                  KindObject,
	"s3:ReplicateTags":                    KindObject,
	"s3:ObjectOwnerOverrideToBucketOwner": KindObject,
}

// KnownAction reports whether name is an S3 action (case-insensitive, as
// IAM matches actions) and its resource kind.
func KnownAction(name string) (Kind, bool) {
	k, ok := actionsLower[strings.ToLower(name)]
	return k, ok
}

// actionsLower is actionKinds keyed by lower-case name.
var actionsLower = func() map[string]Kind {
	m := make(map[string]Kind, len(actionKinds))
	for a, k := range actionKinds {
		m[strings.ToLower(a)] = k
	}
	return m
}()

// Operations maps every S3 operation the gateway serves, by the name
// s3.Operation gives it, to the action a bucket policy or ACL must allow:
// the one table of docs/design/s3.md, "Access control". A versionId on
// GetObject, HeadObject or DeleteObject asks for the ...Version action
// instead (VersionAction). DeleteObjects is checked key by key as
// s3:DeleteObject; CopyObject and UploadPartCopy also need s3:GetObject
// on the source; PostObject (a browser form upload) is decided on its
// form's key. Operations missing here (Admin, ListBuckets's account
// level aside) are root's or the bucket owner's alone.
var Operations = map[string]string{
	"ListBuckets":                   "s3:ListAllMyBuckets",
	"CreateBucket":                  "s3:CreateBucket",
	"DeleteBucket":                  "s3:DeleteBucket",
	"HeadBucket":                    "s3:ListBucket",
	"ListObjects":                   "s3:ListBucket",
	"ListObjectsV2":                 "s3:ListBucket",
	"ListObjectVersions":            "s3:ListBucketVersions",
	"ListMultipartUploads":          "s3:ListBucketMultipartUploads",
	"GetBucketLocation":             "s3:GetBucketLocation",
	"GetBucketVersioning":           "s3:GetBucketVersioning",
	"PutBucketVersioning":           "s3:PutBucketVersioning",
	"GetBucketTagging":              "s3:GetBucketTagging",
	"PutBucketTagging":              "s3:PutBucketTagging",
	"DeleteBucketTagging":           "s3:PutBucketTagging",
	"GetBucketCors":                 "s3:GetBucketCORS",
	"PutBucketCors":                 "s3:PutBucketCORS",
	"DeleteBucketCors":              "s3:PutBucketCORS",
	"GetBucketEncryption":           "s3:GetEncryptionConfiguration",
	"PutBucketEncryption":           "s3:PutEncryptionConfiguration",
	"DeleteBucketEncryption":        "s3:PutEncryptionConfiguration",
	"GetBucketPolicy":               "s3:GetBucketPolicy",
	"PutBucketPolicy":               "s3:PutBucketPolicy",
	"DeleteBucketPolicy":            "s3:DeleteBucketPolicy",
	"GetBucketPolicyStatus":         "s3:GetBucketPolicyStatus",
	"GetBucketAcl":                  "s3:GetBucketAcl",
	"PutBucketAcl":                  "s3:PutBucketAcl",
	"GetPublicAccessBlock":          "s3:GetBucketPublicAccessBlock",
	"PutPublicAccessBlock":          "s3:PutBucketPublicAccessBlock",
	"DeletePublicAccessBlock":       "s3:PutBucketPublicAccessBlock",
	"GetBucketOwnershipControls":    "s3:GetBucketOwnershipControls",
	"PutBucketOwnershipControls":    "s3:PutBucketOwnershipControls",
	"DeleteBucketOwnershipControls": "s3:PutBucketOwnershipControls",
	"GetObjectLockConfiguration":    "s3:GetBucketObjectLockConfiguration",
	"PutObjectLockConfiguration":    "s3:PutBucketObjectLockConfiguration",
	"GetObject":                     "s3:GetObject",
	"HeadObject":                    "s3:GetObject",
	"PutObject":                     "s3:PutObject",
	"PostObject":                    "s3:PutObject",
	"CopyObject":                    "s3:PutObject",
	"CreateMultipartUpload":         "s3:PutObject",
	"UploadPart":                    "s3:PutObject",
	"UploadPartCopy":                "s3:PutObject",
	"CompleteMultipartUpload":       "s3:PutObject",
	"AbortMultipartUpload":          "s3:AbortMultipartUpload",
	"ListParts":                     "s3:ListMultipartUploadParts",
	"DeleteObject":                  "s3:DeleteObject",
	"DeleteObjects":                 "s3:DeleteObject",
	"GetObjectTagging":              "s3:GetObjectTagging",
	"PutObjectTagging":              "s3:PutObjectTagging",
	"DeleteObjectTagging":           "s3:DeleteObjectTagging",
	"GetObjectAttributes":           "s3:GetObjectAttributes",
	"GetObjectAcl":                  "s3:GetObjectAcl",
	"PutObjectAcl":                  "s3:PutObjectAcl",
	"GetObjectRetention":            "s3:GetObjectRetention",
	"PutObjectRetention":            "s3:PutObjectRetention",
	"GetObjectLegalHold":            "s3:GetObjectLegalHold",
	"PutObjectLegalHold":            "s3:PutObjectLegalHold",
}

// versionActions are the actions a request naming a versionId asks for
// instead of the plain one.
var versionActions = map[string]string{
	"s3:GetObject":           "s3:GetObjectVersion",
	"s3:DeleteObject":        "s3:DeleteObjectVersion",
	"s3:GetObjectTagging":    "s3:GetObjectVersionTagging",
	"s3:PutObjectTagging":    "s3:PutObjectVersionTagging",
	"s3:DeleteObjectTagging": "s3:DeleteObjectVersionTagging",
	"s3:GetObjectAttributes": "s3:GetObjectVersionAttributes",
	"s3:GetObjectAcl":        "s3:GetObjectVersionAcl",
	"s3:PutObjectAcl":        "s3:PutObjectVersionAcl",
}

// VersionAction returns the action a request for action on one version
// (?versionId=) asks for: s3:GetObject → s3:GetObjectVersion, and so on;
// an action without a version form is returned as it is.
func VersionAction(action string) string {
	if v, ok := versionActions[action]; ok {
		return v
	}
	return action
}
