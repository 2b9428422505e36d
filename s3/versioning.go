package s3

// S3 versioning (docs/design/versioning.md): Get/PutBucketVersioning,
// reads, copies and deletes of a version (?versionId=), delete markers
// and ListObjectVersions.

import (
	"context"
	"crypto/rand"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"cairn"
)

// Versions is the part of the metadata store (meta.Store) versioning
// uses: see there for each contract.
type Versions interface {
	SetBucketVersioning(ctx context.Context, name, status string) error
	ObjectVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	PutDeleteMarker(ctx context.Context, bucket, key string, d cairn.DeleteMarker) (cairn.ObjectVersion, error)
	DeleteVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	ListVersions(ctx context.Context, bucket, prefix, keyMarker, afterVersion string, limit int) ([]cairn.ObjectVersion, bool, error)
}

var (
	// ErrNoSuchVersion answers a well-formed version ID that names no
	// version of the key.
	ErrNoSuchVersion = &Error{"NoSuchVersion", http.StatusNotFound, "The specified version does not exist."}
	// ErrIllegalVersioning answers a PutBucketVersioning whose Status is
	// neither Enabled nor Suspended, or that asks for MFA delete.
	ErrIllegalVersioning = &Error{"IllegalVersioningConfigurationException", http.StatusBadRequest, "The Versioning element must be specified"}
	// ErrDeleteMarker answers a GET or HEAD of a delete marker by its
	// version ID, as S3 (405 with x-amz-delete-marker: true).
	ErrDeleteMarker = &Error{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."}
	// ErrInvalidCopySourceVersion answers a copy whose source version is
	// a delete marker.
	ErrInvalidCopySourceVersion = &Error{"InvalidRequest", http.StatusBadRequest, "The source of a copy request may not specifically refer to a delete marker by version id."}
)

// versioningConfig is the body of Get/PutBucketVersioning.
type versioningConfig struct {
	XMLName   xml.Name `xml:"VersioningConfiguration"`
	NS        string   `xml:"xmlns,attr,omitempty"`
	Status    string   `xml:"Status,omitempty"`
	MfaDelete string   `xml:"MfaDelete,omitempty"`
}

// bucketVersioning serves GET and PUT ?versioning.
func (h *Handler) bucketVersioning(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	ctx := q.r.Context()
	switch q.r.Method {
	case http.MethodGet:
		return h.writeXML(q, http.StatusOK, versioningConfig{NS: s3NS, Status: b.Versioning})
	case http.MethodPut:
		var c versioningConfig
		if err := h.readXML(q, &c); err != nil {
			return err
		}
		if c.MfaDelete == "Enabled" {
			return fmt.Errorf("%w: MFA delete is not supported", ErrNotImplemented)
		}
		if c.Status != cairn.VersioningEnabled && c.Status != cairn.VersioningSuspended {
			return fmt.Errorf("%w: Status %q", ErrIllegalVersioning, c.Status)
		}
		if b.ObjectLock != nil && c.Status != cairn.VersioningEnabled {
			return ErrLockedVersioning
		}
		if err := h.cfg.Meta.SetBucketVersioning(ctx, q.bucket, c.Status); err != nil {
			if errors.Is(err, cairn.ErrInvalid) { // Object Lock enabled meanwhile
				return withCause(ErrLockedVersioning, err)
			}
			return h.objectErr(ctx, q.bucket, err)
		}
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	return ErrMethodNotAllowed
}

// checkVersionID checks a request's versionId parameter: absent, "null"
// or one of cairn's version IDs (cairn.ValidVersion).
func checkVersionID(query url.Values) error {
	if !query.Has("versionId") {
		return nil
	}
	return validVersionID(query.Get("versionId"))
}

func validVersionID(v string) error {
	switch {
	case v == "":
		return ErrEmptyVersionID
	case v == cairn.NullVersionID || cairn.ValidVersion(v):
		return nil
	}
	return fmt.Errorf("%w: versionId %q", ErrInvalidVersionID, v)
}

// setVersionHeaders sets x-amz-version-id (and x-amz-delete-marker for a
// marker) for version v.
func setVersionHeaders(w http.ResponseWriter, v cairn.ObjectVersion) {
	w.Header().Set("X-Amz-Version-Id", v.ID())
	if v.Marker {
		w.Header().Set("X-Amz-Delete-Marker", "true")
	}
}

// statVersion returns the manifest a GET, HEAD or copy of bucket/key
// reads: the current object (id ""), or version id. A missing key whose
// latest version is a delete marker answers NoSuchKey with the marker's
// headers; a version that is a marker MethodNotAllowed; a missing version
// NoSuchVersion.
func (h *Handler) statVersion(ctx context.Context, w http.ResponseWriter, bucket, key, id string) (*cairn.Manifest, error) {
	if id == "" {
		m, err := h.cfg.Objects.Stat(ctx, bucket, key)
		if errors.Is(err, cairn.ErrNotFound) {
			if v, verr := h.cfg.Meta.ObjectVersion(ctx, bucket, key, ""); verr == nil && v.Marker && w != nil {
				setVersionHeaders(w, v)
			}
		}
		if err != nil {
			return nil, h.objectErr(ctx, bucket, err)
		}
		return m, nil
	}
	v, err := h.cfg.Meta.ObjectVersion(ctx, bucket, key, id)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		if _, berr := h.cfg.Meta.Bucket(ctx, bucket); errors.Is(berr, cairn.ErrNotFound) {
			return nil, withCause(ErrNoSuchBucket, err)
		}
		return nil, withCause(ErrNoSuchVersion, err)
	case errors.Is(err, cairn.ErrInvalid):
		return nil, withCause(ErrInvalidVersionID, err)
	case err != nil:
		return nil, err
	case v.Marker:
		if w != nil {
			setVersionHeaders(w, v)
			w.Header().Set("Last-Modified", v.Created.UTC().Format(http.TimeFormat))
		}
		return nil, ErrDeleteMarker
	}
	return v.Manifest, nil
}

// deleteVersioned deletes key of bucket b as DeleteObject and each
// object of DeleteObjects do: version id if set (a missing version is no
// error, as S3; a locked one AccessDenied, unless bypass lets a
// GOVERNANCE retention go), else the object — by a delete marker in a
// bucket whose versioning was ever set. It returns the version removed
// or the marker made (ok false: none).
func (h *Handler) deleteVersioned(ctx context.Context, b cairn.Bucket, key, id string, bypass bool) (v cairn.ObjectVersion, ok bool, err error) {
	switch {
	case id != "":
		if bypass {
			v, err = h.cfg.Meta.DeleteVersionBypass(ctx, b.Name, key, id)
		} else {
			v, err = h.cfg.Meta.DeleteVersion(ctx, b.Name, key, id)
		}
		if errors.Is(err, cairn.ErrNotFound) {
			return cairn.ObjectVersion{Key: key, Version: id, Versioned: id != cairn.NullVersionID}, true, nil
		}
		if f, ok := h.cfg.Objects.(versionFreer); ok && err == nil && v.Manifest != nil {
			f.FreeRAIDP(ctx, v.Manifest)
		}
		return v, err == nil, h.objectErr(ctx, b.Name, err)
	case b.Versioning == "":
		err := h.objectErr(ctx, b.Name, h.cfg.Objects.Delete(ctx, b.Name, key))
		if errors.Is(err, ErrNoSuchKey) { // deleting a missing key succeeds
			err = nil
		}
		return v, false, err
	}
	ver, err := cairn.NewVersion(h.cfg.Now(), rand.Reader)
	if err != nil {
		return v, false, err
	}
	v, err = h.cfg.Meta.PutDeleteMarker(ctx, b.Name, key, cairn.DeleteMarker{Version: ver,
		Versioned: b.Versioning == cairn.VersioningEnabled, Created: h.cfg.Now().UTC()})
	return v, err == nil, h.objectErr(ctx, b.Name, err)
}

// versionEntry is a <Version> or <DeleteMarker> of ListObjectVersions
// (XMLName says which): a marker has no ETag, Size or StorageClass.
type versionEntry struct {
	XMLName      xml.Name
	Key          string `xml:"Key"`
	VersionID    string `xml:"VersionId"`
	IsLatest     bool   `xml:"IsLatest"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag,omitempty"`
	Size         *int64 `xml:"Size,omitempty"`
	StorageClass string `xml:"StorageClass,omitempty"`
	Owner        owner  `xml:"Owner"`
}

// listVersionsResult is the response of ListObjectVersions.
type listVersionsResult struct {
	XMLName             xml.Name       `xml:"ListVersionsResult"`
	NS                  string         `xml:"xmlns,attr"`
	Name                string         `xml:"Name"`
	Prefix              string         `xml:"Prefix"`
	KeyMarker           string         `xml:"KeyMarker"`
	VersionIDMarker     string         `xml:"VersionIdMarker"`
	NextKeyMarker       string         `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string         `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int            `xml:"MaxKeys"`
	Delimiter           string         `xml:"Delimiter,omitempty"`
	EncodingType        string         `xml:"EncodingType,omitempty"`
	IsTruncated         bool           `xml:"IsTruncated"`
	Entries             []versionEntry `xml:",any"`
	CommonPrefixes      []commonPrefix `xml:"CommonPrefixes"`
}

// versionsPage is one page of ListObjectVersions: versions and common
// prefixes, in order.
type versionsPage struct {
	versions  []cairn.ObjectVersion
	prefixes  []string
	truncated bool
	// next is where the next page starts: the last key (or common
	// prefix) returned, and the last version's ID ("" after a prefix).
	nextKey, nextVersion string
}

// listVersionsPage reads up to maxKeys versions and common prefixes of
// bucket after the position (keyMarker, afterVersion) — an internal
// version, "" for after every version of keyMarker. A key marker that is
// a common prefix skips every key under it; keys are valid UTF-8, never
// holding 0xff, so cp+"\xff" sorts after every key under cp.
func listVersionsPage(ctx context.Context, m Versions, bucket, prefix, delim, keyMarker, afterVersion string, maxKeys int) (versionsPage, error) {
	var p versionsPage
	if delim != "" && afterVersion == "" && strings.HasPrefix(keyMarker, prefix) {
		if i := strings.Index(keyMarker[len(prefix):], delim); i >= 0 && len(prefix)+i+len(delim) == len(keyMarker) {
			keyMarker += "\xff"
		}
	}
	if maxKeys == 0 {
		return p, nil
	}
	count := 0
	for {
		vs, more, err := m.ListVersions(ctx, bucket, prefix, keyMarker, afterVersion, min(maxKeys-count+1, maxListKeys))
		if err != nil || len(vs) == 0 {
			return p, err
		}
		jumped := false
		for _, v := range vs {
			if count == maxKeys {
				p.truncated = true
				return p, nil
			}
			count++
			if delim != "" {
				if i := strings.Index(v.Key[len(prefix):], delim); i >= 0 {
					cp := v.Key[:len(prefix)+i+len(delim)]
					p.prefixes = append(p.prefixes, cp)
					p.nextKey, p.nextVersion = cp, ""
					keyMarker, afterVersion, jumped = cp+"\xff", "", true
					break // go on after the prefix
				}
			}
			p.versions = append(p.versions, v)
			p.nextKey, p.nextVersion = v.Key, v.ID()
			keyMarker, afterVersion = v.Key, v.Version
		}
		if !jumped && !more {
			return p, nil
		}
	}
}

// listVersions serves ListObjectVersions.
func (h *Handler) listVersions(q *request) error {
	l, err := h.parseList(q)
	if err != nil {
		return err
	}
	ctx := q.r.Context()
	query, encode := q.r.URL.Query(), l.encode
	// S3 wants a key-marker parameter with a version-id-marker, but
	// ignores the version marker after an empty key-marker (the listing
	// starts at the beginning).
	keyMarker, versionMarker := query.Get("key-marker"), query.Get("version-id-marker")
	after := ""
	switch {
	case !query.Has("version-id-marker"):
	case !query.Has("key-marker"):
		return ErrVersionMarkerWithoutKey
	case versionMarker == "":
		return ErrEmptyVersionMarker
	case keyMarker == "":
	case versionMarker == cairn.NullVersionID:
		// The null version's place; if it is gone, after the key.
		if v, err := h.cfg.Meta.ObjectVersion(ctx, q.bucket, keyMarker, cairn.NullVersionID); err == nil {
			after = v.Version
		}
	case cairn.ValidVersion(versionMarker):
		after = versionMarker
	default:
		return fmt.Errorf("%w: version-id-marker %q", ErrInvalidVersionID, versionMarker)
	}
	p, err := listVersionsPage(ctx, h.cfg.Meta, q.bucket, l.prefix, l.delim, keyMarker, after, l.maxKeys)
	if err != nil {
		return h.objectErr(ctx, q.bucket, err)
	}
	out := listVersionsResult{NS: s3NS, Name: q.bucket, Prefix: encode(l.prefix), KeyMarker: encode(keyMarker), VersionIDMarker: versionMarker,
		MaxKeys: l.maxKeys, Delimiter: encode(l.delim), EncodingType: l.enc, IsTruncated: p.truncated}
	for _, cp := range p.prefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, commonPrefix{Prefix: encode(cp)})
	}
	own := owner{ID: q.auth.id.Name, DisplayName: q.auth.id.Name}
	out.Entries = make([]versionEntry, 0, len(p.versions))
	for _, v := range p.versions {
		e := versionEntry{XMLName: xml.Name{Local: "Version"}, Key: encode(v.Key), VersionID: v.ID(), IsLatest: v.Latest,
			LastModified: isoTime(v.Created), Owner: own}
		if v.Marker {
			e.XMLName.Local = "DeleteMarker"
		} else {
			size := v.Info.Size
			e.ETag, e.Size, e.StorageClass = `"`+v.Info.ETag+`"`, &size, h.storageClass(v.Info.Policy)
		}
		out.Entries = append(out.Entries, e)
	}
	if p.truncated {
		out.NextKeyMarker, out.NextVersionIDMarker = encode(p.nextKey), p.nextVersion
	}
	return h.writeXML(q, http.StatusOK, out)
}

// versionFreer is the data path's optional hook for a version deleted
// through the store directly: a raidp object's bytes are zeroed
// (*client.Client.FreeRAIDP; docs/design/raidp.md, "Deletes").
type versionFreer interface {
	FreeRAIDP(ctx context.Context, m *cairn.Manifest)
}
