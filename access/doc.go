// Package access decides who may do what to a bucket or an object beyond
// its owner: bucket policies (the IAM JSON subset S3 bucket policies use),
// ACL grants (canned and explicit) and the Block Public Access notion of
// "public". It is a pure core: no I/O, no clock (the current time comes
// in a Request's Context); the S3 gateway builds the Request and applies
// the Decision (docs/design/s3.md, "Access control").
//
// Vocabulary:
//
//   - policy: a JSON document of Statements, parsed and validated by
//     Parse against the bucket it is for (at most MaxPolicySize bytes;
//     a refusal is a *MalformedError with AWS's reason, S3's
//     MalformedPolicy).
//   - statement: Effect (Allow or Deny), Principal or NotPrincipal,
//     Action or NotAction, Resource or NotResource, and Conditions. It
//     matches a request if every element does.
//   - principal: who a statement is about. "*" (or {"AWS": "*"}) is
//     everyone, anonymous requests included; cairn users are named
//     arn:aws:iam:::user/NAME or {"CanonicalUser": "NAME"} (cairn is one
//     account, so the ARN's account is empty, as in Ceph RGW), and
//     arn:aws:iam:::root names the root users.
//   - action: "s3:GetObject" and the like, matched case-insensitively
//     with the wildcards * and ?; Operations maps each S3 operation the
//     gateway serves to the action it needs (one table).
//   - resource: arn:aws:s3:::bucket (bucket actions) or
//     arn:aws:s3:::bucket/key (object actions), matched case-sensitively
//     with wildcards and, under Version 2012-10-17, policy variables
//     (${aws:username}, ${*}, ...).
//   - condition: an operator (StringEquals, StringLike, IpAddress, Bool,
//     NumericLessThan, DateGreaterThan, Null, ... with IfExists and the
//     ForAnyValue/ForAllValues set qualifiers) over a context key
//     (aws:SourceIp, aws:SecureTransport, aws:username, s3:prefix,
//     s3:max-keys, s3:x-amz-acl, ...). A key absent from the request
//     fails a positive operator and satisfies a negated one.
//   - decision: Evaluate returns Denied if a Deny statement matches,
//     else Allowed if an Allow statement does, else NoDecision (an
//     implicit deny). The gateway combines it with the ACLs: an explicit
//     Deny wins, then any Allow or ACL grant, else access is denied.
//   - grant: an ACL entry, a permission (READ, WRITE, READ_ACP,
//     WRITE_ACP, FULL_CONTROL) to a user or a group (AllUsers,
//     AuthenticatedUsers); Canned expands x-amz-acl values, ACLAllows
//     maps permissions to actions as S3 does.
//   - public: a policy that allows something to "*" without a condition
//     fixing the callers (IsPublic), or an ACL granting to AllUsers or
//     AuthenticatedUsers (PublicACL): what Block Public Access blocks.
//
// Usage:
//
//	p, err := access.Parse(doc, "photos")
//	d := p.Evaluate(access.Request{
//		Principal: access.Principal{Anonymous: true},
//		Action:    access.Operations["GetObject"],
//		Bucket:    "photos", Key: "public/cat.jpg",
//		Context:   access.Context(access.Principal{Anonymous: true}, "192.0.2.7", false, now, epoch, ""),
//	})
//
// Caveats:
//
//   - Only the elements and operators listed above; IAM's identity
//     policies, roles, sessions and principal tags have no cairn
//     counterpart, and aws: keys the gateway does not set are absent.
//   - A principal ARN with an account ID (arn:aws:iam::123456789012:...)
//     is refused, not ignored: cairn cannot tell whose account it meant.
package access
