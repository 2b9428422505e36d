package meta

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cairn"
)

// AnyVersion, as CommitManifest's prevVersion, commits over whatever
// version is current, or none: an unconditional write, which then needs
// no read of its own to learn the version it replaces (the store reads
// it in the commit's own compare-and-swap).
const AnyVersion = "*"

// Store is cairn's metadata: the cluster map, placement groups, buckets,
// object manifests, liveness leases and leader election. Two
// implementations: meta/etcd (embedded or external etcd; production) and
// meta/mem (tests and the simulator). Both pass metatest.
//
// All methods are safe for concurrent use. Errors wrap the sentinels of
// package cairn (ErrNotFound, ErrExists, ErrConflict, ErrBucketNotEmpty,
// ErrInvalid) where the contract names them; anything else is an
// infrastructure error: ctx's error if ctx ended, else one wrapping
// cairn.ErrUnavailable (the store did not answer within its deadline —
// meta/etcd bounds every call, Options.CallTimeout — or failed).
//
// Writes that stop naming shard files (CommitManifest and CompleteUpload
// over an object, DeleteManifest, UpdateManifest, PutPart over a part,
// DeleteUpload, CompleteUpload's parts left out) queue them as cleanup
// records (cairn.Cleanup, built by Discarded) in the same transaction,
// with Since the time of the write; nothing else deletes shard files of
// objects (docs/design/cleanup.md).
type Store interface {
	// PutNode registers or updates a node.
	PutNode(ctx context.Context, n cairn.Node) error
	// Nodes lists all registered nodes, sorted by ID.
	Nodes(ctx context.Context) ([]cairn.Node, error)
	// PutDisk registers or updates a disk: the fields its node owns (path,
	// capacity, free space, fault, volume, check). It keeps the stored
	// State, Since, Reason and Trusted unless the stored state is empty
	// (cairn.Registered); use ChangeDisk for those.
	PutDisk(ctx context.Context, d cairn.Disk) error
	// Disks lists all disks, sorted by ID.
	Disks(ctx context.Context) ([]cairn.Disk, error)
	// SetDiskState sets a disk's state and Since time and clears its
	// Reason, whatever the state was. ErrNotFound if the disk is unknown,
	// ErrInvalid if s is not a valid state.
	SetDiskState(ctx context.Context, id cairn.DiskID, s cairn.DiskState, since time.Time) error
	// ChangeDisk applies c to a disk's record (cairn.DiskChange.Apply) if
	// its state is still c.From, atomically, and returns the record
	// stored afterwards. ErrNotFound if the disk is unknown, ErrConflict
	// if its state is not c.From, ErrInvalid if c.To is not a valid state.
	ChangeDisk(ctx context.Context, id cairn.DiskID, c cairn.DiskChange) (cairn.Disk, error)

	// PGTable returns the placement-group table of a width, or ErrNotFound.
	PGTable(ctx context.Context, width int) (cairn.PGTable, error)
	// CreatePGTable stores t if no table of its width exists and returns
	// the table that is stored afterwards (t, or the one that won a race).
	// ErrInvalid if t.Width < 1.
	CreatePGTable(ctx context.Context, t cairn.PGTable) (cairn.PGTable, error)
	// UpdatePGTable replaces the table of t's width with t if the stored
	// one has Epoch t.Epoch-1 (compare-and-swap: a recomputation,
	// placement.Recompute). ErrNotFound if no table of the width exists,
	// ErrConflict if its epoch differs, ErrInvalid if t.Width < 1 or
	// t.Epoch < 1.
	UpdatePGTable(ctx context.Context, t cairn.PGTable) error
	// PGTables lists the stored tables, sorted by width (a handful: one
	// per width of the policies in use).
	PGTables(ctx context.Context) ([]cairn.PGTable, error)

	// CreateBucket creates a bucket; ErrExists if the name is taken,
	// ErrInvalid if it breaks cairn.ValidateBucketName.
	CreateBucket(ctx context.Context, b cairn.Bucket) error
	// Bucket returns a bucket or ErrNotFound.
	Bucket(ctx context.Context, name string) (cairn.Bucket, error)
	// Buckets lists all buckets sorted by name.
	Buckets(ctx context.Context) ([]cairn.Bucket, error)
	// BucketPage returns up to limit buckets named after after ("" =
	// from the first), sorted by name, and whether more follow: Buckets
	// in bounded replies. ErrInvalid unless 1 ≤ limit ≤ MaxPage.
	BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error)
	// SetBucketEncryption sets a bucket's default encryption
	// (cairn.Bucket.Encryption): cairn.SSES3, or "" for none. ErrNotFound
	// if the bucket does not exist, ErrInvalid for another scheme.
	SetBucketEncryption(ctx context.Context, name, scheme string) error
	// SetBucketTags replaces a bucket's tags (cairn.Bucket.Tags; nil or
	// empty: none). ErrNotFound if the bucket does not exist. The gateway
	// checks S3's limits; the store keeps what it is given.
	SetBucketTags(ctx context.Context, name string, tags map[string]string) error
	// SetBucketCORS replaces a bucket's CORS rules (cairn.Bucket.CORS;
	// nil or empty: none). ErrNotFound if the bucket does not exist.
	SetBucketCORS(ctx context.Context, name string, rules []cairn.CORSRule) error
	// SetBucketLifecycle replaces a bucket's lifecycle rules
	// (cairn.Bucket.Lifecycle; nil or empty: none). ErrNotFound if the
	// bucket does not exist. The gateway validates the rules.
	SetBucketLifecycle(ctx context.Context, name string, rules []cairn.LifecycleRule) error
	// UpdateBucketAccess changes a bucket's access control
	// (cairn.Bucket.Access) in a compare-and-swap: update gets a copy of
	// the current value (nil: none) and returns the new one (nil or
	// zero: none), or an error that leaves the bucket as it was and is
	// returned. update may run more than once (when another writer wins)
	// and must not call the store; implementations apply it with
	// UpdateAccess. ErrNotFound if the bucket does not exist. The gateway
	// validates the policy and grants; the store keeps what it is given.
	UpdateBucketAccess(ctx context.Context, name string, update func(*cairn.BucketAccess) (*cairn.BucketAccess, error)) error
	// DeleteBucket deletes an empty bucket: ErrNotFound, or
	// ErrBucketNotEmpty if it has objects (checked atomically with the
	// delete). Its uploads in progress are deleted with it, as S3 does:
	// each as DeleteUpload deletes one (parts' files queued for cleanup,
	// cairn.CleanupAbort), and no upload outlives the bucket, so the
	// bucket name's next owner finds none of them. An upload created while
	// the delete runs is deleted too or makes the delete fail; uploads
	// deleted by a delete that then fails (an object committed meanwhile:
	// ErrBucketNotEmpty) stay deleted.
	DeleteBucket(ctx context.Context, name string) error

	// CommitManifest makes m the object's current manifest if the object's
	// current version is prevVersion ("" = the object must not exist;
	// AnyVersion = whatever it is, or none), and returns ErrConflict
	// otherwise. ErrNotFound if the bucket does not
	// exist, ErrInvalid if m is nil or fails (*cairn.Manifest).Validate
	// (docs/design/manifest.md, "Validation"). Compare-and-swap: this is
	// the instant an object appears. Committing a version that is already
	// current returns nil, so a commit whose outcome is unknown (an
	// infrastructure error) may be retried as is; until it succeeds or
	// fails with a sentinel, the object may or may not be visible, so its
	// shards must not be deleted. The replaced version's files are queued
	// for cleanup (cairn.CleanupOverwrite).
	CommitManifest(ctx context.Context, m *cairn.Manifest, prevVersion string) error
	// Manifest returns the object's committed manifest or ErrNotFound.
	Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
	// DeleteManifest deletes the object's manifest if its version is
	// version ("" = whatever it is), queues its files for cleanup
	// (cairn.CleanupDelete) and returns the deleted manifest; ErrNotFound
	// if there is none, ErrConflict if the version differs, ErrLocked if
	// its Object Lock forbids the delete (as DeleteVersion). In a
	// versioned bucket the next version, if an object, becomes current
	// (as DeleteVersion of the current version).
	DeleteManifest(ctx context.Context, bucket, key, version string) (*cairn.Manifest, error)
	// UpdateManifest replaces the object's manifest with m if the stored
	// one is exactly prev (compare-and-swap on the whole record, e.g. to
	// move repaired shards), and returns ErrConflict otherwise: the object
	// was overwritten, deleted (ErrNotFound) or updated meanwhile. m and
	// prev must name the same bucket, key and version, and m must pass
	// (*cairn.Manifest).Validate (ErrInvalid). The files of prev that m
	// does not name (cairn.Superseded) are queued for cleanup
	// (cairn.CleanupRepair). m must keep prev's Object Lock
	// (cairn.SameLock; ErrInvalid): SetObjectLock changes it.
	UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error
	// ManifestPart returns the manifest of a multipart object with only
	// part n in Parts (a partial manifest: every other field is the
	// object's, Size included), reading only that part's record: for
	// readers of one part (repair of a part's stripe). ErrNotFound if the
	// object or its part n does not exist.
	ManifestPart(ctx context.Context, bucket, key string, n int) (*cairn.Manifest, error)
	// UpdatePart replaces part p.Number of the object's current version
	// with p if the stored part is exactly prev (compare-and-swap on the
	// part alone: a repair of one part's stripe), and returns ErrConflict
	// if the object's version is not version or the part changed,
	// ErrNotFound if the object or the part does not exist. ErrInvalid
	// unless p passes (*cairn.Part).Validate and has prev's number,
	// version and size. The files of prev that p does not name are queued
	// for cleanup (cairn.CleanupRepair).
	UpdatePart(ctx context.Context, bucket, key, version string, p, prev cairn.Part) error
	// UpdateUploadPart replaces part p.Number of the upload id in
	// progress with p if the stored part is exactly prev
	// (compare-and-swap on the part: a repair of the stripe of an
	// upload's part, docs/design/repair.md), and changes the upload's
	// stamp (see Parts), so that a CompleteUpload that read the parts
	// before conflicts instead of committing the shards' old places.
	// Storing what is already stored succeeds (a retried update).
	// ErrNotFound if the upload or its part p.Number does not exist
	// (aborted, completed), ErrConflict if the part is not prev (uploaded
	// again, or moved by another repair), ErrInvalid unless p passes
	// (*cairn.Part).Validate and has prev's number, version and size. The
	// files of prev that p does not name are queued for cleanup
	// (cairn.CleanupRepair).
	UpdateUploadPart(ctx context.Context, bucket, id string, p, prev cairn.Part) error
	// ListManifests returns up to limit manifests of a bucket whose keys
	// start with prefix and sort strictly after startAfter, in key order
	// (byte-wise), and whether more follow. A page holds at most MaxPage
	// manifests and, past the first, no more than ManifestPageBytes of
	// them (a multipart object's manifest grows with its parts): fewer
	// than limit with more set is an ordinary page, and the caller goes
	// on after its last key. ErrNotFound if the bucket does not exist.
	// limit < 1 means no limit: every page, read at one revision (for
	// tests and tools; services page).
	ListManifests(ctx context.Context, bucket, prefix, startAfter string, limit int) (ms []*cairn.Manifest, more bool, err error)
	// ListObjects is ListManifests for listings: it returns the compact
	// listing records (cairn.ObjectInfo) of up to limit objects, never
	// reading a manifest. ErrNotFound if the bucket does not exist,
	// ErrInvalid unless 1 ≤ limit ≤ MaxPage.
	ListObjects(ctx context.Context, bucket, prefix, startAfter string, limit int) (os []cairn.ObjectInfo, more bool, err error)

	// Usage returns the usage counters (cairn.Usage): every write that
	// commits, replaces or deletes a manifest (CommitManifest,
	// UpdateManifest, DeleteManifest, CompleteUpload) or records or drops
	// a part (PutPart, DeleteUpload, CompleteUpload) changes them in the
	// same transaction, so they always equal what the stored manifests
	// and parts name: per bucket and per code (cairn.UsageCode of the
	// layout's code) the committed objects, per disk the shard files of
	// objects and of parts (docs/design/meta.md, "Usage"). Counters that
	// are zero may be absent, also of buckets that no longer exist.
	Usage(ctx context.Context) (cairn.Usage, error)
	// BucketUsage returns one bucket's counter (Usage().Buckets[bucket])
	// without reading the others. ErrNotFound if the bucket does not
	// exist.
	BucketUsage(ctx context.Context, bucket string) (cairn.Tally, error)

	// CreateUpload records a new multipart upload. ErrInvalid if the ID is
	// empty or contains "/", or the key fails cairn.ValidateKey;
	// ErrNotFound if the bucket does not exist; ErrExists if the bucket
	// already has an upload with this ID.
	CreateUpload(ctx context.Context, u cairn.Upload) error
	// Upload returns an upload record or ErrNotFound.
	Upload(ctx context.Context, bucket, id string) (cairn.Upload, error)
	// Uploads lists the uploads of a bucket ("" = of all buckets), sorted
	// by bucket, key, creation time and ID. It does not check that the
	// bucket exists.
	Uploads(ctx context.Context, bucket string) ([]cairn.Upload, error)
	// UploadPage returns up to limit uploads of a bucket ("" = of all
	// buckets) whose positions (meta.UploadPosition: "BUCKET/ID") sort
	// after after, byte-wise (the order of their records, not Uploads'),
	// and whether more follow: for
	// walks over every upload (the repair scan, the sweep of abandoned
	// uploads) in bounded replies. after is the position of the last
	// upload of the previous page; "" starts at the first.
	// ErrInvalid unless 1 ≤ limit ≤ MaxPage.
	UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error)
	// UploadKeyPage returns up to limit uploads in progress of a bucket
	// whose keys start with prefix, in key order (byte-wise) and, within a
	// key, by creation time then ID (CompareUploads), that come after the
	// position (keyMarker, idMarker), and whether more follow: S3
	// ListMultipartUploads in bounded replies, read from a key-ordered
	// index (docs/design/meta.md, "Uploads by key"). With idMarker "" the
	// page starts with the uploads of the first key after keyMarker ("":
	// from the first key); else with the upload of keyMarker after upload
	// idMarker — or, if that upload no longer exists or is of another key,
	// with keyMarker's first upload (a page may repeat an upload, it never
	// skips one). The uploads carry only their fields that never change:
	// Bucket, Key, ID, Created, Policy, ChecksumAlgorithm and ChecksumType
	// (Upload reads the rest). ErrNotFound if the bucket does not exist,
	// ErrInvalid unless 1 ≤ limit ≤ MaxPage.
	UploadKeyPage(ctx context.Context, bucket, prefix, keyMarker, idMarker string, limit int) ([]cairn.Upload, bool, error)
	// UpdateUploadEncryption replaces the encryption record of an upload
	// in progress with e if the stored one is exactly prev
	// (compare-and-swap: the reseal of its data key under another master
	// key, docs/design/encryption.md "Key rotation"), and changes the
	// upload's stamp, so that a CompleteUpload that read the record before
	// conflicts instead of committing the old sealed key. Storing what is
	// already stored succeeds (a retried update). ErrNotFound if the upload
	// does not exist, ErrConflict if its encryption is not prev, ErrInvalid
	// (CheckUploadEncryption) unless e re-seals prev.
	UpdateUploadEncryption(ctx context.Context, bucket, id string, e, prev *cairn.Encryption) error
	// PutPart records part p of an upload, replacing any part with its
	// number, and returns the replaced part (nil if none), whose files it
	// queues for cleanup (cairn.CleanupPart). ErrNotFound if the upload
	// does not exist (checked atomically with the write), ErrInvalid if p
	// fails (*cairn.Part).Validate. Every PutPart changes the upload's
	// stamp (see Parts).
	PutPart(ctx context.Context, bucket, id string, p cairn.Part) (*cairn.Part, error)
	// Parts returns an upload's parts sorted by number, and its stamp: an
	// opaque value that changes whenever a part is put. ErrNotFound if the
	// upload does not exist.
	Parts(ctx context.Context, bucket, id string) (parts []cairn.Part, stamp int64, err error)
	// PartPage returns up to limit parts of an upload numbered above
	// after, sorted by number, and whether more follow: Parts in bounded
	// replies (S3 ListParts). ErrNotFound if the upload does not exist,
	// ErrInvalid unless 1 ≤ limit ≤ MaxPage.
	PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error)
	// DeleteUpload deletes an upload record and all its parts at once,
	// queues the parts' files for cleanup (cairn.CleanupAbort) and returns
	// the deleted parts.
	// ErrNotFound if the upload does not exist.
	DeleteUpload(ctx context.Context, bucket, id string) ([]cairn.Part, error)
	// CompleteUpload atomically commits m (as CommitManifest does, against
	// prevVersion) and deletes the upload with its parts, provided the
	// upload's stamp is still stamp; it returns the deleted parts. The
	// replaced object's files (cairn.CleanupOverwrite) and those of the
	// parts m does not list (cairn.CleanupUnchosen) are queued for
	// cleanup. Errors:
	// ErrNotFound if the upload (or the bucket) does not exist,
	// ErrConflict if the stamp or the object's version differ, ErrInvalid
	// as CommitManifest. If the outcome is unknown, retrying may report
	// ErrNotFound although the commit happened.
	CompleteUpload(ctx context.Context, m *cairn.Manifest, prevVersion, id string, stamp int64) ([]cairn.Part, error)

	// SetBucketVersioning sets a bucket's versioning status
	// (cairn.Bucket.Versioning): cairn.VersioningEnabled or
	// VersioningSuspended. ErrNotFound if the bucket does not exist,
	// ErrInvalid for another status. Once set, a bucket's writes keep
	// versions (docs/design/versioning.md): CommitManifest and
	// CompleteUpload move the replaced current version to the noncurrent
	// ones unless it and the new one are both the null version
	// (Manifest.Versioned false), and a null version replaces the key's
	// noncurrent null version; DeleteBucket fails while any version or
	// delete marker is left.
	SetBucketVersioning(ctx context.Context, name, status string) error
	// ObjectVersion returns a version of a key: id "" its latest version
	// (the current object, or a delete marker), cairn.NullVersionID its
	// null version, else the version whose internal version is id (the
	// Manifest of an object version is whole). ErrNotFound if there is no
	// such version (or bucket), ErrInvalid for a malformed id.
	ObjectVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	// PutDeleteMarker makes a delete marker the latest version of a key
	// (whether or not it has versions) and returns it: the current
	// object, if any, becomes noncurrent, or is removed (files queued,
	// cairn.CleanupDelete) if it and the marker are both null; a null
	// marker replaces the key's noncurrent null version. d.Version is
	// the marker's proposed version: the store returns it or one that
	// sorts before every version of the key (MarkerVersion). ErrNotFound
	// if the bucket does not exist, ErrInvalid if d fails CheckMarker or
	// the bucket was never versioned.
	PutDeleteMarker(ctx context.Context, bucket, key string, d cairn.DeleteMarker) (cairn.ObjectVersion, error)
	// DeleteVersion removes a version of a key for good (id: the null
	// version or an internal version) and returns it; its files are
	// queued for cleanup (cairn.CleanupDelete). If it was the latest, the
	// next version becomes latest: an object moves back to current. A
	// bucket never versioned has only null versions: this is then
	// DeleteManifest. ErrNotFound if there is no such version,
	// ErrInvalid for a malformed id, ErrLocked if the version's Object
	// Lock forbids its removal at the store's clock
	// ((*cairn.Manifest).CheckDelete, checked atomically with the
	// delete): no caller — gateway, lifecycle, repair, tools — removes a
	// locked version.
	DeleteVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	// SetBucketObjectLock enables Object Lock on a bucket, or replaces
	// its default retention (cairn.Bucket.ObjectLock;
	// docs/design/objectlock.md). ErrNotFound if the bucket does not
	// exist, ErrInvalid if l fails its Check or the bucket's versioning is
	// not Enabled (checked atomically with the write). Object Lock is
	// never disabled: afterwards SetBucketVersioning refuses Suspended
	// (ErrInvalid).
	SetBucketObjectLock(ctx context.Context, name string, l cairn.ObjectLock) error
	// SetObjectLock applies c (cairn.LockChange.Apply, judged at the
	// store's clock) to the retention and legal hold of a version of key
	// (id as ObjectVersion: "" the latest, the null version or an
	// internal version), atomically with the version's record, and
	// returns the version as stored afterwards (Manifest whole).
	// ErrNotFound if there is no such version, ErrInvalid if the bucket
	// has no Object Lock, the version is a delete marker, or c's
	// retention is malformed, ErrLocked if the version's retention in
	// force forbids the change.
	SetObjectLock(ctx context.Context, bucket, key, id string, c cairn.LockChange) (cairn.ObjectVersion, error)
	// DeleteVersionBypass is DeleteVersion for a requester who may bypass
	// governance: a GOVERNANCE retention in force does not refuse it (a
	// COMPLIANCE one and a legal hold do: ErrLocked).
	DeleteVersionBypass(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	// ListVersions returns up to limit versions (objects and delete
	// markers) of the bucket's keys that start with prefix, in key order
	// and newest first within a key (the current object first, then the
	// noncurrent versions by internal version), that come after the
	// position (keyMarker, afterVersion): afterVersion "" is after every
	// version of keyMarker, else after that internal version of
	// keyMarker (VersionsAfter; it need not exist any more). Versions
	// carry their listing records (Info), no Manifest. The second result says whether more follow. ErrNotFound if the bucket
	// does not exist, ErrInvalid unless 1 ≤ limit ≤ MaxPage.
	ListVersions(ctx context.Context, bucket, prefix, keyMarker, afterVersion string, limit int) (vs []cairn.ObjectVersion, more bool, err error)
	// ListVersionManifests returns up to limit whole manifests of the
	// noncurrent object versions of a bucket (no current ones, no
	// markers), in key and version order, after (afterKey, afterVersion)
	// ("", "": from the first), and whether more follow: with
	// ListManifests, what walks every object version (repair). Paged as
	// ListManifests. ErrNotFound if the bucket does not exist.
	ListVersionManifests(ctx context.Context, bucket, afterKey, afterVersion string, limit int) (ms []*cairn.Manifest, more bool, err error)

	// PutCleanup queues c as a new cleanup record, ordered by c.Since,
	// with an ID the store assigns (cairn.CleanupID; c.ID is ignored):
	// for files no write names any more but the store did not queue
	// itself (a failed write's). ErrInvalid if c fails CheckCleanup.
	PutCleanup(ctx context.Context, c cairn.Cleanup) error
	// Cleanups returns up to limit cleanup records whose Since is at or
	// before until, oldest first (in ID order). ErrInvalid if limit < 1.
	Cleanups(ctx context.Context, until time.Time, limit int) ([]cairn.Cleanup, error)
	// DeleteCleanup removes a cleanup record; ErrNotFound if there is
	// none with that ID.
	DeleteCleanup(ctx context.Context, id string) error

	// PutRepairTask creates or replaces the repair task t.ID. ErrInvalid if
	// t.ID is empty or contains "/".
	PutRepairTask(ctx context.Context, t cairn.RepairTask) error
	// RepairTaskPage returns up to limit queued repair tasks whose IDs
	// sort strictly after after ("" = from the first), in ID order, and
	// whether more follow. ErrInvalid unless 1 ≤ limit ≤ MaxPage. The
	// queue may hold far more tasks than one reply can carry: walk it with
	// EachRepairTask (RepairQueuePage reads it riskiest first).
	RepairTaskPage(ctx context.Context, after string, limit int) (ts []cairn.RepairTask, more bool, err error)
	// RepairQueuePage returns up to limit queued tasks in queue order
	// (SortRepairTasks: riskiest first) that come strictly after the
	// position of after (nil: from the first), and whether more follow;
	// a task put or deleted meanwhile may or may not be seen. ErrInvalid
	// unless 1 ≤ limit ≤ MaxPage. RiskiestRepairTasks walks it.
	RepairQueuePage(ctx context.Context, after *cairn.RepairTask, limit int) (ts []cairn.RepairTask, more bool, err error)
	// DeleteRepairTask removes a task; ErrNotFound if it is not queued.
	DeleteRepairTask(ctx context.Context, id string) error
	// PutRepairProgress replaces the director's progress report.
	PutRepairProgress(ctx context.Context, p cairn.RepairProgress) error
	// RepairProgress returns the last progress report, or ErrNotFound.
	RepairProgress(ctx context.Context) (cairn.RepairProgress, error)

	// RAIDP returns the RAIDP record name (docs/design/raidp.md, "In the
	// cluster": "groups/<group>", "alloc/<group>"), an opaque JSON value,
	// or ErrNotFound. ErrInvalid for a name that ValidRAIDPName refuses.
	RAIDP(ctx context.Context, name string) ([]byte, error)
	// UpdateRAIDP replaces the RAIDP record name with f(old) atomically
	// (old nil when absent): if the record changes between the read and
	// the write, f runs again on the new value. f's error aborts the
	// update and is returned; its result must be JSON.
	UpdateRAIDP(ctx context.Context, name string, f func(old []byte) ([]byte, error)) error

	// PutDamage records a damaged shard (cairn.Damage; ErrInvalid if it
	// fails its Check), replacing the record of the same disk and shard:
	// reporting a shard twice keeps one record. Bounded by the reporters
	// (docs/design/scrub.md).
	PutDamage(ctx context.Context, d cairn.Damage) error
	// Damages returns up to limit damage records whose key
	// (cairn.DamageKey) sorts strictly after after, in key order, and
	// whether more follow. ErrInvalid if limit < 1.
	Damages(ctx context.Context, after string, limit int) (ds []cairn.Damage, more bool, err error)
	// DeleteDamage removes the record of a disk's shard; ErrNotFound if
	// there is none.
	DeleteDamage(ctx context.Context, disk cairn.DiskID, shard string) error
	// PutScrubProgress replaces the scrub progress of p.Disk; ErrInvalid if
	// p.Disk is empty.
	PutScrubProgress(ctx context.Context, p cairn.ScrubProgress) error
	// ScrubProgress returns the scrub progress of every disk that reported
	// one, sorted by disk.
	ScrubProgress(ctx context.Context) ([]cairn.ScrubProgress, error)
	// PutLifecycleProgress replaces the lifecycle runner's record.
	PutLifecycleProgress(ctx context.Context, p cairn.LifecycleProgress) error
	// LifecycleProgress returns the lifecycle runner's record (zero if
	// it never ran).
	LifecycleProgress(ctx context.Context) (cairn.LifecycleProgress, error)
	// PutScrubControl replaces the operator's scrub switch.
	PutScrubControl(ctx context.Context, c cairn.ScrubControl) error
	// ScrubControl returns the scrub switch; its zero value (scrubbing
	// runs) if it was never set.
	ScrubControl(ctx context.Context) (cairn.ScrubControl, error)

	// ColdGet returns the value of the cold tier's record key
	// (docs/design/cold.md, "Persistence"), or ErrNotFound. ErrInvalid for
	// a key CheckColdKey refuses.
	ColdGet(ctx context.Context, key string) ([]byte, error)
	// ColdPage returns up to limit cold records whose keys start with
	// prefix and sort strictly after after ("" = from the first), in key
	// order, and whether more follow. ErrInvalid unless 1 ≤ limit ≤
	// MaxPage.
	ColdPage(ctx context.Context, prefix, after string, limit int) ([]ColdRecord, bool, error)
	// ColdUpdate applies ops all at once or not at all: ErrConflict if the
	// stored value of an op with Check is not its Prev. ErrInvalid if
	// CheckColdOps refuses them.
	ColdUpdate(ctx context.Context, ops []ColdOp) error

	// CreateUser stores a new S3 user (cairn.User; docs/design/meta.md,
	// "Users"). ErrInvalid if u fails its Check, ErrExists if a user of
	// that name or with that access key exists (checked atomically with
	// the write).
	CreateUser(ctx context.Context, u cairn.User) error
	// User returns the user called name, or ErrNotFound.
	User(ctx context.Context, name string) (cairn.User, error)
	// UpdateUser replaces the user u.Name with u if the stored record is
	// exactly prev (compare-and-swap on the whole record: a key rotation,
	// a new allow-list). ErrNotFound if there is no such user, ErrConflict
	// if the record is not prev, ErrInvalid if u fails its Check or
	// renames the user, ErrExists if u takes an access key another user
	// holds. A new access key frees the old one.
	UpdateUser(ctx context.Context, u, prev cairn.User) error
	// DeleteUser removes a user and frees its access key; ErrNotFound if
	// there is none.
	DeleteUser(ctx context.Context, name string) error
	// Users returns up to limit users whose names sort strictly after
	// after, in name order, and whether more follow. ErrInvalid unless
	// 1 ≤ limit ≤ MaxPage.
	Users(ctx context.Context, after string, limit int) (us []cairn.User, more bool, err error)
	// UsersStamp returns an opaque value that changes with every
	// successful CreateUser, UpdateUser, DeleteUser and PutUserDefaults,
	// and with nothing else: a reader that saw stamp s and then read every user need not
	// read them again while the stamp is still s. A store without users
	// may return any value, even after users came and went.
	UsersStamp(ctx context.Context) (int64, error)
	// UserDefaults returns the cluster's settings of users that have none
	// of their own (cairn.UserDefaults); its zero value if never set.
	UserDefaults(ctx context.Context) (cairn.UserDefaults, error)
	// PutUserDefaults replaces them (and changes UsersStamp). ErrInvalid
	// if d fails its Check.
	PutUserDefaults(ctx context.Context, d cairn.UserDefaults) error

	// KeepAlive announces that holder (e.g. a node ID) is alive for ttl,
	// renewing until ctx ends or Close; the entry vanishes within ttl after
	// the holder stops renewing (or its process dies). It returns once the
	// entry exists; renewal runs in the background (and re-creates the entry
	// if it expired meanwhile, e.g. after a partition). ttl is rounded up to
	// what the implementation supports (etcd: whole seconds, at least its
	// minimum lease TTL). ErrInvalid if holder is empty or ttl ≤ 0.
	KeepAlive(ctx context.Context, holder string, ttl time.Duration) error
	// Alive returns the holders whose liveness entries exist, sorted.
	Alive(ctx context.Context) ([]string, error)

	// Campaign blocks until id is the leader of role (e.g. "director") or
	// ctx ends. The returned Leadership ends when its Resign is called,
	// when the store loses the session (Done is closed), or on Close.
	// Campaigners win in the order they started campaigning. ErrInvalid if
	// role or id is empty.
	Campaign(ctx context.Context, role, id string) (Leadership, error)
	// Leader returns the current leader's id for role, or ErrNotFound.
	Leader(ctx context.Context, role string) (string, error)

	// Close releases sessions and connections (not an embedded server the
	// caller started separately). Afterwards every method returns an error
	// wrapping ErrClosed. Idempotent.
	Close() error
}

// Leadership is a won election.
type Leadership interface {
	// Done is closed when leadership is lost or resigned.
	Done() <-chan struct{}
	// Resign gives up leadership.
	Resign(ctx context.Context) error
}

// ValidRAIDPName checks a RAIDP record name: one or more segments of
// letters, digits, '-', '_' and '.', joined by '/', none "." or "..", at
// most 200 bytes. The error wraps cairn.ErrInvalid.
func ValidRAIDPName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: RAIDP record name %q: %s", cairn.ErrInvalid, name, why)
	}
	if name == "" || len(name) > 200 {
		return bad("empty or longer than 200 bytes")
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("an empty, . or .. segment")
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return bad(fmt.Sprintf("character %q", c))
			}
		}
	}
	return nil
}
