package volume

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

func readAhead(v *Volume, name string, off, n, ahead int64) ([]byte, error) {
	r, err := v.NewReader(context.Background(), name, off, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.ReadAhead(ahead)
	return io.ReadAll(r)
}

// With read-ahead, every range returns the same bytes as without, and the
// disk sees one request per run instead of one per block.
func TestReadAheadReadsRuns(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem, nil)
	v := openTest(t, efs, "/d")
	n := int64(10*BlockSize + 17) // 11 blocks, the last one short
	data := randBytes(rand.New(rand.NewPCG(9, 10)), int(n))
	name := shardName(3, 1)
	mustPut(t, v, name, data)
	for _, ahead := range []int64{0, 1, BlockSize, 3 * BlockSize, 4*BlockSize - 1, 1 << 20} {
		for _, r := range [][2]int64{{0, -1}, {0, 0}, {n, 0}, {1, n - 2}, {BlockSize - 3, 7}, {2*BlockSize + 5, 5 * BlockSize}, {n - 20, 20}} {
			got, err := readAhead(v, name, r[0], r[1], ahead)
			end := n
			if r[1] >= 0 {
				end = r[0] + r[1]
			}
			if err != nil || !bytes.Equal(got, data[r[0]:end]) {
				t.Fatalf("read-ahead %d, range %v: %d bytes, %v", ahead, r, len(got), err)
			}
		}
	}
	for _, c := range []struct {
		off, n, ahead int64
		reads         int
	}{
		{0, -1, 0, 1 + 11},                            // footer + one per block
		{0, -1, 4 * BlockSize, 1 + 3},                 // footer + runs of 4, 4, 3
		{0, -1, 1 << 20, 1 + 1},                       // footer + the whole shard
		{4*BlockSize + 10, BlockSize, 1 << 20, 1 + 1}, // blocks 4 and 5 in one request, no further
	} {
		log := &errorfs.Log{}
		efs.SetInjector(log)
		if _, err := readAhead(v, name, c.off, c.n, c.ahead); err != nil {
			t.Fatal(err)
		}
		efs.SetInjector(nil)
		if got := log.Count(errorfs.OnKinds(errorfs.OpFileReadAt)); got != c.reads {
			t.Errorf("range %d+%d read-ahead %d: %d ReadAt calls, want %d", c.off, c.n, c.ahead, got, c.reads)
		}
	}
}

// A corrupt block inside a run still fails at that block, after
// the good bytes before it.
func TestReadAheadStopsAtTheBadBlock(t *testing.T) {
	mem := vfs.NewMem()
	v := openTest(t, mem, "/d")
	data := randBytes(rand.New(rand.NewPCG(11, 12)), 6*BlockSize)
	for i, c := range []struct {
		edit  func([]byte) []byte
		block int64
	}{
		{func(b []byte) []byte { b[2*(BlockSize+crcSize)+9] ^= 1; return b }, 2},           // flipped bit in block 2
		{func(b []byte) []byte { b[5*(BlockSize+crcSize)+BlockSize+1] ^= 1; return b }, 5}, // block 5's stored CRC
	} {
		name := shardName(20+i, 0)
		mustPut(t, v, name, data)
		rewrite(t, mem, v.shardPath(name), c.edit)
		got, err := readAhead(v, name, BlockSize, -1, 1<<20)
		var ve *Error
		if !errors.Is(err, cairn.ErrCorrupt) || !errors.As(err, &ve) || ve.Block != c.block {
			t.Fatalf("case %d: %v, want corruption at block %d", i, err, c.block)
		}
		if !bytes.Equal(got, data[BlockSize:c.block*BlockSize]) {
			t.Fatalf("case %d: %d good bytes before the error, want %d", i, len(got), (c.block-1)*BlockSize)
		}
		if err := v.Delete(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
}

// A Put whose reader declares its size writes runs of up to WriteRun;
// one that does not, runs of DefaultWriteRun. The footer rides with the
// last run when it fits.
func TestPutWriteRuns(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem(), nil)
	v := openTest(t, efs, "/d")
	rng := rand.New(rand.NewPCG(13, 14))
	for i, c := range []struct {
		size   int
		sized  bool
		writes int
	}{
		{100, true, 1},
		{3 << 20, true, 1},  // one 4 MiB run holds it all
		{WriteRun, true, 2}, // a full run, then the footer
		{2*WriteRun + BlockSize, true, 3},
		{3 << 20, false, 4}, // three 1 MiB runs, then the footer
		{DefaultWriteRun + 1, false, 2},
	} {
		data := randBytes(rng, c.size)
		var r io.Reader = bytes.NewReader(data)
		if !c.sized {
			r = io.MultiReader(r) // hides Size
		}
		log := &errorfs.Log{}
		efs.SetInjector(log)
		name := shardName(40+i, 0)
		info, err := v.Put(context.Background(), name, r)
		efs.SetInjector(nil)
		if err != nil || info.CRC != crcOf(data) {
			t.Fatalf("put %d bytes: %v", c.size, err)
		}
		if got := log.Count(errorfs.OnKinds(errorfs.OpFileWrite)); got != c.writes {
			t.Errorf("%d bytes (sized %v): %d write calls, want %d", c.size, c.sized, got, c.writes)
		}
		mustGet(t, v, name, data)
	}
}
