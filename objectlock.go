package cairn

// S3 Object Lock (docs/design/objectlock.md): a bucket's lock
// configuration, an object version's retention and legal hold, and the
// rules that say when a version may be deleted or its retention changed.
// The rules are pure functions of the stored records and a time, so the
// metadata store applies them inside the transaction that deletes or
// changes a version, and every other caller (lifecycle, tools) can ask
// them first.

import (
	"fmt"
	"time"
)

// Retention modes (S3's ObjectLockRetentionMode).
const (
	// LockGovernance: the version cannot be deleted and its retention not
	// shortened or removed before its date, except by a request that
	// bypasses governance (x-amz-bypass-governance-retention, with the
	// permission to).
	LockGovernance = "GOVERNANCE"
	// LockCompliance: nobody, root included, deletes the version or
	// shortens its retention before its date; the mode cannot change to
	// GOVERNANCE.
	LockCompliance = "COMPLIANCE"
)

// ObjectLock is a bucket's Object Lock configuration (Bucket.ObjectLock,
// non-nil once Object Lock is enabled: it never goes back to nil, and the
// bucket's versioning stays Enabled). Mode, with Days or Years (exactly
// one), is the default retention every new object version gets when its
// write names none; Mode "" means no default.
type ObjectLock struct {
	Mode  string `json:"mode,omitempty"`
	Days  int    `json:"days,omitempty"`
	Years int    `json:"years,omitempty"`
}

// MaxRetentionYears bounds a default retention period (S3 takes at most
// 100 years, or 36500 days).
const MaxRetentionYears = 100

// Check reports a configuration that cannot be stored: an unknown mode, a
// mode without exactly one positive period, a period without a mode, or
// a period longer than MaxRetentionYears. The error wraps ErrInvalid.
func (l ObjectLock) Check() error {
	switch {
	case l.Mode == "" && l.Days == 0 && l.Years == 0:
		return nil
	case l.Mode != LockGovernance && l.Mode != LockCompliance:
		return fmt.Errorf("%w: default retention mode %q", ErrInvalid, l.Mode)
	case (l.Days > 0) == (l.Years > 0) || l.Days < 0 || l.Years < 0:
		return fmt.Errorf("%w: default retention needs exactly one positive period, days or years (%d days, %d years)", ErrInvalid, l.Days, l.Years)
	case l.Days > MaxRetentionYears*365 || l.Years > MaxRetentionYears:
		return fmt.Errorf("%w: default retention longer than %d years", ErrInvalid, MaxRetentionYears)
	}
	return nil
}

// DefaultRetention returns the retention the bucket's default rule gives
// a version created at created (nil: no default rule).
func (l *ObjectLock) DefaultRetention(created time.Time) *Retention {
	if l == nil || l.Mode == "" {
		return nil
	}
	return &Retention{Mode: l.Mode, Until: created.UTC().AddDate(l.Years, 0, l.Days)}
}

// Retention is an object version's retention (Manifest.Retention): until
// Until, the version is protected as Mode says.
type Retention struct {
	Mode  string    `json:"mode"`
	Until time.Time `json:"until"`
}

// Check reports a retention that cannot be stored: an unknown mode or no
// date. The error wraps ErrInvalid.
func (r *Retention) Check() error {
	if r.Mode != LockGovernance && r.Mode != LockCompliance {
		return fmt.Errorf("%w: retention mode %q", ErrInvalid, r.Mode)
	}
	if r.Until.IsZero() {
		return fmt.Errorf("%w: retention without a date", ErrInvalid)
	}
	return nil
}

// active reports whether r protects its version at now.
func (r *Retention) active(now time.Time) bool { return r != nil && now.Before(r.Until) }

// CheckDelete reports whether the object version m may be deleted at now
// (removed for good: DeleteVersion, DeleteManifest, a null version
// replaced). A legal hold refuses it; so does a retention until a date
// after now, unless it is GOVERNANCE and bypassGovernance is set. The
// error wraps ErrLocked. A delete marker over m (it stays a noncurrent
// version) needs no check.
func (m *Manifest) CheckDelete(now time.Time, bypassGovernance bool) error {
	switch {
	case m.LegalHold:
		return fmt.Errorf("%w: %s/%s version %s is under a legal hold", ErrLocked, m.Bucket, m.Key, m.Version)
	case !m.Retention.active(now):
		return nil
	case m.Retention.Mode == LockGovernance && bypassGovernance:
		return nil
	}
	return fmt.Errorf("%w: %s/%s version %s is retained in %s mode until %s", ErrLocked, m.Bucket, m.Key, m.Version,
		m.Retention.Mode, m.Retention.Until.UTC().Format(time.RFC3339))
}

// LockChange changes an object version's retention and legal hold
// (meta.Store.SetObjectLock).
type LockChange struct {
	// SetRetention says Retention replaces the version's retention (nil:
	// removes it); false leaves the retention as it is.
	SetRetention bool
	Retention    *Retention
	// LegalHold, if set, turns the legal hold on or off.
	LegalHold *bool
	// BypassGovernance allows a GOVERNANCE retention in force to be
	// shortened or removed (the requester may bypass governance).
	BypassGovernance bool
}

// Apply returns the retention and legal hold of a version that has
// (old, hold) once c is applied at now, or an error: wrapping ErrInvalid
// for a retention that fails Check, ErrLocked for a change the version's
// retention in force forbids — shortening or removing it, or a COMPLIANCE
// retention becoming GOVERNANCE; a GOVERNANCE retention may be changed so
// with BypassGovernance. Extending a retention, or raising GOVERNANCE to
// COMPLIANCE, is always allowed.
func (c LockChange) Apply(old *Retention, hold bool, now time.Time) (*Retention, bool, error) {
	if c.LegalHold != nil {
		hold = *c.LegalHold
	}
	if !c.SetRetention {
		return old, hold, nil
	}
	r := c.Retention
	if r != nil {
		if err := r.Check(); err != nil {
			return nil, false, err
		}
		cp := *r
		cp.Until = cp.Until.UTC()
		r = &cp
	}
	if !old.active(now) || old.Mode == LockGovernance && c.BypassGovernance {
		return r, hold, nil
	}
	switch {
	case r == nil:
		return nil, false, fmt.Errorf("%w: the retention in %s mode until %s cannot be removed", ErrLocked, old.Mode, old.Until.UTC().Format(time.RFC3339))
	case r.Until.Before(old.Until):
		return nil, false, fmt.Errorf("%w: the retention in %s mode until %s cannot be shortened", ErrLocked, old.Mode, old.Until.UTC().Format(time.RFC3339))
	case old.Mode == LockCompliance && r.Mode != LockCompliance:
		return nil, false, fmt.Errorf("%w: a COMPLIANCE retention cannot become %s", ErrLocked, r.Mode)
	}
	return r, hold, nil
}

// SameLock reports whether a and b have the same retention and legal
// hold: only meta.Store.SetObjectLock changes them on a stored version.
func SameLock(a, b *Manifest) bool {
	if a.LegalHold != b.LegalHold || (a.Retention == nil) != (b.Retention == nil) {
		return false
	}
	return a.Retention == nil || a.Retention.Mode == b.Retention.Mode && a.Retention.Until.Equal(b.Retention.Until)
}
