package cairn

import "time"

// ObjectInfo is what a listing shows of a committed object: the compact
// listing record the metadata store keeps beside each manifest and writes
// in the same transaction (docs/design/meta.md, "Listing records"), so
// listing a bucket never reads full manifests, whose size grows with the
// number of parts.
type ObjectInfo struct {
	Key     string    `json:"key"`
	Version string    `json:"version"`
	Size    int64     `json:"size"` // the content size: plaintext for an encrypted object
	ETag    string    `json:"etag"` // as Manifest.ETag
	Created time.Time `json:"created"`
	Policy  string    `json:"policy"`          // the object's policy (its storage class)
	Parts   int       `json:"parts,omitempty"` // parts of a multipart object; 0: single part
	// Versioned: the S3 version ID is Version (Manifest.Versioned).
	Versioned bool `json:"versioned,omitempty"`
}

// Info returns the listing record of m.
func (m *Manifest) Info() ObjectInfo {
	return ObjectInfo{Key: m.Key, Version: m.Version, Size: m.ContentSize(), ETag: m.ETag, Created: m.Created,
		Policy: m.Policy, Parts: len(m.Parts), Versioned: m.Versioned}
}
