package vfs

import (
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"
)

// Split returns a file system that serves the paths at or under dir from
// under and every other path from rest: two devices seen as one FS, as a
// node's RAIDP store sees its disk (raidp.data, on the disk's throttle)
// and its Lstor (another device, with its own). A rename between the two
// fails with EXDEV, as across mount points.
func Split(rest FS, dir string, under FS) FS {
	return &splitFS{rest: rest, dir: path.Clean(dir), under: under}
}

type splitFS struct {
	rest, under FS
	dir         string
}

func (s *splitFS) isUnder(name string) bool {
	c := path.Clean(name)
	return s.dir == "/" || c == s.dir || strings.HasPrefix(c, s.dir+"/")
}

func (s *splitFS) pick(name string) FS {
	if s.isUnder(name) {
		return s.under
	}
	return s.rest
}

func (s *splitFS) Create(name string) (File, error)        { return s.pick(name).Create(name) }
func (s *splitFS) Open(name string) (File, error)          { return s.pick(name).Open(name) }
func (s *splitFS) OpenReadWrite(name string) (File, error) { return s.pick(name).OpenReadWrite(name) }
func (s *splitFS) OpenDir(name string) (File, error)       { return s.pick(name).OpenDir(name) }
func (s *splitFS) Remove(name string) error                { return s.pick(name).Remove(name) }
func (s *splitFS) MkdirAll(dir string, perm fs.FileMode) error {
	return s.pick(dir).MkdirAll(dir, perm)
}
func (s *splitFS) List(dir string) ([]string, error)     { return s.pick(dir).List(dir) }
func (s *splitFS) Stat(name string) (fs.FileInfo, error) { return s.pick(name).Stat(name) }
func (s *splitFS) GetDiskUsage(p string) (DiskUsage, error) {
	return s.pick(p).GetDiskUsage(p)
}
func (s *splitFS) Lock(name string) (io.Closer, error) { return s.pick(name).Lock(name) }

func (s *splitFS) Rename(oldname, newname string) error {
	if s.isUnder(oldname) != s.isUnder(newname) {
		return perr("rename", oldname, syscall.EXDEV)
	}
	return s.pick(oldname).Rename(oldname, newname)
}
