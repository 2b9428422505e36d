package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// StartWriteback asks the kernel to begin writing the dirty pages of
// f[off:off+n] to the device without waiting for them (sync_file_range
// with SYNC_FILE_RANGE_WRITE). It is a hint that spreads a large write's
// device I/O over the time it is being written, so the final Sync has
// little left to do; it promises no durability. Files that are not OS
// files (MemFS, decorators) ignore it, except a decorator that only
// observes its file and says so with an Unwrap() File method (the metrics
// decorator): the hint goes to the file underneath.
func StartWriteback(f File, off, n int64) {
	for {
		u, ok := f.(interface{ Unwrap() File })
		if !ok {
			break
		}
		f = u.Unwrap()
	}
	of, ok := f.(*os.File)
	if !ok {
		return
	}
	rc, err := of.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
