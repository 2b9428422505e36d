package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path"
)

// File is an open file (or, from FS.OpenDir, a directory handle whose only
// useful method is Sync).
//
// Write appends at the handle's position (files are written sequentially;
// there is no Seek). ReadAt does not move the position. Sync makes the
// file's data durable; for a directory handle it makes the directory's
// entries (creations, removals, renames into or out of it) durable. Until
// Sync returns nil, a crash may lose any part of what was written. Close
// does not imply Sync. A File is not safe for concurrent Writes; ReadAt may
// be called concurrently.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	Sync() error
	Stat() (fs.FileInfo, error)
}

// FS is the file system seam. Paths are slash-separated; implementations
// do not interpret "..", and callers (node/volume) never build paths from
// untrusted input without validating it first.
//
// Errors are *fs.PathError (or *os.LinkError) wrapping the cause, so
// errors.Is(err, fs.ErrNotExist) and errors.Is(err, syscall.ENOSPC) work
// for every implementation.
type FS interface {
	// Create creates or truncates name for reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens (creating if needed, not truncating) a file for
	// reading and writing; writes start at offset 0.
	OpenReadWrite(name string) (File, error)
	// OpenDir opens a directory so that its entries can be Synced.
	OpenDir(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname. Durable only once
	// both parent directories are synced.
	Rename(oldname, newname string) error
	// MkdirAll creates dir and any missing parents. New entries are durable
	// only once their parents are synced.
	MkdirAll(dir string, perm fs.FileMode) error
	// List returns the names of dir's entries, sorted.
	List(dir string) ([]string, error)
	// Stat describes the named file or directory.
	Stat(name string) (fs.FileInfo, error)
	// GetDiskUsage reports the space of the file system holding path.
	GetDiskUsage(path string) (DiskUsage, error)
	// Lock takes an exclusive lock on the file name (created if missing),
	// held until the returned Closer is closed or the process exits. It
	// fails at once with an error wrapping ErrLocked if another holder has
	// it (another process, for the OS file system).
	Lock(name string) (io.Closer, error)
}

// ErrLocked: the lock is held by someone else.
var ErrLocked = errors.New("locked by another process")

// DiskUsage is the space of a file system, in bytes, and which file system
// it is. AvailBytes is what an unprivileged writer can still use (statfs
// f_bavail).
type DiskUsage struct {
	TotalBytes uint64
	AvailBytes uint64
	UsedBytes  uint64
	// FS identifies the file system within its machine: paths with the
	// same FS share one space (the OS file system: the device ID of the
	// path, "dev-" and hex; a MemFS: one ID per MemFS). "" when unknown.
	FS string
}

// RemoveAll removes name and, if it is a directory, everything under it
// (rm -rf; not durable until the parent is synced). A missing name is no
// error. Tests use it to wipe a disk on any FS.
func RemoveAll(fsys FS, name string) error {
	fi, err := fsys.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if fi.IsDir() {
		names, err := fsys.List(name)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := RemoveAll(fsys, path.Join(name, n)); err != nil {
				return err
			}
		}
	}
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
