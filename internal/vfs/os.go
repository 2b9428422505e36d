package vfs

import (
	"io/fs"
	"os"
	"slices"
)

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

var _ FS = osFS{}

func (osFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (osFS) Open(name string) (File, error) { return os.Open(name) }

func (osFS) OpenReadWrite(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}

func (osFS) OpenDir(name string) (File, error) { return os.Open(name) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (osFS) GetDiskUsage(path string) (DiskUsage, error) { return diskUsage(path) }
