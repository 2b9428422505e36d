package cairn

import (
	"fmt"
	"math"
	"time"
)

// ShardFile names one shard (or coded block) file: the disk it is on and
// its name there (ShardName).
type ShardFile struct {
	Disk DiskID `json:"disk"`
	Name string `json:"name"`
}

// Files returns the shard files of version laid out as l, in layout order:
// each shard's (ShardName(version, RowOf(l.Shards, i))), then each coded
// block's (ShardName(stripe version, block ID)). Slots without a disk are
// skipped.
func (l *Layout) Files(version string) []ShardFile {
	var out []ShardFile
	for i, s := range l.Shards {
		if s.Disk != "" {
			out = append(out, ShardFile{Disk: s.Disk, Name: ShardName(version, RowOf(l.Shards, i))})
		}
	}
	for _, st := range l.Coded {
		for _, b := range st.Blocks {
			if b.Disk != "" {
				out = append(out, ShardFile{Disk: b.Disk, Name: ShardName(st.Version, b.ID)})
			}
		}
	}
	return out
}

// Files returns the shard files of p.
func (p *Part) Files() []ShardFile { return p.Layout.Files(p.Version) }

// Files returns the shard files of m: its layout's, and every part's of a
// multipart object. A nil m has none.
func (m *Manifest) Files() []ShardFile {
	if m == nil {
		return nil
	}
	out := m.Layout.Files(m.Version)
	for i := range m.Parts {
		out = append(out, m.Parts[i].Files()...)
	}
	return out
}

// Superseded returns the shard files of prev that next does not name (all
// of prev's if next is nil): what replacing prev by next leaves to delete.
// A repair that moves a shard names the same file on another disk, so
// only the old disk's copy is superseded.
func Superseded(prev, next *Manifest) []ShardFile {
	keep := map[ShardFile]bool{}
	for _, f := range next.Files() {
		keep[f] = true
	}
	var out []ShardFile
	for _, f := range prev.Files() {
		if !keep[f] {
			out = append(out, f)
		}
	}
	return out
}

// PartFiles returns the shard files of parts.
func PartFiles(parts []Part) []ShardFile {
	var out []ShardFile
	for i := range parts {
		out = append(out, parts[i].Files()...)
	}
	return out
}

// Cleanup is a deferred delete: shard files that no manifest or part names
// any more, queued in the metadata store to be deleted in the background
// (docs/design/cleanup.md). The write that stops naming them — an
// overwrite, a delete, a repair that moved shards, a replaced part, an
// aborted or completed upload — queues them in its own transaction, so a
// crash cannot lose them; files a failed write made are queued by the
// writer.
//
// The queue is ordered by Since. A worker deletes the files of a record
// once Since + its grace period has passed, so that reads that started
// before the files were dropped can finish; a record whose files were
// never visible (a failed write's) has a zero Since and is due at once.
type Cleanup struct {
	// ID is the store's name of the record: Since, as 19 decimal digits
	// of nanoseconds since 1970 (0 for earlier times), "-" and a unique
	// suffix, so that IDs sort by Since (CleanupID). Assigned by the store.
	ID string `json:"id"`
	// Since is when the files stopped being named: the time of the write
	// that dropped them (zero: never named). A failed attempt moves it
	// later, by the worker's backoff.
	Since time.Time `json:"since"`
	// Reason says what dropped the files (CleanupOverwrite, ...), for
	// operators.
	Reason string `json:"reason"`
	// Bucket and Key name the object the files belonged to ("" if none).
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	// Files are the files to delete, at most MaxCleanupFiles.
	Files []ShardFile `json:"files"`
	// Attempts counts the attempts that left files behind; LastError is
	// the last one's error.
	Attempts  int    `json:"attempts,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// MaxCleanupFiles is the most files one Cleanup record holds; a write that
// drops more queues several records.
const MaxCleanupFiles = 1000

// Reasons of Cleanup records.
const (
	CleanupOverwrite = "overwrite"      // CommitManifest or CompleteUpload replaced the object
	CleanupDelete    = "delete"         // DeleteManifest
	CleanupRepair    = "repair"         // UpdateManifest moved shards to other disks
	CleanupPart      = "part replaced"  // PutPart replaced a part
	CleanupAbort     = "upload aborted" // DeleteUpload
	CleanupUnchosen  = "part not used"  // CompleteUpload left a part out
	CleanupFailed    = "failed write"   // files a write made but never committed
)

// CleanupID returns the ID of a record with since and a unique suffix
// (Cleanup.ID).
func CleanupID(since time.Time, suffix string) string {
	return CleanupPrefix(since) + "-" + suffix
}

// CleanupPrefix returns the first 19 characters of the IDs of records
// with since: its nanoseconds since 1970 (0 for earlier times) in 19
// decimal digits, the most such a number holds for times after 2262.
// Every record with Since ≤ t has an ID below CleanupPrefix(t + 1ns).
func CleanupPrefix(since time.Time) string {
	ns := int64(0)
	switch {
	case since.After(maxNanos):
		ns = math.MaxInt64
	case since.After(time.Unix(0, 0)):
		ns = since.UnixNano()
	}
	return fmt.Sprintf("%019d", ns)
}

// maxNanos is the last time UnixNano can count.
var maxNanos = time.Unix(0, math.MaxInt64)
