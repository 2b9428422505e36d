//go:build !linux

package vfs

// StartWriteback is a no-op where sync_file_range does not exist; the
// final Sync does all the work.
func StartWriteback(f File, off, n int64) {}
