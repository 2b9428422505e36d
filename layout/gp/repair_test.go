package gp

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"cairn/codec"
	"cairn/codec/clay"
	"cairn/codec/rs"
)

// memGroup is a placement group's disks in memory: the files a data path
// would write, with the real codes encoding the rows. It is the test's
// stand-in for the nodes.
type memGroup struct {
	pg       *PG
	clay, rs codec.Code
	disks    []map[string][]byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newMemGroup(t *testing.T) *memGroup {
	t.Helper()
	c, err := clay.New(4, 2, 5) // α = 8: s0 a multiple of 32 KiB
	if err != nil {
		t.Fatal(err)
	}
	r, err := rs.New(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGeometry(SubChunkUnit(c), 2, 8*SubChunkUnit(c))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := NewPG(4, 2, g)
	if err != nil {
		t.Fatal(err)
	}
	m := &memGroup{pg: pg, clay: c, rs: r}
	for range 6 {
		m.disks = append(m.disks, map[string][]byte{})
	}
	return m
}

// write places an object and stores its pieces on its disk (as the export
// does before it encodes the rows); it returns its record with the piece
// checksums.
func (m *memGroup) write(t *testing.T, data []byte) Record {
	t.Helper()
	r, err := m.pg.Place(m.pg.Geo.Partition(int64(len(data))))
	if err != nil {
		t.Fatal(err)
	}
	return m.store(t, r, data)
}

// store writes a placed object's pieces and fills its checksums.
func (m *memGroup) store(t *testing.T, r Record, data []byte) Record {
	t.Helper()
	locs, err := m.pg.Pieces(r)
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(0)
	for _, l := range locs {
		piece := data[pos : pos+l.Length]
		m.put(l, piece)
		r.Sums = append(r.Sums, crc32.Checksum(piece, castagnoli))
		pos += l.Length
	}
	return r
}

func (m *memGroup) put(l Location, b []byte) {
	f := m.disks[l.Disk][l.File]
	if end := l.Offset + int64(len(b)); int64(len(f)) < end {
		f = append(f, make([]byte, end-int64(len(f)))...)
	}
	copy(f[l.Offset:], b)
	m.disks[l.Disk][l.File] = f
}

// get reads a range; bytes past a file's end (or of a lost disk, which
// the caller must not ask) are zeros.
func (m *memGroup) get(l Location) []byte {
	out := make([]byte, l.Length)
	f := m.disks[l.Disk][l.File]
	if l.Offset < int64(len(f)) {
		copy(out, f[l.Offset:])
	}
	return out
}

// encode computes every row's parity: each level's slots across the data
// disks with Clay, the small buckets byte for byte with RS.
func (m *memGroup) encode(t *testing.T) {
	t.Helper()
	pg := m.pg
	for level := range pg.Geo.Levels() {
		rows := uint32(0)
		for _, d := range pg.Disks {
			rows = max(rows, d.Buckets[level].Next)
		}
		for slot := range rows {
			stripe := pg.Stripe(level, slot)
			shards := make([][]byte, len(stripe))
			for i, l := range stripe {
				if i < pg.K {
					shards[i] = m.get(l)
				} else {
					shards[i] = make([]byte, l.Length)
				}
			}
			if err := m.clay.Encode(shards); err != nil {
				t.Fatal(err)
			}
			for i := pg.K; i < len(stripe); i++ {
				m.put(stripe[i], shards[i])
			}
		}
	}
	m.encodeSmall(t, 0)
}

// encodeSmall encodes the small buckets' RS parity from offset from to the
// longest small bucket's end (shorter ones read as zeros).
func (m *memGroup) encodeSmall(t *testing.T, from int64) {
	t.Helper()
	end := int64(0)
	for _, d := range m.pg.Disks {
		end = max(end, d.SmallEnd)
	}
	if end <= from {
		return
	}
	stripe := m.pg.SmallStripe(from, end-from)
	shards := make([][]byte, len(stripe))
	for i, l := range stripe {
		shards[i] = m.get(l)
	}
	if err := m.rs.Encode(shards); err != nil {
		t.Fatal(err)
	}
	for i := m.pg.K; i < len(stripe); i++ {
		m.put(stripe[i], shards[i])
	}
}

// read returns bytes [off, off+n) of an object, rebuilding the pieces of
// lost disks with RepairPiece, and checks every piece it touches against
// its checksum.
func (m *memGroup) read(t *testing.T, r Record, off, n int64, available []bool) []byte {
	t.Helper()
	locs, err := m.pg.Pieces(r)
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]int64, len(locs))
	for i, l := range locs {
		sizes[i] = l.Length
	}
	first, last := RangePieces(sizes, off, n)
	var out []byte
	start := int64(0)
	for i := range first {
		start += sizes[i]
	}
	for i := first; i < last; i++ {
		var piece []byte
		if available[r.Disk] {
			piece = m.get(locs[i])
		} else {
			pr, err := m.pg.RepairPiece(m.clay, m.rs, r, i, available)
			if err != nil {
				t.Fatal(err)
			}
			reads := make([][]byte, len(pr.Reads))
			for h, ranges := range pr.Reads {
				for _, l := range ranges {
					if !available[l.Disk] {
						t.Fatalf("piece %d: the plan reads lost disk %d", i, l.Disk)
					}
					reads[h] = append(reads[h], m.get(l)...)
				}
			}
			piece = make([]byte, locs[i].Length)
			if err := pr.Rebuild(reads, piece); err != nil {
				t.Fatal(err)
			}
		}
		if crc32.Checksum(piece, castagnoli) != r.Sums[i] {
			t.Fatalf("piece %d (%s@%d) fails its checksum", i, locs[i].File, locs[i].Offset)
		}
		out = append(out, piece...)
	}
	lo := off - start
	return out[lo : lo+n]
}

// TestLayoutEndToEnd writes objects from 0 bytes to several chunks into a
// group, encodes the rows with the real codes, and reads every object back
// whole and in ranges: with all disks, with its disk lost (sub-chunk
// repair), and with its disk and another lost (M = 2: the degraded plan).
func TestLayoutEndToEnd(t *testing.T) {
	rng := testRand(t, 3)
	m := newMemGroup(t)
	unit := m.pg.Geo.S0
	sizes := []int64{0, 1, unit - 1, unit, unit + 1, 3*unit + 5, 20*unit + 777, 40 * unit}
	for range 12 {
		sizes = append(sizes, rng.Int64N(30*unit))
	}
	objs := map[int][]byte{}
	recs := map[int]Record{}
	for i, s := range sizes {
		data := make([]byte, s)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		objs[i], recs[i] = data, m.write(t, data)
	}
	// Delete two objects and write new ones into their slots.
	for _, i := range []int{6, 9} {
		if err := m.pg.Release(recs[i]); err != nil {
			t.Fatal(err)
		}
		delete(objs, i)
		delete(recs, i)
	}
	for i := 100; i < 103; i++ {
		data := bytes.Repeat([]byte{byte(i)}, int(rng.Int64N(25*unit)))
		objs[i], recs[i] = data, m.write(t, data)
	}
	m.encode(t)

	all := func() []bool { return []bool{true, true, true, true, true, true} }
	for i, data := range objs {
		r := recs[i]
		size := int64(len(data))
		patterns := map[string][]bool{"all disks": all()}
		lost := all()
		lost[r.Disk] = false
		patterns["its disk lost"] = lost
		two := all()
		two[r.Disk], two[(r.Disk+1)%4] = false, false
		patterns["its disk and another data disk lost"] = two
		three := all()
		three[r.Disk], three[5] = false, false
		patterns["its disk and a parity disk lost"] = three
		for name, avail := range patterns {
			if got := m.read(t, r, 0, size, avail); !bytes.Equal(got, data) {
				t.Fatalf("object %d (%d bytes), %s: read differs", i, size, name)
			}
			for range 3 {
				if size == 0 {
					break
				}
				off := rng.Int64N(size)
				n := 1 + rng.Int64N(size-off)
				if got := m.read(t, r, off, n, avail); !bytes.Equal(got, data[off:off+n]) {
					t.Fatalf("object %d, %s: range [%d, +%d) differs", i, name, off, n)
				}
			}
		}
	}
}

// TestRepairPieceReadsLess: with only the object's disk lost, a chunk's
// repair reads D·β/α of it (Clay's 5/2 for clay-4-2-5), not K.
func TestRepairPieceReadsLess(t *testing.T) {
	m := newMemGroup(t)
	r := m.write(t, make([]byte, 3*m.pg.Geo.S0))
	m.encode(t)
	avail := []bool{true, true, true, true, true, true}
	avail[r.Disk] = false
	pr, err := m.pg.RepairPiece(m.clay, m.rs, r, 0, avail)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pr.ReadBytes(), pr.Piece.Length*5/2; got != want {
		t.Fatalf("repair reads %d bytes of a %d-byte chunk, want %d", got, pr.Piece.Length, want)
	}
	for d := range avail {
		avail[d] = d == 4 || d == 5 || d == r.Disk
	}
	avail[r.Disk] = false
	if _, err := m.pg.RepairPiece(m.clay, m.rs, r, 0, avail); !errors.Is(err, codec.ErrUndecodable) {
		t.Fatalf("three disks lost of a 4+2 group: %v", err)
	}
}

// TestRepairRangeCheapest: a recovery keeps Clay's sub-chunk repair where
// its helpers' runs cost the disks less than K whole slots, and decodes
// from K whole slots where they cost more (runs a seek apart, a seek
// worth a slot); either way the slot rebuilds byte-exact. For clay-4-2-5
// (α = 8) disk 0's helpers read one run each, disk 4's four runs.
func TestRepairRangeCheapest(t *testing.T) {
	rng := testRand(t, 4)
	m := newMemGroup(t)
	size := m.pg.Geo.S0 // one slot of level 0 on each data disk
	for range m.pg.K {
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		m.write(t, data)
	}
	m.encode(t)
	row := m.pg.Stripe(0, 0)
	for _, tc := range []struct {
		lost    int
		seek    int64
		helpers int // 5: the sub-chunk repair; 4: decoded from K whole slots
	}{
		{0, 0, 5}, // no seeks: 5 half slots against 4 slots
		{4, 0, 5},
		{0, size, 5},     // 5 × (1 seek + ½ slot) < 4 × (1 seek + 1 slot)
		{4, size, 4},     // 5 × (4 seeks + ½ slot) > 4 × (1 seek + 1 slot)
		{4, size / 8, 4}, // runs a seek apart, read through: 5 × (⅛ + ⅞) > 4 × (⅛ + 1)
		{5, size, 4},
	} {
		avail := []bool{true, true, true, true, true, true}
		avail[tc.lost] = false
		pr, err := m.pg.RepairRangeCheapest(m.clay, m.rs, row[tc.lost], avail, tc.seek)
		if err != nil {
			t.Fatal(err)
		}
		if len(pr.Reads) != tc.helpers {
			t.Errorf("lost %d, seek %d: %d helpers (cost %d), want %d", tc.lost, tc.seek, len(pr.Reads), pr.Cost(tc.seek), tc.helpers)
		}
		reads := make([][]byte, len(pr.Reads))
		for h, ranges := range pr.Reads {
			for _, l := range ranges {
				if !avail[l.Disk] {
					t.Fatalf("lost %d: the plan reads lost disk %d", tc.lost, l.Disk)
				}
				reads[h] = append(reads[h], m.get(l)...)
			}
		}
		out := make([]byte, size)
		if err := pr.Rebuild(reads, out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, m.get(row[tc.lost])) {
			t.Errorf("lost %d, seek %d: the rebuilt slot differs", tc.lost, tc.seek)
		}
	}
	// Decoded slots of consecutive rows read from different sets of K
	// helpers, so that such rebuilds spread over the group.
	helpers := func(slot uint32) []int {
		avail := []bool{true, true, true, true, false, true}
		pr, err := m.pg.RepairRangeCheapest(m.clay, m.rs, m.pg.Stripe(0, slot)[4], avail, size)
		if err != nil {
			t.Fatal(err)
		}
		var ds []int
		for _, h := range pr.Reads {
			ds = append(ds, h[0].Disk)
		}
		slices.Sort(ds)
		return ds
	}
	if a, b := helpers(0), helpers(1); len(a) != m.pg.K || slices.Equal(a, b) {
		t.Errorf("rows 0 and 1 decode from helpers %v and %v, want K = %d each and different sets", a, b, m.pg.K)
	}
}

// TestRepairCost: a request costs a seek plus the bytes it spans; runs of
// one helper at most a seek apart are one request.
func TestRepairCost(t *testing.T) {
	l := func(disk int, off, n int64) Location { return Location{Disk: disk, File: "f", Offset: off, Length: n} }
	pr := &PieceRepair{Reads: [][]Location{
		{l(0, 0, 10), l(0, 15, 10), l(0, 100, 10)}, // [0, 25) read through, then [100, 110)
		{l(1, 0, 10)},
	}}
	if got, want := pr.Cost(5), int64((5+25)+(5+10)+(5+10)); got != want {
		t.Errorf("Cost(5) = %d, want %d", got, want)
	}
	if got, want := pr.Cost(0), int64(40); got != want {
		t.Errorf("Cost(0) = %d, want %d", got, want)
	}
}

// TestCoalesce: runs of one disk and file at most gap apart form one
// request reading through the gaps; a wider gap, another file or disk, a
// range that does not start past the one before, or a pair join refuses
// starts a new request.
func TestCoalesce(t *testing.T) {
	loc := func(disk int, file string, off, n int64) Location {
		return Location{Disk: disk, File: file, Offset: off, Length: n}
	}
	ranges := []Location{
		loc(0, "a", 0, 10), loc(0, "a", 15, 5), loc(0, "a", 20, 4), // gaps 5 and 0: one request [0, 24)
		loc(0, "a", 31, 1), // gap 7 > 5: a new one
		loc(0, "b", 32, 1), // another file
		loc(1, "b", 33, 1), // another disk
		loc(1, "b", 30, 1), // starts before the one before ends
		loc(1, "b", 60, 2), // 29 after: a new one
		loc(1, "b", 64, 1), // 2 after, but the join below refuses a pair across 64
	}
	var got []string
	Coalesce(ranges, 5, func(a, b Location) bool { return a.Offset/64 == b.Offset/64 }, func(req Location, runs []Location) {
		got = append(got, fmt.Sprintf("%d/%s[%d,+%d)×%d", req.Disk, req.File, req.Offset, req.Length, len(runs)))
	})
	want := "[0/a[0,+24)×3 0/a[31,+1)×1 0/b[32,+1)×1 1/b[33,+1)×1 1/b[30,+1)×1 1/b[60,+2)×1 1/b[64,+1)×1]"
	if fmt.Sprint(got) != want {
		t.Errorf("requests %v,\nwant %s", got, want)
	}
	got = nil
	Coalesce(ranges[6:], 100, nil, func(req Location, runs []Location) {
		got = append(got, fmt.Sprintf("[%d,+%d)×%d", req.Offset, req.Length, len(runs)))
	})
	if want := "[[30,+35)×3]"; fmt.Sprint(got) != want {
		t.Errorf("with no join and a gap of 100: %v, want %s", got, want)
	}
}
