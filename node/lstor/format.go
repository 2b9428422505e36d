package lstor

// The Lstor file's layout, as documentation-only structs; the
// specification is docs/design/raidp.md ("The Lstor"). All integers are
// little-endian, every CRC is CRC-32C (Castagnoli).

// header is bytes 0..HeaderSize of the LSTOR file.
type header struct {
	Magic   [8]byte // "CAIRNLS1"
	Version uint32  // 1
	K       uint32  // stacked parities; 1 (XOR)
	Size    uint64  // superchunk size, a multiple of BlockSize
	Slots   uint32  // slots of the disk
	Cap     uint32  // journal capacity: most data bytes in one record
	CRC     uint32  // of the 32 bytes above
	// zero up to HeaderSize
}

// Then: parity (Size bytes) at HeaderSize; one uint32 CRC per BlockSize
// parity block at HeaderSize+Size; one hwmEntry per slot; the journal
// record slot at the next 4 KiB boundary (JournalOffset).

// JournalOffset is the offset in the LSTOR file of the journal record
// slot of an Lstor of superchunks of size bytes and slots slots (for
// tools and tests that inspect or damage it).
func JournalOffset(size int64, slots int) int64 {
	return (HeaderSize + size + 4*(size/BlockSize) + hwmEntrySize*int64(slots) + 4095) / 4096 * 4096
}

// hwmEntry is a slot's high-water mark: bytes of the slot at or past HWM
// are zero on the disk. An entry failing its CRC (or all zero: never
// written) is read as 0 if all zero, else as Size (no shortcut).
type hwmEntry struct {
	HWM  uint64
	CRC  uint32 // of HWM
	Zero uint32
}

// recordHeader is the first RecordHeaderSize bytes of the journal slot.
type recordHeader struct {
	Magic   uint32 // "JREC"; 0 when cleared
	CRC     uint32 // of bytes 8..63 and of the payload
	Seq     uint64
	Slot    uint32
	Off     uint64 // data offset within the superchunk
	Len     uint32 // n, data bytes
	POff    uint64 // parity offset, BlockSize-aligned
	PLen    uint32 // m, parity bytes (whole blocks)
	HWM     uint64 // the slot's high-water mark once the record is applied
	Flags   uint32 // flagElided: no old data in the payload (it was zero)
	Padding [8]byte
	// payload: new data (n), old data (n, absent if flagElided), new
	// parity (m)
}

var (
	_ = header{}
	_ = recordHeader{}
	_ = hwmEntry{}
)

const (
	// BlockSize is the parity block each parity CRC covers.
	BlockSize = 64 << 10
	// HeaderSize is the space of the file header.
	HeaderSize = 4096
	// RecordHeaderSize is the size of a journal record header.
	RecordHeaderSize = 64
	// DefaultCap is the journal capacity when Config.Cap is 0.
	DefaultCap = 1 << 20

	hwmEntrySize = 16
	flagElided   = 1

	magic       = "CAIRNLS1"
	recordMagic = 0x4345524a // "JREC" little-endian
	version     = 1

	// File names.
	lstorFile  = "LSTOR"
	verifyFile = "VERIFY"
	lockFile   = "LOCK"
	dataFile   = "raidp.data"
)
