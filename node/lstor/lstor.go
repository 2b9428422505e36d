package lstor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"cairn/internal/vfs"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of opening a store.
var (
	// ErrSamePath: the Lstor directory is the disk directory (or inside it,
	// or contains it), so losing the disk would lose its Lstor.
	ErrSamePath = errors.New("lstor: the Lstor must not share the disk's path")
	// ErrConfig: a size, slot count or capacity out of range.
	ErrConfig = errors.New("lstor: bad configuration")
	// ErrMismatch: the LSTOR file was formatted with another superchunk
	// size, slot count or journal capacity.
	ErrMismatch = errors.New("lstor: formatted with another geometry")
	// ErrNotFormatted: Config.MustExist is set and there is no LSTOR file.
	ErrNotFormatted = errors.New("lstor: no Lstor formatted there")
	// ErrNoWriteAt: the file system's files cannot be overwritten in place
	// (they lack vfs.WriterAt).
	ErrNoWriteAt = errors.New("lstor: file system does not support WriteAt")
)

// Errors of using a store.
var (
	// ErrCorrupt: a CRC failed (the header, a parity block or a journal
	// record). A corrupt journal record is never replayed: the store is
	// marked for verification instead.
	ErrCorrupt = errors.New("lstor: corrupt")
	// ErrNeedsVerify: the store is marked for verification (a journal
	// record failed its CRC, or a write failed half-way); writes are
	// refused until Resync.
	ErrNeedsVerify = errors.New("lstor: marked for verification; resync first")
	// ErrRange: a slot or byte range outside the disk's superchunk space.
	ErrRange = errors.New("lstor: range out of bounds")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("lstor: closed")
)

// Config says where a disk's RAIDP data and its Lstor live and their
// geometry.
type Config struct {
	FS vfs.FS // nil: vfs.Default
	// Disk is the disk's directory (holding raidp.data); Lstor the Lstor's
	// directory (holding LSTOR): different paths, neither inside the
	// other.
	Disk, Lstor string
	// Size is the superchunk size, a positive multiple of BlockSize; Slots
	// the disk's superchunk slots (≥ 1).
	Size  int64
	Slots int
	// Cap is the journal capacity, the most data bytes one record carries
	// (writes are split into records of at most Cap bytes); 0 means
	// DefaultCap.
	Cap int
	// Deletes selects how Delete zeroes dead ranges: DeleteLazy (the
	// paper's baseline, the default) queues them for Idle, DeleteOnline
	// (the update-oriented variant) zeroes them at once.
	Deletes DeleteMode
	// Backlog bounds the lazy deletes queued; when full, Delete zeroes the
	// oldest first. 0 means 1024.
	Backlog int
	// MustExist makes Open fail with ErrNotFormatted instead of
	// formatting a new Lstor (for checkers).
	MustExist bool
}

func (c *Config) validate() error {
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.Cap == 0 {
		c.Cap = DefaultCap
	}
	if c.Backlog == 0 {
		c.Backlog = 1024
	}
	if c.Backlog < 0 || c.Deletes != DeleteLazy && c.Deletes != DeleteOnline {
		return fmt.Errorf("%w: backlog %d, delete mode %d", ErrConfig, c.Backlog, c.Deletes)
	}
	switch {
	case c.Size <= 0 || c.Size%BlockSize != 0:
		return fmt.Errorf("%w: superchunk size %d is not a positive multiple of %d", ErrConfig, c.Size, BlockSize)
	case c.Slots < 1 || c.Slots > 1<<20:
		return fmt.Errorf("%w: %d slots (want 1..%d)", ErrConfig, c.Slots, 1<<20)
	case c.Cap < 1 || c.Cap > 64<<20:
		return fmt.Errorf("%w: journal capacity %d (want 1..%d)", ErrConfig, c.Cap, 64<<20)
	}
	return CheckPaths(c.Disk, c.Lstor)
}

// ParseDiskSpec parses a disk argument "PATH" or "PATH,lstor=LPATH" (the
// form of --disk) into the disk's path and its Lstor's ("" without one),
// refusing an Lstor on the disk's path (ErrSamePath) and unknown options
// (ErrConfig).
func ParseDiskSpec(spec string) (disk, lstor string, err error) {
	parts := strings.Split(spec, ",")
	disk = parts[0]
	if disk == "" {
		return "", "", fmt.Errorf("%w: disk spec %q has no path", ErrConfig, spec)
	}
	for _, opt := range parts[1:] {
		k, v, ok := strings.Cut(opt, "=")
		switch {
		case !ok || k != "lstor":
			return "", "", fmt.Errorf("%w: disk spec %q: unknown option %q (want PATH or PATH,lstor=LSTOR_PATH)", ErrConfig, spec, opt)
		case lstor != "":
			return "", "", fmt.Errorf("%w: disk spec %q gives the Lstor twice", ErrConfig, spec)
		case v == "":
			return "", "", fmt.Errorf("%w: disk spec %q: empty Lstor path", ErrConfig, spec)
		}
		lstor = v
	}
	if lstor != "" {
		if err := CheckPaths(disk, lstor); err != nil {
			return "", "", fmt.Errorf("disk spec %q: %w", spec, err)
		}
	}
	return disk, lstor, nil
}

// CheckPaths refuses an Lstor directory that is the disk directory, or
// inside it, or contains it: deleting the disk's directory must not delete
// its Lstor. (Whether both are on one file system is the caller's to warn
// about: that is legal, but a disk failure then takes the Lstor too.)
func CheckPaths(disk, lstor string) error {
	if disk == "" || lstor == "" {
		return fmt.Errorf("%w: disk %q, Lstor %q: both paths are required", ErrConfig, disk, lstor)
	}
	d, l := filepath.Clean(disk), filepath.Clean(lstor)
	if a, err := filepath.Abs(d); err == nil {
		d = a
	}
	if a, err := filepath.Abs(l); err == nil {
		l = a
	}
	inside := func(a, b string) bool { // a is b or under it
		r, err := filepath.Rel(b, a)
		return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
	}
	switch {
	case d == l:
		return fmt.Errorf("%w: disk and Lstor are both %s", ErrSamePath, d)
	case inside(l, d):
		return fmt.Errorf("%w: Lstor %s is inside disk %s", ErrSamePath, l, d)
	case inside(d, l):
		return fmt.Errorf("%w: disk %s is inside Lstor %s", ErrSamePath, d, l)
	}
	return nil
}

// file is a vfs.File that can be overwritten in place.
type file interface {
	vfs.File
	vfs.WriterAt
}

// Store is one disk's RAIDP data and its Lstor: the superchunk slots,
// their XOR parity and the journal that keeps the two consistent across
// crashes. Its methods are safe for concurrent use; writes are serialized
// (the paper's writer lock: one journal record at a time).
type Store struct {
	cfg Config

	mu sync.Mutex // guards everything below, and serializes writes and replay
	// data is DISK/raidp.data, lst is LSTOR/LSTOR.
	data, lst file
	verify    bool // VERIFY marker present
	// hwm is each slot's high-water mark: bytes at or past it are zero on
	// the disk, so a write there needs no old-data read.
	hwm     []int64
	backlog []extent // lazy deletes not zeroed yet, oldest first
	seq     uint64
	closed  bool
	lock    io.Closer // LSTOR/LOCK, held while open
}

// Open opens (formatting if new) the RAIDP data of a disk and its Lstor,
// and replays the journal: a complete record is redone (idempotent); a
// record that fails its CRC is not replayed, and the store is marked for
// verification (NeedsVerify; writes fail with ErrNeedsVerify until
// Resync). Errors: ErrConfig, ErrSamePath, ErrMismatch, ErrNoWriteAt,
// ErrCorrupt (the header), or the file system's.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg}
	if cfg.MustExist {
		if _, err := cfg.FS.Stat(filepath.Join(cfg.Lstor, lstorFile)); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotFormatted, cfg.Lstor, err)
		}
	}
	for _, dir := range []string{cfg.Disk, cfg.Lstor} {
		if err := cfg.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("lstor: open: %w", err)
		}
	}
	lock, err := cfg.FS.Lock(filepath.Join(cfg.Lstor, lockFile))
	if err != nil {
		return nil, fmt.Errorf("lstor: %s is in use (a node or another command has it open): %w", cfg.Lstor, err)
	}
	s.lock = lock
	if s, err = s.open(ctx); err != nil {
		lock.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) (*Store, error) {
	cfg := s.cfg
	dataInfo, dataErr := cfg.FS.Stat(filepath.Join(cfg.Disk, dataFile))
	_, lstorErr := cfg.FS.Stat(filepath.Join(cfg.Lstor, lstorFile))
	// A new disk beside an old Lstor: the disk was replaced (or wiped), so
	// the parity describes data that is gone; it stays readable for a
	// dual-failure rebuild and is resynced once the disk is refilled.
	replaced := errors.Is(dataErr, fs.ErrNotExist) && lstorErr == nil
	// A new Lstor beside an old disk: the Lstor was lost and must be
	// rebuilt from the disk (Resync) before it is trusted or written.
	// (An empty data file is a format interrupted before the Lstor.)
	lost := dataErr == nil && dataInfo.Size() > 0 && errors.Is(lstorErr, fs.ErrNotExist)
	var err error
	if s.data, err = s.openRW(filepath.Join(cfg.Disk, dataFile)); err != nil {
		return nil, err
	}
	if err := s.openLstor(); err != nil {
		s.data.Close()
		return nil, err
	}
	if _, err := cfg.FS.Stat(filepath.Join(cfg.Lstor, verifyFile)); err == nil {
		s.verify = true
	}
	if err := s.loadHWMLocked(); err != nil {
		s.data.Close()
		s.lst.Close()
		return nil, err
	}
	err = s.replayLocked(ctx)
	if err == nil && (replaced || lost) && !s.verify {
		err = s.markVerifyLocked()
	}
	if err != nil {
		s.data.Close()
		s.lst.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) openRW(name string) (file, error) {
	f, err := s.cfg.FS.OpenReadWrite(name)
	if err != nil {
		return nil, fmt.Errorf("lstor: open %s: %w", name, err)
	}
	w, ok := f.(file)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%w: %T", ErrNoWriteAt, f)
	}
	return w, nil
}

// Geometry of the LSTOR file.
func (s *Store) blocks() int64     { return s.cfg.Size / BlockSize }
func (s *Store) crcOff() int64     { return HeaderSize + s.cfg.Size }
func (s *Store) hwmOff() int64     { return s.crcOff() + 4*s.blocks() }
func (s *Store) journalOff() int64 { return JournalOffset(s.cfg.Size, s.cfg.Slots) }
func (s *Store) recordCap() int64 {
	return RecordHeaderSize + 3*int64(s.cfg.Cap) + 2*BlockSize
}

func (s *Store) encodeHeader() []byte {
	h := make([]byte, HeaderSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:], version)
	binary.LittleEndian.PutUint32(h[12:], 1)
	binary.LittleEndian.PutUint64(h[16:], uint64(s.cfg.Size))
	binary.LittleEndian.PutUint32(h[24:], uint32(s.cfg.Slots))
	binary.LittleEndian.PutUint32(h[28:], uint32(s.cfg.Cap))
	binary.LittleEndian.PutUint32(h[32:], crc32.Checksum(h[:32], castagnoli))
	return h
}

// openLstor opens LSTOR/LSTOR, formatting it if it is new: the header,
// zero parity (read as zeros: the file is extended, sparse where the file
// system allows) and a cleared journal, synced with its directory.
func (s *Store) openLstor() error {
	name := filepath.Join(s.cfg.Lstor, lstorFile)
	_, statErr := s.cfg.FS.Stat(name)
	f, err := s.openRW(name)
	if err != nil {
		return err
	}
	s.lst = f
	if errors.Is(statErr, fs.ErrNotExist) {
		if _, err := f.WriteAt(s.encodeHeader(), 0); err != nil {
			return s.closeLstor(fmt.Errorf("lstor: format: %w", err))
		}
		if _, err := f.WriteAt(make([]byte, RecordHeaderSize), s.journalOff()+s.recordCap()-RecordHeaderSize); err != nil {
			return s.closeLstor(fmt.Errorf("lstor: format: %w", err))
		}
		if err := f.Sync(); err != nil {
			return s.closeLstor(fmt.Errorf("lstor: format: %w", err))
		}
		for _, dir := range []string{s.cfg.Lstor, s.cfg.Disk} {
			if err := syncDirs(s.cfg.FS, dir); err != nil {
				return s.closeLstor(err)
			}
		}
	}
	h := make([]byte, HeaderSize)
	if _, err := f.ReadAt(h, 0); err != nil {
		return s.closeLstor(fmt.Errorf("%w: %s: header: %v", ErrCorrupt, name, err))
	}
	if string(h[:8]) != magic || binary.LittleEndian.Uint32(h[32:]) != crc32.Checksum(h[:32], castagnoli) {
		return s.closeLstor(fmt.Errorf("%w: %s: bad header magic or CRC", ErrCorrupt, name))
	}
	if !bytes.Equal(h[:36], s.encodeHeader()[:36]) {
		return s.closeLstor(fmt.Errorf("%w: %s holds version %d, k=%d, size %d, %d slots, capacity %d; want size %d, %d slots, capacity %d",
			ErrMismatch, name, binary.LittleEndian.Uint32(h[8:]), binary.LittleEndian.Uint32(h[12:]), binary.LittleEndian.Uint64(h[16:]),
			binary.LittleEndian.Uint32(h[24:]), binary.LittleEndian.Uint32(h[28:]), s.cfg.Size, s.cfg.Slots, s.cfg.Cap))
	}
	return nil
}

func (s *Store) closeLstor(err error) error {
	s.lst.Close()
	return err
}

func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("lstor: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("lstor: sync %s: %w", dir, err)
	}
	return nil
}

// syncDirs syncs dir and every parent, so that a new dir and the files in
// it survive a crash (MkdirAll's new entries are durable only then).
func syncDirs(fsys vfs.FS, dir string) error {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if err := syncDir(fsys, d); err != nil {
			return err
		}
		if p := filepath.Dir(d); p == d {
			return nil
		}
	}
}

// readFull reads len(p) bytes at off; bytes past the end read as zeros.
func readFull(f vfs.File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if err == io.EOF {
		clear(p[n:])
		return nil
	}
	return err
}

// NeedsVerify reports whether the store is marked for verification.
func (s *Store) NeedsVerify() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verify
}

// Close closes the files. Writes after Close fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	return errors.Join(s.data.Close(), s.lst.Close(), s.lock.Close())
}

func (s *Store) checkRange(slot int, off, n int64) error {
	if slot < 0 || slot >= s.cfg.Slots || off < 0 || n < 0 || off+n > s.cfg.Size {
		return fmt.Errorf("%w: slot %d [%d, %d) of %d slots of %d bytes", ErrRange, slot, off, off+n, s.cfg.Slots, s.cfg.Size)
	}
	return nil
}

// ReadAt reads len(p) bytes of slot at off. Never-written bytes read as
// zeros.
func (s *Store) ReadAt(slot int, p []byte, off int64) error {
	if err := s.checkRange(slot, off, int64(len(p))); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := readFull(s.data, p, int64(slot)*s.cfg.Size+off); err != nil {
		return fmt.Errorf("lstor: read slot %d: %w", slot, err)
	}
	return nil
}

// Parity reads len(p) bytes of the Lstor parity at off, checking the CRC of
// every parity block it touches (ErrCorrupt).
func (s *Store) Parity(p []byte, off int64) error {
	if err := s.checkRange(0, off, int64(len(p))); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	pOff, pEnd := off/BlockSize*BlockSize, (off+int64(len(p))+BlockSize-1)/BlockSize*BlockSize
	par, err := s.readParityLocked(pOff, pEnd)
	if err != nil {
		return err
	}
	copy(p, par[off-pOff:])
	return nil
}

// readParityLocked reads parity blocks [pOff, pEnd) and checks their CRCs.
// A block whose CRC entry is 0 and whose bytes are all zero is a
// never-written block (valid).
func (s *Store) readParityLocked(pOff, pEnd int64) ([]byte, error) {
	par := make([]byte, pEnd-pOff)
	if err := readFull(s.lst, par, HeaderSize+pOff); err != nil {
		return nil, fmt.Errorf("lstor: read parity: %w", err)
	}
	crcs := make([]byte, 4*(pEnd-pOff)/BlockSize)
	if err := readFull(s.lst, crcs, s.crcOff()+4*(pOff/BlockSize)); err != nil {
		return nil, fmt.Errorf("lstor: read parity CRCs: %w", err)
	}
	for i := range (pEnd - pOff) / BlockSize {
		b := par[i*BlockSize : (i+1)*BlockSize]
		want := binary.LittleEndian.Uint32(crcs[4*i:])
		if crc32.Checksum(b, castagnoli) != want && !(want == 0 && allZero(b)) {
			return nil, fmt.Errorf("%w: parity block %d fails its CRC", ErrCorrupt, pOff/BlockSize+i)
		}
	}
	return par, nil
}

// writeParityLocked writes parity blocks at pOff and their CRCs (not
// synced).
func (s *Store) writeParityLocked(par []byte, pOff int64) error {
	crcs := make([]byte, 4*len(par)/BlockSize)
	for i := range len(par) / BlockSize {
		binary.LittleEndian.PutUint32(crcs[4*i:], crc32.Checksum(par[i*BlockSize:(i+1)*BlockSize], castagnoli))
	}
	if _, err := s.lst.WriteAt(par, HeaderSize+pOff); err != nil {
		return fmt.Errorf("lstor: write parity: %w", err)
	}
	if _, err := s.lst.WriteAt(crcs, s.crcOff()+4*(pOff/BlockSize)); err != nil {
		return fmt.Errorf("lstor: write parity CRCs: %w", err)
	}
	return nil
}

var zeroBlock [BlockSize]byte

func allZero(b []byte) bool {
	for len(b) > 0 {
		k := min(len(b), BlockSize)
		if !bytes.Equal(b[:k], zeroBlock[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}
