package meta

import (
	"fmt"
	"time"

	"cairn"
)

// CheckVersioning checks a bucket versioning status for
// SetBucketVersioning: cairn.VersioningEnabled or VersioningSuspended
// (never "": a bucket cannot go back to never versioned).
func CheckVersioning(status string) error {
	switch status {
	case cairn.VersioningEnabled, cairn.VersioningSuspended:
		return nil
	}
	return fmt.Errorf("%w: versioning status %q (want %s or %s)", cairn.ErrInvalid, status, cairn.VersioningEnabled, cairn.VersioningSuspended)
}

// CheckVersionID checks the version ID argument of ObjectVersion and
// DeleteVersion: "" (ObjectVersion only: the latest), cairn.NullVersionID,
// or an internal version (cairn.ValidVersion).
func CheckVersionID(op, id string, latest bool) error {
	if id == cairn.NullVersionID || cairn.ValidVersion(id) || latest && id == "" {
		return nil
	}
	return fmt.Errorf("%s: %w: version id %q", op, cairn.ErrInvalid, id)
}

// CheckMarker checks a delete marker for PutDeleteMarker.
func CheckMarker(key string, d cairn.DeleteMarker) error {
	if err := cairn.ValidateKey(key); err != nil {
		return err
	}
	if !cairn.ValidVersion(d.Version) {
		return fmt.Errorf("%w: delete marker version %q", cairn.ErrInvalid, d.Version)
	}
	return nil
}

// MarkerVersion returns the version a new delete marker whose caller
// proposed d.Version gets, given the version that sorts first among the
// key's versions ("" none): d.Version if it sorts before first, else the
// version just before first (docs/design/versioning.md, "Keying").
func MarkerVersion(proposed, first string) string {
	if first == "" || proposed < first {
		return proposed
	}
	return cairn.VersionBefore(first)
}

// MarkerVersionOf is the ObjectVersion of a stored delete marker of key.
func MarkerVersionOf(key string, d cairn.DeleteMarker) cairn.ObjectVersion {
	return cairn.ObjectVersion{Key: key, Version: d.Version, Versioned: d.Versioned, Marker: true, Created: d.Created}
}

// InfoVersion is the ObjectVersion of a listing record (no Manifest).
func InfoVersion(i cairn.ObjectInfo) cairn.ObjectVersion {
	return cairn.ObjectVersion{Key: i.Key, Version: i.Version, Versioned: i.Versioned, Created: i.Created, Info: i}
}

// ManifestVersionOf is the ObjectVersion of an object version m.
func ManifestVersionOf(m *cairn.Manifest) cairn.ObjectVersion {
	return cairn.ObjectVersion{Key: m.Key, Version: m.Version, Versioned: m.Versioned, Created: m.Created, Info: m.Info(), Manifest: m}
}

// VersionsAfter reports whether version (key, v) of a listing comes after
// the position (keyMarker, afterVersion) of ListVersions, whose current
// version at keyMarker is curAtMarker ("": none): every version of a
// later key does; of keyMarker itself, with afterVersion "", none does;
// else those after afterVersion in the key's order (its current first,
// then the noncurrent ones by version), where afterVersion equal to
// curAtMarker stands for the current's place.
func VersionsAfter(key, v string, current bool, keyMarker, afterVersion, curAtMarker string) bool {
	switch {
	case key != keyMarker:
		return key > keyMarker
	case afterVersion == "":
		return false
	case afterVersion == curAtMarker:
		return !current
	case current:
		return false
	}
	return v > afterVersion
}

// CheckObjectLock checks a bucket's Object Lock configuration for
// SetBucketObjectLock, given the bucket's versioning status: l must pass
// its Check and versioning must be Enabled.
func CheckObjectLock(name string, l cairn.ObjectLock, versioning string) error {
	if err := l.Check(); err != nil {
		return fmt.Errorf("object lock of bucket %s: %w", name, err)
	}
	if versioning != cairn.VersioningEnabled {
		return fmt.Errorf("object lock of bucket %s: %w: versioning is %q, not Enabled", name, cairn.ErrInvalid, versioning)
	}
	return nil
}

// CheckVersioningChange checks SetBucketVersioning's status against the
// bucket b it changes: a bucket with Object Lock stays Enabled.
func CheckVersioningChange(b cairn.Bucket, status string) error {
	if b.ObjectLock != nil && status != cairn.VersioningEnabled {
		return fmt.Errorf("set versioning of bucket %s: %w: Object Lock is enabled, so versioning stays Enabled", b.Name, cairn.ErrInvalid)
	}
	return nil
}

// LockVersion applies c at now to the object version v (as found by
// ObjectVersion, Manifest whole) of a bucket whose Object Lock is lock
// (nil: none), and returns the manifest to store in its place: the
// decision of SetObjectLock, for both stores.
func LockVersion(op string, lock *cairn.ObjectLock, v cairn.ObjectVersion, c cairn.LockChange, now time.Time) (*cairn.Manifest, error) {
	switch {
	case lock == nil:
		return nil, fmt.Errorf("%s: %w: the bucket has no Object Lock", op, cairn.ErrInvalid)
	case v.Marker || v.Manifest == nil:
		return nil, fmt.Errorf("%s: %w: a delete marker has no Object Lock", op, cairn.ErrInvalid)
	}
	r, hold, err := c.Apply(v.Manifest.Retention, v.Manifest.LegalHold, now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	m := *v.Manifest
	m.Retention, m.LegalHold = r, hold
	return &m, nil
}
