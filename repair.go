package cairn

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// RepairTask is one stripe with lost shards, queued in the metadata store
// until they are rebuilt. A stripe is an object's shard set, or one part's
// for a multipart object (Part ≥ 1). Tasks are keyed by RepairTaskID, so
// enqueuing the same stripe twice is one task.
//
// Targets are chosen once, before the first attempt, and kept: a retried
// or resumed task rewrites the same shard files on the same disks instead
// of scattering copies.
type RepairTask struct {
	ID      string   `json:"id"`
	Bucket  string   `json:"bucket"`
	Key     string   `json:"key"`
	Version string   `json:"version"`           // the object version the task was made for ("" for an upload's part)
	Part    int      `json:"part"`              // 0: the object's shards; n ≥ 1: part n's
	Stripe  string   `json:"stripe"`            // the version naming the shard files (the part's, for a part)
	Policy  string   `json:"policy"`            // the code the stripe is stored with (Manifest.LayoutCode)
	Lost    []int    `json:"lost"`              // shard indices to rebuild
	Targets []DiskID `json:"targets,omitempty"` // Targets[j]: where Lost[j] goes
	// Upload, if set, is the multipart upload in progress whose part Part
	// the task repairs (docs/design/repair.md, "Parts of uploads in
	// progress"): Key is the upload's key, Version is "", Stripe the
	// part's version, and the part's record in the upload is what the
	// repair updates (meta.Store.UpdateUploadPart).
	Upload string `json:"upload,omitempty"`
	// Bad are the shards a repair found missing or corrupt on a disk that
	// is usable: lost whatever their disk's state. A shard of Lost that is
	// not in Bad is lost only while its disk is (it may come back).
	Bad []int `json:"bad,omitempty"`
	// BadBlocks are, for a fountain-coded (lt) object, the block files
	// found missing or corrupt (by scrub, a read or the repair): replaced
	// whatever their disk's state. An lt task's Lost lists the indices of
	// the coded stripes (Layout.Coded) with blocks to replace, and it has
	// no Targets, InPlace or Move, and no Stripe but for a part of an
	// upload in progress (the part's version) (docs/design/lt.md, "Repair").
	BadBlocks []ShardFile `json:"bad_blocks,omitempty"`
	// InPlace are the shards of Bad being rewritten onto their own disk
	// (no other disk was left for them): lost until the task is done,
	// although their target is the disk the manifest names.
	InPlace []int `json:"in_place,omitempty"`
	// Move are shards the rebalancer moves off a usable disk onto their
	// target (docs/design/rebalance.md): lost until the manifest names the
	// target, though their disk is up; the stripe keeps its redundancy.
	Move []int `json:"move,omitempty"`
	// SpareRows maps the stripe's shard indices that hold a spare parity
	// row (ShardLoc.Row) to that row, which names their files: what a
	// dropped task's rebuilt files are deleted by.
	SpareRows map[int]int `json:"spare_rows,omitempty"`
	// Risk is the redundancy the stripe has left (shards it can still lose);
	// 0 means one more loss loses data. The queue runs the lowest first.
	Risk      int       `json:"risk"`
	Bytes     int64     `json:"bytes"` // bytes to rebuild (shard size × len(Lost))
	Created   time.Time `json:"created"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	NotBefore time.Time `json:"not_before"` // retry backoff
	// RAIDP, if set, makes the task one step of a RAIDP group's stored
	// recovery plan (docs/design/raidp.md, "Stored plan") instead of a
	// stripe: Bucket, Key and the shard fields are empty.
	RAIDP *RAIDPTaskStep `json:"raidp,omitempty"`
}

// RAIDPTaskStep names one step of a stored RAIDP recovery plan: the
// group's record raidp/recovery/Group, planned from generation
// Generation, its attempt Attempt, step Step (its Kind for display).
type RAIDPTaskStep struct {
	Group      string `json:"group"`
	Generation uint64 `json:"generation"`
	Attempt    int    `json:"attempt"`
	Step       int    `json:"step"`
	Kind       string `json:"kind"`
}

// RAIDPRepairTaskID names the task of a RAIDP recovery step: a hash in
// the form of RepairTaskID's that no stripe's task shares.
func RAIDPRepairTaskID(s RAIDPTaskStep) string {
	h := sha256.Sum256(fmt.Appendf(nil, "raidp\x00%s\x00%d\x00%d\x00%d", s.Group, s.Generation, s.Attempt, s.Step))
	return hex.EncodeToString(h[:16])
}

// RepairTaskID names the task of a stripe: a hash of bucket, key, version
// and part (keys may be long or odd; IDs are 32 hex digits).
func RepairTaskID(bucket, key, version string, part int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d", bucket, key, version, part))
	return hex.EncodeToString(h[:16])
}

// UploadRepairTaskID names the task of part number part, of version
// version (the part upload's: a part uploaded again is another stripe), of
// the multipart upload id in progress in bucket: a hash, in the form of
// RepairTaskID's, that no object's stripe shares.
func UploadRepairTaskID(bucket, id string, part int, version string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "upload\x00%s\x00%s\x00%d\x00%s", bucket, id, part, version))
	return hex.EncodeToString(h[:16])
}

// RepairProgress is what the director last reported about its repairs,
// for operators (cairn admin status / repair status): totals since it
// became director and the recent repair rate, which with the queue's bytes
// gives an ETA.
type RepairProgress struct {
	Director string    `json:"director"`
	Updated  time.Time `json:"updated"`
	Shards   int64     `json:"shards"`           // shards rebuilt
	Bytes    int64     `json:"bytes"`            // bytes rebuilt
	Failed   int64     `json:"failed"`           // failed attempts
	Rate     float64   `json:"rate_bytes_per_s"` // recent rebuild rate
	// DamageQueued and DamageHealed count damaged shards (found by scrub
	// or reads) queued for repair, and healed (docs/design/scrub.md).
	DamageQueued int64 `json:"damage_queued,omitempty"`
	DamageHealed int64 `json:"damage_healed,omitempty"`
	// Rebalance is the rebalancer's last round (nil: none yet).
	Rebalance *RebalanceProgress `json:"rebalance,omitempty"`
}

// RebalanceProgress is what the rebalancer's last round found and did
// (docs/design/rebalance.md).
type RebalanceProgress struct {
	At       time.Time `json:"at"`
	Balanced bool      `json:"balanced"` // the disks' use was within tolerance
	// Lo and Hi are the least and most use of the writable disks (bytes
	// the manifests place on a disk over its capacity share).
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Queued int     `json:"queued"` // moves the round queued
	Total  int64   `json:"total"`  // moves queued since the director started
}
