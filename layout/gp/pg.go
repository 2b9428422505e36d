package gp

import (
	"errors"
	"fmt"
	"slices"
)

// Errors of placement.
var (
	// ErrPlacement: a placement group's shape or an argument is invalid (a
	// record of another group, a disk or slot out of range).
	ErrPlacement = errors.New("gp: invalid placement")
	// ErrFull: a bucket has no slot left (MaxSlots used).
	ErrFull = errors.New("gp: bucket full")
)

// MaxSlots bounds the slots of one bucket; slot numbers fit in 32 bits.
const MaxSlots = 1<<32 - 1

// Bucket allocates the aligned slots of one bucket file: slot j is bytes
// [j·size, (j+1)·size) of the file. A released slot is reused before the
// file grows. A released slot's bytes stay on disk: they are still in its
// row's parity, and whoever reuses the slot updates the parity by the
// difference (docs/design/cold.md, "Free slots"). The zero value is an
// empty bucket.
type Bucket struct {
	Next uint32   // slots 0 … Next−1 have been handed out at some time
	Free []uint32 // released slots below Next, ascending
}

// Claim returns the lowest free slot, or grows the bucket by one.
func (b *Bucket) Claim() (uint32, error) {
	if len(b.Free) > 0 {
		s := b.Free[0]
		b.Free = b.Free[1:]
		return s, nil
	}
	if b.Next == MaxSlots {
		return 0, ErrFull
	}
	b.Next++
	return b.Next - 1, nil
}

// Release returns slot s to the bucket. Releasing a slot that is free or
// was never claimed is an error (it would hand one slot to two objects).
func (b *Bucket) Release(s uint32) error {
	i, found := slices.BinarySearch(b.Free, s)
	if s >= b.Next || found {
		return fmt.Errorf("%w: release of slot %d, which is not claimed (next %d)", ErrPlacement, s, b.Next)
	}
	b.Free = slices.Insert(b.Free, i, s)
	return nil
}

// Used returns the number of claimed slots.
func (b *Bucket) Used() int { return int(b.Next) - len(b.Free) }

// Disk is one data disk's part of a placement group.
type Disk struct {
	Used    int64    // bytes of objects whose pieces are on this disk
	Buckets []Bucket // one per level
	// SmallEnd is the end of the disk's small-size bucket, an append-only
	// file of fronts; SmallFree is the bytes of released fronts in it (its
	// holes, reclaimed by compaction, docs/design/cold.md).
	SmallEnd, SmallFree int64
}

// PG is the layout state of one placement group: K data disks, each with
// one bucket per level and a small-size bucket, and M parity disks whose
// parity buckets mirror the data buckets' slots (slot j of level i on the
// K data disks and the M parity disks is one Clay stripe). It is a value
// the caller persists (in the group's index); methods do not retain their
// arguments. Not safe for concurrent use.
type PG struct {
	K, M  int
	Geo   Geometry
	Disks []Disk // the K data disks
}

// NewPG returns an empty placement group of k data and m parity disks.
func NewPG(k, m int, g Geometry) (*PG, error) {
	if k < 1 || m < 0 || k+m > 255 {
		return nil, fmt.Errorf("%w: %d data and %d parity disks (want k ≥ 1, m ≥ 0, k+m ≤ 255)", ErrPlacement, k, m)
	}
	pg := &PG{K: k, M: m, Geo: g, Disks: make([]Disk, k)}
	for i := range pg.Disks {
		pg.Disks[i].Buckets = make([]Bucket, g.Levels())
	}
	return pg, nil
}

// LeastUsed returns the data disk that stores the fewest bytes (the lowest
// index on a tie): the disk the next object goes to (§5.1).
func (pg *PG) LeastUsed() int {
	best := 0
	for i, d := range pg.Disks {
		if d.Used < pg.Disks[best].Used {
			best = i
		}
	}
	return best
}

// Place puts an object of the given partition on the least-used data disk:
// it claims a slot for each chunk (lowest free slot first) and appends the
// front to the disk's small-size bucket. The returned record has no
// checksums yet (the writer fills Sums). On error nothing is claimed.
func (pg *PG) Place(p Partition) (Record, error) {
	d := pg.LeastUsed()
	disk := &pg.Disks[d]
	r := Record{Disk: d, Size: p.Size, Slots: make([]uint32, 0, p.NumChunks())}
	if len(p.Counts) > len(disk.Buckets) {
		return Record{}, fmt.Errorf("%w: partition has %d levels, the group %d", ErrPlacement, len(p.Counts), len(disk.Buckets))
	}
	for i, c := range p.Counts {
		for range c {
			s, err := disk.Buckets[i].Claim()
			if err != nil {
				pg.releaseSlots(d, p, r.Slots)
				return Record{}, fmt.Errorf("place level %d: %w", i, err)
			}
			r.Slots = append(r.Slots, s)
		}
	}
	if p.Front > 0 {
		r.Front = disk.SmallEnd
		disk.SmallEnd += p.Front
	}
	disk.Used += p.Size
	return r, nil
}

// releaseSlots releases the first len(slots) chunk slots of p on disk d.
func (pg *PG) releaseSlots(d int, p Partition, slots []uint32) error {
	n := 0
	for i, c := range p.Counts {
		for range c {
			if n == len(slots) {
				return nil
			}
			if err := pg.Disks[d].Buckets[i].Release(slots[n]); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

// Release frees an object's slots and its front's bytes (a delete, or the
// old copy after a move). The record must be one this group placed.
func (pg *PG) Release(r Record) error {
	if r.Disk < 0 || r.Disk >= pg.K {
		return fmt.Errorf("%w: record on disk %d of a %d-disk group", ErrPlacement, r.Disk, pg.K)
	}
	p := pg.Geo.Partition(r.Size)
	if len(r.Slots) != p.NumChunks() {
		return fmt.Errorf("%w: record of %d bytes has %d slots, its partition %d chunks", ErrPlacement, r.Size, len(r.Slots), p.NumChunks())
	}
	if err := pg.releaseSlots(r.Disk, p, r.Slots); err != nil {
		return err
	}
	disk := &pg.Disks[r.Disk]
	disk.SmallFree += p.Front
	disk.Used -= r.Size
	return nil
}

// Location is where one piece of an object, or one shard of a stripe,
// lies: a file of a disk of the group and a byte range in it.
type Location struct {
	Disk   int    // 0 … K−1 data disks, K … K+M−1 parity disks
	File   string // the bucket file's name on that disk
	Offset int64
	Length int64
}

// BucketFile names level i's bucket on a data disk, and ParityFile the
// matching parity bucket on a parity disk; SmallFile is the small-size
// bucket and SmallParityFile its RS parity.
func BucketFile(level int) string { return fmt.Sprintf("gp/L%02d.data", level) }

// ParityFile names the parity bucket of level i on a parity disk.
func ParityFile(level int) string { return fmt.Sprintf("gp/L%02d.parity", level) }

// Small-size bucket file names.
const (
	SmallFile       = "gp/small.data"
	SmallParityFile = "gp/small.parity"
)

// Pieces returns where each piece of the object lies, in object order
// (the front first when there is one).
func (pg *PG) Pieces(r Record) ([]Location, error) {
	p := pg.Geo.Partition(r.Size)
	if len(r.Slots) != p.NumChunks() {
		return nil, fmt.Errorf("%w: record of %d bytes has %d slots, its partition %d chunks", ErrPlacement, r.Size, len(r.Slots), p.NumChunks())
	}
	out := make([]Location, 0, len(r.Slots)+1)
	n := 0
	for _, c := range p.Chunks(pg.Geo) {
		if c.Level < 0 {
			out = append(out, Location{Disk: r.Disk, File: SmallFile, Offset: r.Front, Length: c.Size})
			continue
		}
		out = append(out, Location{Disk: r.Disk, File: BucketFile(c.Level), Offset: int64(r.Slots[n]) * c.Size, Length: c.Size})
		n++
	}
	return out, nil
}

// Stripe returns the K+M shards of the Clay stripe that is slot j of level
// i: the slot on each data disk, then the parity slot on each parity disk.
// Rebuilding a lost chunk reads from the others (a sub-chunk repair reads
// β/α of each of D of them).
func (pg *PG) Stripe(level int, slot uint32) []Location {
	size := pg.Geo.Size(level)
	out := make([]Location, 0, pg.K+pg.M)
	for d := range pg.K + pg.M {
		f := BucketFile(level)
		if d >= pg.K {
			f = ParityFile(level)
		}
		out = append(out, Location{Disk: d, File: f, Offset: int64(slot) * size, Length: size})
	}
	return out
}

// SmallStripe returns the K+M byte ranges that rebuild bytes [off,
// off+n) of a data disk's small-size bucket: the same range of every small
// bucket and small parity file of the group (RS works byte by byte, so a
// front is rebuilt from K ranges of its own length).
func (pg *PG) SmallStripe(off, n int64) []Location {
	out := make([]Location, 0, pg.K+pg.M)
	for d := range pg.K + pg.M {
		f := SmallFile
		if d >= pg.K {
			f = SmallParityFile
		}
		out = append(out, Location{Disk: d, File: f, Offset: off, Length: n})
	}
	return out
}
