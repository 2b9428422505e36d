package gp

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"cairn/internal/golden"
)

// export places a batch of objects with PlaceBatch, writes their pieces and
// brings the parity up to date with the row updates it returned (delta,
// full or fresh), as the export job will.
func (m *memGroup) export(t *testing.T, datas [][]byte) ([]Record, []RowUpdate) {
	t.Helper()
	pg := m.pg
	parts := make([]Partition, len(datas))
	for i, d := range datas {
		parts[i] = pg.Geo.Partition(int64(len(d)))
	}
	smallBefore := int64(-1)
	for _, d := range pg.Disks {
		if smallBefore < 0 || d.SmallEnd < smallBefore {
			smallBefore = d.SmallEnd
		}
	}
	recs, updates, err := pg.PlaceBatch(parts)
	if err != nil {
		t.Fatal(err)
	}
	// Delta rows: read what the changed slots and the parity held.
	old := map[Location][]byte{}
	for _, u := range updates {
		if u.Mode != Delta {
			continue
		}
		stripe := pg.Stripe(u.Level, u.Slot)
		for _, d := range u.OldBytes {
			old[stripe[d]] = m.get(stripe[d])
		}
		for p := pg.K; p < pg.K+pg.M; p++ {
			old[stripe[p]] = m.get(stripe[p])
		}
	}
	for i, data := range datas {
		recs[i] = m.store(t, recs[i], data)
	}
	for _, u := range updates {
		stripe := pg.Stripe(u.Level, u.Slot)
		cur := make([][]byte, len(stripe))
		olds := make([][]byte, len(stripe))
		for i, l := range stripe {
			if i < pg.K {
				cur[i] = m.get(l) // never-written slots read as zeros
			}
			olds[i] = old[l]
		}
		parity, err := u.Parity(m.clay, stripe[0].Length, cur, olds)
		if err != nil {
			t.Fatal(err)
		}
		for j, b := range parity {
			m.put(stripe[pg.K+j], b)
		}
	}
	// The small buckets grew at their ends: re-encode from the shortest
	// old end.
	m.encodeSmall(t, smallBefore)
	return recs, updates
}

// TestExportBatches exports three batches with deletes in between (so
// later batches reuse freed slots) and checks after each that the parity
// the row updates produced is exactly a from-scratch encode of the group,
// and that every live object reads back with its disk lost.
func TestExportBatches(t *testing.T) {
	rng := testRand(t, 5)
	m := newMemGroup(t)
	unit := m.pg.Geo.S0
	live := map[int][]byte{}
	recs := map[int]Record{}
	next := 0
	var log strings.Builder
	for batch := range 3 {
		var datas [][]byte
		for range 6 {
			d := make([]byte, rng.Int64N(20*unit))
			for j := range d {
				d[j] = byte(rng.Uint32())
			}
			datas = append(datas, d)
		}
		rs, updates := m.export(t, datas)
		modes := map[RowMode]int{}
		for _, u := range updates {
			modes[u.Mode]++
		}
		fmt.Fprintf(&log, "batch %d: %d rows fresh, %d delta, %d full\n", batch, modes[Fresh], modes[Delta], modes[Full])
		for i, d := range datas {
			live[next], recs[next] = d, rs[i]
			next++
		}
		// The parity must equal a from-scratch encode.
		parity := map[string][]byte{}
		for p := m.pg.K; p < m.pg.K+m.pg.M; p++ {
			for f, b := range m.disks[p] {
				parity[fmt.Sprint(p, f)] = bytes.Clone(b)
			}
		}
		m.encode(t)
		for p := m.pg.K; p < m.pg.K+m.pg.M; p++ {
			for f, b := range m.disks[p] {
				if !bytes.Equal(parity[fmt.Sprint(p, f)], b) {
					t.Fatalf("batch %d: parity %s of disk %d differs from a full encode", batch, f, p)
				}
			}
		}
		for id, data := range live {
			avail := []bool{true, true, true, true, true, true}
			avail[recs[id].Disk] = false
			if got := m.read(t, recs[id], 0, int64(len(data)), avail); !bytes.Equal(got, data) {
				t.Fatalf("batch %d: object %d differs on a degraded read", batch, id)
			}
		}
		// Delete a third of the objects; their slots are reused next.
		for _, id := range slices.Sorted(maps.Keys(live)) {
			if rng.IntN(3) == 0 {
				if err := m.pg.Release(recs[id]); err != nil {
					t.Fatal(err)
				}
				delete(live, id)
				delete(recs, id)
			}
		}
	}
	t.Log(log.String())
	if !strings.Contains(log.String(), "delta") {
		t.Fatal("no batch exercised the update modes")
	}
}

// TestPlaceBatchGolden prints the row updates of two batches around a
// release: fresh rows, then reused slots updated by delta or full.
func TestPlaceBatchGolden(t *testing.T) {
	pg := testPG(t, 1<<20, 8<<20)
	var b strings.Builder
	batch := func(sizes ...int64) []Record {
		parts := make([]Partition, len(sizes))
		for i, s := range sizes {
			parts[i] = pg.Geo.Partition(s)
		}
		recs, updates, err := pg.PlaceBatch(parts)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "batch %v\n", sizes)
		for i, r := range recs {
			fmt.Fprintf(&b, "  object %d → disk %d slots %v\n", i, r.Disk, r.Slots)
		}
		for _, u := range updates {
			fmt.Fprintf(&b, "  row L%d/%d changed %v old %v: %v\n", u.Level, u.Slot, u.Changed, u.OldBytes, u.Mode)
		}
		return recs
	}
	recs := batch(15<<20, 7<<20, 7<<20, 3<<20, 1<<20)
	if err := pg.Release(recs[1]); err != nil {
		t.Fatal(err)
	}
	batch(7<<20, 1<<20)
	golden.Check(t, "export.txt", b.String())
}
