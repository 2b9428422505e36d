package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"cairn"
)

// Tagging (docs/design/s3.md, "Tagging"): an object's tags live in its
// manifest (cairn.Manifest.Tags) and go with its version: an overwrite
// without x-amz-tagging leaves the new object untagged. A bucket's live
// in its record (cairn.Bucket.Tags). S3's limits and errors:
const (
	maxObjectTags  = 10
	maxBucketTags  = 50
	maxTagKeyLen   = 128 // characters
	maxTagValueLen = 256 // characters
)

// Tagging errors, as S3 answers them.
var (
	ErrTooManyObjectTags = &Error{"BadRequest", http.StatusBadRequest, "Object tags cannot be greater than 10"}
	ErrTooManyBucketTags = &Error{"BadRequest", http.StatusBadRequest, "Bucket tag count cannot be greater than 50"}
	ErrInvalidTag        = &Error{"InvalidTag", http.StatusBadRequest, "The tag provided was not a valid tag."}
	ErrNoSuchTagSet      = &Error{"NoSuchTagSet", http.StatusNotFound, "The TagSet does not exist"}
)

// tagging is the XML document of Put/Get…Tagging.
type tagging struct {
	XMLName xml.Name `xml:"Tagging"`
	NS      string   `xml:"xmlns,attr,omitempty"`
	TagSet  []tag    `xml:"TagSet>Tag"`
}

type tag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

// tagChar reports whether S3 accepts r in a tag key or value: letters,
// digits, spaces and + - = . _ : / @.
func tagChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r) || unicode.IsMark(r) || strings.ContainsRune("+-=._:/@", r)
}

// checkTag checks one tag against S3's rules.
func checkTag(k, v string) error {
	switch n := utf8.RuneCountInString(k); {
	case n == 0:
		return fmt.Errorf("%w: The TagKey you have provided is invalid (empty)", ErrInvalidTag)
	case n > maxTagKeyLen:
		return fmt.Errorf("%w: The TagKey you have provided is too long, max %d", ErrInvalidTag, maxTagKeyLen)
	case strings.HasPrefix(strings.ToLower(k), "aws:"):
		return fmt.Errorf("%w: Your TagKey cannot be prefixed with \"aws:\"", ErrInvalidTag)
	}
	if utf8.RuneCountInString(v) > maxTagValueLen {
		return fmt.Errorf("%w: The TagValue you have provided is too long, max %d", ErrInvalidTag, maxTagValueLen)
	}
	if !utf8.ValidString(k) || strings.IndexFunc(k, func(r rune) bool { return !tagChar(r) }) >= 0 {
		return fmt.Errorf("%w: The TagKey you have provided is invalid", ErrInvalidTag)
	}
	if !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return !tagChar(r) }) >= 0 {
		return fmt.Errorf("%w: The TagValue you have provided is invalid", ErrInvalidTag)
	}
	return nil
}

// tagSet turns tags into a map: at most limit of them (tooMany), each
// valid and with a key of its own. An empty set is nil.
func tagSet(tags []tag, limit int, tooMany error) (map[string]string, error) {
	if len(tags) > limit {
		return nil, tooMany
	}
	if len(tags) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		if err := checkTag(t.Key, t.Value); err != nil {
			return nil, err
		}
		if _, dup := m[t.Key]; dup {
			return nil, fmt.Errorf("%w: Cannot provide multiple Tags with the same key", ErrInvalidTag)
		}
		m[t.Key] = t.Value
	}
	return m, nil
}

// headerTags parses x-amz-tagging, a URL query string ("k1=v1&k2=v2"),
// with the object limits: InvalidArgument if it is not one.
func headerTags(hd http.Header) (map[string]string, error) {
	v, ok := hd["X-Amz-Tagging"]
	if !ok || len(v) == 0 || v[0] == "" {
		return nil, nil
	}
	var tags []tag
	for part := range strings.SplitSeq(v[0], "&") {
		if part == "" {
			continue
		}
		k, val, _ := strings.Cut(part, "=")
		dk, err1 := url.QueryUnescape(k)
		dv, err2 := url.QueryUnescape(val)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates", ErrInvalidArgument)
		}
		tags = append(tags, tag{dk, dv})
	}
	return tagSet(tags, maxObjectTags, ErrTooManyObjectTags)
}

// tagList is tags as a TagSet, sorted by key (S3 keeps no order).
func tagList(tags map[string]string) []tag {
	out := []tag{}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, tag{k, tags[k]})
	}
	return out
}

// setTagCount sets x-amz-tagging-count on a GET or HEAD of a tagged
// object (S3 omits it for none).
func setTagCount(w http.ResponseWriter, m *cairn.Manifest) {
	if len(m.Tags) > 0 {
		w.Header().Set("X-Amz-Tagging-Count", strconv.Itoa(len(m.Tags)))
	}
}

// objectTagging serves GET, PUT and DELETE ?tagging of an object: of the
// version ?versionId= names, else the current one. PUT and DELETE change
// the current version only (a versionId naming another →
// NotImplemented, rather than tagging a version that was not asked for).
func (h *Handler) objectTagging(q *request) error {
	if err := h.checkBucket(q, q.bucket); err != nil {
		return err
	}
	ctx := q.r.Context()
	vid := q.r.URL.Query().Get("versionId")
	var target string // the version a PUT or DELETE with versionId must change
	if vid != "" || q.r.Method == http.MethodGet {
		m, err := h.statVersion(ctx, q.w, q.bucket, q.key, vid)
		if err != nil {
			return err
		}
		if vid != "" {
			q.w.Header().Set("X-Amz-Version-Id", m.VersionID())
		}
		if q.r.Method == http.MethodGet {
			return h.writeXML(q, http.StatusOK, tagging{NS: s3NS, TagSet: tagList(m.Tags)})
		}
		target = m.Version
	}
	var tags map[string]string
	switch q.r.Method {
	case http.MethodPut:
		var t tagging
		if err := h.readXML(q, &t); err != nil {
			return err
		}
		var err error
		if tags, err = tagSet(t.TagSet, maxObjectTags, ErrTooManyObjectTags); err != nil {
			return err
		}
	case http.MethodDelete:
	default:
		return ErrMethodNotAllowed
	}
	if err := h.setObjectTags(q, target, tags); err != nil {
		return err
	}
	if q.r.Method == http.MethodDelete {
		q.w.WriteHeader(http.StatusNoContent)
	} else {
		q.w.WriteHeader(http.StatusOK)
	}
	return nil
}

// setObjectTags replaces the tags of the current version of the object,
// a compare-and-swap on its manifest (meta.Store.UpdateManifest): a
// concurrent overwrite wins, and the update is retried on the new
// version a few times — unless target names the version to change (a
// request with versionId): a version that is not, or no longer, the
// current one answers NotImplemented.
func (h *Handler) setObjectTags(q *request, target string, tags map[string]string) error {
	notCurrent := false
	err := h.updateCurrent(q, func(m *cairn.Manifest) bool {
		if target != "" && m.Version != target {
			notCurrent = true
			return false
		}
		if maps.Equal(m.Tags, tags) {
			return false
		}
		m.Tags = tags
		return true
	})
	if err == nil && notCurrent {
		return fmt.Errorf("%w: tagging of a version that is not the current one", ErrNotImplemented)
	}
	return err
}

// bucketTagging serves GET, PUT and DELETE ?tagging of a bucket.
func (h *Handler) bucketTagging(q *request) error {
	ctx := q.r.Context()
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	switch q.r.Method {
	case http.MethodGet:
		if len(b.Tags) == 0 {
			return ErrNoSuchTagSet
		}
		return h.writeXML(q, http.StatusOK, tagging{NS: s3NS, TagSet: tagList(b.Tags)})
	case http.MethodPut:
		var t tagging
		if err := h.readXML(q, &t); err != nil {
			return err
		}
		tags, err := tagSet(t.TagSet, maxBucketTags, ErrTooManyBucketTags)
		if err != nil {
			return err
		}
		if err := h.cfg.Meta.SetBucketTags(ctx, q.bucket, tags); err != nil {
			return h.bucketErr(err)
		}
	case http.MethodDelete:
		if err := h.cfg.Meta.SetBucketTags(ctx, q.bucket, nil); err != nil {
			return h.bucketErr(err)
		}
	default:
		return ErrMethodNotAllowed
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

// bucketErr names a bucket that disappeared under a bucket operation.
func (h *Handler) bucketErr(err error) error {
	if errors.Is(err, cairn.ErrNotFound) && !errors.Is(err, cairn.ErrUnavailable) {
		return withCause(ErrNoSuchBucket, err)
	}
	return err
}

// copyTags is the tags a copy gives its object: with x-amz-tagging-directive COPY (the default) the source's.
func copyTags(hd http.Header, src *cairn.Manifest) (map[string]string, error) {
	switch d := hd.Get("X-Amz-Tagging-Directive"); d {
	case "", "COPY":
		return src.Tags, nil
	case "REPLACE":
		return headerTags(hd)
	default:
		return nil, fmt.Errorf("%w: x-amz-tagging-directive %q", ErrInvalidArgument, d)
	}
}
