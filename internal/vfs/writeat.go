package vfs

import (
	"io"
	"io/fs"
	"syscall"
)

// WriterAt is the optional capability of a File to overwrite bytes at an
// offset (io.WriterAt), found by type assertion: the OS files and MemFS
// files have it, and so do Throttle's and the metrics' files over them;
// errorfs does not pass it on. Writing past the end extends the file, the gap reading as
// zeros. Like Write, it is durable only after Sync.
type WriterAt interface {
	io.WriterAt
}

var _ WriterAt = (*memFile)(nil)

// WriteAt writes p at off. After a CrashClone, an overwritten file that
// was not synced since keeps either its synced or its current content
// (CrashCloneCfg), never a mix.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.writeAtLocked(p, off)
}

// writeAtLocked writes p at off, growing the file if needed (Write and
// WriteAt). f.fs.mu must be held.
func (f *memFile) writeAtLocked(p []byte, off int64) (int, error) {
	switch {
	case f.closed:
		return 0, perr("write", f.name, fs.ErrClosed)
	case !f.write:
		return 0, perr("write", f.name, syscall.EBADF)
	case off < 0:
		return 0, perr("write", f.name, fs.ErrInvalid)
	}
	n := f.n
	end := off + int64(len(p))
	grow := max(0, end-int64(len(n.data)))
	if n.linked && f.fs.capacity > 0 && f.fs.used+grow > f.fs.capacity {
		return 0, perr("write", f.name, syscall.ENOSPC)
	}
	if grow > 0 {
		n.data = append(n.data, make([]byte, grow)...)
	}
	copy(n.data[off:], p)
	if n.linked {
		f.fs.used += grow
	}
	n.modTime = f.fs.now()
	return len(p), nil
}
