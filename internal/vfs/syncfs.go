package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// FSSyncer is the optional capability of a directory handle (from
// FS.OpenDir) to make its whole file system durable at once, as syncfs(2)
// does: SyncFS returns once every file's data and every directory's
// entries written before the call are durable, on the file system that
// holds the directory (not only below it). An error means some of that
// may be lost — the caller cannot tell which file's — and errors of
// writeback since the handle was opened are reported.
//
// A decorator that only observes its file exposes Unwrap() File instead
// and SyncFS reaches the file underneath; one that must see the call
// (error injection, throttling, metrics) implements FSSyncer itself.
type FSSyncer interface {
	SyncFS() error
}

// SyncFS makes the file system holding the directory handle d durable
// (FSSyncer). It returns an error wrapping errors.ErrUnsupported if d
// (after unwrapping observing decorators) cannot do that: not an OS file
// nor a MemFS handle, or an OS whose syncfs does not report writeback
// errors (Linux before 5.8, or not Linux).
func SyncFS(d File) error {
	for {
		if s, ok := d.(FSSyncer); ok {
			return s.SyncFS()
		}
		u, ok := d.(interface{ Unwrap() File })
		if !ok {
			break
		}
		d = u.Unwrap()
	}
	if of, ok := d.(*os.File); ok {
		return syncFS(of)
	}
	return fmt.Errorf("syncfs on %T: %w", d, errors.ErrUnsupported)
}

// SyncFS implements FSSyncer: everything in the MemFS becomes durable, as
// if every file and every directory had been synced.
func (f *memFile) SyncFS() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return perr("syncfs", f.name, fs.ErrClosed)
	}
	var walk func(n *memNode)
	walk = func(n *memNode) {
		if !n.isDir {
			n.synced = append([]byte(nil), n.data...)
			return
		}
		n.syncedChildren = make(map[string]*memNode, len(n.children))
		for name, c := range n.children {
			n.syncedChildren[name] = c
			walk(c)
		}
	}
	walk(f.fs.root)
	return nil
}

var _ FSSyncer = (*memFile)(nil)
