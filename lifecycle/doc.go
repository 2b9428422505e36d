// Package lifecycle evaluates S3 lifecycle rules (cairn.LifecycleRule):
// given a bucket's rules, the versions of its objects in listing order and
// the time, it says what is due. It is a pure core: no I/O, no clock; the
// lifecycle runner (internal/cli, a director duty) lists, reads tags where
// a rule needs them, and applies the actions through the normal delete
// paths (docs/design/s3.md, "Lifecycle").
//
// Vocabulary:
//
//   - due time: an action of Days N on something that started at t is due
//     at midnight UTC after t + N days (DueAt), as S3 rounds; a Date
//     action is due at its date (midnight UTC, Validate insists).
//   - current version: the latest version of a key; expiring it deletes
//     the object, or in a bucket whose versioning was ever set puts a
//     delete marker in front of it (ActExpire).
//   - noncurrent version: an older version; it became noncurrent when the
//     next newer version (or marker) was created, and its noncurrent days
//     count from then. NewerNoncurrentVersions keeps that many newer
//     noncurrent versions out of reach (ActDeleteVersion).
//   - expired object delete marker: a delete marker that is the current
//     version and the only version of its key left (ActDeleteMarker).
//   - incomplete upload: a multipart upload, aborted AbortUploadDays
//     after its initiation (ActAbortUpload).
//   - transition: moving a version to another storage class
//     (ActTransition); the runner hands it to a hook of the cold tier.
//
// Usage: feed a Scanner the versions of ListVersions pages (keys in
// order, each key's versions newest first), and Evaluate each Object it
// yields; Flush after the last page.
//
//	var sc lifecycle.Scanner
//	for _, v := range page {
//		for _, o := range sc.Add(v) {
//			acts = append(acts, lifecycle.Evaluate(rules, o, now)...)
//		}
//	}
//
// Caveats: a rule with a tag filter needs the object's tags, which
// listings do not carry: NeedsTags tells the runner to fill Object.Tags
// (from the manifest) before Evaluate. A delete marker matches a rule
// only by prefix (it has no tags and no size), as in S3.
package lifecycle
