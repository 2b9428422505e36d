package client

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"cairn"
	"cairn/meta"
)

// Multipart upload errors. Each wraps cairn.ErrInvalid (or, for
// ErrNoSuchUpload, cairn.ErrNotFound) so callers that do not know them
// still classify them.
var (
	ErrNoSuchUpload     = fmt.Errorf("no such upload: %w", cairn.ErrNotFound)
	ErrInvalidPart      = fmt.Errorf("%w: a listed part was not uploaded or its ETag differs", cairn.ErrInvalid)
	ErrInvalidPartOrder = fmt.Errorf("%w: the part list is not in ascending part number order", cairn.ErrInvalid)
	ErrEntityTooSmall   = fmt.Errorf("%w: a part other than the last is smaller than the minimum part size", cairn.ErrInvalid)
)

// CompletePart names one part of a Complete request: its number and the
// ETag its upload returned (hex MD5, with or without quotes).
type CompletePart struct {
	Number int
	ETag   string
}

// CreateUpload starts a multipart upload of bucket/key. opts.Policy (""
// = the bucket's default), ContentType, UserMeta, Tags and ChecksumAlgorithm are fixed now for the
// object Complete will commit; opts.Now is the creation time.
func (c *Client) CreateUpload(ctx context.Context, bucket, key string, opts PutOptions) (cairn.Upload, error) {
	if err := cairn.ValidateKey(key); err != nil {
		return cairn.Upload{}, err
	}
	b, err := c.meta.Bucket(ctx, bucket)
	if err != nil {
		return cairn.Upload{}, fmt.Errorf("bucket %q: %w", bucket, err)
	}
	policy := opts.Policy
	if policy == "" {
		policy = b.Policy
	}
	// The parts of a cold class's upload are stored with the staging
	// policy, and Complete commits the object staged (u.Cold).
	coldPolicy, policy, err := c.staging(policy)
	if err != nil {
		return cairn.Upload{}, err
	}
	if _, err := c.code(policy); err != nil {
		return cairn.Upload{}, err
	}
	id, err := c.newVersion()
	if err != nil {
		return cairn.Upload{}, err
	}
	if opts.SSE == nil && b.Encryption == cairn.SSES3 {
		opts.SSE = &SSE{Scheme: cairn.SSES3} // the bucket's default encryption
	}
	enc, _, err := c.newEncryption(ctx, opts.SSE)
	if err != nil {
		return cairn.Upload{}, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	u := cairn.Upload{Bucket: bucket, Key: key, ID: id, Created: now().UTC(), Policy: policy, Cold: coldPolicy,
		ContentType: opts.ContentType, UserMeta: maps.Clone(opts.UserMeta), Encryption: enc,
		Tags: maps.Clone(opts.Tags), ACL: slices.Clone(opts.ACL), ChecksumAlgorithm: opts.ChecksumAlgorithm, ChecksumType: opts.ChecksumType,
		LegalHold: opts.LegalHold}
	if _, err := lockOf(b, opts, u.Created); err != nil {
		return cairn.Upload{}, err
	}
	u.Retention = opts.Retention // the bucket's default is applied at Complete
	if err := c.meta.CreateUpload(ctx, u); err != nil {
		return cairn.Upload{}, err
	}
	return u, nil
}

// Upload returns the upload id of bucket/key (its encryption, to check a
// part's SSE-C key before its body is read), or ErrNoSuchUpload.
func (c *Client) Upload(ctx context.Context, bucket, key, id string) (cairn.Upload, error) {
	return c.upload(ctx, bucket, key, id)
}

// upload returns an upload of bucket/key, or ErrNoSuchUpload.
func (c *Client) upload(ctx context.Context, bucket, key, id string) (cairn.Upload, error) {
	u, err := c.meta.Upload(ctx, bucket, id)
	if errors.Is(err, cairn.ErrNotFound) || err == nil && u.Key != key {
		return u, fmt.Errorf("%w: %s", ErrNoSuchUpload, id)
	}
	return u, err
}

// UploadPart stores the body of r as part number n of an upload, erasure
// coded as it arrives (opts.Size, Progress and Now apply; the upload fixed
// the rest). A part uploaded again replaces the earlier one. Errors:
// ErrNoSuchUpload, cairn.ErrInvalid (a part number outside 1..MaxParts, a
// body that does not match opts.Size), and Put's.
func (c *Client) UploadPart(ctx context.Context, bucket, key, id string, n int, r io.Reader, opts PutOptions) (cairn.Part, error) {
	if n < 1 || n > cairn.MaxParts {
		return cairn.Part{}, fmt.Errorf("%w: part number %d (1 to %d allowed)", cairn.ErrInvalid, n, cairn.MaxParts)
	}
	var u cairn.Upload
	switch r := opts.Upload; {
	case r == nil:
		var err error
		if u, err = c.upload(ctx, bucket, key, id); err != nil {
			return cairn.Part{}, err
		}
	case r.Bucket != bucket || r.Key != key || r.ID != id:
		return cairn.Part{}, fmt.Errorf("%w: PutOptions.Upload is upload %s of %s/%s, not %s of %s/%s",
			cairn.ErrInvalid, r.ID, r.Bucket, r.Key, id, bucket, key)
	default:
		u = *r
	}
	var seal *sealing
	switch {
	case u.Encryption != nil:
		var ck []byte
		if opts.SSE != nil {
			ck = opts.SSE.CustomerKey
		}
		dk, err := c.dataKey(ctx, u.Encryption, ck)
		if err != nil {
			return cairn.Part{}, err
		}
		seal = &sealing{e: u.Encryption, dk: dk}
		defer seal.close()
	case opts.SSE != nil:
		return cairn.Part{}, fmt.Errorf("%w: encryption asked for a part of an upload created without it", ErrEncryptionMismatch)
	}
	d, err := c.store(ctx, bucket, key, u.Policy, partOf{n, id}, r, opts, false, seal) // parts: never replicated (a manifest's parts share one code)
	if err != nil {
		return cairn.Part{}, err
	}
	if seal != nil {
		d.etag = seal.etag()
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	p := cairn.Part{Number: n, Version: d.version, Size: d.size, ETag: d.etag, Created: now().UTC(), Layout: d.layout}
	if opts.Checksum != nil {
		p.Checksum = opts.Checksum()
	}
	_, err = c.meta.PutPart(ctx, bucket, id, p)
	if err != nil {
		if sentinel(err) { // certainly not recorded
			c.discard(ctx, bucket, key, d.files())
		}
		if errors.Is(err, cairn.ErrNotFound) {
			err = fmt.Errorf("%w: %s (aborted or completed meanwhile)", ErrNoSuchUpload, id)
		}
		return cairn.Part{}, err
	}
	return p, nil
}

// ListPartsPage returns an upload and up to limit of its parts numbered
// above after (1 ≤ limit ≤ meta.MaxPage), sorted by number, and whether
// more follow: S3 ListParts, page by page.
func (c *Client) ListPartsPage(ctx context.Context, bucket, key, id string, after, limit int) (cairn.Upload, []cairn.Part, bool, error) {
	u, err := c.upload(ctx, bucket, key, id)
	if err != nil {
		return u, nil, false, err
	}
	parts, more, err := c.meta.PartPage(ctx, bucket, id, after, limit)
	if errors.Is(err, cairn.ErrNotFound) {
		err = fmt.Errorf("%w: %s", ErrNoSuchUpload, id)
	}
	return u, parts, more, err
}

// ListUploads returns the uploads in progress in a bucket ("" = all),
// sorted by bucket, key, creation time and ID.
func (c *Client) ListUploads(ctx context.Context, bucket string) ([]cairn.Upload, error) {
	return c.meta.Uploads(ctx, bucket)
}

// AbortUpload deletes an upload; the store queues the shards of its parts
// for deletion.
func (c *Client) AbortUpload(ctx context.Context, bucket, key, id string) error {
	if _, err := c.upload(ctx, bucket, key, id); err != nil {
		return err
	}
	_, err := c.meta.DeleteUpload(ctx, bucket, id)
	if errors.Is(err, cairn.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoSuchUpload, id)
	}
	return err
}

// CompleteUpload commits the listed parts, in order, as bucket/key (no
// data is copied: the manifest lists the parts) and ends the upload;
// parts not listed are deleted. The ETag is S3's multipart ETag, the hex
// MD5 of the parts' binary MD5s followed by "-" and the part count.
// Errors: ErrNoSuchUpload, ErrInvalidPartOrder (numbers not strictly
// ascending), ErrInvalidPart (a part missing or its ETag differs),
// ErrEntityTooSmall (a part but the last below Config.MinPartSize),
// cairn.ErrInvalid (no parts listed).
func (c *Client) CompleteUpload(ctx context.Context, bucket, key, id string, list []CompletePart) (*cairn.Manifest, error) {
	return c.CompleteUploadIf(ctx, bucket, key, id, list, Condition{})
}

// CompleteUploadIf is CompleteUpload committing only if the object it
// replaces meets cond, checked in the same compare-and-swap as the commit
// (see Condition): ErrPreconditionFailed or cairn.ErrNotFound (If-Match on
// a missing key) if it does not, and the upload stays in progress;
// ErrConditionalConflict if concurrent writers kept changing the key.
func (c *Client) CompleteUploadIf(ctx context.Context, bucket, key, id string, list []CompletePart, cond Condition) (*cairn.Manifest, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: a multipart upload needs at least one part", cairn.ErrInvalid)
	}
	for i := 1; i < len(list); i++ {
		if list[i].Number <= list[i-1].Number {
			return nil, fmt.Errorf("%w: part %d after part %d", ErrInvalidPartOrder, list[i].Number, list[i-1].Number)
		}
	}
	for range 16 {
		have, stamp, err := c.meta.Parts(ctx, bucket, id)
		if errors.Is(err, cairn.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrNoSuchUpload, id)
		}
		if err != nil {
			return nil, err
		}
		// The record after the stamp: a reseal of its data key
		// (meta.Store.UpdateUploadEncryption) changes the stamp, so the
		// commit below never keeps a sealing older than the stamp's.
		u, err := c.upload(ctx, bucket, key, id)
		if err != nil {
			return nil, err
		}
		byNum := make(map[int]cairn.Part, len(have))
		for _, p := range have {
			byNum[p.Number] = p
		}
		parts := make([]cairn.Part, len(list))
		md := md5.New()
		var size, plain int64
		sizes := make([]int64, len(list)) // content bytes of each part
		for i, cp := range list {
			p, ok := byNum[cp.Number]
			if !ok || trimETag(cp.ETag) != p.ETag {
				return nil, fmt.Errorf("%w: part %d", ErrInvalidPart, cp.Number)
			}
			ps := p.Size
			if u.Encryption != nil {
				if ps, err = cairn.DecryptedSize(p.Size); err != nil {
					return nil, fmt.Errorf("part %d: %w", p.Number, err)
				}
			}
			plain += ps
			sizes[i] = ps
			if i < len(list)-1 && ps < c.cfg.MinPartSize {
				return nil, fmt.Errorf("%w: part %d has %d bytes, the minimum is %d", ErrEntityTooSmall, cp.Number, ps, c.cfg.MinPartSize)
			}
			sum, err := hex.DecodeString(p.ETag)
			if err != nil {
				return nil, fmt.Errorf("part %d: stored ETag %q: %w", p.Number, p.ETag, err)
			}
			md.Write(sum)
			parts[i], size = p, size+p.Size
		}
		version, err := c.newVersion()
		if err != nil {
			return nil, err
		}
		m := &cairn.Manifest{
			Bucket: bucket, Key: key, Version: version, Size: size,
			ETag:        fmt.Sprintf("%s-%d", hex.EncodeToString(md.Sum(nil)), len(parts)),
			ContentType: u.ContentType, UserMeta: maps.Clone(u.UserMeta), Created: u.Created,
			Policy: u.Policy, Parts: parts, Upload: id, Tags: maps.Clone(u.Tags), ACL: slices.Clone(u.ACL),
		}
		if u.ChecksumAlgorithm != "" {
			if m.Checksum, err = uploadChecksum(u, parts, sizes); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidPart, err)
			}
		}
		b, err := c.meta.Bucket(ctx, bucket)
		if err != nil {
			return nil, fmt.Errorf("bucket %q: %w", bucket, err)
		}
		m.Versioned = b.Versioning == cairn.VersioningEnabled
		m.LegalHold = u.LegalHold
		if m.Retention, err = lockOf(b, PutOptions{Retention: u.Retention, LegalHold: u.LegalHold}, m.Created); err != nil {
			return nil, err
		}
		if u.Encryption != nil {
			e := *u.Encryption
			e.Size = plain
			m.Encryption = &e
		}
		prev := ""
		old, err := c.meta.Manifest(ctx, bucket, key)
		switch {
		case err == nil:
			prev = old.Version
		case !isNotFound(err):
			return nil, fmt.Errorf("completing %s/%s: %w", bucket, key, err)
		default:
			old = nil
		}
		if err := cond.check(old); err != nil {
			return nil, fmt.Errorf("completing %s/%s: %w", bucket, key, err)
		}
		// Staged: the queue record before the commit, as a PUT's (a
		// record whose commit fails is dropped by the export job later).
		if err := c.stage(ctx, m, u.Cold, time.Now()); err != nil {
			return nil, fmt.Errorf("completing %s/%s: %w", bucket, key, err)
		}
		_, err = c.meta.CompleteUpload(ctx, m, prev, id, stamp)
		if errors.Is(err, cairn.ErrConflict) {
			continue // a part was replaced or the object overwritten: re-check
		}
		if errors.Is(err, cairn.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrNoSuchUpload, id)
		}
		if err != nil {
			return nil, fmt.Errorf("completing %s/%s: %w", bucket, key, err)
		}
		if old != nil && !old.Versioned && !m.Versioned {
			c.freeRAIDP(ctx, old) // a raidp object replaced (commit's rule)
		}
		return m, nil
	}
	if !cond.none() {
		return nil, fmt.Errorf("completing %s/%s: %w", bucket, key, ErrConditionalConflict)
	}
	return nil, fmt.Errorf("completing %s/%s: %w (too many concurrent changes)", bucket, key, cairn.ErrConflict)
}

func trimETag(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// SweepUploads aborts every upload created before now − maxAge (the
// abandoned ones) and deletes their parts' shards. It returns how many
// uploads it aborted; an upload completed or aborted meanwhile is skipped.
// The director runs it periodically (S3 leaves this to lifecycle rules;
// cairn does it by default, with maxAge 7 days: DefaultUploadMaxAge).
func (c *Client) SweepUploads(ctx context.Context, now time.Time, maxAge time.Duration) (int, error) {
	n := 0
	err := meta.EachUpload(ctx, c.meta, "", func(u cairn.Upload) error {
		if !u.Created.Before(now.Add(-maxAge)) {
			return nil
		}
		_, err := c.meta.DeleteUpload(ctx, u.Bucket, u.ID)
		if errors.Is(err, cairn.ErrNotFound) {
			return nil
		}
		if err == nil {
			n++
		}
		return err
	})
	if err != nil {
		return n, err
	}
	return n, nil
}

// DefaultUploadMaxAge is the age after which SweepUploads should abort an
// upload by default.
const DefaultUploadMaxAge = 7 * 24 * time.Hour

// uploadChecksum is the checksum of the object completing upload u from
// parts, of sizes content bytes each: of u's algorithm and type.
func uploadChecksum(u cairn.Upload, parts []cairn.Part, sizes []int64) (*cairn.Checksum, error) {
	if u.ChecksumType == cairn.ChecksumFullObject {
		return cairn.FullObjectChecksum(u.ChecksumAlgorithm, parts, sizes)
	}
	return cairn.CompositeChecksum(u.ChecksumAlgorithm, parts)
}
