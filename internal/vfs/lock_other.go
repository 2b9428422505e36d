//go:build !unix

package vfs

import (
	"io"
	"os"
)

// Lock implements FS; without flock it only creates the file.
func (osFS) Lock(name string) (io.Closer, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}
