// Package meta is cairn's metadata interface (Store) and its vocabulary.
// Nothing outside meta may depend on etcd; services take a Store.
//
// Implementations: meta/etcd keeps everything in etcd (an embedded
// single-member or multi-member server started by `cairn server` or
// `cairn meta`, or an external cluster by endpoints); meta/mem keeps it in
// memory for unit tests and the simulator. metatest is the conformance
// suite both pass.
//
// Keys (etcd implementation; documented in docs/design/meta.md):
// nodes, disks, placement-group tables by width, buckets, manifests by
// bucket and key, multipart uploads and their parts, repair tasks and the
// repair progress report, liveness leases, election keys, usage counters,
// cleanup records (deferred deletes of shard files, docs/design/cleanup.md),
// S3 users (cairn.User, their secret keys sealed) with an index of their
// access keys.
//
// Shared by the implementations: ErrClosed (every method after Close); the
// argument checks CheckManifest, CheckUpdate, CheckCampaign, CheckUpload,
// CheckPart, CheckRepairTask, CheckCleanup, CheckCleanupLimit and
// CheckUserUpdate (they return cairn.ErrInvalid); SameUser, the compare
// of UpdateUser; Discarded, the cleanup records of the files a
// write drops; the
// orders CompareUploads and SortRepairTasks that listings return; and
// Delta, the change one write makes to the usage counters (Store.Usage),
// built the same way by both.
//
// Paging (page.go): every listing returns a bounded page (MaxPage
// records; ListManifests also at most ManifestPageBytes of manifests) or
// reads its records a page at a time; EachRepairTask, AllRepairTasks and
// RiskiestRepairTasks walk the repair queue. Listings of objects read
// compact listing records (cairn.ObjectInfo, ListObjects), never
// manifests; UploadKeyPage pages uploads by key (S3
// ListMultipartUploads) and returns their summaries (UploadSummary);
// ManifestPart and UpdatePart read and update one part of a
// multipart object.
//
// Versions (versions.go, docs/design/versioning.md): in a bucket whose
// versioning was ever set, the current version of a key stays where
// every object lives, and the versions it replaced (noncurrent versions)
// and delete markers are records of their own, found by the key and the
// internal version (cairn.Manifest.Version; time-ordered, newest first).
// The null version is the one written while versioning was off or
// Suspended: a key has at most one. ObjectVersion, PutDeleteMarker,
// DeleteVersion and ListVersions serve S3; ListVersionManifests lets
// repair and the CLI walk every version as an object. CheckVersioning,
// CheckVersionID, CheckMarker, MarkerVersion and VersionsAfter are shared
// by the implementations.
//
// Object Lock (docs/design/objectlock.md): a bucket's configuration
// (SetBucketObjectLock) and a version's retention and legal hold
// (SetObjectLock) are fields of their records; every write that removes
// a version for good checks (*cairn.Manifest).CheckDelete in its own
// transaction and fails with cairn.ErrLocked, so no caller removes a
// locked version. DeleteVersionBypass is the governance bypass;
// CheckObjectLock, CheckVersioningChange and LockVersion are shared by
// the implementations.
//
// Caveats: a manifest is at most MaxManifestBytes; etcd's practical limit
// (a few GB of keys) bounds the object count of one cluster
// (docs/design/meta.md, "Paging and limits").
package meta
