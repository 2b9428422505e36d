package lifecycle

import (
	"strings"
	"time"

	"cairn"
)

// Kind is what an action does.
type Kind string

// The actions.
const (
	// ActExpire expires the current version of Key: a delete (a delete
	// marker in a bucket whose versioning was ever set).
	ActExpire Kind = "expire"
	// ActDeleteVersion deletes the noncurrent version Version for good.
	ActDeleteVersion Kind = "delete-version"
	// ActDeleteMarker removes the expired delete marker Version.
	ActDeleteMarker Kind = "delete-marker"
	// ActAbortUpload aborts the multipart upload Version (its upload ID).
	ActAbortUpload Kind = "abort-upload"
	// ActTransition moves version Version to StorageClass.
	ActTransition Kind = "transition"
)

// Action is one thing due. Rule is the ID of the rule that asks for it.
type Action struct {
	Kind         Kind
	Key          string
	Version      string // internal version (ActDeleteVersion, ActDeleteMarker, ActTransition), upload ID (ActAbortUpload)
	StorageClass string // ActTransition
	Rule         string
}

// Object is one version as the rules see it.
type Object struct {
	Key     string
	Version string // internal version
	ID      string // S3 version ID: Version, or cairn.NullVersionID
	Size    int64
	Created time.Time
	// Class is the version's storage class (ActTransition is not due
	// for a version already there).
	Class  string
	Marker bool // a delete marker
	Latest bool // the current version
	// NoncurrentSince is when the next newer version was created (zero
	// for the current version).
	NoncurrentSince time.Time
	// NewerNoncurrent is how many noncurrent versions of the key are
	// newer than this one.
	NewerNoncurrent int
	// Alone: a current delete marker with no other version of its key.
	Alone bool
	// Tags are the version's tags; needed only where NeedsTags.
	Tags map[string]string
}

// DueAt is when an action of days days on something that started at t
// is due: t plus days, rounded up to the next midnight UTC, as S3 rounds
// (0 days: t itself, a transition due at once).
func DueAt(t time.Time, days int) time.Time {
	if days == 0 {
		return t
	}
	return t.UTC().AddDate(0, 0, days).Truncate(24*time.Hour).AddDate(0, 0, 1)
}

// NeedsTags reports whether any enabled rule filters by tags (the runner
// must then fill Object.Tags).
func NeedsTags(rules []cairn.LifecycleRule) bool {
	for _, r := range rules {
		if r.Enabled && len(r.Filter.Tags) > 0 {
			return true
		}
	}
	return false
}

// NeedsTagsFor reports whether an enabled rule with a tag filter could
// apply to key (its prefix matches): only then must the runner read the
// version's tags.
func NeedsTagsFor(rules []cairn.LifecycleRule, key string) bool {
	for _, r := range rules {
		if r.Enabled && len(r.Filter.Tags) > 0 && strings.HasPrefix(key, r.Filter.Prefix) {
			return true
		}
	}
	return false
}

// matches reports whether o is in the scope of filter f. A delete marker
// has no tags or size: a tag or size condition never holds for it.
func matches(f cairn.LifecycleFilter, o Object) bool {
	if !strings.HasPrefix(o.Key, f.Prefix) {
		return false
	}
	if o.Marker && (len(f.Tags) > 0 || f.SizeGreaterThan > 0 || f.SizeLessThan > 0) {
		return false
	}
	for k, v := range f.Tags {
		if got, ok := o.Tags[k]; !ok || got != v {
			return false
		}
	}
	if f.SizeGreaterThan > 0 && o.Size <= f.SizeGreaterThan {
		return false
	}
	if f.SizeLessThan > 0 && o.Size >= f.SizeLessThan {
		return false
	}
	return true
}

// Evaluate returns what is due for o at now under rules: at most one
// action, the one that removes most (a deletion wins over a transition,
// as S3 resolves overlapping rules), and among transitions the one due
// last (the object's final class by now). Disabled rules never act.
func Evaluate(rules []cairn.LifecycleRule, o Object, now time.Time) []Action {
	var del, move *Action
	var moveAt time.Time
	for _, r := range rules {
		if !r.Enabled || !matches(r.Filter, o) {
			continue
		}
		act := func(k Kind, class string) *Action {
			return &Action{Kind: k, Key: o.Key, Version: o.Version, StorageClass: class, Rule: r.ID}
		}
		switch {
		case o.Latest && o.Marker:
			if e := r.Expiration; e != nil && e.ExpiredObjectDeleteMarker && o.Alone {
				del = act(ActDeleteMarker, "")
			}
		case o.Latest:
			if e := r.Expiration; e != nil && del == nil {
				if (e.Days > 0 && !now.Before(DueAt(o.Created, e.Days))) || (!e.Date.IsZero() && !now.Before(e.Date)) {
					del = act(ActExpire, "")
				}
			}
			for _, t := range r.Transitions {
				at := t.Date
				if at.IsZero() {
					at = DueAt(o.Created, t.Days)
				}
				if !now.Before(at) && t.StorageClass != o.Class && (move == nil || at.After(moveAt)) {
					move, moveAt = act(ActTransition, t.StorageClass), at
				}
			}
		default: // noncurrent, a version or a marker
			if ne := r.NoncurrentExpiration; ne != nil && o.NewerNoncurrent >= ne.NewerNoncurrentVersions &&
				!now.Before(DueAt(o.NoncurrentSince, ne.NoncurrentDays)) {
				k := ActDeleteVersion
				if o.Marker {
					k = ActDeleteMarker
				}
				del = act(k, "")
			}
			for _, t := range r.NoncurrentTransitions {
				at := DueAt(o.NoncurrentSince, t.Days)
				if !o.Marker && o.NewerNoncurrent >= t.NewerNoncurrentVersions && !now.Before(at) &&
					t.StorageClass != o.Class && (move == nil || at.After(moveAt)) {
					move, moveAt = act(ActTransition, t.StorageClass), at
				}
			}
		}
	}
	switch {
	case del != nil:
		return []Action{*del}
	case move != nil:
		return []Action{*move}
	}
	return nil
}

// EvaluateUpload returns the abort due for the multipart upload id of key
// initiated at initiated, if any rule's AbortUploadDays has passed. Tag
// and size conditions never hold for an upload (S3 refuses
// AbortIncompleteMultipartUpload with tags).
func EvaluateUpload(rules []cairn.LifecycleRule, key, id string, initiated, now time.Time) []Action {
	for _, r := range rules {
		f := r.Filter
		if !r.Enabled || r.AbortUploadDays == 0 || !strings.HasPrefix(key, f.Prefix) || f.SizeGreaterThan > 0 || f.SizeLessThan > 0 {
			continue
		}
		if !now.Before(DueAt(initiated, r.AbortUploadDays)) {
			return []Action{{Kind: ActAbortUpload, Key: key, Version: id, Rule: r.ID}}
		}
	}
	return nil
}

// Scanner turns the versions of a listing (keys in order, each key's
// versions newest first, possibly across pages) into Objects: it knows
// when each version became noncurrent, how many noncurrent versions are
// newer, and whether a current delete marker stands alone, which needs
// the next version: so a current marker is yielded with the next call
// (or Flush). The zero Scanner is ready.
type Scanner struct {
	key        string
	prev       time.Time // Created of the previous (newer) version of key
	noncurrent int       // noncurrent versions of key yielded so far
	pending    *Object   // a current marker waiting to learn if it is alone
	started    bool
}

// Add takes the next version of the listing and returns the Objects now
// complete (zero, one or two).
func (s *Scanner) Add(v cairn.ObjectVersion, class string) []Object {
	var out []Object
	if !s.started || v.Key != s.key {
		out = s.Flush()
		s.key, s.noncurrent, s.started = v.Key, 0, true
		s.prev = time.Time{}
	} else if s.pending != nil {
		s.pending.Alone = false // a version follows
		out = append(out, *s.pending)
		s.pending = nil
	}
	created := v.Created
	if !v.Marker {
		created = v.Info.Created
	}
	o := Object{Key: v.Key, Version: v.Version, ID: v.ID(), Size: v.Info.Size, Created: created, Class: class, Marker: v.Marker, Latest: v.Latest}
	if !v.Latest {
		o.NoncurrentSince = s.prev
		if o.NoncurrentSince.IsZero() { // the listing started inside the key: the best bound is its own creation
			o.NoncurrentSince = created
		}
		o.NewerNoncurrent = s.noncurrent
		s.noncurrent++
	}
	s.prev = created
	if v.Latest && v.Marker {
		o.Alone = true
		s.pending = &o
		return out
	}
	return append(out, o)
}

// Key is the key of the last version added ("" before the first).
func (s *Scanner) Key() string { return s.key }

// Flush returns the Object held back (a current delete marker with no
// version after it: alone). Call it after the listing's last page.
func (s *Scanner) Flush() []Object {
	if s.pending == nil {
		return nil
	}
	o := *s.pending
	s.pending = nil
	return []Object{o}
}
