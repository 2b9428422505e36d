package vfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that remembers what has been synced, so that a
// test can simulate a crash (power loss) at any point with CrashClone.
//
// Durability model (after pebble's strict MemFS): a file's data survives a
// crash as of its last File.Sync; a directory entry (a created, removed or
// renamed name) survives as of the last Sync of a handle on that directory
// from OpenDir. A new directory is itself an entry of its parent. Nothing
// else is durable. CrashCloneCfg can also keep a random part of the
// unsynced state, as real disks sometimes do.
//
// MemFS also models a full disk: with SetCapacity, a Write that would grow
// the total file bytes past the capacity fails with syscall.ENOSPC and
// writes nothing.
//
// All methods are safe for concurrent use.
type MemFS struct {
	mu       sync.Mutex
	root     *memNode         // guarded by mu
	capacity int64            // guarded by mu; 0 = unlimited
	used     int64            // guarded by mu; bytes of linked files
	now      func() time.Time // guarded by mu

	lockMu sync.Mutex
	locks  map[string]bool // names locked; guarded by lockMu
}

var _ FS = (*MemFS)(nil)

type memNode struct {
	isDir   bool
	modTime time.Time
	linked  bool // reachable from the root (counted in used)

	data   []byte // file content
	synced []byte // file content as of the last Sync

	children       map[string]*memNode // directory entries
	syncedChildren map[string]*memNode // directory entries as of the last Sync
}

// NewMem returns an empty in-memory file system. It is the same as
// NewCrashableMem: every MemFS tracks synced state.
func NewMem() *MemFS { return NewCrashableMem() }

// NewCrashableMem returns an empty in-memory file system that supports
// CrashClone. Its root directory "/" always exists.
func NewCrashableMem() *MemFS {
	return &MemFS{root: newDir(time.Time{}), now: time.Now}
}

func newDir(t time.Time) *memNode {
	return &memNode{isDir: true, modTime: t, linked: true,
		children: map[string]*memNode{}, syncedChildren: map[string]*memNode{}}
}

// SetClock sets the function that stamps modification times (default
// time.Now). Tests pass a fake clock to age files.
func (m *MemFS) SetClock(now func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = now
}

// SetCapacity limits the total bytes of all files to n (0 = unlimited).
// It does not shrink existing files.
func (m *MemFS) SetCapacity(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = n
}

// CrashCloneCfg says how much unsynced state survives a simulated crash.
type CrashCloneCfg struct {
	// UnsyncedDataPercent (0–100) is the chance, per file and per
	// directory, that unsynced changes survive: a directory then keeps its
	// current entries, a file a random prefix of its unsynced appends (or
	// its current content if it was truncated or overwritten). 0 keeps only
	// synced state.
	UnsyncedDataPercent int
	// RNG draws those chances; required when UnsyncedDataPercent > 0.
	RNG *rand.Rand
}

// CrashClone returns a new MemFS holding what would be on disk after a
// crash now: synced directory entries and synced file data (plus whatever
// cfg lets survive). m is unchanged and can be used further.
func (m *MemFS) CrashClone(cfg CrashCloneCfg) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemFS{capacity: m.capacity, now: m.now}
	keep := func() bool {
		return cfg.UnsyncedDataPercent > 0 && cfg.RNG.IntN(100) < cfg.UnsyncedDataPercent
	}
	var cloneDir func(n *memNode) *memNode
	cloneDir = func(n *memNode) *memNode {
		d := newDir(n.modTime)
		entries := n.syncedChildren
		if keep() {
			entries = n.children
		}
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			ch := entries[name]
			var nc *memNode
			if ch.isDir {
				nc = cloneDir(ch)
			} else {
				data := ch.synced
				if keep() {
					cur := ch.data
					if len(cur) >= len(data) && bytes.Equal(cur[:len(data)], data) {
						data = cur[:len(data)+cfg.RNG.IntN(len(cur)-len(data)+1)]
					} else {
						data = cur
					}
				}
				data = bytes.Clone(data)
				if data == nil {
					data = []byte{}
				}
				nc = &memNode{modTime: ch.modTime, linked: true, data: data, synced: bytes.Clone(data)}
				c.used += int64(len(data))
			}
			d.children[name] = nc
			d.syncedChildren[name] = nc
		}
		return d
	}
	c.root = cloneDir(m.root)
	return c
}

func memPath(name string) []string {
	p := path.Clean("/" + name)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func perr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// walkLocked returns the node at parts, or nil.
func (m *MemFS) walkLocked(parts []string) *memNode {
	n := m.root
	for _, p := range parts {
		if !n.isDir {
			return nil
		}
		n = n.children[p]
		if n == nil {
			return nil
		}
	}
	return n
}

// parentLocked returns the directory holding name and name's base.
func (m *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	parts := memPath(name)
	if len(parts) == 0 {
		return nil, "", perr(op, name, fs.ErrInvalid)
	}
	dir := m.walkLocked(parts[:len(parts)-1])
	if dir == nil {
		return nil, "", perr(op, name, fs.ErrNotExist)
	}
	if !dir.isDir {
		return nil, "", perr(op, name, syscall.ENOTDIR)
	}
	return dir, parts[len(parts)-1], nil
}

func (m *MemFS) unlinkLocked(n *memNode) {
	if n.linked && !n.isDir {
		m.used -= int64(len(n.data))
	}
	n.linked = false
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("open", name)
	if err != nil {
		return nil, err
	}
	n := dir.children[base]
	switch {
	case n == nil:
		n = &memNode{linked: true}
		dir.children[base] = n
	case n.isDir:
		return nil, perr("open", name, syscall.EISDIR)
	default:
		m.used -= int64(len(n.data))
		n.data = nil
	}
	n.modTime = m.now()
	return &memFile{fs: m, n: n, name: name, read: true, write: true}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walkLocked(memPath(name))
	if n == nil {
		return nil, perr("open", name, fs.ErrNotExist)
	}
	return &memFile{fs: m, n: n, name: name, read: !n.isDir}, nil
}

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("open", name)
	if err != nil {
		return nil, err
	}
	n := dir.children[base]
	switch {
	case n == nil:
		n = &memNode{linked: true, modTime: m.now()}
		dir.children[base] = n
	case n.isDir:
		return nil, perr("open", name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, read: true, write: true}, nil
}

// OpenDir implements FS.
func (m *MemFS) OpenDir(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walkLocked(memPath(name))
	if n == nil {
		return nil, perr("open", name, fs.ErrNotExist)
	}
	if !n.isDir {
		return nil, perr("open", name, syscall.ENOTDIR)
	}
	return &memFile{fs: m, n: n, name: name}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n := dir.children[base]
	if n == nil {
		return perr("remove", name, fs.ErrNotExist)
	}
	if n.isDir && len(n.children) > 0 {
		return perr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	m.unlinkLocked(n)
	dir.modTime = m.now()
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	lerr := func(err error) error {
		if pe, ok := err.(*fs.PathError); ok {
			err = pe.Err
		}
		return &linkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	od, ob, err := m.parentLocked("rename", oldname)
	if err != nil {
		return lerr(err)
	}
	nd, nb, err := m.parentLocked("rename", newname)
	if err != nil {
		return lerr(err)
	}
	n := od.children[ob]
	if n == nil {
		return lerr(fs.ErrNotExist)
	}
	if od == nd && ob == nb {
		return nil
	}
	if t := nd.children[nb]; t != nil {
		if t.isDir {
			return lerr(syscall.EISDIR)
		}
		if n.isDir {
			return lerr(syscall.ENOTDIR)
		}
		m.unlinkLocked(t)
	}
	delete(od.children, ob)
	nd.children[nb] = n
	od.modTime, nd.modTime = m.now(), m.now()
	return nil
}

// linkError is os.LinkError without importing os.
type linkError struct {
	Op, Old, New string
	Err          error
}

func (e *linkError) Error() string { return e.Op + " " + e.Old + " " + e.New + ": " + e.Err.Error() }
func (e *linkError) Unwrap() error { return e.Err }

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range memPath(dir) {
		c := n.children[p]
		if c == nil {
			c = newDir(m.now())
			n.children[p] = c
		} else if !c.isDir {
			return perr("mkdir", dir, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walkLocked(memPath(dir))
	if n == nil {
		return nil, perr("open", dir, fs.ErrNotExist)
	}
	if !n.isDir {
		return nil, perr("readdirent", dir, syscall.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.walkLocked(memPath(name))
	if n == nil {
		return nil, perr("stat", name, fs.ErrNotExist)
	}
	return n.infoLocked(path.Base(path.Clean("/" + name))), nil
}

// GetDiskUsage implements FS. Without a capacity it reports a 1 TiB disk.
// Lock implements FS: one holder per name within this MemFS; a crash clone
// starts with no locks held (the process that held them is gone). The lock
// file itself is created like any file.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	f, err := m.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	f.Close()
	m.lockMu.Lock()
	defer m.lockMu.Unlock()
	if m.locks == nil {
		m.locks = map[string]bool{}
	}
	if m.locks[name] {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrLocked}
	}
	m.locks[name] = true
	return memLock(func() error {
		m.lockMu.Lock()
		defer m.lockMu.Unlock()
		delete(m.locks, name)
		return nil
	}), nil
}

type memLock func() error

func (l memLock) Close() error { return l() }

func (m *MemFS) GetDiskUsage(string) (DiskUsage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	total := m.capacity
	if total == 0 {
		total = 1 << 40
	}
	return DiskUsage{TotalBytes: uint64(total), AvailBytes: uint64(max(0, total-m.used)), UsedBytes: uint64(m.used),
		FS: fmt.Sprintf("mem-%p", m)}, nil
}

func (n *memNode) infoLocked(name string) fs.FileInfo {
	fi := memInfo{name: name, size: int64(len(n.data)), mode: 0o644, mod: n.modTime}
	if n.isDir {
		fi.size, fi.mode = 0, fs.ModeDir|0o755
	}
	return fi
}

type memInfo struct {
	name string
	size int64
	mode fs.FileMode
	mod  time.Time
}

func (fi memInfo) Name() string       { return fi.name }
func (fi memInfo) Size() int64        { return fi.size }
func (fi memInfo) Mode() fs.FileMode  { return fi.mode }
func (fi memInfo) ModTime() time.Time { return fi.mod }
func (fi memInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memInfo) Sys() any           { return nil }

// memFile is an open handle. Its fields other than fs and n are guarded by
// fs.mu, as is the node.
type memFile struct {
	fs          *MemFS
	n           *memNode
	name        string
	pos         int64
	read, write bool
	closed      bool
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n, err := f.writeAtLocked(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch {
	case f.closed:
		return 0, perr("read", f.name, fs.ErrClosed)
	case !f.read:
		return 0, perr("read", f.name, syscall.EBADF)
	case off < 0:
		return 0, perr("read", f.name, fs.ErrInvalid)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return perr("sync", f.name, fs.ErrClosed)
	}
	if f.n.isDir {
		f.n.syncedChildren = maps.Clone(f.n.children)
	} else {
		f.n.synced = bytes.Clone(f.n.data)
	}
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return perr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return nil, perr("stat", f.name, fs.ErrClosed)
	}
	return f.n.infoLocked(path.Base(path.Clean("/" + f.name))), nil
}

var _ File = (*memFile)(nil)
