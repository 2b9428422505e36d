package meta

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cairn"
)

// CheckManifest returns an error wrapping cairn.ErrInvalid if m cannot be
// committed: m is nil or fails (*cairn.Manifest).Validate. Store
// implementations call it first in CommitManifest, CompleteUpload and
// UpdateManifest.
func CheckManifest(m *cairn.Manifest) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("commit: encoding manifest of %s/%s: %w", m.Bucket, m.Key, err)
	}
	return CheckManifestBytes(m, len(b))
}

// CheckCampaign returns an error wrapping cairn.ErrInvalid if role or id
// is empty.
func CheckCampaign(role, id string) error {
	if role == "" || id == "" {
		return fmt.Errorf("campaign: %w: role %q, id %q: both must be non-empty", cairn.ErrInvalid, role, id)
	}
	return nil
}

// CheckUpload returns an error wrapping cairn.ErrInvalid if u cannot be
// recorded: an empty bucket, an ID that is empty or contains "/", or a key
// that fails cairn.ValidateKey.
func CheckUpload(u cairn.Upload) error {
	if u.Bucket == "" || u.ID == "" || strings.Contains(u.ID, "/") {
		return fmt.Errorf("create upload %q in bucket %q: %w: bad bucket or upload ID", u.ID, u.Bucket, cairn.ErrInvalid)
	}
	if err := cairn.ValidateKey(u.Key); err != nil {
		return fmt.Errorf("create upload in bucket %s: %w", u.Bucket, err)
	}
	return nil
}

// CheckUploadEncryption returns an error wrapping cairn.ErrInvalid unless
// e can replace an upload's encryption record prev: both set, the same
// scheme and cipher, e with a sealed key (and for SSE-S3 its key ID).
func CheckUploadEncryption(e, prev *cairn.Encryption) error {
	switch {
	case e == nil || prev == nil:
		return fmt.Errorf("update upload encryption: %w: nothing to re-seal", cairn.ErrInvalid)
	case e.Scheme != prev.Scheme || e.Cipher != prev.Cipher:
		return fmt.Errorf("update upload encryption: %w: scheme %s/%s cannot become %s/%s", cairn.ErrInvalid, prev.Scheme, prev.Cipher, e.Scheme, e.Cipher)
	case len(e.SealedKey) == 0 || e.Scheme == cairn.SSES3 && e.KeyID == "":
		return fmt.Errorf("update upload encryption: %w: without a sealed key or key ID", cairn.ErrInvalid)
	}
	return nil
}

// CheckPart returns an error wrapping cairn.ErrInvalid if p cannot be
// recorded: it fails (*cairn.Part).Validate.
func CheckPart(p cairn.Part) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("put part: %w", err)
	}
	return nil
}

// CompareUploads orders uploads by bucket, key, creation time and ID (the
// order of Store.Uploads).
func CompareUploads(a, b cairn.Upload) int {
	return cmp.Or(cmp.Compare(a.Bucket, b.Bucket), cmp.Compare(a.Key, b.Key), a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
}

// CheckUpdate returns an error wrapping cairn.ErrInvalid unless m is a
// valid manifest for the same object version as prev, with its Object
// Lock (cairn.SameLock).
func CheckUpdate(m, prev *cairn.Manifest) error {
	if err := CheckManifest(m); err != nil {
		return err
	}
	if prev == nil || prev.Bucket != m.Bucket || prev.Key != m.Key || prev.Version != m.Version {
		return fmt.Errorf("update %s/%s: %w: the previous manifest is of another object version", m.Bucket, m.Key, cairn.ErrInvalid)
	}
	if !cairn.SameLock(m, prev) {
		return fmt.Errorf("update %s/%s: %w: an update cannot change the object lock (SetObjectLock does)", m.Bucket, m.Key, cairn.ErrInvalid)
	}
	return nil
}

// CheckRepairTask returns an error wrapping cairn.ErrInvalid if t cannot
// be queued.
func CheckRepairTask(t cairn.RepairTask) error {
	if t.ID == "" || strings.Contains(t.ID, "/") {
		return fmt.Errorf("repair task: %w: bad ID %q", cairn.ErrInvalid, t.ID)
	}
	return nil
}

// SortRepairTasks orders tasks riskiest first (Risk, Created, ID).
func SortRepairTasks(ts []cairn.RepairTask) {
	slices.SortFunc(ts, CompareRepairTasks)
}

// CompareRepairTasks is SortRepairTasks' order: the queue's order.
func CompareRepairTasks(a, b cairn.RepairTask) int {
	if c := cmp.Compare(a.Risk, b.Risk); c != 0 {
		return c
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// CheckBucketEncryption checks a bucket's default encryption scheme: ""
// or cairn.SSES3 (SSE-C needs the customer's key with every request, so it
// cannot be a default). The error wraps cairn.ErrInvalid.
func CheckBucketEncryption(scheme string) error {
	if scheme != "" && scheme != cairn.SSES3 {
		return fmt.Errorf("%w: bucket default encryption %q (want %q or none)", cairn.ErrInvalid, scheme, cairn.SSES3)
	}
	return nil
}

// CheckDamageLimit returns an error wrapping cairn.ErrInvalid unless
// limit ≥ 1.
func CheckDamageLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("damages: %w: limit %d (at least 1)", cairn.ErrInvalid, limit)
	}
	return nil
}

// CheckScrubProgress returns an error wrapping cairn.ErrInvalid unless p
// names a disk.
func CheckScrubProgress(p cairn.ScrubProgress) error {
	if p.Disk == "" {
		return fmt.Errorf("scrub progress: %w: no disk", cairn.ErrInvalid)
	}
	return nil
}

// SameUser reports whether a and b are the same user record, field by
// field (times by Equal): the compare of UpdateUser.
func SameUser(a, b cairn.User) bool {
	return a.Name == b.Name && a.AccessKey == b.AccessKey && bytes.Equal(a.SealedSecret, b.SealedSecret) &&
		a.Root == b.Root && slices.Equal(a.Policies, b.Policies) && a.Created.Equal(b.Created) && a.Updated.Equal(b.Updated)
}

// CheckUserUpdate is UpdateUser's check of its arguments: u is valid and
// keeps prev's name.
func CheckUserUpdate(u, prev cairn.User) error {
	if err := u.Check(); err != nil {
		return fmt.Errorf("update user: %w", err)
	}
	if u.Name != prev.Name {
		return fmt.Errorf("update user %s: %w: renames %s", u.Name, cairn.ErrInvalid, prev.Name)
	}
	return nil
}
