package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"slices"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/internal/retry"
	"cairn/placement"
)

// PutOptions are per-object settings for Put.
type PutOptions struct {
	Policy      string            // code for this object; "" = the bucket's default
	ContentType string            // stored and returned as is
	UserMeta    map[string]string // stored and returned as is
	// Size is the body length if known, or -1. A body that ends early or
	// runs long is refused (cairn.ErrInvalid) and nothing is stored.
	Size int64
	// Progress, if set, is called with the body bytes consumed so far.
	Progress func(n int64)
	// Now is the creation time to record (default time.Now).
	Now func() time.Time
	// SSE, if set, encrypts the object at rest (docs/design/encryption.md);
	// Size and Progress still count plaintext. For UploadPart it carries
	// the SSE-C key of an upload created with one (the upload fixed the
	// scheme).
	SSE *SSE
	// Upload, for UploadPart only, is the upload's record as the caller
	// has just read it (Client.Upload; the gateway reads it to check an
	// SSE-C key): UploadPart then does not read it again. It must be the
	// record of the upload named in the call.
	Upload *cairn.Upload
	// If is the condition the object being replaced must meet (S3's
	// conditional writes); the zero Condition is none. Put checks it
	// atomically with the commit, see Condition. Not for UploadPart.
	If Condition
	// Tags are stored in the manifest (Manifest.Tags) as they are; for
	// CreateUpload, in the upload for the object Complete commits.
	Tags map[string]string
	// ACL is stored in the manifest (Manifest.ACL) as it is; for
	// CreateUpload, in the upload for the object Complete commits.
	ACL []cairn.Grant
	// Checksum, if set, is called once the body has been read to its end
	// without error, before the commit: what it returns (nil: nothing) is
	// stored as Manifest.Checksum, or Part.Checksum for UploadPart. The
	// gateway verifies the body's checksum as it streams by and reports
	// it here.
	Checksum func() *cairn.Checksum
	// ChecksumAlgorithm, for CreateUpload only, is the algorithm every
	// part's checksum must have; Complete then stores their composite
	// (cairn.CompositeChecksum, or cairn.FullObjectChecksum if
	// ChecksumType is cairn.ChecksumFullObject). "" = none.
	ChecksumAlgorithm string
	ChecksumType      string
	// Retention and LegalHold are the Object Lock of the version written
	// (docs/design/objectlock.md); for CreateUpload, of the object
	// Complete commits. Retention nil: the bucket's default retention, if
	// it has one. Either needs a bucket with Object Lock (cairn.ErrInvalid).
	Retention *cairn.Retention
	LegalHold bool
}

// lockOf returns the Object Lock a version created at created in bucket
// b gets: opts' retention, else b's default (cairn.ErrInvalid if opts
// ask for a lock in a bucket without Object Lock).
func lockOf(b cairn.Bucket, opts PutOptions, created time.Time) (*cairn.Retention, error) {
	if b.ObjectLock == nil {
		if opts.Retention != nil || opts.LegalHold {
			return nil, fmt.Errorf("%w: bucket %s has no Object Lock", cairn.ErrInvalid, b.Name)
		}
		return nil, nil
	}
	if opts.Retention != nil {
		r := *opts.Retention
		return &r, nil
	}
	return b.ObjectLock.DefaultRetention(created), nil
}

// Condition is a precondition on the object a write replaces, checked
// against the current manifest in the same compare-and-swap that commits
// the new one (meta.Store.CommitManifest with the version the check read),
// so no write can slip in between the check and the commit
// (docs/design/s3.md, "Conditional writes").
type Condition struct {
	// IfNoneMatch: the key must not exist (S3's If-None-Match: *).
	// Otherwise ErrPreconditionFailed.
	IfNoneMatch bool
	// IfMatch, if set, is the ETag (hex, with or without quotes) the
	// current object must have: ErrPreconditionFailed if it differs,
	// cairn.ErrNotFound if the key does not exist. "*" matches any
	// current object (RFC 7232): the key must exist.
	IfMatch string
}

// Errors of conditional writes.
var (
	// ErrPreconditionFailed: the object's current state fails the write's
	// Condition; nothing was stored. Permanent (it wraps cairn.ErrExists:
	// the same write meets the same object again).
	ErrPreconditionFailed = fmt.Errorf("%w: the current object fails the write's condition", cairn.ErrExists)
	// ErrConditionalConflict: the condition held, but concurrent writers
	// changed the key before every compare-and-swap the write tried;
	// nothing was stored. Transient: the caller may retry.
	ErrConditionalConflict = fmt.Errorf("%w: the key kept changing while a conditional write committed", cairn.ErrConflict)
)

// none reports whether c is the zero Condition.
func (c Condition) none() bool { return !c.IfNoneMatch && c.IfMatch == "" }

// check evaluates c against the current manifest cur (nil: the key does
// not exist).
func (c Condition) check(cur *cairn.Manifest) error {
	if c.IfNoneMatch && cur != nil {
		return fmt.Errorf("%w: %s/%s exists", ErrPreconditionFailed, cur.Bucket, cur.Key)
	}
	if c.IfMatch != "" {
		if cur == nil {
			return fmt.Errorf("if-match: %w", cairn.ErrNotFound)
		}
		if c.IfMatch != "*" && trimETag(c.IfMatch) != cur.ETag {
			return fmt.Errorf("%w: %s/%s has ETag %q", ErrPreconditionFailed, cur.Bucket, cur.Key, cur.ETag)
		}
	}
	return nil
}

// checkCurrent evaluates c against the key's current manifest, read
// through the retrying reads: the early check that spares a write doomed
// by its condition the work of storing its data. The commit checks again.
func (c *Client) checkCurrent(ctx context.Context, bucket, key string, cond Condition) error {
	if cond.none() {
		return nil
	}
	cur, err := c.meta.Manifest(ctx, bucket, key)
	if err != nil && !isNotFound(err) {
		return err
	}
	return cond.check(cur)
}

// pipelineDepth is the number of stripes in flight between the encoder and
// the shard writers.
const pipelineDepth = 4

// Put stores the body of r as bucket/key. It returns the committed
// manifest. Errors: cairn.ErrNotFound (no such bucket), cairn.ErrInvalid
// (bad key, policy, or a body that does not match opts.Size),
// cairn.ErrUnavailable (a shard could not be stored — of the shard's error
// only cairn.ErrNoSpace shows through, never its ErrNotFound; or the
// cluster has too few writable disks, *placement.TooFewDisksError), or
// ctx's error. On error nothing becomes visible and the shards written so
// far are deleted.
func (c *Client) Put(ctx context.Context, bucket, key string, r io.Reader, opts PutOptions) (*cairn.Manifest, error) {
	if err := cairn.ValidateKey(key); err != nil {
		return nil, err
	}
	b, err := c.meta.Bucket(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w", bucket, err)
	}
	policy := opts.Policy
	if policy == "" {
		policy = b.Policy
	}
	if policy == cairn.RAIDPPolicy {
		return c.putRAIDP(ctx, bucket, key, b, r, opts)
	}
	coldPolicy, policy, err := c.staging(policy)
	if err != nil {
		return nil, err
	}
	if opts.SSE == nil && b.Encryption == cairn.SSES3 {
		opts.SSE = &SSE{Scheme: cairn.SSES3} // the bucket's default encryption
	}
	enc, dk, err := c.newEncryption(ctx, opts.SSE)
	if err != nil {
		return nil, err
	}
	var seal *sealing
	if enc != nil {
		seal = &sealing{e: enc, dk: dk}
		defer seal.close()
	}
	if err := c.checkCurrent(ctx, bucket, key, opts.If); err != nil {
		return nil, err
	}
	if _, err := lockOf(b, opts, time.Time{}); err != nil {
		return nil, err
	}
	d, err := c.store(ctx, bucket, key, policy, partOf{}, r, opts, true, seal)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	m := &cairn.Manifest{
		Bucket: bucket, Key: key, Version: d.version, Size: d.size,
		ETag: d.etag, ContentType: opts.ContentType,
		UserMeta: maps.Clone(opts.UserMeta), Created: now().UTC(),
		Policy: policy, Layout: d.layout, Tags: maps.Clone(opts.Tags), ACL: slices.Clone(opts.ACL),
		Versioned: b.Versioning == cairn.VersioningEnabled, LegalHold: opts.LegalHold,
	}
	if m.Retention, err = lockOf(b, opts, m.Created); err != nil {
		return nil, err
	}
	if opts.Checksum != nil {
		m.Checksum = opts.Checksum()
	}
	if seal != nil {
		enc.Size, m.ETag, m.Encryption = seal.read(), seal.etag(), enc
	}
	if err := c.stage(ctx, m, coldPolicy, now()); err != nil {
		c.discard(ctx, bucket, key, d.files())
		return nil, err
	}
	if err := c.commit(ctx, m, opts.If); err != nil {
		if sentinel(err) {
			// The store said no: the manifest is certainly not committed.
			c.discard(ctx, bucket, key, d.files())
		}
		// Otherwise the outcome is unknown: the manifest may be committed,
		// so the shards stay (garbage for scrub if it was not).
		return nil, err
	}
	return m, nil
}

// partOf says which part of which multipart upload a body stored by
// store is (the zero value: a single-part object), for the shard files'
// identity.
type partOf struct {
	number int
	upload string
}

// identity returns the identity of the shard files of a body of this
// part (or object) as far as it is known before the layout: the size if
// opts announce it (else −1), the content type of an object.
func (p partOf) identity(bucket, key, policy string, opts PutOptions) cairn.ShardIdentity {
	id := cairn.ShardIdentity{Bucket: bucket, Key: key, Part: p.number, Upload: p.upload, Policy: policy, Size: max(opts.Size, -1)}
	if p.number == 0 {
		id.ContentType = opts.ContentType
	}
	return id
}

// stored is a body stored as shard files by store, not yet named by any
// manifest.
type stored struct {
	version string
	size    int64
	etag    string
	layout  cairn.Layout
}

// files returns the shard files store wrote.
func (d *stored) files() []cairn.ShardFile { return d.layout.Files(d.version) }

// store erasure codes the body of r into fresh shard files (placed as if
// for bucket/key) under a new version. A body of at most one stripe gets a
// stripe just big enough for it, and the last stripe of a longer one
// blocks just big enough for what is left (docs/design/manifest.md,
// "Layout"); with small set, a body of at most Config.SmallObject bytes is
// stored as replicas (small.go). With seal set, what is stored is the
// body's ciphertext, under the stream of the new version (sizes are the
// ciphertext's; opts.Size is the plaintext's). On error nothing is kept.
func (c *Client) store(ctx context.Context, bucket, key, policy string, part partOf, r io.Reader, opts PutOptions, small bool, seal *sealing) (*stored, error) {
	code, err := c.code(policy)
	if err != nil {
		return nil, err
	}
	version := "" // drawn below unless encryption needs it first
	if seal != nil {
		if version, err = c.newVersion(); err != nil {
			return nil, err
		}
		if r, err = seal.wrap(bucket, key, version, r); err != nil {
			return nil, err
		}
		if opts.Size >= 0 {
			opts.Size = cairn.EncryptedSize(opts.Size)
		}
	}
	if rc, ok := code.(rateless); ok {
		return c.storeCoded(ctx, bucket, key, version, rc, r, opts, part.identity(bucket, key, policy, opts))
	}
	p := code.Params()
	mult := max(p.ShardMultiple, 1)
	bs := (c.cfg.BlockSize + mult - 1) / mult * mult
	release, err := c.cfg.Memory.take(ctx, int64(p.K*bs))
	if err != nil {
		return nil, err
	}
	defer release()
	first := getBuf(p.K * bs)
	defer putBuf(first)
	n, single, err := fill(r, first)
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	if !single && small && int64(n) <= c.cfg.SmallObject {
		// A full first stripe no bigger than a small object (a tiny
		// BlockSize): does the body end here?
		var one [1]byte
		k, end, err := fill(r, one[:])
		if err != nil {
			return nil, fmt.Errorf("reading the body: %w", err)
		}
		single = end && k == 0
		if k > 0 {
			r = io.MultiReader(bytes.NewReader(one[:k]), r)
		}
	}
	var layoutCode string // the code of the shards, when not the policy's
	if single && small && int64(n) <= c.cfg.SmallObject {
		sc, err := c.smallCodeFor(policy, code)
		if err != nil {
			return nil, err
		}
		if sc != nil {
			code, p, layoutCode = sc, sc.Params(), sc.Policy().String()
		}
	}
	if single {
		bs = codec.ShardSize(p, n) // a small object gets a small stripe
		first = first[:p.K*bs]
	}

	table, err := c.table(ctx, p.N())
	if err != nil {
		return nil, fmt.Errorf("placement for %s: %w", code.Policy(), err)
	}
	if version == "" {
		if version, err = c.newVersion(); err != nil {
			return nil, err
		}
	}
	pg := table.PGs[placement.PGFor(bucket, key, version, len(table.PGs))]
	disks, err := c.arrange(ctx, code.Policy().String(), code, pg)
	if err != nil {
		return nil, fmt.Errorf("placement for %s: %w", code.Policy(), err)
	}
	if disks, err = c.avoidUnwritable(ctx, disks, version); err != nil {
		return nil, fmt.Errorf("placement for %s: %w", code.Policy(), err)
	}
	spares, err := c.spareDisks(ctx, code, disks, version)
	if err != nil {
		return nil, fmt.Errorf("placement for %s: %w", code.Policy(), err)
	}
	stripes := int64(-1) // unknown
	switch {
	case single:
		stripes = 1
	case opts.Size >= 0:
		stripes = max(1, (opts.Size+int64(p.K*bs)-1)/int64(p.K*bs))
	}
	ident := part.identity(bucket, key, policy, opts)
	ident.Code, ident.BlockSize, ident.PG = layoutCode, bs, pg.ID
	if single {
		ident.Size = int64(n)
	}
	w, err := newPutter(ctx, c, code, bs, stripes, version, ident, disks, spares)
	if err != nil {
		return nil, err
	}
	defer w.cancel()
	var md hash.Hash = md5.New()
	if seal != nil {
		md = discardHash{} // the ETag is the plaintext's (sealing.etag), not the ciphertext's
	}
	total, err := w.run(r, first, n, single, md, opts)
	if err == nil && opts.Size >= 0 && total != opts.Size {
		err = fmt.Errorf("%w: the body was %d bytes, %d were announced", cairn.ErrInvalid, total, opts.Size)
	}
	// finish returns the files the object does not use: all of them
	// unless the write succeeded.
	locs, unused, werr := w.finish(err == nil)
	c.discard(ctx, bucket, key, unused)
	if werr != nil && (err == nil || errors.Is(err, context.Canceled) && ctx.Err() == nil) {
		err = werr // a shard's failure, not the cancellation it caused
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.discard(ctx, bucket, key, (&cairn.Layout{Shards: locs}).Files(version))
		return nil, err
	}
	return &stored{version: version, size: total, etag: hex.EncodeToString(md.Sum(nil)),
		layout: cairn.Layout{Code: layoutCode, BlockSize: bs, PG: pg.ID, Shards: locs}}, nil
}

// sentinel reports whether err is a definite answer from the metadata store
// (as opposed to an infrastructure error whose outcome is unknown).
func sentinel(err error) bool {
	for _, s := range []error{cairn.ErrConflict, cairn.ErrNotFound, cairn.ErrInvalid, cairn.ErrExists} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fill reads into p until it is full or r ends. Only a clean io.EOF from r
// is the end of the body (eof); any other error, io.ErrUnexpectedEOF from a
// truncated HTTP body included, is returned as an error — unlike
// io.ReadFull, which reports a short read with that same error.
func fill(r io.Reader, p []byte) (n int, eof bool, err error) {
	for n < len(p) {
		k, err := r.Read(p[n:])
		n += k
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// commit makes m current, replacing whatever version is there (the store
// queues the replaced version's shards for deletion) if that version meets
// cond. Without a condition it first commits as if the key were new. It retries
// (c.commits) when a concurrent writer wins and after a
// transient error, reading the current version and checking cond again
// each time: re-committing m after an unknown outcome is safe (the store
// treats an already-current version as success, and so does the check).
// A conditional commit that loses every attempt returns
// ErrConditionalConflict.
func (c *Client) commit(ctx context.Context, m *cairn.Manifest, cond Condition) error {
	var replaced *cairn.Manifest // the version the successful attempt replaced
	err := retry.Do(ctx, c.commits, func(ctx context.Context) error {
		replaced = nil
		if cond.none() {
			// Guess the key is new: one transaction and no read of our
			// own for a new key (issue 22). An overwrite fails the guess
			// and reads the version it replaces below: a raidp version's
			// bytes must be freed (docs/design/raidp.md, "Deletes"),
			// which a commit over meta.AnyVersion would not tell.
			if err := c.direct.CommitManifest(ctx, m, ""); !errors.Is(err, cairn.ErrConflict) {
				return err
			}
		}
		prev := ""
		old, err := c.direct.Manifest(ctx, m.Bucket, m.Key)
		switch {
		case err == nil:
			prev = old.Version
		case !isNotFound(err):
			return err
		default:
			old = nil
		}
		// m itself current: an earlier attempt's commit landed, and was
		// checked; committing it again is a no-op success.
		if old == nil || old.Version != m.Version {
			if err := cond.check(old); err != nil {
				return err
			}
		}
		if old != nil && old.Version != m.Version {
			replaced = old
		}
		return c.direct.CommitManifest(ctx, m, prev) // ErrConflict: a concurrent writer won; retry against its version
	})
	if errors.Is(err, cairn.ErrConflict) && ctx.Err() == nil {
		if !cond.none() {
			return fmt.Errorf("committing %s/%s: %w", m.Bucket, m.Key, ErrConditionalConflict)
		}
		return fmt.Errorf("committing %s/%s: %w (too many concurrent writers)", m.Bucket, m.Key, err)
	}
	if err != nil {
		return fmt.Errorf("committing %s/%s: %w", m.Bucket, m.Key, err)
	}
	// The store keeps the replaced version as a noncurrent one unless both
	// are the null version (meta.Store.SetBucketVersioning): then a raidp
	// object's bytes are freed.
	if replaced != nil && !replaced.Versioned && !m.Versioned {
		c.freeRAIDP(ctx, replaced)
	}
	return nil
}
