//go:build !linux

package vfs

import (
	"errors"
	"fmt"
	"os"
)

// syncFS is unsupported outside Linux: volumes sync each file instead.
func syncFS(f *os.File) error {
	return fmt.Errorf("syncfs: %w on this OS", errors.ErrUnsupported)
}
