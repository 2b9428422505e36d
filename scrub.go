package cairn

import (
	"fmt"
	"time"
)

// Damage is a shard file found damaged on a disk that is otherwise usable:
// by the node's scrubber (Source DamageScrub) or by a read that met it
// (DamageRead). It is keyed by (Disk, Shard), so a shard reported twice is
// one record. The director matches records against the manifests and
// queues a repair for every one a manifest still names there
// (docs/design/scrub.md); records no manifest names are dropped.
type Damage struct {
	Disk   DiskID    `json:"disk"`
	Shard  string    `json:"shard"`  // the file's name (ShardName)
	Kind   string    `json:"kind"`   // DamageCorrupt
	Detail string    `json:"detail"` // what was wrong (the block, the CRCs)
	Source string    `json:"source"` // DamageScrub or DamageRead
	Found  time.Time `json:"found"`
	// Task is the repair task the director queued for it ("" until then).
	Task string `json:"task,omitempty"`
}

// Damage kinds and sources. The only kind is corrupt: a missing file is
// not reported (a read cannot tell it from a disk whose directory
// vanished, which the node reports as a fault of the disk; and a repair
// that meets one as a helper rebuilds it anyway).
const (
	DamageCorrupt = "corrupt" // a block, the footer or the content CRC failed, or the file is truncated
	DamageScrub   = "scrub"
	DamageRead    = "read"
)

// MaxDamageDetail bounds Damage.Detail (longer details are cut).
const MaxDamageDetail = 512

// Check validates d as a record to store; the error wraps ErrInvalid.
func (d Damage) Check() error {
	switch {
	case d.Disk == "":
		return fmt.Errorf("damage: %w: no disk", ErrInvalid)
	case d.Kind != DamageCorrupt:
		return fmt.Errorf("damage: %w: kind %q (want %s)", ErrInvalid, d.Kind, DamageCorrupt)
	case d.Source != DamageScrub && d.Source != DamageRead:
		return fmt.Errorf("damage: %w: source %q (want %s or %s)", ErrInvalid, d.Source, DamageScrub, DamageRead)
	case len(d.Detail) > MaxDamageDetail:
		return fmt.Errorf("damage: %w: detail of %d bytes (at most %d)", ErrInvalid, len(d.Detail), MaxDamageDetail)
	}
	if err := ValidateShardName(d.Shard); err != nil {
		return fmt.Errorf("damage: %w", err)
	}
	return nil
}

// DamageKey is the key of a damage record in listings: "disk/shard"
// (a disk ID may contain "/", a shard name never does).
func DamageKey(disk DiskID, shard string) string { return string(disk) + "/" + shard }

// ScrubProgress is one disk's scrub state, written by its node as it
// scrubs (docs/design/scrub.md): where the pass in progress is, so a
// restarted node resumes there, and what the passes found.
type ScrubProgress struct {
	Disk   DiskID `json:"disk"`
	Volume string `json:"volume"` // the volume ID scrubbed; another one starts afresh
	// Cursor is the last shard name of the pass in progress that was
	// checked ("": no pass in progress, or it has not checked one yet).
	Cursor      string    `json:"cursor,omitempty"`
	PassStarted time.Time `json:"pass_started"` // zero: no pass in progress
	PassShards  int64     `json:"pass_shards"`  // shards checked in this pass
	PassBytes   int64     `json:"pass_bytes"`   // their content bytes
	PassDamage  int64     `json:"pass_damage"`  // damaged shards this pass found
	LastPass    time.Time `json:"last_pass"`    // when the last full pass ended (zero: never)
	LastShards  int64     `json:"last_shards"`  // shards the last full pass checked
	LastDamage  int64     `json:"last_damage"`  // damaged shards it found
	Found       int64     `json:"found"`        // damaged shards found, all passes of this volume
	// Unreported counts damage found but not recorded, past the per-pass
	// bound on damage records (the next pass reports it).
	Unreported int64 `json:"unreported,omitempty"`
	// Orphan collection (docs/design/scrub.md, "Orphans"): shard files
	// recording an identity that no committed manifest or upload names on
	// this disk. PassOrphans counts those this pass found (removed or
	// still within the grace period), LastOrphans those of the last full
	// pass, Collected the files removed, all passes of this volume.
	PassOrphans int64     `json:"pass_orphans,omitempty"`
	LastOrphans int64     `json:"last_orphans,omitempty"`
	Collected   int64     `json:"collected,omitempty"`
	Paused      bool      `json:"paused,omitempty"` // scrubbing is paused (ScrubControl)
	Start       int64     `json:"start"`            // the ScrubControl.Start the node last followed
	LastError   string    `json:"last_error,omitempty"`
	Updated     time.Time `json:"updated"` // when the node wrote this
}

// ScrubControl is the operator's switch for every node's scrubber (cairn
// admin scrub start|pause): paused, or running, and a generation that a
// start bumps so every disk begins a new pass at once.
type ScrubControl struct {
	Paused  bool      `json:"paused"`
	Start   int64     `json:"start"` // bumped by each "start": a new pass on every disk
	Updated time.Time `json:"updated"`
}
