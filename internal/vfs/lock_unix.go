//go:build unix

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Lock implements FS with flock(2) on the file: advisory, released by the
// kernel when the process dies.
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &os.PathError{Op: "lock", Path: name, Err: ErrLocked}
		}
		return nil, &os.PathError{Op: "lock", Path: name, Err: fmt.Errorf("flock: %w", err)}
	}
	return f, nil // closing the file releases the lock
}
