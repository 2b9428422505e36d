package volume

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"

	"cairn"
)

// The on-disk format, version 1. docs/design/volume.md is the
// specification; the structs below serve only as documentation of it and
// must change together with it.
//
//	<dir>/CAIRN-VOLUME            identity (JSON, identityFile)
//	<dir>/shards/<hh>/<name>      shard files; hh = the first two characters of name
//	<dir>/tmp/<name>.<rand>.tmp   shard files being written
const (
	// FormatVersion is the version of this layout, in the identity file.
	FormatVersion = 1
	// ShardFormat is the version in the footer of the shard files Put
	// writes with an identity (docs/design/volume.md, "Shard identity");
	// without one Put writes ShardFormatV1, the only version before.
	// Both are read.
	ShardFormat   = 2
	ShardFormatV1 = 1
	// BlockSize is the number of content bytes per checksummed block.
	BlockSize = 64 << 10
	// WriteRun is the most content a Put hands the disk per write call:
	// shards of known size are written in runs of whole blocks up to
	// 4 MiB (the write region), so writes that share a spinning disk pay
	// one head movement per run; DefaultWriteRun is the run when the size
	// is unknown. A Put holds one run of memory.
	WriteRun        = 64 * BlockSize
	DefaultWriteRun = 16 * BlockSize
	// IdentityName is the identity file's name in the volume directory.
	IdentityName = "CAIRN-VOLUME"
	// LockName is the file whose lock a process holds while it has the
	// volume open (flock; released when the process dies).
	LockName = "LOCK"
	// ShardsDir and TmpDir are the volume's subdirectories.
	ShardsDir = "shards"
	TmpDir    = "tmp"
	// RAIDPData is the RAIDP slots of a disk the node serves with an
	// Lstor (node/lstor's data file, docs/design/raidp.md), beside the
	// volume's own entries: not a stray file.
	RAIDPData = "raidp.data"

	identityMagic = "cairn-volume"
	footerMagic   = "CAIRNSHD"
	footerSize    = 32
	crcSize       = 4
	tmpSuffix     = ".tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// identityFile is the JSON content of CAIRN-VOLUME. It is written by Open
// with Options.Create on an empty directory (temporary file, fsync,
// rename, directory fsync), and once more by the first Open of a volume
// formatted before volume IDs existed, to add one. A directory whose
// identity names another disk is refused.
type identityFile struct {
	Magic     string       `json:"magic"` // "cairn-volume"
	Format    int          `json:"format"`
	DiskID    cairn.DiskID `json:"disk_id"`
	BlockSize int          `json:"block_size"`
	// VolumeID is 32 random hex digits drawn when the directory was
	// formatted: it tells this volume from one formatted later in the
	// same place for the same disk (cairn.Disk.Volume).
	VolumeID string `json:"volume_id,omitempty"`
}

// newVolumeID draws a volume ID.
func newVolumeID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shardFileLayout documents a shard file of content length L carrying an
// identity of I bytes (I = 0: none, format 1):
//
//	repeat ceil(L/BlockSize) times:
//	    data  [min(BlockSize, rest)]byte
//	    crc   uint32 (little endian) = CRC-32C(data)
//	identity  [I]byte: cairn.ShardIdentity.Encode (JSON, CRC-32C of it)
//	footer    shardFooter (32 bytes)
//
// so the file is L + 4·ceil(L/BlockSize) + I + 32 bytes long, block b
// starts at b·(BlockSize+4), and a range read touches only its own blocks.
type shardFileLayout struct {
	Blocks []struct {
		Data []byte
		CRC  uint32
	}
	Identity []byte
	Footer   shardFooter
}

// shardFooter is the last 32 bytes of a shard file, all little endian.
type shardFooter struct {
	Magic     [8]byte // "CAIRNSHD"
	Format    uint16  // ShardFormat (2), or ShardFormatV1 (1): no identity
	Flags     uint16  // format 2: I, the identity's length (1..cairn.MaxIdentityBytes); format 1: 0
	BlockSize uint32  // content bytes per block (BlockSize)
	Length    uint64  // content length L
	CRC       uint32  // CRC-32C of the whole content (what manifests record)
	FooterCRC uint32  // CRC-32C of the preceding 28 footer bytes
}

var _ = shardFileLayout{}

// encodeFooter returns the footer of a shard of length content bytes
// with this CRC, carrying an identity of ident bytes (0: format 1).
func encodeFooter(length int64, crc uint32, ident int) []byte {
	b := make([]byte, footerSize)
	copy(b, footerMagic)
	format := uint16(ShardFormat)
	if ident == 0 {
		format = ShardFormatV1
	}
	binary.LittleEndian.PutUint16(b[8:], format)
	binary.LittleEndian.PutUint16(b[10:], uint16(ident))
	binary.LittleEndian.PutUint32(b[12:], BlockSize)
	binary.LittleEndian.PutUint64(b[16:], uint64(length))
	binary.LittleEndian.PutUint32(b[24:], crc)
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
	return b
}

// decodeFooter parses and checks a footer read from a file of fileSize
// bytes. The error says what is wrong (the caller wraps ErrCorrupt).
func decodeFooter(b []byte, fileSize int64) (shardFooter, error) {
	var f shardFooter
	if len(b) != footerSize {
		return f, fmt.Errorf("footer is %d bytes", len(b))
	}
	copy(f.Magic[:], b)
	f.Format = binary.LittleEndian.Uint16(b[8:])
	f.Flags = binary.LittleEndian.Uint16(b[10:])
	f.BlockSize = binary.LittleEndian.Uint32(b[12:])
	f.Length = binary.LittleEndian.Uint64(b[16:])
	f.CRC = binary.LittleEndian.Uint32(b[24:])
	f.FooterCRC = binary.LittleEndian.Uint32(b[28:])
	switch {
	case string(f.Magic[:]) != footerMagic:
		return f, fmt.Errorf("bad footer magic %q", f.Magic[:])
	case crc32.Checksum(b[:28], castagnoli) != f.FooterCRC:
		return f, fmt.Errorf("footer checksum mismatch")
	case f.Format != ShardFormat && f.Format != ShardFormatV1:
		return f, fmt.Errorf("unknown shard format %d", f.Format)
	case f.Format == ShardFormatV1 && f.Flags != 0:
		return f, fmt.Errorf("format 1 footer with flags %#x", f.Flags)
	case f.Format == ShardFormat && (f.Flags == 0 || f.Flags > cairn.MaxIdentityBytes):
		return f, fmt.Errorf("identity of %d bytes (1 to %d allowed)", f.Flags, cairn.MaxIdentityBytes)
	case f.BlockSize != BlockSize:
		return f, fmt.Errorf("block size %d, volume uses %d", f.BlockSize, BlockSize)
	case f.Length > 1<<62 || fileSizeFor(int64(f.Length))+f.identLen() != fileSize:
		return f, fmt.Errorf("footer says %d content bytes and %d identity bytes, file has %d bytes", f.Length, f.identLen(), fileSize)
	}
	return f, nil
}

// identLen is the length of the identity before the footer (0 in format 1).
func (f shardFooter) identLen() int64 {
	if f.Format == ShardFormatV1 {
		return 0
	}
	return int64(f.Flags)
}

// fileSizeFor is the shard file size for content length n without an
// identity (add the identity's length for one with).
func fileSizeFor(n int64) int64 {
	blocks := (n + BlockSize - 1) / BlockSize
	return n + crcSize*blocks + footerSize
}

// contentLengthFor inverts fileSizeFor; ok is false if no content length
// gives fileSize. It knows only files without an identity: List reads
// the footer of the others.
func contentLengthFor(fileSize int64) (int64, bool) {
	m := fileSize - footerSize
	if m < 0 {
		return 0, false
	}
	q, r := m/(BlockSize+crcSize), m%(BlockSize+crcSize)
	switch {
	case r == 0:
		return q * BlockSize, true
	case r > crcSize:
		return q*BlockSize + r - crcSize, true
	}
	return 0, false
}

// MaxShardIndex is the largest shard index a name may carry
// (cairn.MaxShardIndex).
const MaxShardIndex = cairn.MaxShardIndex

// ValidateName checks that name is a shard name as cairn.ShardName makes
// it (cairn.ValidateShardName): nothing else is accepted, so a name can
// never reach outside the shards directory. The error wraps
// cairn.ErrInvalid.
func ValidateName(name string) error { return cairn.ValidateShardName(name) }

// fanout is the subdirectory of shards/ that holds name.
func fanout(name string) string { return name[:2] }
