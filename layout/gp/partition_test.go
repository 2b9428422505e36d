package gp

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"cairn/internal/golden"
	"cairn/internal/units"
)

var seed = flag.Uint64("seed", 0, "seed of the randomized tests (0: a fixed one)")

const mb = 1 << 20

// testRand returns the test's random source, seeded by -seed or def, and
// logs the seed to replay it.
func testRand(t *testing.T, def uint64) *rand.Rand {
	s := *seed
	if s == 0 {
		s = def
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return rand.New(rand.NewPCG(s, 18))
}

// TestPaperExample is §4.3's example: s0 = 4 MB, q = 2, 73.5 MB = 1.5 +
// 2×4 + 2×8 + 16 + 32 MB.
func TestPaperExample(t *testing.T) {
	g, err := NewGeometry(4*mb, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := g.Partition(73*mb + mb/2)
	if p.Front != mb+mb/2 || fmt.Sprint(p.Counts) != "[2 2 1 1]" {
		t.Fatalf("73.5 MB → front %d, counts %v; want 1.5 MB and [2 2 1 1]", p.Front, p.Counts)
	}
	var sizes []string
	for _, c := range p.Chunks(g) {
		sizes = append(sizes, units.FormatSize(c.Size))
	}
	if got := strings.Join(sizes, " "); got != "1536KiB 4MiB 4MiB 8MiB 8MiB 16MiB 32MiB" {
		t.Fatalf("chunks in object order: %s", got)
	}
	// §4.2: a 32 MB object is 4 + 4 + 8 + 16 MB.
	if p := g.Partition(32 * mb); p.Front != 0 || fmt.Sprint(p.Counts) != "[2 1 1]" {
		t.Fatalf("32 MB → %+v, want counts [2 1 1]", p)
	}
	// §4.3: 20 MB is not 4 + 16 (a gap of 4×) but 4 + 8 + 8.
	if p := g.Partition(20 * mb); fmt.Sprint(p.Counts) != "[1 2]" {
		t.Fatalf("20 MB → %+v, want counts [1 2]", p)
	}
}

func TestGeometryLevels(t *testing.T) {
	g, err := NewGeometry(4*mb, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Max != 256*mb || g.Levels() != 7 || g.Size(6) != 256*mb || g.Level(64*mb) != 4 || g.Level(3*mb) != -1 {
		t.Fatalf("4 MiB:2 → %+v, %d levels", g, g.Levels())
	}
	if g, _ := NewGeometry(512*mb, 2, 0); g.Max != 512*mb || g.Levels() != 1 {
		t.Fatalf("s0 above the default cap: %+v", g)
	}
	if g, _ := NewGeometry(mb, 4, 0); g.Max != 256*mb || g.Levels() != 5 {
		t.Fatalf("1 MiB:4 → %+v", g)
	}
	if _, err := NewGeometry(1, 2, 1<<62); !errors.Is(err, ErrInvalidGeometry) {
		t.Fatalf("63 levels accepted: %v", err)
	}
}

// TestPartitionProperties checks, on random sizes and geometries: the
// pieces sum to the object; each chunk is s0·q^i; every level up to the
// largest used has a chunk (adjacent sizes differ by at most q); the front
// is below s0; the chunk count is at most q·n + size/Max with n ≤
// log_q((q−1)·size/s0 + 1) levels; the chunks are in ascending size.
func TestPartitionProperties(t *testing.T) {
	rng := testRand(t, 1)
	for range 20000 {
		s0 := int64(1+rng.IntN(64)) << (10 + rng.IntN(10))
		q := int64(2 + rng.IntN(4))
		g, err := NewGeometry(s0, q, 0)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(float64(s0) * float64(rng.Int64N(1<<20)) / float64(1<<20) * float64(int64(1)<<rng.IntN(14)))
		if rng.IntN(10) == 0 {
			size = rng.Int64N(s0 * 3)
		}
		p := g.Partition(size)
		chunks := p.Chunks(g)
		sum := int64(0)
		for i, c := range chunks {
			if c.Offset != sum {
				t.Fatalf("%+v size %d: chunk %d at %d, want %d", g, size, i, c.Offset, sum)
			}
			sum += c.Size
			if c.Level >= 0 && c.Size != g.Size(c.Level) {
				t.Fatalf("%+v size %d: chunk %d of %d bytes at level %d", g, size, i, c.Size, c.Level)
			}
			if i > 0 && c.Size < chunks[i-1].Size {
				t.Fatalf("%+v size %d: chunks not ascending: %+v", g, size, chunks)
			}
		}
		if sum != size || p.Front >= s0 || p.Front != size%s0 {
			t.Fatalf("%+v size %d: pieces sum to %d, front %d", g, size, sum, p.Front)
		}
		for i, c := range p.Counts {
			if c < 1 {
				t.Fatalf("%+v size %d: level %d has no chunk: %v", g, size, i, p.Counts)
			}
		}
		n := int64(len(p.Counts))
		logBound := int64(0)
		for x := (q-1)*(size/s0) + 1; x >= q; x /= q {
			logBound++
		}
		if n > logBound+1 || int64(p.NumChunks()) > q*n+size/g.Max {
			t.Fatalf("%+v size %d: %d chunks over %d levels (log bound %d)", g, size, p.NumChunks(), n, logBound+1)
		}
	}
}

// TestPartitionGolden prints the partition of a range of sizes for the
// paper's geometry and a capped one.
func TestPartitionGolden(t *testing.T) {
	var b strings.Builder
	for _, geo := range [][3]int64{{4 * mb, 2, 0}, {mb, 2, 16 * mb}, {mb, 4, 0}} {
		g, err := NewGeometry(geo[0], geo[1], geo[2])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "geometry s0=%s q=%d max=%s levels=%d\n", units.FormatSize(g.S0), g.Q, units.FormatSize(g.Max), g.Levels())
		for _, size := range []int64{0, 1, 4*mb - 1, 4 * mb, 12 * mb, 20 * mb, 32 * mb, 73*mb + mb/2, 100 * mb, 1 << 30, 4 << 30} {
			p := g.Partition(size)
			fmt.Fprintf(&b, "  %12d front=%-9d chunks=%-3d counts=%v\n", size, p.Front, p.NumChunks(), p.Counts)
		}
	}
	golden.Check(t, "partition.txt", b.String())
}
