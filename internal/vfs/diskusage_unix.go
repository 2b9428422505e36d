//go:build linux || darwin || freebsd || netbsd || openbsd

package vfs

import (
	"io/fs"
	"strconv"
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
	u := DiskUsage{TotalBytes: total, AvailBytes: avail, UsedBytes: total - free}
	var ds syscall.Stat_t
	if err := syscall.Stat(path, &ds); err == nil {
		u.FS = "dev-" + strconv.FormatUint(uint64(ds.Dev), 16) //nolint:unconvert // uint64 on linux, int32 elsewhere
	}
	return u, nil
}
