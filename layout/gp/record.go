package gp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorruptRecord: index record bytes that do not decode.
var ErrCorruptRecord = errors.New("gp: corrupt index record")

// recordVersion is the first byte of an encoded Record.
const recordVersion = 1

// Record is an object's entry in its placement group's index: where its
// pieces are and their checksums. The chunk sizes are not stored: they
// follow from Size and the group's geometry (Partition).
type Record struct {
	Disk  int      // the data disk (0 … K−1) holding every piece
	Size  int64    // the object size
	Front int64    // the front's offset in the disk's small-size bucket (when Size mod S0 > 0)
	Slots []uint32 // the slot of each chunk, in object order
	// Sums are the CRC-32C (Castagnoli) of each piece, in object order:
	// the front first when there is one, then one per chunk.
	Sums []uint32
}

// AppendBinary appends the record's encoding (docs/design/cold.md, "Index
// record"): a version byte, uvarints disk, size, front offset (only when
// the object has a front), one uvarint slot per chunk, then the piece
// checksums as 4-byte little-endian words. The object's key is the
// index's key, not part of the record.
func (r Record) AppendBinary(b []byte, g Geometry) ([]byte, error) {
	p := g.Partition(r.Size)
	pieces := p.NumChunks()
	if p.Front > 0 {
		pieces++
	}
	if r.Disk < 0 || r.Size < 0 || r.Front < 0 || len(r.Slots) != p.NumChunks() || len(r.Sums) != pieces {
		return b, fmt.Errorf("%w: record disk %d size %d with %d slots and %d sums (want %d and %d)", ErrPlacement, r.Disk, r.Size, len(r.Slots), len(r.Sums), p.NumChunks(), pieces)
	}
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, uint64(r.Disk))
	b = binary.AppendUvarint(b, uint64(r.Size))
	if p.Front > 0 {
		b = binary.AppendUvarint(b, uint64(r.Front))
	}
	for _, s := range r.Slots {
		b = binary.AppendUvarint(b, uint64(s))
	}
	for _, s := range r.Sums {
		b = binary.LittleEndian.AppendUint32(b, s)
	}
	return b, nil
}

// DecodeRecord decodes what AppendBinary wrote for the same geometry.
// Errors wrap ErrCorruptRecord (bad version, truncated, a field out of
// range, trailing bytes).
func DecodeRecord(b []byte, g Geometry) (Record, error) {
	bad := func(why string) (Record, error) {
		return Record{}, fmt.Errorf("%w: %s", ErrCorruptRecord, why)
	}
	if len(b) == 0 || b[0] != recordVersion {
		return bad("unknown version")
	}
	b = b[1:]
	next := func(max uint64) (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > max {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	var r Record
	disk, ok1 := next(254)
	size, ok2 := next(1<<63 - 1)
	if !ok1 || !ok2 {
		return bad("truncated header")
	}
	r.Disk, r.Size = int(disk), int64(size)
	p := g.Partition(r.Size)
	if p.Front > 0 {
		f, ok := next(1<<63 - 1)
		if !ok {
			return bad("truncated front offset")
		}
		r.Front = int64(f)
	}
	n := p.NumChunks()
	if n > len(b) {
		return bad(fmt.Sprintf("%d chunks but %d bytes left", n, len(b)))
	}
	r.Slots = make([]uint32, n)
	for i := range r.Slots {
		s, ok := next(MaxSlots - 1)
		if !ok {
			return bad(fmt.Sprintf("slot %d", i))
		}
		r.Slots[i] = uint32(s)
	}
	pieces := n
	if p.Front > 0 {
		pieces++
	}
	if len(b) != 4*pieces {
		return bad(fmt.Sprintf("%d checksum bytes, want %d", len(b), 4*pieces))
	}
	r.Sums = make([]uint32, pieces)
	for i := range r.Sums {
		r.Sums[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return r, nil
}
