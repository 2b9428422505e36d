package cairn

import "time"

// LifecycleRule is one rule of a bucket's lifecycle configuration
// (S3's PutBucketLifecycleConfiguration; docs/design/s3.md, "Lifecycle"):
// which objects it applies to (Filter) and what happens to them when.
// Days count from an object's creation (or, for noncurrent versions, from
// the moment a newer version replaced them), rounded up to the next
// midnight UTC, as S3 does; package lifecycle evaluates rules.
type LifecycleRule struct {
	ID      string          `json:"id,omitempty"`
	Enabled bool            `json:"enabled"` // Status Enabled; false: Disabled (kept, not applied)
	Filter  LifecycleFilter `json:"filter"`
	// Expiration expires the current version: deleted, or, in a bucket
	// whose versioning was ever set, hidden behind a delete marker.
	Expiration *LifecycleExpiration `json:"expiration,omitempty"`
	// NoncurrentExpiration deletes noncurrent versions for good.
	NoncurrentExpiration *NoncurrentExpiration `json:"noncurrent_expiration,omitempty"`
	// AbortUploadDays aborts multipart uploads this many days after
	// their initiation (0: never).
	AbortUploadDays int `json:"abort_upload_days,omitempty"`
	// Transitions move the current version to another storage class;
	// NoncurrentTransitions move noncurrent versions. Stored and
	// validated; executed by a hook of the cold tier (the lifecycle runner
	// reports them until one is installed).
	Transitions           []LifecycleTransition `json:"transitions,omitempty"`
	NoncurrentTransitions []LifecycleTransition `json:"noncurrent_transitions,omitempty"`
}

// LifecycleFilter selects the objects of a rule: every condition given
// must hold (S3's Prefix, Tag, And, ObjectSizeGreaterThan/LessThan).
type LifecycleFilter struct {
	Prefix string            `json:"prefix,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
	// SizeGreaterThan and SizeLessThan bound the object's size in bytes,
	// exclusive (0: no bound).
	SizeGreaterThan int64 `json:"size_greater_than,omitempty"`
	SizeLessThan    int64 `json:"size_less_than,omitempty"`
}

// LifecycleExpiration is a rule's Expiration: after Days, or on Date
// (midnight UTC), or (ExpiredObjectDeleteMarker) the removal of a delete
// marker that no version is left behind.
type LifecycleExpiration struct {
	Days                      int       `json:"days,omitempty"`
	Date                      time.Time `json:"date,omitzero"`
	ExpiredObjectDeleteMarker bool      `json:"expired_object_delete_marker,omitempty"`
}

// NoncurrentExpiration is a rule's NoncurrentVersionExpiration: a
// noncurrent version is deleted NoncurrentDays after it became noncurrent,
// but the NewerNoncurrentVersions newest noncurrent versions are kept.
type NoncurrentExpiration struct {
	NoncurrentDays          int `json:"noncurrent_days"`
	NewerNoncurrentVersions int `json:"newer_noncurrent_versions,omitempty"`
}

// LifecycleTransition moves objects to StorageClass after Days (for a
// noncurrent transition: days noncurrent) or on Date;
// NewerNoncurrentVersions as in NoncurrentExpiration.
type LifecycleTransition struct {
	Days                    int       `json:"days,omitempty"`
	Date                    time.Time `json:"date,omitzero"`
	StorageClass            string    `json:"storage_class"`
	NewerNoncurrentVersions int       `json:"newer_noncurrent_versions,omitempty"`
}

// LifecycleProgress is the lifecycle runner's record (docs/design/s3.md,
// "Lifecycle"): where its pass over the buckets stands, so a new leader
// resumes it, and what the current and the last complete pass did.
type LifecycleProgress struct {
	Passes   int64           `json:"passes"`            // complete passes
	Started  time.Time       `json:"started,omitzero"`  // of the pass under way (zero: none)
	Finished time.Time       `json:"finished,omitzero"` // of the last complete pass
	Bucket   string          `json:"bucket,omitempty"`  // the pass's cursor: its bucket,
	After    string          `json:"after,omitempty"`   // the last key whose versions are all done
	Current  LifecycleCounts `json:"current"`           // of the pass under way
	Last     LifecycleCounts `json:"last"`              // of the last complete pass
	Total    LifecycleCounts `json:"total"`             // of every complete pass
}

// Add adds o's counts to c's.
func (c *LifecycleCounts) Add(o LifecycleCounts) {
	c.Buckets += o.Buckets
	c.Versions += o.Versions
	c.Expired += o.Expired
	c.DeletedVersions += o.DeletedVersions
	c.DeletedMarkers += o.DeletedMarkers
	c.Aborted += o.Aborted
	c.Transitioned += o.Transitioned
	c.TransitionsPending += o.TransitionsPending
	c.Refused += o.Refused
}

// LifecycleCounts count what a pass saw and did.
type LifecycleCounts struct {
	Buckets         int64 `json:"buckets"`          // buckets with rules visited
	Versions        int64 `json:"versions"`         // versions and markers evaluated
	Expired         int64 `json:"expired"`          // current versions expired (deleted or hidden by a marker)
	DeletedVersions int64 `json:"deleted_versions"` // noncurrent versions deleted
	DeletedMarkers  int64 `json:"deleted_markers"`  // delete markers removed
	Aborted         int64 `json:"aborted"`          // multipart uploads aborted
	Transitioned    int64 `json:"transitioned"`     // versions handed to the transition hook
	// TransitionsPending are transitions due with no hook to run them.
	TransitionsPending int64 `json:"transitions_pending"`
	// Refused are actions the store refused (a locked version, a version
	// replaced meanwhile): left as they are.
	Refused int64 `json:"refused"`
}
