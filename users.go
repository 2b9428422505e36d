package cairn

import (
	"fmt"
	"time"
)

// User is an S3 user kept in the metadata store, shared by every gateway
// (docs/design/meta.md, "Users"; docs/design/s3.md, "Users and keys").
//
// SigV4 needs the secret key itself to check a signature, so the store
// holds it, but only sealed (AES-256-GCM under a key derived from the
// cluster secret, bound to the user's name and access key): whoever reads
// the metadata store without the cluster secret learns no secret key.
type User struct {
	Name      string `json:"name"`       // ValidateUserName; the owner recorded on the buckets it creates
	AccessKey string `json:"access_key"` // ValidateAccessKey; unique among users
	// SealedSecret is the secret key, sealed (crypt.SealSecret).
	SealedSecret []byte `json:"sealed_secret"`
	// Root users see and touch every bucket and may choose any policy.
	Root bool `json:"root,omitempty"`
	// Policies is the user's allow-list of the policies it may choose
	// over S3 (x-cairn-policy); empty: the gateway's allow-list.
	Policies []string  `json:"policies,omitempty"`
	Created  time.Time `json:"created"`
	// Updated is when the record last changed (a rotation, a new allow-list).
	Updated time.Time `json:"updated"`
}

// Limits of user records.
const (
	MaxUserName       = 64
	MaxAccessKey      = 128
	MaxUserPolicies   = 64
	MaxSealedSecret   = 512
	MinAccessKeyBytes = 3
)

// ValidateUserName checks a user name: 1 to MaxUserName characters among
// letters, digits, '.', '_', '-' and '@', not starting with '.'.
func ValidateUserName(name string) error {
	if name == "" || len(name) > MaxUserName {
		return fmt.Errorf("user name %q: %w: 1 to %d characters", name, ErrInvalid, MaxUserName)
	}
	if name[0] == '.' {
		return fmt.Errorf("user name %q: %w: must not start with '.'", name, ErrInvalid)
	}
	for _, c := range []byte(name) {
		if !userChar(c) && c != '@' {
			return fmt.Errorf("user name %q: %w: only letters, digits and . _ - @", name, ErrInvalid)
		}
	}
	return nil
}

// ValidateAccessKey checks an access key: MinAccessKeyBytes to
// MaxAccessKey letters, digits, '.', '_' and '-' (no '/', which would
// break a SigV4 credential scope).
func ValidateAccessKey(ak string) error {
	if len(ak) < MinAccessKeyBytes || len(ak) > MaxAccessKey {
		return fmt.Errorf("access key %q: %w: %d to %d characters", ak, ErrInvalid, MinAccessKeyBytes, MaxAccessKey)
	}
	for _, c := range []byte(ak) {
		if !userChar(c) {
			return fmt.Errorf("access key %q: %w: only letters, digits and . _ -", ak, ErrInvalid)
		}
	}
	return nil
}

func userChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// Check reports why u cannot be stored (ErrInvalid), or nil. It does not
// check that the policies name valid codes (the store knows no codecs;
// the CLI checks them).
func (u User) Check() error {
	if err := ValidateUserName(u.Name); err != nil {
		return err
	}
	if err := ValidateAccessKey(u.AccessKey); err != nil {
		return fmt.Errorf("user %s: %w", u.Name, err)
	}
	switch {
	case len(u.SealedSecret) == 0 || len(u.SealedSecret) > MaxSealedSecret:
		return fmt.Errorf("user %s: %w: sealed secret of %d bytes (1 to %d)", u.Name, ErrInvalid, len(u.SealedSecret), MaxSealedSecret)
	case len(u.Policies) > MaxUserPolicies:
		return fmt.Errorf("user %s: %w: %d policies (at most %d)", u.Name, ErrInvalid, len(u.Policies), MaxUserPolicies)
	}
	for _, p := range u.Policies {
		if p == "" || len(p) > 64 {
			return fmt.Errorf("user %s: %w: policy %q", u.Name, ErrInvalid, p)
		}
	}
	return nil
}

// UserDefaults are the settings of the users that have none of their own,
// kept once for the whole cluster (docs/design/meta.md, "Users").
type UserDefaults struct {
	// Policies is the cluster's allow-list for users without one of their
	// own (User.Policies); empty: each gateway's (--allow-policies).
	Policies []string  `json:"policies,omitempty"`
	Updated  time.Time `json:"updated"`
}

// Check reports why d cannot be stored (ErrInvalid), or nil.
func (d UserDefaults) Check() error {
	if len(d.Policies) > MaxUserPolicies {
		return fmt.Errorf("user defaults: %w: %d policies (at most %d)", ErrInvalid, len(d.Policies), MaxUserPolicies)
	}
	for _, p := range d.Policies {
		if p == "" || len(p) > 64 {
			return fmt.Errorf("user defaults: %w: policy %q", ErrInvalid, p)
		}
	}
	return nil
}
