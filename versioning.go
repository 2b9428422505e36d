package cairn

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"time"
)

// Versioning statuses of a bucket (Bucket.Versioning; docs/design/versioning.md).
// The zero value "" is a bucket that was never versioned.
const (
	VersioningEnabled   = "Enabled"
	VersioningSuspended = "Suspended"
)

// NullVersionID is the S3 version ID of the null version: an object
// written while its bucket was never versioned or Suspended.
const NullVersionID = "null"

// NewVersion returns a new internal version (Manifest.Version) created at
// now: 16 hex digits of MaxInt64 − now's Unix nanoseconds, then 16 random
// hex digits read from rnd. Versions made this way sort newest first
// (docs/design/versioning.md, "Keying").
func NewVersion(now time.Time, rnd io.Reader) (string, error) {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(math.MaxInt64-now.UnixNano()))
	if _, err := io.ReadFull(rnd, b[8:]); err != nil {
		return "", fmt.Errorf("making a version id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// VersionBefore returns a version that sorts just before v (a time-ordered
// version one nanosecond newer, same random half), or v itself if none
// does: for a delete marker that must be first among its key's versions.
func VersionBefore(v string) string {
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != 16 {
		return v
	}
	t := binary.BigEndian.Uint64(b[:8])
	if t == 0 {
		return v
	}
	binary.BigEndian.PutUint64(b[:8], t-1)
	return hex.EncodeToString(b)
}

// ValidVersion reports whether v has the form of an internal version: 32
// lower-case hex digits. An S3 version ID is one of these or NullVersionID.
func ValidVersion(v string) bool {
	if len(v) != 32 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// VersionID returns m's S3 version ID: its Version if it was written
// while its bucket's versioning was Enabled, else NullVersionID.
func (m *Manifest) VersionID() string {
	if m.Versioned {
		return m.Version
	}
	return NullVersionID
}

// ObjectVersion is one version of a key (docs/design/versioning.md): an
// object, with its Manifest, or a delete marker. Latest says it is the
// key's latest version.
type ObjectVersion struct {
	Key     string
	Version string // internal version: 32 hex digits
	// Versioned: the S3 version ID is Version; false: NullVersionID.
	Versioned bool
	Marker    bool      // a delete marker (Manifest nil)
	Created   time.Time // the marker's creation; an object's is its manifest's
	Latest    bool
	// Info is an object version's listing record (zero for a marker).
	Info ObjectInfo
	// Manifest is the object's whole manifest where the call says so
	// (meta.Store.ObjectVersion, DeleteVersion); nil in listings.
	Manifest *Manifest
}

// ID returns v's S3 version ID.
func (v ObjectVersion) ID() string {
	if v.Versioned {
		return v.Version
	}
	return NullVersionID
}

// DeleteMarker is the stored record of a delete marker (docs/design/versioning.md).
type DeleteMarker struct {
	Version   string    `json:"version"`
	Versioned bool      `json:"versioned,omitempty"`
	Created   time.Time `json:"created"`
}
