// Package errorfs wraps a vfs.FS to inject errors into chosen operations
// (after pebble's vfs/errorfs), and to observe every operation — the crash
// tests use that to take a vfs.MemFS.CrashClone before each step of a
// write.
//
// An Injector sees each operation before it runs; a non-nil error is
// returned instead of running it. An Injector that is also an Observer sees
// each operation it let run again once it has run, with its error: a test
// waits for a step of a write to have happened (Signal) instead of polling
// for its effect. Injectors are called concurrently if the FS is used
// concurrently.
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

// Observer is an optional capability of an Injector: Done is called after
// every operation MaybeError let run, with the operation's error.
type Observer interface {
	Done(op Op, err error)
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

// Signal is an Injector that closes C once an operation matching its
// predicate has run without error. It fails what next (nil: nothing) fails,
// and passes Done on to next if next is an Observer, so it can sit on a Log
// or a FailNth.
type Signal struct {
	match func(Op) bool
	next  Injector
	once  sync.Once
	c     chan struct{}
}

var (
	_ Injector = (*Signal)(nil)
	_ Observer = (*Signal)(nil)
)

// NewSignal returns a Signal for the first successful operation matching
// match, consulting next before each operation.
func NewSignal(match func(Op) bool, next Injector) *Signal {
	return &Signal{match: match, next: next, c: make(chan struct{})}
}

// MaybeError implements Injector.
func (s *Signal) MaybeError(op Op) error {
	if s.next == nil {
		return nil
	}
	return s.next.MaybeError(op)
}

// Done implements Observer.
func (s *Signal) Done(op Op, err error) {
	if o, ok := s.next.(Observer); ok {
		o.Done(op, err)
	}
	if err == nil && s.match(op) {
		s.once.Do(func() { close(s.c) })
	}
}

// C is closed once a matching operation has run without error.
func (s *Signal) C() <-chan struct{} { return s.c }

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

// begin consults the injector about an operation. Unless it returns an
// error, the caller runs the operation and then calls done with the
// operation's error.
func (e *FS) begin(kind OpKind, path string) (done func(error), err error) {
	b := e.inj.Load()
	if b == nil || b.Injector == nil {
		return noDone, nil
	}
	op := Op{Kind: kind, Path: path}
	if err := b.MaybeError(op); err != nil {
		return nil, &fs.PathError{Op: kind.String(), Path: path, Err: err}
	}
	if o, ok := b.Injector.(Observer); ok {
		return func(err error) { o.Done(op, err) }, nil
	}
	return noDone, nil
}

func noDone(error) {}

func (e *FS) wrapFile(f vfs.File, err error, name string, dir bool) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: e, name: name, dir: dir}, nil
}

// Create implements vfs.FS.
func (e *FS) Create(name string) (vfs.File, error) {
	done, err := e.begin(OpCreate, name)
	if err != nil {
		return nil, err
	}
	f, err := e.fs.Create(name)
	done(err)
	return e.wrapFile(f, err, name, false)
}

// Open implements vfs.FS.
func (e *FS) Open(name string) (vfs.File, error) {
	done, err := e.begin(OpOpen, name)
	if err != nil {
		return nil, err
	}
	f, err := e.fs.Open(name)
	done(err)
	return e.wrapFile(f, err, name, false)
}

// OpenReadWrite implements vfs.FS.
func (e *FS) OpenReadWrite(name string) (vfs.File, error) {
	done, err := e.begin(OpOpenReadWrite, name)
	if err != nil {
		return nil, err
	}
	f, err := e.fs.OpenReadWrite(name)
	done(err)
	return e.wrapFile(f, err, name, false)
}

// OpenDir implements vfs.FS.
func (e *FS) OpenDir(name string) (vfs.File, error) {
	done, err := e.begin(OpOpenDir, name)
	if err != nil {
		return nil, err
	}
	f, err := e.fs.OpenDir(name)
	done(err)
	return e.wrapFile(f, err, name, true)
}

// Remove implements vfs.FS.
func (e *FS) Remove(name string) error {
	done, err := e.begin(OpRemove, name)
	if err != nil {
		return err
	}
	err = e.fs.Remove(name)
	done(err)
	return err
}

// Rename implements vfs.FS.
func (e *FS) Rename(oldname, newname string) error {
	done, err := e.begin(OpRename, oldname)
	if err != nil {
		return err
	}
	err = e.fs.Rename(oldname, newname)
	done(err)
	return err
}

// MkdirAll implements vfs.FS.
func (e *FS) MkdirAll(dir string, perm fs.FileMode) error {
	done, err := e.begin(OpMkdirAll, dir)
	if err != nil {
		return err
	}
	err = e.fs.MkdirAll(dir, perm)
	done(err)
	return err
}

// List implements vfs.FS.
func (e *FS) List(dir string) ([]string, error) {
	done, err := e.begin(OpList, dir)
	if err != nil {
		return nil, err
	}
	v, err := e.fs.List(dir)
	done(err)
	return v, err
}

// Stat implements vfs.FS.
func (e *FS) Stat(name string) (fs.FileInfo, error) {
	done, err := e.begin(OpStat, name)
	if err != nil {
		return nil, err
	}
	v, err := e.fs.Stat(name)
	done(err)
	return v, err
}

// GetDiskUsage implements vfs.FS.
// Lock implements vfs.FS (no errors are injected into locking).
func (e *FS) Lock(name string) (io.Closer, error) { return e.fs.Lock(name) }

func (e *FS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	done, err := e.begin(OpGetDiskUsage, path)
	if err != nil {
		return vfs.DiskUsage{}, err
	}
	v, err := e.fs.GetDiskUsage(path)
	done(err)
	return v, err
}

type file struct {
	vfs.File
	fs   *FS
	name string
	dir  bool
}

func (f *file) Write(p []byte) (int, error) {
	done, err := f.fs.begin(OpFileWrite, f.name)
	if err != nil {
		return 0, err
	}
	n, err := f.File.Write(p)
	done(err)
	return n, err
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	done, err := f.fs.begin(OpFileReadAt, f.name)
	if err != nil {
		return 0, err
	}
	n, err := f.File.ReadAt(p, off)
	done(err)
	return n, err
}

func (f *file) Sync() error {
	k := OpFileSync
	if f.dir {
		k = OpDirSync
	}
	done, err := f.fs.begin(k, f.name)
	if err != nil {
		return err
	}
	err = f.File.Sync()
	done(err)
	return err
}

// Close always closes the underlying file, even when it injects an error
// (as a real close that reports a deferred write error does).
func (f *file) Close() error {
	done, err := f.fs.begin(OpFileClose, f.name)
	cerr := f.File.Close()
	if err != nil {
		return err
	}
	done(cerr)
	return cerr
}

func (f *file) Stat() (fs.FileInfo, error) {
	done, err := f.fs.begin(OpFileStat, f.name)
	if err != nil {
		return nil, err
	}
	fi, err := f.File.Stat()
	done(err)
	return fi, err
}
