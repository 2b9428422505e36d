package s3

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"cairn"
	"cairn/client"
	"cairn/layout/gp"
)

// Objects is the data path the gateway stores and reads objects through.
// *client.Client implements it; see its methods for the full contract.
// Errors wrap cairn's sentinels (ErrNotFound for a missing bucket or key,
// ErrInvalid, ErrUnavailable, ...); a Put whose body reader fails returns
// an error wrapping the reader's error, and nothing becomes visible.
type Objects interface {
	// Put stores all of r (read to EOF before anything commits) as
	// bucket/key and returns the committed manifest.
	Put(ctx context.Context, bucket, key string, r io.Reader, opts client.PutOptions) (*cairn.Manifest, error)
	// GetWith opens bytes [off, off+length) (length < 0: to the end) of
	// the object's content, decrypted if it is encrypted (opts carries an
	// SSE-C key).
	GetWith(ctx context.Context, bucket, key string, off, length int64, opts client.GetOptions) (*cairn.Manifest, io.ReadCloser, error)
	// OpenWith is GetWith of the object version m (a manifest read from
	// the metadata store, current or not).
	OpenWith(ctx context.Context, m *cairn.Manifest, off, length int64, opts client.GetOptions) (*cairn.Manifest, io.ReadCloser, error)
	// Stat returns the committed manifest.
	Stat(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
	// Delete removes the object; cairn.ErrNotFound if it does not exist.
	Delete(ctx context.Context, bucket, key string) error

	// Multipart uploads (errors: client.ErrNoSuchUpload, ErrInvalidPart,
	// ErrInvalidPartOrder, ErrEntityTooSmall, and Put's).
	CreateUpload(ctx context.Context, bucket, key string, opts client.PutOptions) (cairn.Upload, error)
	UploadPart(ctx context.Context, bucket, key, id string, n int, r io.Reader, opts client.PutOptions) (cairn.Part, error)
	// CompleteUploadIf commits only if the object it replaces meets the
	// condition (client.ErrPreconditionFailed, ErrConditionalConflict).
	CompleteUploadIf(ctx context.Context, bucket, key, id string, parts []client.CompletePart, cond client.Condition) (*cairn.Manifest, error)
	// Upload returns an upload in progress (client.ErrNoSuchUpload).
	Upload(ctx context.Context, bucket, key, id string) (cairn.Upload, error)
	AbortUpload(ctx context.Context, bucket, key, id string) error
	ListPartsPage(ctx context.Context, bucket, key, id string, after, limit int) (cairn.Upload, []cairn.Part, bool, error)
}

var _ Objects = (*client.Client)(nil)

// Meta is the part of the metadata store the gateway uses for buckets and
// listings; meta.Store implements it (see there for each contract).
type Meta interface {
	CreateBucket(ctx context.Context, b cairn.Bucket) error
	Bucket(ctx context.Context, name string) (cairn.Bucket, error)
	// BucketPage pages the buckets (limit 1 to meta.MaxPage): ListBuckets.
	BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error)
	DeleteBucket(ctx context.Context, name string) error
	SetBucketEncryption(ctx context.Context, name, scheme string) error
	SetBucketTags(ctx context.Context, name string, tags map[string]string) error
	SetBucketCORS(ctx context.Context, name string, rules []cairn.CORSRule) error
	SetBucketLifecycle(ctx context.Context, name string, rules []cairn.LifecycleRule) error
	// UpdateBucketAccess changes a bucket's policy, ACL and public access
	// block in a compare-and-swap (authz.go, bucketpolicy.go, acl.go).
	UpdateBucketAccess(ctx context.Context, name string, update func(*cairn.BucketAccess) (*cairn.BucketAccess, error)) error
	// UpdateManifest replaces the object's manifest m's previous state
	// prev (compare-and-swap): PutObjectTagging.
	UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error
	// ListObjects pages the listing records of a bucket (limit 1 to
	// meta.MaxPage): listings never read manifests.
	ListObjects(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]cairn.ObjectInfo, bool, error)
	// UploadKeyPage pages the uploads in progress of a bucket by key
	// (ListMultipartUploads; limit 1 to meta.MaxPage).
	UploadKeyPage(ctx context.Context, bucket, prefix, keyMarker, idMarker string, limit int) ([]cairn.Upload, bool, error)
	Versions
	Locks
}

// Config configures a Handler. Validate fills the defaults.
type Config struct {
	Objects     Objects     // required: the data path (a *client.Client)
	Meta        Meta        // required: the metadata store (a meta.Store)
	Credentials Credentials // required: who may sign requests (an unsigned request is anonymous: authz.go)
	// DefaultPolicy is the policy of buckets created without an
	// x-cairn-policy header (default "rs-4-2").
	DefaultPolicy string
	// Region is the region the gateway reports (default "us-east-1").
	// Signatures are accepted for any region in their scope.
	Region string
	// MaxSkew is the largest accepted difference between a request's
	// signing time and Now (default 15 minutes).
	MaxSkew time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// StorageClasses maps x-amz-storage-class values to cairn policies; ""
	// means the bucket's default. Default: STANDARD → "" and
	// REDUCED_REDUNDANCY → "rs-4-1". A class not in the map is refused
	// (InvalidStorageClass); x-cairn-policy overrides the class.
	StorageClasses map[string]string
	// AllowedPolicies are the policies an identity that is not root and
	// has no allow-list of its own (Identity.Policies) may choose with
	// x-cairn-policy (docs/design/s3.md, "Choosing a policy"). Default:
	// DefaultPolicy alone. The policies of StorageClasses are chosen by
	// class and need no place here.
	AllowedPolicies []string
	// CheckPolicy validates an x-cairn-policy value (default: gp.Check,
	// the codec registry and cold-tier policies).
	CheckPolicy func(policy string) error
	// MaxXMLBody bounds request bodies that are parsed as XML (default 2 MiB).
	MaxXMLBody int64
	// MaxObjectSize bounds a single PUT (default 5 TiB, as S3).
	MaxObjectSize int64
	// BodyIdleTimeout fails a request whose client sends no body bytes
	// for this long (default 1 minute; negative disables). Header and idle
	// timeouts belong to the http.Server.
	BodyIdleTimeout time.Duration
	// WriteTimeout cuts off a client that takes no byte of a response for
	// this long (default 1 minute; negative disables).
	WriteTimeout time.Duration
	// MaxRequests bounds the requests served at once (default 256;
	// negative: no bound). One more waits up to QueueWait for a slot,
	// then gets 503 SlowDown (docs/design/s3.md, "Limits").
	MaxRequests int
	// QueueWait is how long a request waits for a slot (default 10 s).
	QueueWait time.Duration
	// AllowInsecureSSEC accepts SSE-C keys over plain HTTP (S3 refuses
	// them: the key would cross the network in the clear); for loopback
	// tests only.
	AllowInsecureSSEC bool
	// Admin serves the admin path (POST /?cairn-admin=OP, signed by root:
	// admin.go) once the gateway has authenticated it; nil: none
	// (NotImplemented).
	Admin http.Handler
	// Logger receives internal errors (default: discard).
	Logger *slog.Logger
}

// Validate checks the required fields and fills the defaults.
func (c *Config) Validate() error {
	if c.Objects == nil || c.Meta == nil || c.Credentials == nil {
		return fmt.Errorf("%w: s3.Config needs Objects, Meta and Credentials", cairn.ErrInvalid)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.MaxSkew <= 0 {
		c.MaxSkew = 15 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.CheckPolicy == nil {
		c.CheckPolicy = gp.Check // codes and cold-tier policies
	}
	if c.DefaultPolicy == "" {
		c.DefaultPolicy = "rs-4-2"
	}
	if err := c.CheckPolicy(c.DefaultPolicy); err != nil {
		return fmt.Errorf("%w: default policy: %v", cairn.ErrInvalid, err)
	}
	if len(c.AllowedPolicies) == 0 {
		c.AllowedPolicies = []string{c.DefaultPolicy}
	}
	for _, p := range c.AllowedPolicies {
		if err := c.CheckPolicy(p); err != nil {
			return fmt.Errorf("%w: allowed policy: %v", cairn.ErrInvalid, err)
		}
	}
	if c.StorageClasses == nil {
		c.StorageClasses = map[string]string{"STANDARD": "", "REDUCED_REDUNDANCY": "rs-4-1"}
	}
	for class, p := range c.StorageClasses {
		if p == "" {
			continue
		}
		if err := c.CheckPolicy(p); err != nil {
			return fmt.Errorf("%w: storage class %s: %v", cairn.ErrInvalid, class, err)
		}
	}
	if c.MaxXMLBody <= 0 {
		c.MaxXMLBody = 2 << 20
	}
	if c.MaxObjectSize <= 0 {
		c.MaxObjectSize = 5 << 40
	}
	if c.BodyIdleTimeout == 0 {
		c.BodyIdleTimeout = time.Minute
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = time.Minute
	}
	if c.MaxRequests == 0 {
		c.MaxRequests = DefaultMaxRequests
	}
	if c.QueueWait <= 0 {
		c.QueueWait = DefaultQueueWait
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Defaults of Config.
const (
	DefaultMaxRequests = 256
	DefaultQueueWait   = 10 * time.Second
)

// Handler serves the S3 API (path-style addressing) over cairn. It is
// stateless and safe for concurrent use.
type Handler struct {
	cfg    Config
	slots  *slots // nil: no bound
	reqID  atomic.Uint64
	boot   int64  // start time, unique-ish prefix of request IDs
	hostID string // x-amz-id-2: names this gateway without naming its host
	// policies caches parsed bucket policies (authz.go).
	policies policyCache
}

// New returns a Handler for cfg (see Config.Validate).
func New(cfg Config) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var id [18]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("s3: making the gateway's host ID: %w", err)
	}
	h := &Handler{cfg: cfg, boot: cfg.Now().UnixNano(), hostID: base64.StdEncoding.EncodeToString(id[:])}
	if cfg.MaxRequests > 0 {
		h.slots = &slots{sem: semaphore.NewWeighted(int64(cfg.MaxRequests)), n: cfg.MaxRequests, wait: cfg.QueueWait}
	}
	return h, nil
}

// Subresources the gateway does not implement yet: a request naming one
// gets NotImplemented rather than being mistaken for a plain GET or PUT.
var unsupportedSubresources = []string{
	"accelerate", "analytics", "intelligent-tiering",
	"inventory", "logging", "metrics", "notification",
	"replication",
	"requestPayment", "restore", "select", "torrent", "website",
}

// request is one authenticated request being served.
type request struct {
	id     string // the request ID: x-amz-request-id, RequestId, the log's request_id
	w      http.ResponseWriter
	r      *http.Request
	auth   *authResult
	bucket string
	key    string
	sum    *bodySum // the body's x-amz-checksum-*, set by body (checksum.go)
	// access is the request's bucket as authorize found it (nil: root,
	// or no bucket), and granted whether a policy or ACL let a requester
	// that does not own the bucket in (authz.go).
	access  *bucketAccess
	granted bool
	// form holds a browser POST upload's fields as the headers a
	// PutObject would carry (post.go), for the policy conditions on
	// them; nil for any other request.
	form http.Header
}

// ServeHTTP implements http.Handler. Every response, success or error,
// carries the request's ID in x-amz-request-id (and the gateway's in
// x-amz-id-2); an error body carries it as RequestId, and the log line of
// a failed request as request_id. A request is served once it has a slot
// (Config.MaxRequests), and its response is written under
// Config.WriteTimeout.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.WriteTimeout > 0 {
		w = newWriteDeadline(w, h.cfg.WriteTimeout)
	}
	id := fmt.Sprintf("%X%06X", h.boot, h.reqID.Add(1))
	w.Header().Set("X-Amz-Request-Id", id)
	w.Header().Set("X-Amz-Id-2", h.hostID)
	w.Header().Set("Server", "cairn")
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	req := &request{id: id, w: w, r: r, bucket: bucket, key: key}
	if h.slots != nil {
		if err := h.slots.take(r.Context()); err != nil {
			h.writeError(req, err)
			return
		}
		defer h.slots.give()
	}
	if r.Method == http.MethodOptions { // a CORS preflight: not signed
		if err := h.preflight(req); err != nil {
			h.writeError(req, err)
		}
		return
	}
	h.corsHeaders(req)
	if isPostObject(r, bucket, key) { // signed in its form, not its headers (post.go)
		if err := h.postObject(req); err != nil {
			h.writeError(req, err)
		}
		return
	}
	a, err := h.authenticate(r)
	if err == nil {
		req.auth = a
		err = h.authorize(req)
	}
	if err == nil {
		err = h.hideMissing(req, h.route(req))
	}
	if err != nil {
		h.writeError(req, err)
	}
}

func (h *Handler) route(q *request) error {
	r := q.r
	query := r.URL.Query()
	for _, s := range unsupportedSubresources {
		if query.Has(s) {
			return fmt.Errorf("%w: ?%s", ErrNotImplemented, s)
		}
	}
	if q.bucket == "" {
		if query.Has(AdminQuery) {
			return h.admin(q)
		}
		if r.Method == http.MethodGet {
			return h.listBuckets(q)
		}
		return ErrMethodNotAllowed
	}
	if err := cairn.ValidateBucketName(q.bucket); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidBucketName, err)
	}
	if serve := h.subresource(q, query); serve != nil {
		return serve(q)
	}
	if q.key == "" && query.Has("encryption") {
		return h.bucketEncryption(q)
	}
	if q.key == "" && query.Has("versioning") {
		return h.bucketVersioning(q)
	}
	if q.key == "" {
		switch r.Method {
		case http.MethodGet:
			switch {
			case query.Has("location"):
				return h.bucketLocation(q)
			case query.Has("uploads"):
				return h.listUploads(q)
			case query.Has("versions"):
				return h.listVersions(q)
			case query.Get("list-type") == "2":
				return h.listObjects(q, true)
			}
			return h.listObjects(q, false)
		case http.MethodPut:
			return h.createBucket(q)
		case http.MethodHead:
			return h.headBucket(q)
		case http.MethodDelete:
			return h.deleteBucket(q)
		case http.MethodPost:
			if query.Has("delete") {
				return h.deleteObjects(q)
			}
			return ErrNotImplemented
		}
		return ErrMethodNotAllowed
	}
	if err := checkKey(q.key); err != nil {
		return err
	}
	if query.Has("uploadId") || query.Has("uploads") {
		return h.multipart(q)
	}
	if query.Has("partNumber") && r.Method != http.MethodGet && r.Method != http.MethodHead {
		return fmt.Errorf("%w: ?partNumber on %s", ErrNotImplemented, r.Method)
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete {
		if err := checkVersionID(query); err != nil {
			return err
		}
	}
	switch r.Method {
	case http.MethodPut:
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			return h.copyObject(q)
		}
		return h.putObject(q)
	case http.MethodGet:
		return h.getObject(q, false)
	case http.MethodHead:
		return h.getObject(q, true)
	case http.MethodDelete:
		return h.deleteObject(q)
	case http.MethodPost:
		return ErrNotImplemented
	}
	return ErrMethodNotAllowed
}

func checkKey(key string) error {
	if len(key) > cairn.MaxKeyLen {
		return ErrKeyTooLong
	}
	if err := cairn.ValidateKey(key); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	return nil
}

// bucket returns a bucket the requester may use: NoSuchBucket, or
// AccessDenied when a non-root identity does not own it and no policy or
// ACL granted the request (authorize).
func (h *Handler) bucket(q *request, name string) (cairn.Bucket, error) {
	if q.access != nil && q.access.b.Name == name && (q.access.owner || q.granted) {
		return q.access.b, nil
	}
	b, err := h.cfg.Meta.Bucket(q.r.Context(), name)
	if errors.Is(err, cairn.ErrNotFound) {
		return b, withCause(ErrNoSuchBucket, err)
	}
	if err != nil {
		return b, err
	}
	if !q.auth.id.Root && (b.Owner != q.auth.id.Name || q.auth.anonymous) {
		return b, ErrAccessDenied
	}
	return b, nil
}

// checkBucket is bucket for object operations: root skips the lookup (the
// data path reports a missing bucket itself, resolved by objectErr).
func (h *Handler) checkBucket(q *request, name string) error {
	if q.auth.id.Root {
		return nil
	}
	_, err := h.bucket(q, name)
	return err
}

// objectErr gives a cairn.ErrNotFound from an object operation its S3
// meaning: NoSuchBucket if the bucket is missing, else NoSuchKey. An
// error that is also cairn.ErrUnavailable is the cluster's, not a missing
// resource's, and stays as it is.
func (h *Handler) objectErr(ctx context.Context, bucket string, err error) error {
	if err == nil || !errors.Is(err, cairn.ErrNotFound) || errors.Is(err, cairn.ErrUnavailable) {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if _, berr := h.cfg.Meta.Bucket(ctx, bucket); errors.Is(berr, cairn.ErrNotFound) {
		return withCause(ErrNoSuchBucket, err)
	}
	return withCause(ErrNoSuchKey, err)
}

// writeErr is objectErr for the operations that write an object
// (PutObject, CopyObject, UploadPart): a commit that lost to concurrent
// writers again and again (cairn.ErrConflict) is load, SlowDown.
func (h *Handler) writeErr(ctx context.Context, bucket string, err error) error {
	if errors.Is(err, cairn.ErrConflict) {
		var e *Error
		if !errors.As(err, &e) {
			return withCause(ErrSlowDown, err)
		}
	}
	return h.objectErr(ctx, bucket, err)
}

// body returns the request body wrapped in the readers that check it
// against what the signature covers and against an x-amz-checksum-*
// header or trailer (see body.go).
func (h *Handler) body(q *request) (io.Reader, error) {
	var r io.Reader = h.wireBody(q)
	switch p := q.auth.payload; p {
	case unsignedPayload:
	case streamingPayload, streamingPayloadTrailer, streamingUnsignedTrailer:
		cr := newChunkedReader(r, q.auth)
		if n, err := strconv.ParseInt(q.r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64); err == nil && n >= 0 {
			cr.want = n
		}
		if p != streamingPayload {
			name, sum, err := trailerChecksum(q.r.Header)
			if err != nil {
				return nil, err
			}
			cr.sumName, cr.sum = name, sum
			q.sum = newBodySum(name, sum)
		}
		r = cr
	default:
		r = newSHA256Reader(r, p)
	}
	name, sum, want, err := headerChecksum(q.r.Header)
	if err != nil {
		return nil, err
	}
	if sum != nil {
		r = &digestReader{r: r, h: sum, want: want, mismatch: fmt.Errorf("%w: %s", ErrBadChecksum, name)}
		q.sum = newBodySum(name, sum)
	}
	return r, nil
}

// wireBody is the request body as it comes off the connection, failing
// (RequestTimeout) once the client sends nothing for BodyIdleTimeout.
func (h *Handler) wireBody(q *request) *wireBody {
	wb := &wireBody{r: q.r.Body}
	if t := h.cfg.BodyIdleTimeout; t > 0 {
		rc := http.NewResponseController(q.w)
		// Deadlines are wall-clock instants on the socket, not request
		// times: they use time.Now, not cfg.Now.
		wb.extend = func() { _ = rc.SetReadDeadline(time.Now().Add(t)) }
	}
	return wb
}

// isStreaming reports whether the body is aws-chunked.
func (q *request) isStreaming() bool {
	switch q.auth.payload {
	case streamingPayload, streamingPayloadTrailer, streamingUnsignedTrailer:
		return true
	}
	return false
}

// readSmallBody reads a body of at most MaxXMLBody bytes, checked like
// any body (signature payload hash, Content-MD5).
func (h *Handler) readSmallBody(q *request) ([]byte, error) {
	body, err := h.body(q)
	if err != nil {
		return nil, err
	}
	if md := q.r.Header.Get("Content-Md5"); md != "" {
		want, err := decodeContentMD5(md)
		if err != nil {
			return nil, err
		}
		body = newMD5Reader(body, want)
	}
	b, err := io.ReadAll(io.LimitReader(body, h.cfg.MaxXMLBody+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > h.cfg.MaxXMLBody {
		return nil, fmt.Errorf("%w: the body is longer than %d bytes", ErrMalformedXML, h.cfg.MaxXMLBody)
	}
	return b, nil
}

// readXML reads a small XML body into v.
func (h *Handler) readXML(q *request, v any) error {
	b, err := h.readSmallBody(q)
	if err != nil {
		return err
	}
	return parseXML(b, v)
}

// parseXML decodes an XML request body; any failure is MalformedXML.
func parseXML(b []byte, v any) error {
	if err := xml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedXML, err)
	}
	return nil
}

// uploadAttr is the log attribute of a multipart request's upload ID
// ("upload"), or none (the empty Attr, which handlers drop).
func uploadAttr(r *http.Request) slog.Attr {
	if id := r.URL.Query().Get("uploadId"); id != "" {
		return slog.String("upload", id)
	}
	return slog.Attr{}
}

func (h *Handler) writeXML(q *request, status int, v any) error {
	b, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	q.w.Header().Set("Content-Type", "application/xml")
	q.w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(b)))
	q.w.WriteHeader(status)
	io.WriteString(q.w, xml.Header)
	q.w.Write(b)
	return nil
}

// writeError sends err as an S3 error response: apiError picks the code,
// publicMessage the message. The full error goes to the log with the
// request ID: at Error level for a 5xx (but 501), at Debug for the rest
// (a client's mistake is not the operator's).
func (h *Handler) writeError(q *request, err error) {
	e := apiError(err)
	level := slog.LevelDebug
	if e.Status >= 500 && e.Status != http.StatusNotImplemented {
		level = slog.LevelError
	}
	h.cfg.Logger.Log(q.r.Context(), level, "s3 request failed", "request_id", q.id, "host_id", h.hostID,
		"method", q.r.Method, "path", q.r.URL.Path, "bucket", q.bucket, "key", q.key, uploadAttr(q.r), "status", e.Status, "code", e.Code, "err", err)
	q.w.Header().Del("Content-Length")
	if e.Status == http.StatusServiceUnavailable {
		q.w.Header().Set("Retry-After", retryAfter)
	}
	if e.Status == http.StatusNotModified || q.r.Method == http.MethodHead {
		q.w.WriteHeader(e.Status)
		return
	}
	body := errorBody{Code: e.Code, Message: publicMessage(e, err), Resource: q.r.URL.Path, RequestID: q.id, HostID: h.hostID, Bucket: q.bucket, Key: q.key}
	b, _ := xml.Marshal(body)
	q.w.Header().Set("Content-Type", "application/xml")
	q.w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(b)))
	q.w.WriteHeader(e.Status)
	io.WriteString(q.w, xml.Header)
	q.w.Write(b)
}
