package meta

import (
	"fmt"

	"cairn"
)

// CheckManifest returns an error wrapping cairn.ErrInvalid if m cannot be
// committed: m is nil, its version or bucket is empty, or its key fails
// cairn.ValidateKey. Store implementations call it first in
// CommitManifest.
func CheckManifest(m *cairn.Manifest) error {
	switch {
	case m == nil:
		return fmt.Errorf("commit: %w: nil manifest", cairn.ErrInvalid)
	case m.Bucket == "":
		return fmt.Errorf("commit: %w: manifest has no bucket", cairn.ErrInvalid)
	case m.Version == "":
		return fmt.Errorf("commit %s/%s: %w: manifest has no version", m.Bucket, m.Key, cairn.ErrInvalid)
	}
	if err := cairn.ValidateKey(m.Key); err != nil {
		return fmt.Errorf("commit to bucket %s: %w", m.Bucket, err)
	}
	return nil
}

// CheckCampaign returns an error wrapping cairn.ErrInvalid if role or id
// is empty.
func CheckCampaign(role, id string) error {
	if role == "" || id == "" {
		return fmt.Errorf("campaign: %w: role %q, id %q: both must be non-empty", cairn.ErrInvalid, role, id)
	}
	return nil
}
