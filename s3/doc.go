// Package s3 is cairn's S3 gateway: an http.Handler that speaks the S3 REST
// API (path-style addressing) over the data path (package client) and the
// metadata store (package meta). It is stateless: every request is
// authenticated, served and forgotten, so any number of gateways may run
// side by side.
//
// Vocabulary:
//
//   - identity: who signed a request (Identity), found by access key
//     through Credentials. Root sees and touches every bucket; any other
//     identity the buckets it owns (Bucket.Owner), and others' as far as
//     their bucket policy or ACLs grant it. An unsigned request is
//     anonymous: it gets only what is granted to everyone (an unsigned
//     POST form upload too: post.go).
//   - authorization (authz.go, docs/design/s3.md "Access control"): after
//     authentication and before routing, a non-root request's operation
//     becomes an action (access.Operations, s3:GetObject, ...) decided by
//     package access against the bucket's policy (bucketpolicy.go), its
//     ACL and the object's (acl.go), within its Block Public Access
//     settings. An explicit Deny binds the owner too, except for managing
//     the policy and ACL.
//   - Signature V4: the request's signature over its canonical form
//     (method, path, sorted query, signed headers, payload hash), keyed by
//     a key derived from the secret, the date, the region and "s3". It
//     travels in the Authorization header or, for a presigned URL, in the
//     X-Amz-* query parameters.
//   - Signature V2: the older signature (sigv2.go): HMAC-SHA1 over the
//     method, Content-MD5, Content-Type, the date (or a presigned URL's
//     Expires), the x-amz-* headers and the path with its subresources.
//     It travels as "Authorization: AWS key:sig" or as the AWSAccessKeyId,
//     Expires and Signature query parameters, and signs no body.
//   - payload hash: the x-amz-content-sha256 value the signature covers:
//     the body's hex SHA-256 (checked as the body streams by),
//     UNSIGNED-PAYLOAD, or one of the STREAMING-* modes, where the body is
//     aws-chunked and each chunk carries its own signature chained from the
//     previous one (checked chunk by chunk), optionally followed by
//     trailer headers (a checksum; signed in the signed mode).
//   - versions (versioning.go, docs/design/versioning.md): a bucket's
//     versioning (Enabled, Suspended, or never set) decides what a write
//     or delete keeps. A version ID is "null" or one of cairn's internal
//     versions (32 hex digits); a delete marker hides a key without
//     removing its versions; ?versionId= reads, copies or deletes one
//     version. Reads of a version go through Objects.OpenWith on the
//     version's manifest, deletes through Versions (meta.Store).
//   - Object Lock (objectlock.go, docs/design/objectlock.md): a version's
//     retention (GOVERNANCE or COMPLIANCE until a date) and legal hold
//     forbid its deletion; the metadata store enforces them (Locks,
//     cairn.ErrLocked → AccessDenied), the gateway parses and checks
//     what AWS checks first.
//   - body readers: wrappers around the request body that check it (wire
//     length, payload hash, chunk signatures, Content-MD5, x-amz-checksum-*)
//     and turn a failed check into an error instead of io.EOF. The data
//     path reads a body to EOF before it commits, so a body that fails any
//     check, or ends early, never becomes a visible object — and nothing is
//     buffered to check it.
//   - policy: the cairn code of an object, e.g. "rs-4-2". A bucket's
//     default comes from the x-cairn-policy header of CreateBucket (else
//     Config.DefaultPolicy); the same header on PutObject or CopyObject
//     overrides it for one object, as does x-amz-storage-class through
//     Config.StorageClasses (REDUCED_REDUNDANCY → rs-4-1 by default).
//     x-cairn-policy must be signed and on the requester's allow-list
//     (Identity.Policies, else Config.AllowedPolicies; root: any), see
//     docs/design/s3.md, "Choosing a policy".
//   - conditional write: a PutObject or CompleteMultipartUpload with
//     If-None-Match: * or If-Match: ETAG (writeCondition). The gateway
//     hands the condition to the data path (client.Condition), which
//     checks it in the compare-and-swap that commits, so a concurrent
//     writer cannot slip in between check and commit (docs/design/s3.md,
//     "Conditional writes").
//   - tags: an object's live in its manifest and go with its version (an
//     overwrite drops them; PutObjectTagging is a compare-and-swap on the
//     manifest), a bucket's in its record (tagging.go).
//   - stored checksum: the x-amz-checksum-* value a body was verified
//     against (bodySum), kept in the manifest (or a part) and returned with
//     x-amz-checksum-mode: ENABLED; a multipart upload created with an
//     algorithm gets the composite of its parts' or, for the CRCs, the
//     full-object CRC combined from theirs (checksum.go).
//   - POST upload (post.go, postpolicy.go): a browser form (POST /bucket,
//     multipart/form-data) signed in its fields: the signature is over a
//     base64 policy document whose conditions every field must meet; the
//     file, the last field, streams into the data path checked against the
//     policy's content-length-range. A form without signature fields is
//     anonymous. It is authorized as a PutObject of the form's key
//     (authorizePost) before anything is stored.
//   - lifecycle rules (lifecycle.go): a bucket's, validated by package
//     lifecycle and kept in its record; the director's runner applies them.
//   - CORS rules: a bucket's (cors.go); an OPTIONS preflight is answered
//     from them before authentication, and an actual request with an
//     Origin gets the matching rule's headers.
//   - S3 error: an *Error (Code, HTTP Status, Message). The gateway's
//     sentinels (ErrNoSuchKey, ErrSignatureDoesNotMatch, ...) are *Error
//     values; apiError, the one mapping function, turns any error into
//     one — gateway sentinels first, then cairn's domain sentinels
//     (ErrNoSpace → InsufficientStorage, ErrUnavailable →
//     ServiceUnavailable, cairn.ErrNotFound → NoSuchKey, ...), else
//     InternalError. Handlers put a cairn.ErrNotFound under ErrNoSuchBucket
//     or ErrNoSuchKey where the resource the client named is missing
//     (objectErr), never when the cluster is unavailable.
//   - cause: an error from below the gateway kept under the S3 error it
//     means (withCause). The client sees the S3 error's message — plus,
//     for a 4xx the gateway raised itself, the detail it added ("?acl") —
//     never a cause's text, which may name disks, paths, hosts or versions.
//   - request ID: every response carries one in x-amz-request-id (and the
//     gateway's own random ID in x-amz-id-2); an error body repeats them as
//     RequestId and HostId, and the log line of the failure (Error level
//     for a 5xx, Debug otherwise) holds the whole error under request_id.
//
// Usage:
//
//	h, err := s3.New(s3.Config{
//		Objects:     client.New(metaStore, nodeClient, client.Config{}),
//		Meta:        metaStore,
//		Credentials: s3.RootCredentials(accessKey, secretKey),
//	})
//	srv := &http.Server{Addr: "127.0.0.1:9000", Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
//
// docs/design/s3.md lists the supported operations and auth modes, and
// the limits: at most Config.MaxRequests requests at once (more wait
// QueueWait, then get 503 SlowDown), and every response write taken by the
// client within WriteTimeout.
//
// Caveats:
//
//   - Only path-style addressing (http://host/bucket/key); virtual-hosted
//     style is not recognised. Mount the handler at the root of a server,
//     not behind http.ServeMux, which cleans paths ("a//b", "./") that are
//     legal S3 keys.
//   - Multipart upload is implemented (GET/HEAD ?partNumber= and
//     UploadPartCopy included). Lifecycle rules are stored here and
//     applied by the director (docs/design/s3.md, "Lifecycle"). The
//     subresources docs/design/s3.md ("Operation status") lists as not
//     supported answer NotImplemented.
//   - A GET reads the manifest (Stat) for conditions and range, then opens
//     the data; if the object was replaced in between it starts over (up
//     to three times).
package s3
