package volume

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"

	"cairn"
	"cairn/internal/bufpool"
	"cairn/internal/invariants"
	"cairn/internal/vfs"
)

// DefaultMaxShardSize bounds one shard file's content unless
// Options.MaxShardSize says otherwise.
const DefaultMaxShardSize = 64 << 30

// Options configure Open.
type Options struct {
	// FS is the file system (nil: the OS).
	FS vfs.FS
	// DiskID is the disk this directory must be. Open refuses a volume
	// whose identity names another disk. Required.
	DiskID cairn.DiskID
	// Create formats dir as a new volume if it is missing or empty.
	Create bool
	// MaxShardSize bounds a shard's content (0: DefaultMaxShardSize).
	MaxShardSize int64
	// MinFree makes Put fail with cairn.ErrNoSpace when the file system
	// has fewer free bytes than this (0: only real ENOSPC).
	MinFree int64
	// Logger receives warnings (nil: discarded).
	Logger *slog.Logger
}

// ShardInfo describes a stored shard: its content length and the CRC-32C
// (Castagnoli) of its whole content, as manifests record it.
type ShardInfo struct {
	Size int64
	CRC  uint32
	// Ident is the length of the identity the file carries (0: none, a
	// format 1 file), as cairn.ShardLoc.Ident records it.
	Ident int
}

// ShardStat is one entry of List: a shard name and its content length
// (computed from the file size; -1 if the size matches no valid shard,
// which Fsck reports as corrupt).
type ShardStat struct {
	Name string
	Size int64
}

// Usage is the space of the file system holding the volume, in bytes.
type Usage struct {
	Capacity int64
	Free     int64
	FS       string // the file system holding the volume (vfs.DiskUsage.FS)
}

// Volume is one disk directory holding shard files. All methods are safe
// for concurrent use; concurrent Puts of one name leave one complete
// version of it (the last rename wins).
type Volume struct {
	fs       vfs.FS
	dir      string
	id       cairn.DiskID
	volID    string // the identity's VolumeID
	log      *slog.Logger
	maxSize  int64
	minFree  int64
	nonce    string       // distinguishes this Open's tmp files
	seq      atomic.Int64 // numbers tmp files
	corrupts atomic.Int64 // corruption found (v.corrupt): Corruptions

	lock io.Closer // the disk's lock, held while open (nil if the dir was missing)

	mu      sync.Mutex
	fanouts map[string]bool // guarded by mu: fan-out dirs known to be durable
	broken  error           // guarded by mu: set by a failed sync; sticky
	closed  bool            // guarded by mu
}

// Open opens (with Options.Create, formats) the volume in dir. It removes
// every file left in tmp/ (writes a crash interrupted: nothing else can be
// writing, as a volume is opened by one process).
func Open(dir string, opts Options) (*Volume, error) {
	if opts.DiskID == "" {
		return nil, fmt.Errorf("volume: open %s: %w: no disk ID", dir, cairn.ErrInvalid)
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.MaxShardSize <= 0 {
		opts.MaxShardSize = DefaultMaxShardSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	v := &Volume{
		fs: opts.FS, dir: dir, id: opts.DiskID, maxSize: opts.MaxShardSize, minFree: opts.MinFree,
		log:     opts.Logger.With("disk", string(opts.DiskID)),
		nonce:   hex.EncodeToString(nonce[:]),
		fanouts: map[string]bool{},
	}
	if _, err := v.fs.Stat(dir); opts.Create && errors.Is(err, fs.ErrNotExist) {
		// The lock file needs the directory; make it durable as format would.
		if err := v.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, v.err("open", "", err)
		}
		if err := v.syncDir(path.Dir(dir)); err != nil {
			return nil, v.err("open", "", err)
		}
	}
	// One process per disk: open removes tmp files it assumes nobody else
	// is writing.
	lock, err := v.fs.Lock(v.path(LockName))
	switch {
	case errors.Is(err, vfs.ErrLocked):
		return nil, v.err("open", "", fmt.Errorf("%w: %s is in use by another process", cairn.ErrInvalid, dir))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, v.err("open", "", err)
	}
	if err := v.open(opts.Create); err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, v.err("open", "", err)
	}
	v.lock = lock
	return v, nil
}

func (v *Volume) open(create bool) error {
	id, err := v.readIdentity()
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		if err := v.format(); err != nil {
			return fmt.Errorf("format %s: %w", v.dir, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s has no %s", ErrNotVolume, v.dir, IdentityName)
	case err != nil:
		return err
	case id.DiskID != v.id:
		return fmt.Errorf("%w: %s belongs to disk %q", cairn.ErrInvalid, v.dir, id.DiskID)
	case id.VolumeID == "":
		// Formatted before volume IDs: give it one, durably, before
		// anyone learns it.
		id.VolumeID = newVolumeID()
		if err := v.writeIdentity(id); err != nil {
			return fmt.Errorf("add a volume ID to %s: %w", IdentityName, err)
		}
		v.volID = id.VolumeID
	default:
		v.volID = id.VolumeID
	}
	if _, err := v.fs.Stat(v.path(ShardsDir)); err != nil {
		return fmt.Errorf("%w: shards directory: %w", cairn.ErrCorrupt, err)
	}
	if err := v.fs.MkdirAll(v.path(TmpDir), 0o755); err != nil {
		return err
	}
	names, err := v.fs.List(v.path(TmpDir))
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := v.fs.Remove(v.path(TmpDir, n)); err != nil {
			return fmt.Errorf("remove leftover %s: %w", n, err)
		}
	}
	if len(names) > 0 {
		v.log.Info("removed leftover temporary files", "count", len(names))
	}
	return nil
}

func (v *Volume) readIdentity() (identityFile, error) {
	var id identityFile
	f, err := v.fs.Open(v.path(IdentityName))
	if err != nil {
		return id, err
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return id, err
	}
	if err := json.Unmarshal(b[:n], &id); err != nil {
		return id, fmt.Errorf("%w: %s: %v", cairn.ErrCorrupt, IdentityName, err)
	}
	if id.Magic != identityMagic || id.Format != FormatVersion || id.BlockSize != BlockSize {
		return id, fmt.Errorf("%w: %s: magic %q format %d block size %d not supported",
			cairn.ErrCorrupt, IdentityName, id.Magic, id.Format, id.BlockSize)
	}
	return id, nil
}

// format makes an empty (or missing) dir a volume. The identity file is
// written last, so a crash mid-format leaves a directory that a retry
// formats again.
func (v *Volume) format() error {
	if _, err := v.fs.Stat(v.dir); errors.Is(err, fs.ErrNotExist) {
		if err := v.fs.MkdirAll(v.dir, 0o755); err != nil {
			return err
		}
		if err := v.syncDir(path.Dir(v.dir)); err != nil {
			return err
		}
	}
	names, err := v.fs.List(v.dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n != ShardsDir && n != TmpDir && n != IdentityName+tmpSuffix && n != LockName {
			return fmt.Errorf("%w: %s is not empty (has %q)", ErrNotVolume, v.dir, n)
		}
	}
	for _, d := range []string{ShardsDir, TmpDir} {
		if err := v.fs.MkdirAll(v.path(d), 0o755); err != nil {
			return err
		}
	}
	id := identityFile{Magic: identityMagic, Format: FormatVersion, DiskID: v.id, BlockSize: BlockSize, VolumeID: newVolumeID()}
	if err := v.syncDir(v.dir); err != nil { // shards/ and tmp/ before the identity names them
		return err
	}
	if err := v.writeIdentity(id); err != nil {
		return err
	}
	v.volID = id.VolumeID
	return nil
}

// writeIdentity replaces CAIRN-VOLUME with id atomically: a temporary
// file, fsync, rename, directory fsync.
func (v *Volume) writeIdentity(id identityFile) error {
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	tmp := v.path(IdentityName + tmpSuffix)
	f, err := v.fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = v.fs.Rename(tmp, v.path(IdentityName))
	}
	if err == nil {
		err = v.syncDir(v.dir)
	}
	if err != nil {
		_ = v.fs.Remove(tmp)
		return err
	}
	return nil
}

// ID returns the disk ID.
func (v *Volume) ID() cairn.DiskID { return v.id }

// VolumeID returns the volume ID: random, drawn when the directory was
// formatted, so it differs from that of any volume formatted before or
// after in the same place.
func (v *Volume) VolumeID() string { return v.volID }

// Dir returns the volume's directory.
func (v *Volume) Dir() string { return v.dir }

// Close marks the volume closed; later calls fail with ErrClosed. Readers
// already open keep working until closed.
func (v *Volume) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	if v.lock != nil {
		return v.lock.Close()
	}
	return nil
}

// Err returns the sticky error that stops writes (ErrBroken), or nil.
func (v *Volume) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.broken
}

// Health reports a fault a node should announce for this disk: the
// sticky write error (Err), or the volume's identity file or shard
// directory gone (the directory was removed or the device unmounted). nil
// means healthy as far as a cheap check can tell.
func (v *Volume) Health() error {
	if err := v.Err(); err != nil {
		return err
	}
	for _, name := range []string{IdentityName, ShardsDir} {
		if _, err := v.fs.Stat(v.path(name)); err != nil {
			return fmt.Errorf("volume %s: %w", v.id, err)
		}
	}
	return nil
}

func (v *Volume) check(write bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	if write && v.broken != nil {
		return v.broken
	}
	return nil
}

// syncFailed makes the volume broken after a failed fsync (unless the
// cause is a full disk) and returns err.
func (v *Volume) syncFailed(err error) error {
	if isNoSpace(err) {
		return err
	}
	v.mu.Lock()
	if v.broken == nil {
		v.broken = fmt.Errorf("%w: %w (%v)", ErrBroken, cairn.ErrUnavailable, err)
		v.log.Error("fsync failed: volume refuses writes until reopened", "err", err)
	}
	v.mu.Unlock()
	return err
}

func (v *Volume) path(elem ...string) string { return path.Join(append([]string{v.dir}, elem...)...) }

func (v *Volume) shardPath(name string) string { return v.path(ShardsDir, fanout(name), name) }

// syncDir fsyncs a directory; a failed fsync breaks the volume.
func (v *Volume) syncDir(dir string) error {
	d, err := v.fs.OpenDir(dir)
	if err != nil {
		return err
	}
	if err = d.Sync(); err != nil {
		err = v.syncFailed(err)
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ensureFanout makes shards/<hh> exist durably (once per process: a
// directory left by a crashed process may not be durable yet).
func (v *Volume) ensureFanout(name string) error {
	fo := fanout(name)
	v.mu.Lock()
	ok := v.fanouts[fo]
	v.mu.Unlock()
	if ok {
		return nil
	}
	// shards/ must be there already: MkdirAll would otherwise make the
	// volume's directory again after it vanished (rm -rf), and the node
	// would take that half-made directory for something an operator left
	// there instead of formatting the disk again.
	if _, err := v.fs.Stat(v.path(ShardsDir)); err != nil {
		return fmt.Errorf("volume %s: %w", v.id, err)
	}
	if err := v.fs.MkdirAll(v.path(ShardsDir, fo), 0o755); err != nil {
		return err
	}
	if err := v.syncDir(v.path(ShardsDir)); err != nil {
		return err
	}
	v.mu.Lock()
	v.fanouts[fo] = true
	v.mu.Unlock()
	return nil
}

// bufs holds the volume's buffers, by capacity: blocks (one block's data
// and CRC), write batches (a power of two of blocks, and room for the
// footer) and read-ahead runs (a power of two of blocks).
var bufs bufpool.Pool

// blockBuf returns a buffer for one stored block, data and CRC.
func blockBuf() *[]byte { return bufs.Get(BlockSize+crcSize, BlockSize+crcSize) }

// Put stores the content of r as shard name, streaming: it reads r block
// by block and hands the disk runs of blocks (see WriteRun); if r has a
// Size() int64 method that returns its length (bytes.Reader, strings.Reader,
// io.SectionReader, a node's request body with a Content-Length) the run is
// up to WriteRun, else DefaultWriteRun.
// It returns only after the
// shard is durable — written to tmp/, fsynced, its footer read back and
// checked, renamed into shards/, and the directory fsynced. An existing
// shard of the same name is replaced atomically.
//
// On any error no new shard is visible unless the failure came after the
// rename (a failed directory fsync): then the complete, valid shard may be
// visible but is not acknowledged. The temporary file is removed. ctx ends
// the write between blocks. Errors: cairn.ErrInvalid (name; content over
// MaxShardSize), cairn.ErrNoSpace, ErrBroken, ErrClosed, r's error, ctx's
// error, I/O errors.
//
// Put writes a file without an identity (format 1): writers that know
// which object the shard belongs to use PutIdentified.
func (v *Volume) Put(ctx context.Context, name string, r io.Reader) (ShardInfo, error) {
	return v.PutIdentified(ctx, name, nil, r)
}

// PutIdentified is Put writing ident — a cairn.ShardIdentity.Encode
// naming this shard — into the file before its footer (format 2), byte
// for byte as given (ShardInfo.Ident is its length). A nil ident writes a
// format 1 file, as Put. An identity that does not decode, or that names
// another file than name, is cairn.ErrInvalid.
func (v *Volume) PutIdentified(ctx context.Context, name string, ident []byte, r io.Reader) (ShardInfo, error) {
	if err := ValidateName(name); err != nil {
		return ShardInfo{}, err
	}
	if err := checkIdentity(name, ident); err != nil {
		return ShardInfo{}, v.err("put", name, err)
	}
	info, err := v.put(ctx, name, ident, r)
	if err != nil {
		return ShardInfo{}, v.err("put", name, err)
	}
	return info, nil
}

// checkIdentity checks that ident (if any) is an identity naming the
// shard file name.
func checkIdentity(name string, ident []byte) error {
	if ident == nil {
		return nil
	}
	id, err := cairn.DecodeIdentity(ident)
	if err != nil {
		return fmt.Errorf("%w: %w", cairn.ErrInvalid, err)
	}
	if id.Name() != name {
		return fmt.Errorf("%w: the identity names shard %s", cairn.ErrInvalid, id.Name())
	}
	return nil
}

func (v *Volume) put(ctx context.Context, name string, ident []byte, r io.Reader) (info ShardInfo, err error) {
	if err := v.check(true); err != nil {
		return info, err
	}
	if err := ctx.Err(); err != nil {
		return info, err
	}
	if v.minFree > 0 {
		u, err := v.fs.GetDiskUsage(v.dir)
		if err != nil {
			return info, err
		}
		if int64(u.AvailBytes) < v.minFree {
			return info, fmt.Errorf("%w: %d bytes free, below the reserve of %d", cairn.ErrNoSpace, u.AvailBytes, v.minFree)
		}
	}
	if err := v.ensureFanout(name); err != nil {
		return info, err
	}
	tmp := v.path(TmpDir, fmt.Sprintf("%s.%s-%d%s", name, v.nonce, v.seq.Add(1), tmpSuffix))
	f, err := v.fs.Create(tmp)
	if err != nil {
		return info, err
	}
	renamed := false
	defer func() {
		if f != nil {
			_ = f.Close()
		}
		if err != nil && !renamed {
			if rerr := v.fs.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				v.log.Warn("cannot remove temporary file; fsck will", "file", tmp, "err", rerr)
			}
		}
	}()
	run := int64(DefaultWriteRun)
	if sz, ok := r.(interface{ Size() int64 }); ok && sz.Size() >= 0 {
		run = min(max(sz.Size(), 1), WriteRun)
	}
	info, err = v.writeContent(ctx, f, r, run, ident)
	if err != nil {
		return info, err
	}
	if err = f.Sync(); err != nil {
		return info, v.syncFailed(err)
	}
	// Read back what is now on disk before acknowledging it: the footer,
	// or with invariants on every block's CRC.
	if err = v.checkWritten(ctx, f, name, info, ident); err != nil {
		return info, err
	}
	err = f.Close()
	f = nil
	if err != nil {
		return info, err
	}
	if err = v.fs.Rename(tmp, v.shardPath(name)); err != nil {
		return info, err
	}
	renamed = true
	if err = v.syncDir(v.path(ShardsDir, fanout(name))); err != nil {
		return info, err
	}
	return info, nil
}

// writeContent writes r as checksummed blocks, the identity and the footer. Blocks are
// gathered into batches of run bytes (rounded up to a power of two of
// blocks) so a shard costs few write calls, and every writebackEvery bytes
// the kernel is asked to start writing them out (vfs.StartWriteback), so
// the Sync that follows does not find the whole shard still dirty.
func (v *Volume) writeContent(ctx context.Context, f vfs.File, r io.Reader, run int64, ident []byte) (ShardInfo, error) {
	blocks := int64(1)
	for blocks*BlockSize < run {
		blocks *= 2
	}
	size := int(blocks * (BlockSize + crcSize))
	bp := bufs.Get(size, size+cairn.MaxIdentityBytes+footerSize)
	defer bufs.Put(bp)
	batch := *bp
	var total, off, synced int64
	var whole uint32
	flush := func(b []byte) error {
		if len(b) == 0 {
			return nil
		}
		if _, err := f.Write(b); err != nil {
			return err
		}
		off += int64(len(b))
		if off-synced >= writebackEvery {
			vfs.StartWriteback(f, synced, off-synced)
			synced = off
		}
		return nil
	}
	used := 0
	for {
		if err := ctx.Err(); err != nil {
			return ShardInfo{}, err
		}
		if used+BlockSize+crcSize > len(batch) { // full: write it (the footer may join the last batch)
			if err := flush(batch[:used]); err != nil {
				return ShardInfo{}, err
			}
			used = 0
		}
		buf := batch[used : used+BlockSize+crcSize]
		n, rerr := fill(r, buf[:BlockSize])
		if n > 0 {
			total += int64(n)
			if total > v.maxSize {
				return ShardInfo{}, fmt.Errorf("%w: shard is larger than %d bytes", cairn.ErrInvalid, v.maxSize)
			}
			whole = crc32.Update(whole, castagnoli, buf[:n])
			binary.LittleEndian.PutUint32(buf[n:], crc32.Checksum(buf[:n], castagnoli))
			used += n + crcSize
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return ShardInfo{}, fmt.Errorf("read shard content: %w", rerr)
		}
	}
	tail := append(append(batch[:used], ident...), encodeFooter(total, whole, len(ident))...)
	if err := flush(tail); err != nil {
		return ShardInfo{}, err
	}
	return ShardInfo{Size: total, CRC: whole, Ident: len(ident)}, nil
}

const writebackEvery = 4 << 20 // bytes between writeback hints

// fill reads into p until it is full or r ends. Unlike io.ReadFull it
// returns io.EOF only for a clean end of r, and every other error as is —
// in particular io.ErrUnexpectedEOF from a truncated HTTP body, which must
// fail the write, not end the shard early.
func fill(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k, err := r.Read(p[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// checkWritten re-reads the synced file's identity and footer (and with
// invariants, the whole file) and compares them with what was written.
func (v *Volume) checkWritten(ctx context.Context, f vfs.File, name string, want ShardInfo, ident []byte) error {
	size := fileSizeFor(want.Size) + int64(len(ident))
	fb := make([]byte, footerSize+len(ident))
	if _, err := f.ReadAt(fb, size-int64(len(fb))); err != nil {
		return fmt.Errorf("read back footer: %w", err)
	}
	ft, err := decodeFooter(fb[len(ident):], size)
	if err != nil || int64(ft.Length) != want.Size || ft.CRC != want.CRC || ft.identLen() != int64(len(ident)) {
		return fmt.Errorf("%w: footer read back does not match what was written (%v)", cairn.ErrCorrupt, err)
	}
	if !bytes.Equal(fb[:len(ident)], ident) {
		return fmt.Errorf("%w: identity read back does not match what was written", cairn.ErrCorrupt)
	}
	if invariants.Enabled {
		r := &Reader{v: v, ctx: ctx, f: f, name: name, size: want.Size, crc: want.CRC, end: want.Size}
		got, err := r.verifyAll()
		if err != nil {
			return err
		}
		if got != want.CRC {
			return fmt.Errorf("%w: content read back has CRC %08x, wrote %08x", cairn.ErrCorrupt, got, want.CRC)
		}
	}
	return nil
}

// Stat returns a shard's size and content CRC from its footer (checked).
func (v *Volume) Stat(ctx context.Context, name string) (ShardInfo, error) {
	r, err := v.openReader(ctx, "stat", name)
	if err != nil {
		return ShardInfo{}, err
	}
	defer r.Close()
	return ShardInfo{Size: r.size, CRC: r.crc, Ident: int(r.ident)}, nil
}

// Identity returns the identity a shard file carries, from its footer
// and the bytes before it (both checked); ok is false for a file without
// one (format 1). A damaged identity is cairn.ErrCorrupt.
func (v *Volume) Identity(ctx context.Context, name string) (id cairn.ShardIdentity, info ShardInfo, ok bool, err error) {
	r, err := v.openReader(ctx, "identity", name)
	if err != nil {
		return id, info, false, err
	}
	defer r.Close()
	info = ShardInfo{Size: r.size, CRC: r.crc, Ident: int(r.ident)}
	if r.ident == 0 {
		return id, info, false, nil
	}
	id, err = r.identity("identity")
	return id, info, err == nil, err
}

// identity reads and checks the identity of r's file (which has one).
func (r *Reader) identity(op string) (cairn.ShardIdentity, error) {
	b := make([]byte, r.ident)
	if _, err := r.f.ReadAt(b, fileSizeFor(r.size)-footerSize); err != nil {
		return cairn.ShardIdentity{}, r.v.err(op, r.name, err)
	}
	id, err := cairn.DecodeIdentity(b)
	if err != nil {
		return id, r.v.corrupt(op, r.name, -1, "%v", err)
	}
	if id.Name() != r.name {
		return id, r.v.corrupt(op, r.name, -1, "the identity names shard %s", id.Name())
	}
	return id, nil
}

// Verify reads a whole shard, checking every block, the content CRC and
// the identity if the file has one.
// Errors: cairn.ErrNotFound, cairn.ErrCorrupt (naming the block), I/O.
func (v *Volume) Verify(ctx context.Context, name string) (ShardInfo, error) {
	r, err := v.openReader(ctx, "verify", name)
	if err != nil {
		return ShardInfo{}, err
	}
	defer r.Close()
	got, err := r.verifyAll()
	if err != nil {
		return ShardInfo{}, err
	}
	if got != r.crc {
		return ShardInfo{}, v.corrupt("verify", name, -1, "content CRC %08x, footer says %08x", got, r.crc)
	}
	if r.ident > 0 {
		if _, err := r.identity("verify"); err != nil {
			return ShardInfo{}, err
		}
	}
	return ShardInfo{Size: r.size, CRC: r.crc, Ident: int(r.ident)}, nil
}

// Delete removes a shard (durably: the directory is fsynced).
// Errors: cairn.ErrInvalid, cairn.ErrNotFound, I/O.
func (v *Volume) Delete(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := v.check(false); err != nil {
		return v.err("delete", name, err)
	}
	if err := ctx.Err(); err != nil {
		return v.err("delete", name, err)
	}
	if err := v.fs.Remove(v.shardPath(name)); err != nil {
		return v.err("delete", name, err)
	}
	if err := v.syncDir(v.path(ShardsDir, fanout(name))); err != nil {
		return v.err("delete", name, err)
	}
	return nil
}

// MaxListLimit bounds one page of List.
const MaxListLimit = 10000

// List returns up to limit shards whose names sort after after, in name
// order, and whether more follow. limit <= 0 means 1000; larger than
// MaxListLimit means MaxListLimit. Entries that are not shard files are
// skipped (Fsck reports them).
func (v *Volume) List(ctx context.Context, after string, limit int) ([]ShardStat, bool, error) {
	if limit <= 0 {
		limit = 1000
	}
	limit = min(limit, MaxListLimit)
	if err := v.check(false); err != nil {
		return nil, false, v.err("list", "", err)
	}
	fans, err := v.fs.List(v.path(ShardsDir))
	if err != nil {
		return nil, false, v.err("list", "", err)
	}
	var out []ShardStat
	for _, fo := range fans {
		if !validFanout(fo) || (len(after) >= 2 && fo < after[:2]) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, false, v.err("list", "", err)
		}
		names, err := v.fs.List(v.path(ShardsDir, fo))
		if err != nil {
			return nil, false, v.err("list", "", err)
		}
		for _, name := range names {
			if name <= after || ValidateName(name) != nil || fanout(name) != fo {
				continue
			}
			if len(out) == limit {
				return out, true, nil
			}
			size, err := v.listSize(name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			} else if err != nil {
				return nil, false, v.err("list", name, err)
			}
			out = append(out, ShardStat{Name: name, Size: size})
		}
	}
	return out, false, nil
}

// listSize returns the content length of shard name from its footer (-1
// for a file whose footer is not valid: Fsck reports it).
func (v *Volume) listSize(name string) (int64, error) {
	f, err := v.fs.Open(v.shardPath(name))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() < footerSize {
		return -1, nil
	}
	fb := make([]byte, footerSize)
	if _, err := f.ReadAt(fb, fi.Size()-footerSize); err != nil {
		return 0, err
	}
	ft, err := decodeFooter(fb, fi.Size())
	if err != nil {
		return -1, nil
	}
	return int64(ft.Length), nil
}

func validFanout(s string) bool {
	if len(s) != 2 {
		return false
	}
	for i := 0; i < 2; i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Corruptions counts the corruption found since Open: each error wrapping
// cairn.ErrCorrupt for a shard that a read, check or verify met (a block or
// content CRC, a footer or identity that does not parse). For metrics.
func (v *Volume) Corruptions() int64 { return v.corrupts.Load() }

// Usage reports the capacity and free space of the volume's file system.
func (v *Volume) Usage() (Usage, error) {
	u, err := v.fs.GetDiskUsage(v.dir)
	if err != nil {
		return Usage{}, v.err("usage", "", err)
	}
	return Usage{Capacity: int64(u.TotalBytes), Free: int64(u.AvailBytes), FS: u.FS}, nil
}
