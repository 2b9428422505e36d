package cairn

import (
	"context"
	"errors"
)

// Errors shared by the metadata store, the data path and the gateway. Test
// with errors.Is; each is wrapped with context. Each says whether it is
// permanent (see IsPermanent): whether the same call, made again without
// anything else changing, fails the same way.
var (
	// ErrNotFound: the bucket, object, node or disk does not exist.
	// Permanent: asking again reads the same absence.
	ErrNotFound = errors.New("not found")
	// ErrExists: the thing being created already exists. Permanent.
	ErrExists = errors.New("already exists")
	// ErrConflict: a compare-and-swap lost (someone else changed it first).
	// Transient: the caller re-reads the current value and tries again.
	ErrConflict = errors.New("conflict: changed concurrently")
	// ErrBucketNotEmpty: a bucket with objects cannot be deleted. Permanent.
	ErrBucketNotEmpty = errors.New("bucket not empty")
	// ErrInvalid: a name, key, policy or argument is malformed (the message
	// says which and why). Permanent: the same request is malformed again.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnavailable: not enough disks or nodes answered to complete the
	// operation with the promised redundancy. Transient: nodes come back,
	// and the metadata store elects a new leader.
	ErrUnavailable = errors.New("unavailable")
	// ErrCorrupt: stored data failed its checksum, or a manifest read back
	// from the metadata store breaks the manifest rules
	// (Manifest.ValidateStored). Permanent: reading the
	// same bytes again fails the same check; another copy, or a repair, is
	// the remedy.
	ErrCorrupt = errors.New("corrupt data")
	// ErrNoSpace: a disk is full. Permanent: the same write meets the same
	// full disk until space is freed or another disk is chosen.
	ErrNoSpace = errors.New("no space left")
	// ErrAuth: the request's credentials were missing or wrong. Permanent.
	ErrAuth = errors.New("not authorized")
	// ErrLocked: the object version is protected by Object Lock (a
	// retention in force or a legal hold, docs/design/objectlock.md): it
	// cannot be deleted, or its retention not shortened. Permanent until
	// the date passes or the hold is lifted.
	ErrLocked = errors.New("object locked")
)

// permanent are the sentinels IsPermanent treats as permanent.
var permanent = []error{ErrNotFound, ErrExists, ErrBucketNotEmpty, ErrInvalid, ErrCorrupt, ErrNoSpace, ErrAuth, ErrLocked,
	context.Canceled, context.DeadlineExceeded}

// IsPermanent reports whether retrying the call that returned err cannot
// help: err's chain holds a permanent sentinel (ErrNotFound, ErrExists,
// ErrBucketNotEmpty, ErrInvalid, ErrCorrupt, ErrNoSpace, ErrAuth,
// ErrLocked) or a
// context's error (the caller gave up). The cause decides: an
// ErrUnavailable that wraps ErrNoSpace (a write that found its disk full)
// is permanent. Every other error is transient — ErrUnavailable,
// ErrConflict, and errors no sentinel names, such as a network failure or
// the metadata store's "no leader" during an election. IsPermanent(nil) is
// false.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	for _, p := range permanent {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}
