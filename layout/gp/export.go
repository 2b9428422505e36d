package gp

import (
	"fmt"
	"slices"

	"cairn/codec"
)

// RowUpdate is the parity work one row needs after a batch of objects was
// placed: slot Slot of level Level gets new chunks on the data disks
// Changed.
type RowUpdate struct {
	Level   int
	Slot    uint32
	Changed []int // data disks whose slot gets a new chunk, ascending
	// Mode is how the row's parity is brought up to date:
	//   - Fresh: no slot of the row held bytes before; parity = Encode of
	//     the new chunks, every other slot zeros. Nothing is read.
	//   - Delta: parity += Encode(new − old) of the changed slots alone
	//     (the code is linear): read the changed slots' old bytes (those
	//     in OldBytes; the others were never written and are zeros) and
	//     the M parity slots.
	//   - Full: parity = Encode of the whole row: read the K − len(Changed)
	//     unchanged slots that hold bytes.
	Mode RowMode
	// OldBytes are the changed data disks whose slot held bytes before (a
	// released chunk's, still in the parity): Delta reads them before they
	// are overwritten.
	OldBytes []int
}

// RowMode says how a row's parity is updated.
type RowMode int

// Row update modes (RowUpdate.Mode).
const (
	Fresh RowMode = iota
	Delta
	Full
)

func (m RowMode) String() string {
	switch m {
	case Fresh:
		return "fresh"
	case Delta:
		return "delta"
	case Full:
		return "full"
	}
	return fmt.Sprintf("RowMode(%d)", int(m))
}

// PlaceBatch places a batch of staged objects, as the export from the
// warm tier does, and returns their records (without checksums) and the
// rows whose parity must be updated, each with the cheaper of the delta
// and the full re-encode (fewer slot reads; delta on a tie). On error the
// group is as before.
//
// A row update is not atomic on the disks: between writing a chunk into a
// slot and updating the parity, the row does not decode. The export
// records its row updates as intents before it writes and re-encodes
// intent rows in full after a crash (docs/design/cold.md, "Free slots").
func (pg *PG) PlaceBatch(parts []Partition) ([]Record, []RowUpdate, error) {
	before := make([][]uint32, pg.K) // per disk, per level: Next before the batch
	for d, disk := range pg.Disks {
		for _, b := range disk.Buckets {
			before[d] = append(before[d], b.Next)
		}
	}
	snapshot := pg.Clone()
	recs := make([]Record, 0, len(parts))
	type row struct {
		level int
		slot  uint32
	}
	changed := map[row][]int{}
	for _, p := range parts {
		r, err := pg.Place(p)
		if err != nil {
			*pg = *snapshot
			return nil, nil, err
		}
		n := 0
		for level, c := range p.Counts {
			for range c {
				k := row{level, r.Slots[n]}
				changed[k] = append(changed[k], r.Disk)
				n++
			}
		}
		recs = append(recs, r)
	}
	rows := make([]row, 0, len(changed))
	for k := range changed {
		rows = append(rows, k)
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.level != b.level {
			return a.level - b.level
		}
		return int(a.slot) - int(b.slot)
	})
	var updates []RowUpdate
	for _, k := range rows {
		u := RowUpdate{Level: k.level, Slot: k.slot, Changed: changed[k]}
		slices.Sort(u.Changed)
		held := 0 // unchanged slots of the row that hold bytes
		for d := range pg.K {
			wrote := k.slot < before[d][k.level]
			switch {
			case slices.Contains(u.Changed, d) && wrote:
				u.OldBytes = append(u.OldBytes, d)
			case !slices.Contains(u.Changed, d) && wrote:
				held++
			}
		}
		switch {
		case held == 0 && len(u.OldBytes) == 0:
			u.Mode = Fresh
		case len(u.OldBytes)+pg.M <= held:
			u.Mode = Delta
		default:
			u.Mode = Full
		}
		updates = append(updates, u)
	}
	return recs, updates, nil
}

// Clone returns a deep copy of the group's state (to roll back to when a
// batch fails).
func (pg *PG) Clone() *PG {
	c := *pg
	c.Disks = make([]Disk, len(pg.Disks))
	for i, d := range pg.Disks {
		c.Disks[i] = d
		c.Disks[i].Buckets = make([]Bucket, len(d.Buckets))
		for j, b := range d.Buckets {
			c.Disks[i].Buckets[j] = Bucket{Next: b.Next, Free: slices.Clone(b.Free)}
		}
	}
	return &c
}

// Parity returns the row's new parity slots (M of them, size bytes each)
// for code c, the group's clay-K-M-D. cur[i], i < K, is data slot i's
// bytes as written now — every slot in Fresh and Full mode (nil: never
// written, zeros), only the Changed slots in Delta mode. old, in Delta mode
// only, holds what was there before: old[i] for the OldBytes data disks
// (nil elsewhere: zeros) and old[K+p] the M parity slots. cur and old are
// not modified.
func (u RowUpdate) Parity(c codec.Code, size int64, cur, old [][]byte) ([][]byte, error) {
	p := c.Params()
	shards := make([][]byte, p.N())
	for i := range shards {
		shards[i] = make([]byte, size)
		if i >= p.K || (u.Mode == Delta && !slices.Contains(u.Changed, i)) {
			continue
		}
		copy(shards[i], cur[i])
		if u.Mode == Delta && i < len(old) {
			xor(shards[i], old[i])
		}
	}
	if err := c.Encode(shards); err != nil {
		return nil, err
	}
	parity := shards[p.K:]
	if u.Mode == Delta {
		for j := range parity {
			if p.K+j >= len(old) || len(old[p.K+j]) != int(size) {
				return nil, fmt.Errorf("%w: delta update of row L%d/%d without old parity %d", ErrPlacement, u.Level, u.Slot, j)
			}
			xor(parity[j], old[p.K+j])
		}
	}
	return parity, nil
}

// xor sets dst ^= src (a shorter src: the rest is zeros).
func xor(dst, src []byte) {
	for i, b := range src {
		dst[i] ^= b
	}
}
