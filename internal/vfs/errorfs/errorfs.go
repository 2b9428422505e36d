// Package errorfs wraps a vfs.FS to inject errors into chosen operations
// (after pebble's vfs/errorfs), and to observe every operation — the crash
// tests use that to take a vfs.MemFS.CrashClone before each step of a
// write.
//
// An Injector sees each operation before it runs; a non-nil error is
// returned instead of running it. Injectors are called concurrently if the
// FS is used concurrently.
package errorfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"

	"cairn/internal/vfs"
)

// ErrInjected is the default injected error.
var ErrInjected = errors.New("injected error")

// OpKind names an operation.
type OpKind int

// Operation kinds. File* operations act on an open handle; DirSync is Sync
// on a handle from OpenDir.
const (
	OpCreate OpKind = iota
	OpOpen
	OpOpenReadWrite
	OpOpenDir
	OpRemove
	OpRename
	OpMkdirAll
	OpList
	OpStat
	OpGetDiskUsage
	OpFileWrite
	OpFileReadAt
	OpFileSync
	OpFileClose
	OpFileStat
	OpDirSync
)

var opNames = [...]string{"create", "open", "open-rw", "open-dir", "remove", "rename", "mkdir-all",
	"list", "stat", "disk-usage", "write", "read-at", "sync", "close", "file-stat", "dir-sync"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// Op is one operation about to run.
type Op struct {
	Kind OpKind
	Path string // the file or directory; for Rename, the old name
}

func (o Op) String() string { return o.Kind.String() + " " + o.Path }

// Injector decides whether op fails.
type Injector interface {
	MaybeError(op Op) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op) error

// MaybeError implements Injector.
func (f InjectorFunc) MaybeError(op Op) error { return f(op) }

// OnKinds returns a predicate matching ops of the given kinds.
func OnKinds(kinds ...OpKind) func(Op) bool {
	return func(op Op) bool {
		for _, k := range kinds {
			if op.Kind == k {
				return true
			}
		}
		return false
	}
}

// FailNth fails the nth (0-based) operation matching match with err, once.
// Fired reports whether it has.
type FailNth struct {
	match func(Op) bool
	n     int64
	err   error
	seen  atomic.Int64
	fired atomic.Bool
	op    atomic.Pointer[Op]
}

// NewFailNth returns an injector failing the nth matching op with err
// (ErrInjected if nil).
func NewFailNth(match func(Op) bool, n int, err error) *FailNth {
	if err == nil {
		err = ErrInjected
	}
	return &FailNth{match: match, n: int64(n), err: err}
}

// MaybeError implements Injector.
func (f *FailNth) MaybeError(op Op) error {
	if !f.match(op) {
		return nil
	}
	if f.seen.Add(1)-1 == f.n {
		f.fired.Store(true)
		f.op.Store(&op)
		return f.err
	}
	return nil
}

// Fired reports whether the error was injected, and into which op.
func (f *FailNth) Fired() (Op, bool) {
	if p := f.op.Load(); p != nil {
		return *p, true
	}
	return Op{}, false
}

// Log records every operation (for counting steps and for test output).
type Log struct {
	mu  sync.Mutex
	ops []Op // guarded by mu
}

// MaybeError implements Injector; it never fails.
func (l *Log) MaybeError(op Op) error {
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
	return nil
}

// Ops returns a copy of the recorded operations.
func (l *Log) Ops() []Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Op(nil), l.ops...)
}

// Count returns how many recorded ops match.
func (l *Log) Count(match func(Op) bool) int {
	n := 0
	for _, op := range l.Ops() {
		if match(op) {
			n++
		}
	}
	return n
}

// FS is a vfs.FS with injected errors.
type FS struct {
	fs  vfs.FS
	inj atomic.Pointer[injectorBox]
}

type injectorBox struct{ Injector }

var _ vfs.FS = (*FS)(nil)

// Wrap returns fs with inj consulted before every operation (inj may be
// nil: no errors until SetInjector).
func Wrap(fs vfs.FS, inj Injector) *FS {
	e := &FS{fs: fs}
	e.SetInjector(inj)
	return e
}

// SetInjector replaces the injector (nil: none).
func (e *FS) SetInjector(inj Injector) { e.inj.Store(&injectorBox{inj}) }

func (e *FS) maybe(kind OpKind, path string) error {
	b := e.inj.Load()
	if b == nil || b.Injector == nil {
		return nil
	}
	if err := b.MaybeError(Op{Kind: kind, Path: path}); err != nil {
		return &fs.PathError{Op: kind.String(), Path: path, Err: err}
	}
	return nil
}

func (e *FS) wrapFile(f vfs.File, err error, name string, dir bool) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: e, name: name, dir: dir}, nil
}

// Create implements vfs.FS.
func (e *FS) Create(name string) (vfs.File, error) {
	if err := e.maybe(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Create(name)
	return e.wrapFile(f, err, name, false)
}

// Open implements vfs.FS.
func (e *FS) Open(name string) (vfs.File, error) {
	if err := e.maybe(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Open(name)
	return e.wrapFile(f, err, name, false)
}

// OpenReadWrite implements vfs.FS.
func (e *FS) OpenReadWrite(name string) (vfs.File, error) {
	if err := e.maybe(OpOpenReadWrite, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenReadWrite(name)
	return e.wrapFile(f, err, name, false)
}

// OpenDir implements vfs.FS.
func (e *FS) OpenDir(name string) (vfs.File, error) {
	if err := e.maybe(OpOpenDir, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenDir(name)
	return e.wrapFile(f, err, name, true)
}

// Remove implements vfs.FS.
func (e *FS) Remove(name string) error {
	if err := e.maybe(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

// Rename implements vfs.FS.
func (e *FS) Rename(oldname, newname string) error {
	if err := e.maybe(OpRename, oldname); err != nil {
		return err
	}
	return e.fs.Rename(oldname, newname)
}

// MkdirAll implements vfs.FS.
func (e *FS) MkdirAll(dir string, perm fs.FileMode) error {
	if err := e.maybe(OpMkdirAll, dir); err != nil {
		return err
	}
	return e.fs.MkdirAll(dir, perm)
}

// List implements vfs.FS.
func (e *FS) List(dir string) ([]string, error) {
	if err := e.maybe(OpList, dir); err != nil {
		return nil, err
	}
	return e.fs.List(dir)
}

// Stat implements vfs.FS.
func (e *FS) Stat(name string) (fs.FileInfo, error) {
	if err := e.maybe(OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

// GetDiskUsage implements vfs.FS.
// Lock implements vfs.FS (no errors are injected into locking).
func (e *FS) Lock(name string) (io.Closer, error) { return e.fs.Lock(name) }

func (e *FS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	if err := e.maybe(OpGetDiskUsage, path); err != nil {
		return vfs.DiskUsage{}, err
	}
	return e.fs.GetDiskUsage(path)
}

type file struct {
	vfs.File
	fs   *FS
	name string
	dir  bool
}

func (f *file) Write(p []byte) (int, error) {
	if err := f.fs.maybe(OpFileWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.maybe(OpFileReadAt, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *file) Sync() error {
	k := OpFileSync
	if f.dir {
		k = OpDirSync
	}
	if err := f.fs.maybe(k, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

// Close always closes the underlying file, even when it injects an error
// (as a real close that reports a deferred write error does).
func (f *file) Close() error {
	err := f.fs.maybe(OpFileClose, f.name)
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *file) Stat() (fs.FileInfo, error) {
	if err := f.fs.maybe(OpFileStat, f.name); err != nil {
		return nil, err
	}
	return f.File.Stat()
}
