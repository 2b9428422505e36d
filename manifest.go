package cairn

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

func validUTF8(s string) bool { return utf8.ValidString(s) }

// Manifest is an object's distribution description (the Grid RS storage
// paper's term): everything needed to find, decode and check its data. An
// object is visible if and only if its manifest is committed in the
// metadata store; shards are written before the manifest and deleted after
// it is gone.
//
// An object takes exactly one of three forms (Validate enforces it):
//   - erasure-coded: its Layout has Shards (the code is Policy);
//   - fountain-coded: its Layout has Coded stripes;
//   - multipart: it has Parts, each with a Layout of one of the forms
//     above, and its own Layout is the zero Layout (but for the Code of
//     a staged cold object).
//
// An exported cold object (Cold set) has the zero Layout, and its parts,
// if it was uploaded in parts, keep their records with zero Layouts.
//
// The JSON encoding is the format stored in the metadata store
// (docs/design/manifest.md): Layout's fields appear inline, as if declared
// here.
type Manifest struct {
	Bucket      string            `json:"bucket"`
	Key         string            `json:"key"`
	Version     string            `json:"version"` // unique per write: 32 hex digits; names the shard files
	Size        int64             `json:"size"`
	ETag        string            `json:"etag"` // quoted-less hex MD5 of the content (S3 style, single part)
	ContentType string            `json:"content_type,omitempty"`
	UserMeta    map[string]string `json:"user_meta,omitempty"`
	Created     time.Time         `json:"created"`
	Policy      string            `json:"policy"` // e.g. "rs-4-2"
	Layout                        // a single-part object's; zero for a multipart object (a staged cold one: Code only)
	// Parts makes this a multipart object: its content is the parts'
	// contents in order, each part laid out like a single-part object of
	// its own version (the code being Policy).
	Parts []Part `json:"parts,omitempty"`
	// Upload is the ID of the multipart upload that committed this
	// object, so a repeated CompleteMultipartUpload can answer as S3 while
	// the object is still the upload's. Empty for single-part objects and
	// multipart ones written before.
	Upload string `json:"upload,omitempty"`
	// Encryption, if set, says the object's stored bytes are ciphertext
	// (docs/design/encryption.md): Size and the layouts describe the
	// ciphertext, Encryption.Size the content (ContentSize). Unset: the
	// object is stored in the clear (every manifest written before).
	Encryption *Encryption `json:"encryption,omitempty"`
	// Tags are the object's tags (S3 object tagging, docs/design/s3.md,
	// "Tagging"): at most 10, set by the write that made this
	// version or by PutObjectTagging, gone with the version.
	Tags map[string]string `json:"tags,omitempty"`
	// ACL is the object's ACL beyond its owner's FULL_CONTROL (the
	// bucket owner owns every object; docs/design/s3.md, "Access
	// control"): set by x-amz-acl on the write that made this version or
	// by PutObjectAcl; nil: private.
	ACL []Grant `json:"acl,omitempty"`
	// Checksum is the x-amz-checksum-* value of the content that the
	// gateway verified as the body arrived, or the composite checksum of a
	// multipart object's parts (nil: the writer sent none).
	Checksum *Checksum `json:"checksum,omitempty"`
	// Versioned says the object was written while its bucket's
	// versioning was Enabled: its S3 version ID is Version. False: it is
	// the key's null version (docs/design/versioning.md).
	Versioned bool `json:"versioned,omitempty"`
	// Cold, if set, makes this an object exported to the cold tier
	// (docs/design/cold.md): its bytes are in a cold group's slots, where
	// Cold's record finds them, and its Layout is zero. A manifest whose
	// Policy is a cold one (CODE/gp=S0:Q) without Cold is staged: stored
	// in the warm tier with Layout.Code, waiting for the export.
	Cold *ColdRef `json:"cold,omitempty"`
	// RAIDP, set exactly when Policy is RAIDPPolicy, is where a raidp
	// object's bytes are (its Layout is then zero; single-part only).
	RAIDP *RAIDPLayout `json:"raidp,omitempty"`
	// Retention and LegalHold are the version's Object Lock
	// (docs/design/objectlock.md): set by the write that made it (or the
	// bucket's default retention), changed only by
	// meta.Store.SetObjectLock; CheckDelete says what they forbid.
	Retention *Retention `json:"retention,omitempty"`
	LegalHold bool       `json:"legal_hold,omitempty"`
}

// ColdRef is where an exported cold object lives: its placement group
// and its index record there (layout/gp's Record encoding, about 50
// bytes), kept in the manifest so that the object's one record commits
// with it.
type ColdRef struct {
	Group  string `json:"group"`
	Record []byte `json:"record"` // gp.Record.AppendBinary; JSON base64
}

// IsColdPolicy reports whether policy names the cold tier's layout
// (CODE/gp=S0:Q[:MAX], docs/design/cold.md "Policy"), without checking
// it (layout/gp.ParsePolicy does).
func IsColdPolicy(policy string) bool { return strings.Contains(policy, "/gp=") }

// Layout says where the bytes of one object (or one part) of Size bytes
// live and how to check them, in one of two forms: erasure-coded Shards
// or fountain-coded Coded stripes, never both (Layout.Validate).
//
// Shards: the data is cut into stripes of K·BlockSize data bytes. Stripe
// s's shard i is bytes [s·BlockSize, s·BlockSize + b) of shard file i,
// where b is BlockSize except in the last stripe (StripeBlock): there it
// is whatever the shard files hold beyond the full blocks before it —
// ⌈rest/K⌉ rounded up to the code's shard multiple since shards are sized
// to the data, BlockSize in manifests written before, when the last
// stripe was zero-padded to full blocks (docs/design/manifest.md,
// "Layout"). Shard file i lives on Shards[i].Disk under the name
// ShardName(Version, RowOf(Shards, i)): row i of the code, or a spare
// parity row that took its place (ShardLoc.Row). PG is the placement group
// the version hashed to.
//
// Coded: stripe s holds data bytes [s·K·BlockSize, (s+1)·K·BlockSize) as
// its K source blocks of BlockSize (of CodedStripe.BlockSize in a last
// stripe sized to its data), coded into blocks that landed on whichever
// disks took them (RobuSTore's speculative write). PG is unused (0).
//
// Code, when set, is the code the layout is stored with instead of the
// object's policy: a small object is stored as replicas that survive as
// many lost disks as its policy (docs/design/manifest.md, "Small
// objects"), or the warm code of a staged cold object
// (docs/design/cold.md). Only a single-part object's layout with shards
// has one, and a staged cold multipart object's own zero layout.
type Layout struct {
	Code      string        `json:"code,omitempty"` // the code of the shards when not the policy's (a small object's replicas)
	BlockSize int           `json:"block_size"`     // bytes of each shard (or coded block) per stripe, but maybe the last
	PG        int           `json:"pg"`             // placement group of the shards
	Shards    []ShardLoc    `json:"shards"`         // index i: shard i of every stripe
	Coded     []CodedStripe `json:"coded,omitempty"`
}

// CodedStripe is one stripe of a fountain-coded object: the coded blocks
// that were durable when the write stopped. Block id's file is
// ShardName(Version, id) on its disk. Every block is BlockSize bytes if
// that is set — only the last stripe sets it, its blocks sized to the data
// it holds — and the layout's BlockSize bytes otherwise.
type CodedStripe struct {
	Version   string     `json:"version"`              // 32 hex digits, unique per stripe
	BlockSize int        `json:"block_size,omitempty"` // 0: the layout's
	Blocks    []BlockLoc `json:"blocks"`               // in the order they became durable
	// Next is the first block ID no writer of the stripe has handed out:
	// IDs below it may name files written and discarded (cancelled
	// blocks of the PUT, blocks of a repair that lost its race), queued
	// for deletion, so a new block must take an ID ≥ Next — a repair
	// raises it in the manifest before it writes (docs/design/lt.md,
	// "Repair"). 0: not recorded (stripes written before), see
	// CodedStripe.FreshID.
	Next int `json:"next,omitempty"`
}

// CodedSlack is how far beyond its N blocks a fountain-coded PUT may hand
// out block IDs (the requests in flight when it stops: two on each of up
// to 64 disks). CodedStripe.FreshID relies on it for stripes written
// before Next was recorded.
const CodedSlack = 128

// FreshID returns the first block ID a new block of the stripe may take,
// for a code of n blocks per stripe: Next, and never an ID at or below a
// listed block's; for a stripe without Next, above the n + CodedSlack IDs
// its PUT may have handed out.
func (s *CodedStripe) FreshID(n int) int {
	next := s.Next
	if next == 0 {
		next = n + CodedSlack
	}
	for _, b := range s.Blocks {
		next = max(next, b.ID+1)
	}
	return next
}

// BlockLoc is one stored coded block.
type BlockLoc struct {
	ID   int    `json:"id"` // the code's block ID (0..K−1: a source block itself)
	Disk DiskID `json:"disk"`
	CRC  uint32 `json:"crc32c"` // CRC-32C of the block
	// Ident is the length of the identity the block's file records (0:
	// none), as ShardLoc.Ident.
	Ident int `json:"ident,omitempty"`
}

// Part is one uploaded part of a multipart upload, and (in
// Manifest.Parts) one part of a multipart object. Its shard files are named
// ShardName(Version, i) like an object's.
type Part struct {
	Number  int       `json:"number"`  // 1 to MaxParts
	Version string    `json:"version"` // 32 hex digits, unique per part upload
	Size    int64     `json:"size"`
	ETag    string    `json:"etag"` // hex MD5 of the part's content
	Created time.Time `json:"created"`
	Layout
	// Checksum is the part's verified x-amz-checksum-* value (nil: none
	// was sent); Complete composes the object's from those of its parts.
	Checksum *Checksum `json:"checksum,omitempty"`
}

// MaxParts is the largest part number of a multipart upload (as S3).
const MaxParts = 10000

// Upload is a multipart upload in progress: what CreateMultipartUpload
// fixed for the object that Complete will commit.
type Upload struct {
	Bucket  string    `json:"bucket"`
	Key     string    `json:"key"`
	ID      string    `json:"id"` // 32 hex digits
	Created time.Time `json:"created"`
	Policy  string    `json:"policy"` // resolved: never ""; the parts' code
	// Cold, if set, is the cold policy (docs/design/cold.md) the
	// completed object is staged for: its parts are stored with Policy,
	// the staging policy, and Complete commits the object staged.
	Cold        string            `json:"cold,omitempty"`
	ContentType string            `json:"content_type,omitempty"`
	UserMeta    map[string]string `json:"user_meta,omitempty"`
	// Encryption, if set, is how every part is encrypted: the sealed data
	// key the parts share (its Size unused until Complete fills it).
	Encryption *Encryption `json:"encryption,omitempty"`
	// Tags are the tags the completed object gets (x-amz-tagging on
	// CreateMultipartUpload).
	Tags map[string]string `json:"tags,omitempty"`
	// ACL is the ACL the completed object gets (x-amz-acl on
	// CreateMultipartUpload).
	ACL []Grant `json:"acl,omitempty"`
	// ChecksumAlgorithm is the x-amz-checksum-algorithm of
	// CreateMultipartUpload (CRC32, ...; "" = none): every part must carry
	// a checksum of it, and Complete stores the object's, of
	// ChecksumType.
	ChecksumAlgorithm string `json:"checksum_algorithm,omitempty"`
	// ChecksumType is the form of that checksum: ChecksumComposite
	// (CompositeChecksum) or ChecksumFullObject (FullObjectChecksum, CRCs
	// only). "" with an algorithm: composite (uploads recorded before).
	ChecksumType string `json:"checksum_type,omitempty"`
	// Retention and LegalHold are the Object Lock the completed object
	// gets (x-amz-object-lock-* on CreateMultipartUpload).
	Retention *Retention `json:"retention,omitempty"`
	LegalHold bool       `json:"legal_hold,omitempty"`
}

// PartManifest returns the manifest that describes part p of a multipart
// object m as if it were a single-part object: m's name and policy, p's
// version, size, ETag, creation time and Layout (GET reads each part
// through it), with m's Code when p has none: the parts of a staged cold
// object are stored with the warm code m.Code names.
func (m *Manifest) PartManifest(p Part) *Manifest {
	pm := &Manifest{Bucket: m.Bucket, Key: m.Key, Policy: m.Policy,
		Version: p.Version, Size: p.Size, ETag: p.ETag, Created: p.Created, Layout: p.Layout}
	if pm.Code == "" {
		pm.Code = m.Code
	}
	return pm
}

// OpenPart returns the manifest through which repair sees part p of the
// upload in progress u (docs/design/repair.md, "Parts of uploads in
// progress"): u's bucket, key, policy and ID (Upload), no version (no
// object is committed yet), p's size and p as its only part. Its
// IdentityOf(p.Number, row) is the identity UploadPart recorded in the
// part's shard files.
func (u *Upload) OpenPart(p Part) *Manifest {
	return &Manifest{Bucket: u.Bucket, Key: u.Key, Policy: u.Policy, Upload: u.ID, Size: p.Size,
		Created: u.Created, Parts: []Part{p}}
}

// IsOpenPart reports whether m is an upload's part in progress as
// Upload.OpenPart returns it: no version, one part, an upload.
func (m *Manifest) IsOpenPart() bool { return m.Version == "" && m.Upload != "" && len(m.Parts) == 1 }

// ShardLoc says where one shard file of an object lives and how to check it.
type ShardLoc struct {
	Disk DiskID `json:"disk"`
	// Row is the code row the shard holds when that is not its own index
	// i: a spare parity row (≥ N, of the code extended by
	// codec.Extensible) that a writer made in place of a straggling or
	// failed shard. 0 means row i (a spare row is never 0).
	Row  int    `json:"row,omitempty"`
	Size int64  `json:"size"`   // content bytes of the shard file: the full blocks and the last stripe's block
	CRC  uint32 `json:"crc32c"` // CRC-32C (Castagnoli) of the whole shard file's content
	// Ident is the length of the encoded ShardIdentity the file carries
	// before its footer (ShardIdentity.Encode), 0 for a file without
	// one (written before volume format 2, or by a writer that did not
	// know it): the file is ShardFileBytes(Size) + Ident bytes.
	Ident int `json:"ident,omitempty"`
}

// RowOf returns the code row shard i of shards holds (and names its file:
// ShardName(version, RowOf(shards, i))).
func RowOf(shards []ShardLoc, i int) int {
	if shards[i].Row != 0 {
		return shards[i].Row
	}
	return i
}

// Rows returns how many rows the code of a stripe with these shards must
// have to decode it: len(shards), or more when a spare row is among them.
func Rows(shards []ShardLoc) int {
	n := len(shards)
	for i := range shards {
		n = max(n, RowOf(shards, i)+1)
	}
	return n
}

// LayoutCode returns the code m's layout (or its parts' layouts) is
// stored with: its Layout.Code, or else the policy. Of a multipart object
// only a staged cold one has a Code (its parts' warm code).
func (m *Manifest) LayoutCode() string {
	if m.Code != "" {
		return m.Code
	}
	return m.Policy
}

// StripeData returns the data bytes per stripe for a code with k data
// shards (the last stripe may hold fewer: StripeBlock).
func (m *Manifest) StripeData(k int) int64 { return int64(k) * int64(m.BlockSize) }

// Stripes returns the number of stripes for a code with k data shards
// (at least 1, so an empty object still has one stripe).
func (m *Manifest) Stripes(k int) int64 { return stripes(m.Size, k, m.BlockSize) }

// StripeBlock returns the bytes of every shard's block (or every coded
// block) of stripe s (0 ≤ s < stripes) of a layout of size bytes for a
// code with k data blocks per stripe: BlockSize, except in the last
// stripe, whose blocks are what the layout records — the shards' bytes
// beyond the full blocks before it, or the stripe's CodedStripe.BlockSize.
// It expects a layout that passed ValidateStored.
func (l *Layout) StripeBlock(size int64, k int, s int64) int64 {
	bs := int64(l.BlockSize)
	n := stripes(size, k, l.BlockSize)
	switch {
	case s < n-1:
		return bs
	case len(l.Coded) > 0:
		if b := l.Coded[s].BlockSize; b > 0 {
			return int64(b)
		}
		return bs
	case len(l.Shards) > 0:
		return l.Shards[0].Size - (n-1)*bs
	}
	return bs
}

// stripes returns the number of stripes of size bytes of data in stripes
// of k blocks of bs bytes: at least 1, or 0 if k·bs is not positive.
func stripes(size int64, k, bs int) int64 {
	sd := int64(k) * int64(bs)
	if sd <= 0 {
		return 0
	}
	return max(1, (size+sd-1)/sd)
}

// ShardName is the file name of shard index i of an object version on a
// disk. Keys never reach the file system: only versions (hex) and indices do.
func ShardName(version string, i int) string { return fmt.Sprintf("%s.%d", version, i) }

// MaxShardIndex is the largest shard index a shard name may carry.
const MaxShardIndex = 9999

// ValidateShardName checks that name is a shard name as ShardName makes
// it: 32 lower-case hex digits, a dot, and a decimal index 0..MaxShardIndex
// without leading zeros. Nothing else is accepted, so a name can never
// reach outside the shards directory (no '/', no "..", no NUL) and every
// shard has exactly one spelling. The error wraps ErrInvalid.
func ValidateShardName(name string) error {
	bad := func(why string) error {
		if len(name) > 80 {
			name = name[:80] + "…"
		}
		return fmt.Errorf("%w: shard name %q: %s (want <32 lower-case hex>.<index>)", ErrInvalid, name, why)
	}
	if len(name) < 34 || len(name) > 37 {
		return bad("wrong length")
	}
	for i := 0; i < 32; i++ {
		c := name[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return bad("version is not lower-case hex")
		}
	}
	if name[32] != '.' {
		return bad("no '.' after the version")
	}
	idx := name[33:]
	for i := 0; i < len(idx); i++ {
		if idx[i] < '0' || idx[i] > '9' {
			return bad("index is not decimal")
		}
	}
	if len(idx) > 1 && idx[0] == '0' {
		return bad("index has a leading zero")
	}
	return nil
}
