package vfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// syncFS calls syncfs(2) on f's file system. Linux reports writeback
// errors through syncfs only since 5.8 (before, it returned 0 after a
// failed writeback): on older kernels it is unsupported.
func syncFS(f *os.File) error {
	if !syncfsReportsErrors() {
		return fmt.Errorf("syncfs: %w: kernel before 5.8 does not report writeback errors", errors.ErrUnsupported)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Syncfs(int(fd))
			if serr != unix.EINTR {
				break
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "syncfs", Path: f.Name(), Err: serr}
	}
	return nil
}

var syncfsReportsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
})

// kernelAtLeast reports whether a Linux release string ("6.1.0-18-amd64")
// is at least major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i] // "8-rc1"
	}
	mi, err2 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
