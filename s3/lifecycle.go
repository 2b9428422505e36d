package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"cairn"
	"cairn/lifecycle"
)

// Lifecycle configuration (docs/design/s3.md, "Lifecycle"):
// Put/Get/DeleteBucketLifecycleConfiguration on ?lifecycle. The rules
// live in the bucket record (cairn.Bucket.Lifecycle), validated by
// package lifecycle as S3 validates them; the director's lifecycle runner
// applies them.

// ErrNoSuchLifecycleConfiguration answers a GET of a bucket without rules.
var ErrNoSuchLifecycleConfiguration = &Error{"NoSuchLifecycleConfiguration", http.StatusNotFound, "The lifecycle configuration does not exist"}

// lifecycleXML is the document of Put/GetBucketLifecycleConfiguration.
// Pointers tell an element that is absent from one that is empty.
type lifecycleXML struct {
	XMLName xml.Name  `xml:"LifecycleConfiguration"`
	NS      string    `xml:"xmlns,attr,omitempty"`
	Rules   []ruleXML `xml:"Rule"`
}

type ruleXML struct {
	ID                    string                    `xml:"ID,omitempty"`
	Filter                *filterXML                `xml:"Filter"`
	Prefix                *string                   `xml:"Prefix"` // the older form of Filter
	Status                string                    `xml:"Status"`
	Transitions           []transitionXML           `xml:"Transition"`
	NoncurrentTransitions []transitionXML           `xml:"NoncurrentVersionTransition"`
	Expiration            *expirationXML            `xml:"Expiration"`
	NoncurrentExpiration  *noncurrentExpirationXML  `xml:"NoncurrentVersionExpiration"`
	AbortUpload           *abortIncompleteUploadXML `xml:"AbortIncompleteMultipartUpload"`
}

type filterXML struct {
	Prefix          *string `xml:"Prefix"`
	Tag             *tag    `xml:"Tag"`
	SizeGreaterThan *int64  `xml:"ObjectSizeGreaterThan"`
	SizeLessThan    *int64  `xml:"ObjectSizeLessThan"`
	And             *andXML `xml:"And"`
}

type andXML struct {
	Prefix          *string `xml:"Prefix"`
	Tags            []tag   `xml:"Tag"`
	SizeGreaterThan *int64  `xml:"ObjectSizeGreaterThan"`
	SizeLessThan    *int64  `xml:"ObjectSizeLessThan"`
}

type transitionXML struct {
	Date                    string `xml:"Date,omitempty"`
	Days                    *int   `xml:"Days"`
	NoncurrentDays          *int   `xml:"NoncurrentDays"`
	NewerNoncurrentVersions *int   `xml:"NewerNoncurrentVersions"`
	StorageClass            string `xml:"StorageClass"`
}

type expirationXML struct {
	Date                      string `xml:"Date,omitempty"`
	Days                      *int   `xml:"Days"`
	ExpiredObjectDeleteMarker *bool  `xml:"ExpiredObjectDeleteMarker"`
}

type noncurrentExpirationXML struct {
	NoncurrentDays          *int `xml:"NoncurrentDays"`
	NewerNoncurrentVersions *int `xml:"NewerNoncurrentVersions"`
}

type abortIncompleteUploadXML struct {
	DaysAfterInitiation *int `xml:"DaysAfterInitiation"`
}

// bucketLifecycle serves GET, PUT and DELETE ?lifecycle.
func (h *Handler) bucketLifecycle(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	ctx := q.r.Context()
	switch q.r.Method {
	case http.MethodGet:
		if len(b.Lifecycle) == 0 {
			return ErrNoSuchLifecycleConfiguration
		}
		return h.writeXML(q, http.StatusOK, renderLifecycle(b.Lifecycle))
	case http.MethodPut:
		var doc lifecycleXML
		if err := h.readXML(q, &doc); err != nil {
			return err
		}
		rules, err := parseLifecycle(doc)
		if err != nil {
			return err
		}
		hasClass := func(c string) bool { _, ok := h.cfg.StorageClasses[c]; return ok }
		if err := lifecycle.Validate(rules, hasClass); err != nil {
			return lifecycleErr(err)
		}
		if err := h.cfg.Meta.SetBucketLifecycle(ctx, q.bucket, rules); err != nil {
			return h.bucketErr(err)
		}
		q.w.WriteHeader(http.StatusOK)
		return nil
	case http.MethodDelete:
		if err := h.cfg.Meta.SetBucketLifecycle(ctx, q.bucket, nil); err != nil {
			return h.bucketErr(err)
		}
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return ErrMethodNotAllowed
}

// lifecycleErr maps a lifecycle.Validate error to its S3 error.
func lifecycleErr(err error) error {
	for sentinel, e := range map[error]*Error{
		lifecycle.ErrMalformed: ErrMalformedXML, lifecycle.ErrInvalidArgument: ErrInvalidArgument,
		lifecycle.ErrInvalidRequest: ErrInvalidRequest, lifecycle.ErrInvalidStorageClass: ErrInvalidStorageClass,
	} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("%w: %v", e, err)
		}
	}
	return err
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformedXML}, args...)...)
}

// lifecycleDate parses a rule's Date (ISO 8601, S3 takes midnight UTC).
func lifecycleDate(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		if t, err = time.Parse("2006-01-02", s); err != nil {
			return t, fmt.Errorf("%w: Date %q is not ISO 8601", ErrInvalidArgument, s)
		}
	}
	return t.UTC(), nil
}

// positive reads a Days-like element that must be at least min.
func positive(v *int, min int, what string) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < min {
		return 0, fmt.Errorf("%w: '%s' must be an integer of at least %d", ErrInvalidArgument, what, min)
	}
	return *v, nil
}

// parseLifecycle turns the document into rules, checking its shape: a
// rule has one Filter or one Prefix, a Filter at most one predicate (or
// And), Status is Enabled or Disabled (else MalformedXML); Days values in
// range (InvalidArgument). lifecycle.Validate checks the rest.
func parseLifecycle(doc lifecycleXML) ([]cairn.LifecycleRule, error) {
	if len(doc.Rules) == 0 {
		return nil, malformed("the configuration has no Rule")
	}
	var rules []cairn.LifecycleRule
	for _, x := range doc.Rules {
		r := cairn.LifecycleRule{ID: x.ID}
		switch x.Status {
		case "Enabled":
			r.Enabled = true
		case "Disabled":
		default:
			return nil, malformed("Status must be Enabled or Disabled, not %q", x.Status)
		}
		switch {
		case x.Filter != nil && x.Prefix != nil:
			return nil, malformed("a rule has a Filter or a Prefix, not both")
		case x.Prefix != nil:
			r.Filter.Prefix = *x.Prefix
		case x.Filter != nil:
			f, err := parseFilter(*x.Filter)
			if err != nil {
				return nil, err
			}
			r.Filter = f
		default:
			return nil, malformed("a rule needs a Filter (or a Prefix)")
		}
		if e := x.Expiration; e != nil {
			r.Expiration = &cairn.LifecycleExpiration{}
			days, err := positive(e.Days, 1, "Days' for Expiration action")
			if err != nil {
				return nil, err
			}
			r.Expiration.Days = days
			if e.Date != "" {
				if r.Expiration.Date, err = lifecycleDate(e.Date); err != nil {
					return nil, err
				}
			}
			r.Expiration.ExpiredObjectDeleteMarker = e.ExpiredObjectDeleteMarker != nil && *e.ExpiredObjectDeleteMarker
			if e.ExpiredObjectDeleteMarker != nil && !*e.ExpiredObjectDeleteMarker && e.Days == nil && e.Date == "" {
				r.Expiration = nil // <ExpiredObjectDeleteMarker>false</…> alone asks for nothing
			}
		}
		if ne := x.NoncurrentExpiration; ne != nil {
			if ne.NoncurrentDays == nil {
				return nil, malformed("NoncurrentVersionExpiration needs NoncurrentDays")
			}
			days, err := positive(ne.NoncurrentDays, 1, "NoncurrentDays")
			if err != nil {
				return nil, err
			}
			newer, err := positive(ne.NewerNoncurrentVersions, 1, "NewerNoncurrentVersions")
			if err != nil {
				return nil, err
			}
			r.NoncurrentExpiration = &cairn.NoncurrentExpiration{NoncurrentDays: days, NewerNoncurrentVersions: newer}
		}
		if a := x.AbortUpload; a != nil {
			if a.DaysAfterInitiation == nil {
				return nil, malformed("AbortIncompleteMultipartUpload needs DaysAfterInitiation")
			}
			days, err := positive(a.DaysAfterInitiation, 1, "DaysAfterInitiation")
			if err != nil {
				return nil, err
			}
			r.AbortUploadDays = days
		}
		for _, t := range x.Transitions {
			if t.Days == nil && t.Date == "" {
				return nil, malformed("Transition needs Days or Date")
			}
			days, err := positive(t.Days, 0, "Days' for Transition action")
			if err != nil {
				return nil, err
			}
			lt := cairn.LifecycleTransition{Days: days, StorageClass: t.StorageClass}
			if t.Date != "" {
				if lt.Date, err = lifecycleDate(t.Date); err != nil {
					return nil, err
				}
			}
			r.Transitions = append(r.Transitions, lt)
		}
		for _, t := range x.NoncurrentTransitions {
			if t.NoncurrentDays == nil {
				return nil, malformed("NoncurrentVersionTransition needs NoncurrentDays")
			}
			days, err := positive(t.NoncurrentDays, 1, "NoncurrentDays")
			if err != nil {
				return nil, err
			}
			newer, err := positive(t.NewerNoncurrentVersions, 1, "NewerNoncurrentVersions")
			if err != nil {
				return nil, err
			}
			r.NoncurrentTransitions = append(r.NoncurrentTransitions, cairn.LifecycleTransition{Days: days, StorageClass: t.StorageClass, NewerNoncurrentVersions: newer})
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// parseFilter reads a Filter: at most one of Prefix, Tag, the size
// bounds and And.
func parseFilter(x filterXML) (cairn.LifecycleFilter, error) {
	var f cairn.LifecycleFilter
	n := 0
	for _, set := range []bool{x.Prefix != nil, x.Tag != nil, x.SizeGreaterThan != nil, x.SizeLessThan != nil, x.And != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return f, malformed("a Filter holds one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan and And; use And for several")
	}
	prefix, tags, gt, lt := x.Prefix, []tag(nil), x.SizeGreaterThan, x.SizeLessThan
	if x.Tag != nil {
		tags = []tag{*x.Tag}
	}
	if a := x.And; a != nil {
		prefix, tags, gt, lt = a.Prefix, a.Tags, a.SizeGreaterThan, a.SizeLessThan
	}
	if prefix != nil {
		f.Prefix = *prefix
	}
	if len(tags) > 0 {
		m, err := tagSet(tags, maxObjectTags, ErrTooManyObjectTags)
		if err != nil {
			return f, err
		}
		f.Tags = m
	}
	for _, b := range []*int64{gt, lt} {
		if b != nil && *b < 0 {
			return f, fmt.Errorf("%w: object size bounds must be non-negative", ErrInvalidArgument)
		}
	}
	if gt != nil {
		f.SizeGreaterThan = *gt
	}
	if lt != nil {
		f.SizeLessThan = *lt
	}
	return f, nil
}

func intp(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func int64p(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func dateString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// renderLifecycle is the document GetBucketLifecycleConfiguration returns:
// each rule's Filter in the newer form (And when it has several
// conditions).
func renderLifecycle(rules []cairn.LifecycleRule) lifecycleXML {
	doc := lifecycleXML{NS: s3NS}
	for _, r := range rules {
		x := ruleXML{ID: r.ID, Status: "Disabled", Filter: &filterXML{}}
		if r.Enabled {
			x.Status = "Enabled"
		}
		f := r.Filter
		n := len(f.Tags)
		for _, set := range []bool{f.Prefix != "", f.SizeGreaterThan > 0, f.SizeLessThan > 0} {
			if set {
				n++
			}
		}
		var tags []tag
		for _, k := range slices.Sorted(maps.Keys(f.Tags)) {
			tags = append(tags, tag{k, f.Tags[k]})
		}
		switch {
		case n > 1:
			a := &andXML{Tags: tags, SizeGreaterThan: int64p(f.SizeGreaterThan), SizeLessThan: int64p(f.SizeLessThan)}
			if f.Prefix != "" {
				a.Prefix = &f.Prefix
			}
			x.Filter.And = a
		case len(tags) == 1:
			x.Filter.Tag = &tags[0]
		case f.SizeGreaterThan > 0:
			x.Filter.SizeGreaterThan = &f.SizeGreaterThan
		case f.SizeLessThan > 0:
			x.Filter.SizeLessThan = &f.SizeLessThan
		default:
			p := f.Prefix
			x.Filter.Prefix = &p
		}
		if e := r.Expiration; e != nil {
			xe := &expirationXML{Days: intp(e.Days), Date: dateString(e.Date)}
			if e.ExpiredObjectDeleteMarker {
				t := true
				xe.ExpiredObjectDeleteMarker = &t
			}
			x.Expiration = xe
		}
		if ne := r.NoncurrentExpiration; ne != nil {
			x.NoncurrentExpiration = &noncurrentExpirationXML{NoncurrentDays: intp(ne.NoncurrentDays), NewerNoncurrentVersions: intp(ne.NewerNoncurrentVersions)}
		}
		if r.AbortUploadDays > 0 {
			x.AbortUpload = &abortIncompleteUploadXML{DaysAfterInitiation: intp(r.AbortUploadDays)}
		}
		for _, t := range r.Transitions {
			xt := transitionXML{Date: dateString(t.Date), StorageClass: t.StorageClass}
			if t.Date.IsZero() {
				d := t.Days
				xt.Days = &d
			}
			x.Transitions = append(x.Transitions, xt)
		}
		for _, t := range r.NoncurrentTransitions {
			x.NoncurrentTransitions = append(x.NoncurrentTransitions, transitionXML{NoncurrentDays: intp(t.Days),
				NewerNoncurrentVersions: intp(t.NewerNoncurrentVersions), StorageClass: t.StorageClass})
		}
		doc.Rules = append(doc.Rules, x)
	}
	return doc
}
