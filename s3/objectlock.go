package s3

// S3 Object Lock (docs/design/objectlock.md): Get/PutObjectLockConfiguration,
// Get/PutObjectRetention, Get/PutObjectLegalHold, the x-amz-object-lock-*
// headers of writes and reads, and the governance bypass of deletes. The
// metadata store enforces the lock (cairn.ErrLocked); the gateway parses,
// checks what AWS checks before it, and maps the errors.

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cairn"
)

// Locks is the part of the metadata store (meta.Store) Object Lock uses:
// see there for each contract.
type Locks interface {
	SetBucketObjectLock(ctx context.Context, name string, l cairn.ObjectLock) error
	SetObjectLock(ctx context.Context, bucket, key, id string, c cairn.LockChange) (cairn.ObjectVersion, error)
	DeleteVersionBypass(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
}

// Object Lock errors, as AWS answers them.
var (
	// ErrObjectLocked answers a delete or retention change the version's
	// lock forbids (the store's cairn.ErrLocked).
	ErrObjectLocked = &Error{"AccessDenied", http.StatusForbidden, "Access Denied because object protected by object lock."}
	// ErrNoObjectLock answers an Object Lock request or header on a
	// bucket without Object Lock.
	ErrNoObjectLock = &Error{"InvalidRequest", http.StatusBadRequest, "Bucket is missing Object Lock Configuration"}
	// ErrObjectLockConfigNotFound answers GetObjectLockConfiguration of a
	// bucket without Object Lock.
	ErrObjectLockConfigNotFound = &Error{"ObjectLockConfigurationNotFoundError", http.StatusNotFound, "Object Lock configuration does not exist for this bucket"}
	// ErrNoSuchObjectLockConfig answers GetObjectRetention of a version
	// without retention, GetObjectLegalHold of one without a hold.
	ErrNoSuchObjectLockConfig = &Error{"NoSuchObjectLockConfiguration", http.StatusNotFound, "The specified object does not have a ObjectLock configuration"}
	// ErrInvalidBucketState answers Object Lock on a bucket whose
	// versioning is not Enabled, and suspending versioning of a bucket
	// with Object Lock.
	ErrInvalidBucketState = &Error{"InvalidBucketState", http.StatusConflict, "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration"}
	// ErrLockedVersioning answers PutBucketVersioning Suspended on a
	// bucket with Object Lock.
	ErrLockedVersioning = &Error{"InvalidBucketState", http.StatusConflict, "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed."}
	// ErrLockNeedsChecksum answers a PutObject with Object Lock (its
	// own or the bucket's default) that carries neither Content-MD5 nor
	// an x-amz-checksum-* header or trailer.
	ErrLockNeedsChecksum = &Error{"InvalidRequest", http.StatusBadRequest, "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters"}
)

// Object Lock headers.
const (
	lockEnabledHeader = "X-Amz-Bucket-Object-Lock-Enabled"
	lockModeHeader    = "X-Amz-Object-Lock-Mode"
	lockUntilHeader   = "X-Amz-Object-Lock-Retain-Until-Date"
	lockHoldHeader    = "X-Amz-Object-Lock-Legal-Hold"
	bypassHeader      = "X-Amz-Bypass-Governance-Retention"
)

// writeLock is the Object Lock a write's headers ask for.
type writeLock struct {
	retention *cairn.Retention
	hold      bool
	present   bool // any x-amz-object-lock-* header
}

// hasLockHeaders reports whether a write names an Object Lock.
func hasLockHeaders(hd http.Header) bool {
	return hd.Get(lockModeHeader) != "" || hd.Get(lockUntilHeader) != "" || hd.Get(lockHoldHeader) != ""
}

// parseWriteLock parses the x-amz-object-lock-* headers of a PUT, copy
// or CreateMultipartUpload at now: InvalidArgument for a mode without a
// date or the reverse, an unknown mode, a date that is malformed or not
// in the future, a legal hold status other than ON or OFF.
func parseWriteLock(hd http.Header, now time.Time) (writeLock, error) {
	l := writeLock{present: hasLockHeaders(hd)}
	mode, until := hd.Get(lockModeHeader), hd.Get(lockUntilHeader)
	if (mode == "") != (until == "") {
		return l, fmt.Errorf("%w: x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied", ErrInvalidArgument)
	}
	if mode != "" {
		r, err := parseRetention(mode, until, now)
		if err != nil {
			return l, err
		}
		l.retention = r
	}
	switch v := hd.Get(lockHoldHeader); v {
	case "", "OFF":
	case "ON":
		l.hold = true
	default:
		return l, fmt.Errorf("%w: Legal Hold must be either of 'ON' or 'OFF', not %q", ErrInvalidArgument, v)
	}
	return l, nil
}

// parseRetention parses a retention's mode and date (ISO 8601, as AWS
// writes it), which must be after now.
func parseRetention(mode, until string, now time.Time) (*cairn.Retention, error) {
	if mode != cairn.LockGovernance && mode != cairn.LockCompliance {
		return nil, fmt.Errorf("%w: Unknown wormMode directive %q", ErrInvalidArgument, mode)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(until))
	if err != nil {
		return nil, fmt.Errorf("%w: the retain until date must be provided in ISO 8601 format, not %q", ErrInvalidArgument, until)
	}
	if !t.After(now) {
		return nil, fmt.Errorf("%w: the retain until date must be in the future", ErrInvalidArgument)
	}
	return &cairn.Retention{Mode: mode, Until: t.UTC()}, nil
}

// hasIntegrity reports whether a PUT's body is checked by Content-MD5 or
// an x-amz-checksum-* header or trailer.
func hasIntegrity(hd http.Header) bool {
	if hd.Get("Content-Md5") != "" {
		return true
	}
	for name := range checksumAlgorithms {
		if hd.Get(name) != "" {
			return true
		}
	}
	_, ok := checksumAlgorithms[strings.ToLower(strings.TrimSpace(hd.Get("X-Amz-Trailer")))]
	return ok
}

// putLock checks the Object Lock of a PutObject, CopyObject or
// CreateMultipartUpload (body: a PutObject, whose body must then be
// checked by a digest) and returns it. It reads the bucket only when it
// must: when the write names a lock, or a PutObject without a digest
// might get the bucket's default retention.
func (h *Handler) putLock(q *request, body bool) (writeLock, error) {
	l, err := parseWriteLock(q.r.Header, h.cfg.Now())
	if err != nil || !l.present && (!body || hasIntegrity(q.r.Header)) {
		return l, err
	}
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return l, err
	}
	if b.ObjectLock == nil {
		if l.present {
			return l, ErrNoObjectLock
		}
		return l, nil
	}
	locks := l.retention != nil || l.hold || b.ObjectLock.Mode != ""
	if body && locks && !hasIntegrity(q.r.Header) {
		return l, ErrLockNeedsChecksum
	}
	return l, nil
}

// setLockHeaders writes the Object Lock of version m on a GET or HEAD.
func setLockHeaders(w http.ResponseWriter, m *cairn.Manifest) {
	if r := m.Retention; r != nil {
		w.Header().Set(lockModeHeader, r.Mode)
		w.Header().Set(lockUntilHeader, isoTime(r.Until))
	}
	if m.LegalHold {
		w.Header().Set(lockHoldHeader, "ON")
	}
}

// bypassRequested reports whether a request asks to bypass governance
// (x-amz-bypass-governance-retention: true).
func bypassRequested(q *request) (bool, error) {
	v := strings.TrimSpace(q.r.Header.Get(bypassHeader))
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: x-amz-bypass-governance-retention %q", ErrInvalidArgument, v)
	}
	return on, nil
}

// bypassGovernance reports whether a request asks to bypass governance
// on key and may (s3:BypassGovernanceRetention: root, the bucket's owner
// unless its policy denies it, whom the policy grants it;
// Handler.mayBypassGovernance): AccessDenied if it asks and may not.
func (h *Handler) bypassGovernance(q *request, key string) (bool, error) {
	on, err := bypassRequested(q)
	if err != nil {
		return false, err
	}
	if on && !h.mayBypassGovernance(q, key) {
		return false, ErrAccessDenied
	}
	return on, nil
}

// objectLockConfig is the body of Get/PutObjectLockConfiguration.
type objectLockConfig struct {
	XMLName           xml.Name        `xml:"ObjectLockConfiguration"`
	NS                string          `xml:"xmlns,attr,omitempty"`
	ObjectLockEnabled string          `xml:"ObjectLockEnabled,omitempty"`
	Rule              *objectLockRule `xml:"Rule,omitempty"`
}

type objectLockRule struct {
	DefaultRetention *defaultRetention `xml:"DefaultRetention"`
}

type defaultRetention struct {
	Mode  string `xml:"Mode,omitempty"`
	Days  *int   `xml:"Days,omitempty"`
	Years *int   `xml:"Years,omitempty"`
}

// lockConfig checks a PutObjectLockConfiguration body and returns the
// configuration it sets: MalformedXML unless ObjectLockEnabled is
// Enabled and a rule has a mode and exactly one of Days and Years,
// InvalidArgument for a period that is not positive or too long.
func lockConfig(c objectLockConfig) (cairn.ObjectLock, error) {
	var l cairn.ObjectLock
	if c.ObjectLockEnabled != "Enabled" {
		return l, fmt.Errorf("%w: ObjectLockEnabled must be Enabled", ErrMalformedXML)
	}
	if c.Rule == nil {
		return l, nil
	}
	d := c.Rule.DefaultRetention
	switch {
	case d == nil || d.Mode == "" || (d.Days == nil) == (d.Years == nil):
		return l, fmt.Errorf("%w: a DefaultRetention needs a Mode and exactly one of Days and Years", ErrMalformedXML)
	case d.Mode != cairn.LockGovernance && d.Mode != cairn.LockCompliance:
		return l, fmt.Errorf("%w: Mode %q", ErrMalformedXML, d.Mode)
	case d.Days != nil && *d.Days <= 0, d.Years != nil && *d.Years <= 0:
		return l, fmt.Errorf("%w: Default retention period must be a positive integer value", ErrInvalidArgument)
	}
	l.Mode = d.Mode
	if d.Days != nil {
		l.Days = *d.Days
	} else {
		l.Years = *d.Years
	}
	if err := l.Check(); err != nil {
		return l, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	return l, nil
}

// bucketObjectLock serves GET and PUT ?object-lock.
func (h *Handler) bucketObjectLock(q *request) error {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return err
	}
	ctx := q.r.Context()
	switch q.r.Method {
	case http.MethodGet:
		if b.ObjectLock == nil {
			return ErrObjectLockConfigNotFound
		}
		out := objectLockConfig{NS: s3NS, ObjectLockEnabled: "Enabled"}
		if l := b.ObjectLock; l.Mode != "" {
			d := &defaultRetention{Mode: l.Mode}
			if l.Days > 0 {
				d.Days = &l.Days
			} else {
				d.Years = &l.Years
			}
			out.Rule = &objectLockRule{DefaultRetention: d}
		}
		return h.writeXML(q, http.StatusOK, out)
	case http.MethodPut:
		var c objectLockConfig
		if err := h.readXML(q, &c); err != nil {
			return err
		}
		l, err := lockConfig(c)
		if err != nil {
			return err
		}
		if b.Versioning != cairn.VersioningEnabled {
			return ErrInvalidBucketState
		}
		if err := h.cfg.Meta.SetBucketObjectLock(ctx, q.bucket, l); err != nil {
			if errors.Is(err, cairn.ErrInvalid) { // versioning changed meanwhile
				return withCause(ErrInvalidBucketState, err)
			}
			return h.bucketErr(err)
		}
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	return ErrMethodNotAllowed
}

// lockedVersion returns the bucket (with Object Lock: else
// InvalidRequest) and the version of the request's key that
// ?retention and ?legal-hold serve: versionId's, else the current.
func (h *Handler) lockedVersion(q *request) (cairn.Bucket, *cairn.Manifest, error) {
	b, err := h.bucket(q, q.bucket)
	if err != nil {
		return b, nil, err
	}
	if b.ObjectLock == nil {
		return b, nil, ErrNoObjectLock
	}
	vid := q.r.URL.Query().Get("versionId")
	m, err := h.statVersion(q.r.Context(), q.w, q.bucket, q.key, vid)
	if err != nil {
		return b, nil, err
	}
	if m.Versioned || vid != "" {
		q.w.Header().Set("X-Amz-Version-Id", m.VersionID())
	}
	return b, m, nil
}

// setObjectLock applies c to version m, mapping the store's refusal.
func (h *Handler) setObjectLock(q *request, m *cairn.Manifest, c cairn.LockChange) error {
	ctx := q.r.Context()
	_, err := h.cfg.Meta.SetObjectLock(ctx, q.bucket, q.key, m.Version, c)
	switch {
	case errors.Is(err, cairn.ErrLocked):
		return withCause(ErrObjectLocked, err)
	case errors.Is(err, cairn.ErrNotFound) && !errors.Is(err, cairn.ErrUnavailable):
		return withCause(ErrNoSuchVersion, err)
	}
	return err
}

// retentionBody is the body of Get/PutObjectRetention.
type retentionBody struct {
	XMLName         xml.Name `xml:"Retention"`
	NS              string   `xml:"xmlns,attr,omitempty"`
	Mode            string   `xml:"Mode,omitempty"`
	RetainUntilDate string   `xml:"RetainUntilDate,omitempty"`
}

// objectRetention serves GET and PUT ?retention of a version.
func (h *Handler) objectRetention(q *request) error {
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodPut {
		return ErrMethodNotAllowed
	}
	_, m, err := h.lockedVersion(q)
	if err != nil {
		return err
	}
	if q.r.Method == http.MethodGet {
		if m.Retention == nil {
			return ErrNoSuchObjectLockConfig
		}
		return h.writeXML(q, http.StatusOK, retentionBody{NS: s3NS, Mode: m.Retention.Mode, RetainUntilDate: isoTime(m.Retention.Until)})
	}
	var rb retentionBody
	if err := h.readXML(q, &rb); err != nil {
		return err
	}
	c := cairn.LockChange{SetRetention: true}
	switch {
	case rb.Mode == "" && rb.RetainUntilDate == "": // removes the retention
	case rb.Mode == "" || rb.RetainUntilDate == "":
		return fmt.Errorf("%w: a Retention needs both Mode and RetainUntilDate", ErrMalformedXML)
	default:
		if c.Retention, err = parseRetention(rb.Mode, rb.RetainUntilDate, h.cfg.Now()); err != nil {
			return err
		}
	}
	if c.BypassGovernance, err = h.bypassGovernance(q, q.key); err != nil {
		return err
	}
	if err := h.setObjectLock(q, m, c); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// legalHoldBody is the body of Get/PutObjectLegalHold.
type legalHoldBody struct {
	XMLName xml.Name `xml:"LegalHold"`
	NS      string   `xml:"xmlns,attr,omitempty"`
	Status  string   `xml:"Status"`
}

// objectLegalHold serves GET and PUT ?legal-hold of a version.
func (h *Handler) objectLegalHold(q *request) error {
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodPut {
		return ErrMethodNotAllowed
	}
	_, m, err := h.lockedVersion(q)
	if err != nil {
		return err
	}
	if q.r.Method == http.MethodGet {
		if !m.LegalHold {
			return ErrNoSuchObjectLockConfig
		}
		return h.writeXML(q, http.StatusOK, legalHoldBody{NS: s3NS, Status: "ON"})
	}
	var lb legalHoldBody
	if err := h.readXML(q, &lb); err != nil {
		return err
	}
	var on bool
	switch lb.Status {
	case "ON":
		on = true
	case "OFF":
	default:
		return fmt.Errorf("%w: Status must be ON or OFF, not %q", ErrMalformedXML, lb.Status)
	}
	if err := h.setObjectLock(q, m, cairn.LockChange{LegalHold: &on}); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}
