//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package vfs

import (
	"errors"
	"io/fs"
)

func diskUsage(path string) (DiskUsage, error) {
	return DiskUsage{}, &fs.PathError{Op: "statfs", Path: path, Err: errors.ErrUnsupported}
}
