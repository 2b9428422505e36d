//go:build linux || darwin || freebsd || netbsd || openbsd

package vfs

import (
	"io/fs"
	"syscall"
)

func diskUsage(path string) (DiskUsage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return DiskUsage{}, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	bs := uint64(st.Bsize) //nolint:unconvert // int64 on linux, uint32 elsewhere
	total := uint64(st.Blocks) * bs
	avail := uint64(st.Bavail) * bs
	free := uint64(st.Bfree) * bs
	return DiskUsage{TotalBytes: total, AvailBytes: avail, UsedBytes: total - free}, nil
}
