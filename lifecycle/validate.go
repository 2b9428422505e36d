package lifecycle

import (
	"errors"
	"fmt"
	"time"

	"cairn"
)

// Validation errors, by the S3 error the gateway answers with.
var (
	// ErrMalformed: the configuration has an impossible shape (S3's
	// MalformedXML).
	ErrMalformed = errors.New("lifecycle: malformed configuration")
	// ErrInvalidArgument: a value is out of range (S3's InvalidArgument).
	ErrInvalidArgument = errors.New("lifecycle: invalid argument")
	// ErrInvalidRequest: the rules contradict each other or lack an
	// action (S3's InvalidRequest).
	ErrInvalidRequest = errors.New("lifecycle: invalid request")
	// ErrInvalidStorageClass: a transition names a class the cluster
	// does not have (S3's InvalidStorageClass).
	ErrInvalidStorageClass = errors.New("lifecycle: invalid storage class")
)

// Limits of a configuration, as S3's.
const (
	MaxRules         = 1000
	MaxIDLen         = 255
	MaxNewerVersions = 100
)

// Validate checks rules as S3 checks a PutBucketLifecycleConfiguration;
// hasClass reports whether a transition's storage class is one the
// cluster offers (STANDARD is never a transition target). The error wraps
// one of the sentinels above and says what is wrong.
func Validate(rules []cairn.LifecycleRule, hasClass func(string) bool) error {
	if len(rules) == 0 {
		return fmt.Errorf("%w: the configuration has no rule", ErrMalformed)
	}
	if len(rules) > MaxRules {
		return fmt.Errorf("%w: more than %d rules", ErrInvalidRequest, MaxRules)
	}
	ids := map[string]bool{}
	for i, r := range rules {
		if len(r.ID) > MaxIDLen {
			return fmt.Errorf("%w: ID length should not exceed allowed limit of %d", ErrInvalidArgument, MaxIDLen)
		}
		if r.ID != "" {
			if ids[r.ID] {
				return fmt.Errorf("%w: Rule ID must be unique. Found same ID for more than one rule", ErrInvalidArgument)
			}
			ids[r.ID] = true
		}
		if err := validateRule(r, hasClass); err != nil {
			return fmt.Errorf("rule %d (%q): %w", i+1, r.ID, err)
		}
	}
	return nil
}

func midnight(t time.Time) bool { return t.Equal(t.UTC().Truncate(24 * time.Hour)) }

func validateRule(r cairn.LifecycleRule, hasClass func(string) bool) error {
	f := r.Filter
	if f.SizeGreaterThan < 0 || f.SizeLessThan < 0 {
		return fmt.Errorf("%w: object size bounds must be non-negative", ErrInvalidArgument)
	}
	if f.SizeLessThan > 0 && f.SizeGreaterThan >= f.SizeLessThan {
		return fmt.Errorf("%w: ObjectSizeGreaterThan must be less than ObjectSizeLessThan", ErrInvalidArgument)
	}
	e := r.Expiration
	if r.Expiration == nil && r.NoncurrentExpiration == nil && r.AbortUploadDays == 0 &&
		len(r.Transitions) == 0 && len(r.NoncurrentTransitions) == 0 {
		return fmt.Errorf("%w: At least one action needs to be specified in a rule", ErrInvalidRequest)
	}
	if e != nil {
		n := 0
		for _, set := range []bool{e.Days != 0, !e.Date.IsZero(), e.ExpiredObjectDeleteMarker} {
			if set {
				n++
			}
		}
		switch {
		case n != 1:
			return fmt.Errorf("%w: Expiration takes exactly one of Days, Date and ExpiredObjectDeleteMarker", ErrMalformed)
		case e.Days < 0:
			return fmt.Errorf("%w: 'Days' for Expiration action must be a positive integer", ErrInvalidArgument)
		case !e.Date.IsZero() && !midnight(e.Date):
			return fmt.Errorf("%w: 'Date' must be at midnight GMT", ErrInvalidArgument)
		case e.ExpiredObjectDeleteMarker && len(f.Tags) > 0:
			return fmt.Errorf("%w: ExpiredObjectDeleteMarker cannot be specified with object tags", ErrInvalidRequest)
		}
	}
	if ne := r.NoncurrentExpiration; ne != nil {
		if ne.NoncurrentDays <= 0 {
			return fmt.Errorf("%w: 'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer", ErrInvalidArgument)
		}
		if ne.NewerNoncurrentVersions < 0 || ne.NewerNoncurrentVersions > MaxNewerVersions {
			return fmt.Errorf("%w: NewerNoncurrentVersions must be between 1 and %d", ErrInvalidArgument, MaxNewerVersions)
		}
	}
	if r.AbortUploadDays < 0 {
		return fmt.Errorf("%w: 'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer", ErrInvalidArgument)
	}
	if r.AbortUploadDays > 0 && len(f.Tags) > 0 {
		return fmt.Errorf("%w: AbortIncompleteMultipartUpload cannot be specified with Tags", ErrInvalidRequest)
	}
	for _, t := range r.Transitions {
		if err := validateTransition(t, false, hasClass); err != nil {
			return err
		}
		if e != nil && e.Days > 0 && t.Days > 0 && t.Days >= e.Days {
			return fmt.Errorf("%w: 'Days' in the Expiration action must be greater than 'Days' in the Transition action", ErrInvalidArgument)
		}
		if e != nil && !e.Date.IsZero() && !t.Date.IsZero() && !t.Date.Before(e.Date) {
			return fmt.Errorf("%w: 'Date' in the Expiration action must be later than 'Date' in the Transition action", ErrInvalidArgument)
		}
	}
	for _, t := range r.NoncurrentTransitions {
		if err := validateTransition(t, true, hasClass); err != nil {
			return err
		}
		if ne := r.NoncurrentExpiration; ne != nil && t.Days >= ne.NoncurrentDays {
			return fmt.Errorf("%w: 'NoncurrentDays' in the NoncurrentVersionExpiration action must be greater than 'NoncurrentDays' in the NoncurrentVersionTransition action", ErrInvalidArgument)
		}
	}
	if err := distinctClasses(r.Transitions); err != nil {
		return err
	}
	return distinctClasses(r.NoncurrentTransitions)
}

func validateTransition(t cairn.LifecycleTransition, noncurrent bool, hasClass func(string) bool) error {
	switch {
	case t.StorageClass == "" || t.StorageClass == "STANDARD" || !hasClass(t.StorageClass):
		return fmt.Errorf("%w: %q is not a storage class objects can transition to", ErrInvalidStorageClass, t.StorageClass)
	case noncurrent && (t.Days <= 0 || !t.Date.IsZero()):
		return fmt.Errorf("%w: 'NoncurrentDays' for NoncurrentVersionTransition action must be a positive integer", ErrInvalidArgument)
	case !noncurrent && t.Days != 0 && !t.Date.IsZero():
		return fmt.Errorf("%w: Transition takes one of Days and Date, not both", ErrMalformed)
	case t.Days < 0:
		return fmt.Errorf("%w: 'Days' for Transition action must be a non-negative integer", ErrInvalidArgument)
	case !t.Date.IsZero() && !midnight(t.Date):
		return fmt.Errorf("%w: 'Date' must be at midnight GMT", ErrInvalidArgument)
	case t.NewerNoncurrentVersions < 0 || t.NewerNoncurrentVersions > MaxNewerVersions:
		return fmt.Errorf("%w: NewerNoncurrentVersions must be between 1 and %d", ErrInvalidArgument, MaxNewerVersions)
	}
	return nil
}

func distinctClasses(ts []cairn.LifecycleTransition) error {
	seen := map[string]bool{}
	for _, t := range ts {
		if seen[t.StorageClass] {
			return fmt.Errorf("%w: 'StorageClass' must be different for each transition of a rule", ErrInvalidArgument)
		}
		seen[t.StorageClass] = true
	}
	return nil
}
