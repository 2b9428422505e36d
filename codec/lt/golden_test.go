package lt

import (
	"hash/crc32"
	"slices"
	"testing"
)

// The block-ID → neighbours function, the precode and the systematic index
// are an on-disk format (docs/design/lt.md): a repair block written today
// must decode with any later version. This pins them for seed 0 (the
// policy's seed). If it fails, the change breaks stored data: revert it or
// make it a new scheme.
func TestFormatGolden(t *testing.T) {
	for _, g := range []struct {
		k      int
		layout Layout
		rows   map[int][]int
		crc    uint32 // CRC-32 (IEEE) of repair blocks K..3K−1 of the fixed source below, 64 bytes each
	}{
		{16, Layout{K: 16, S: 11, H: 10, P: 14, L: 37, W: 23, J: 0}, map[int][]int{
			0:         {6, 20, 23, 36},
			1:         {9, 10, 11, 12, 13, 32},
			16:        {12, 15, 31, 28},
			47:        {4, 1, 27, 29},
			MaxID - 1: {2, 21, 17, 13, 9, 5, 1, 20, 16, 12, 8, 4, 0, 19, 15, 11, 7, 3, 22, 18, 14, 10, 6, 34},
		}, 0x2bbe68ab},
		{1024, Layout{K: 1024, S: 59, H: 10, P: 42, L: 1093, W: 1051, J: 0}, map[int][]int{
			0:         {574, 418, 262, 1089},
			1:         {909, 265, 1064, 1091},
			1024:      {480, 1023, 1064, 1075},
			3071:      {597, 329, 1087, 1052},
			MaxID - 1: {163, 8, 1061, 1090},
		}, 0x9173e0da},
	} {
		c := mustNew(t, g.k, 3)
		if got := c.Layout(); got != g.layout {
			t.Errorf("K=%d: layout %+v, want %+v", g.k, got, g.layout)
		}
		for id, want := range g.rows {
			if got, _ := c.Neighbours(id); !slices.Equal(got, want) {
				t.Errorf("K=%d: neighbours of block %d = %v, want %v", g.k, id, got, want)
			}
		}
		shards := make([][]byte, 3*g.k)
		for i := range g.k {
			shards[i] = make([]byte, 64)
			for j := range shards[i] {
				shards[i][j] = byte(i*7 + j*13)
			}
		}
		if err := c.Encode(shards); err != nil {
			t.Fatal(err)
		}
		h := crc32.NewIEEE()
		for _, s := range shards[g.k:] {
			h.Write(s)
		}
		if got := h.Sum32(); got != g.crc {
			t.Errorf("K=%d: repair blocks have CRC %08x, want %08x", g.k, got, g.crc)
		}
	}
}
