package meta

import (
	"fmt"
	"time"

	"cairn"
)

// Discarded returns the cleanup records that queue files a write dropped
// at since (docs/design/cleanup.md): the files in records of at most
// cairn.MaxCleanupFiles, each named cairn.CleanupID(since, suffix()).
// None if files is empty. Store implementations call it inside the write
// and put the records in the same transaction.
func Discarded(since time.Time, reason, bucket, key string, files []cairn.ShardFile, suffix func() string) []cairn.Cleanup {
	var out []cairn.Cleanup
	for len(files) > 0 {
		n := min(len(files), cairn.MaxCleanupFiles)
		out = append(out, cairn.Cleanup{ID: cairn.CleanupID(since, suffix()), Since: since, Reason: reason,
			Bucket: bucket, Key: key, Files: files[:n:n]})
		files = files[n:]
	}
	return out
}

// CheckCleanup returns an error wrapping cairn.ErrInvalid if c cannot be
// queued: it has no files or more than cairn.MaxCleanupFiles, or a file
// without a disk or with a name that fails cairn.ValidateShardName.
func CheckCleanup(c cairn.Cleanup) error {
	if len(c.Files) == 0 || len(c.Files) > cairn.MaxCleanupFiles {
		return fmt.Errorf("queue cleanup: %w: %d files (1 to %d allowed)", cairn.ErrInvalid, len(c.Files), cairn.MaxCleanupFiles)
	}
	for _, f := range c.Files {
		if f.Disk == "" {
			return fmt.Errorf("queue cleanup: %w: file %q without a disk", cairn.ErrInvalid, f.Name)
		}
		if err := cairn.ValidateShardName(f.Name); err != nil {
			return fmt.Errorf("queue cleanup: %w", err)
		}
	}
	return nil
}

// CheckCleanupLimit returns an error wrapping cairn.ErrInvalid unless
// limit ≥ 1 (Store.Cleanups reads a bounded page).
func CheckCleanupLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("cleanups: %w: limit %d (at least 1)", cairn.ErrInvalid, limit)
	}
	return nil
}

// Unchosen returns the files of the parts of an upload that m, the
// manifest completing it, does not list (CompleteUpload queues them).
func Unchosen(parts []cairn.Part, m *cairn.Manifest) []cairn.ShardFile {
	chosen := make(map[string]bool, len(m.Parts))
	for _, p := range m.Parts {
		chosen[p.Version] = true
	}
	var out []cairn.ShardFile
	for i := range parts {
		if !chosen[parts[i].Version] {
			out = append(out, parts[i].Files()...)
		}
	}
	return out
}
