package gp

import (
	"fmt"
	"math/bits"
)

// DefaultMax is the largest chunk size when a policy names none: the
// paper's 256 MB cap (§5.2, "Memory Management"), as 256 MiB. The
// effective cap is the largest s0·q^i not above it.
const DefaultMax = 256 << 20

// MaxLevels bounds the number of chunk sizes a Geometry may have.
const MaxLevels = 32

// Geometry is the shape of Geometric Partitioning: chunk sizes S0·Q^i for
// level i = 0 … Levels()−1, the largest being Max.
type Geometry struct {
	S0  int64 // the smallest chunk size (level 0), bytes
	Q   int64 // the ratio of adjacent chunk sizes, ≥ 2
	Max int64 // the largest chunk size: S0·Q^(Levels()−1)
}

// NewGeometry returns the Geometry with chunk sizes s0·q^i up to max; a max
// of 0 means the largest s0·q^i ≤ DefaultMax (or s0 itself when s0 is
// larger). Errors wrap ErrInvalidGeometry and say which bound was broken:
// s0 ≤ 0, q < 2, max below s0, max not of the form s0·q^i, or more than
// MaxLevels sizes.
func NewGeometry(s0, q, max int64) (Geometry, error) {
	bad := func(format string, a ...any) (Geometry, error) {
		return Geometry{}, fmt.Errorf("%w: %s", ErrInvalidGeometry, fmt.Sprintf(format, a...))
	}
	switch {
	case s0 <= 0:
		return bad("s0 = %d: the first chunk size must be positive", s0)
	case q < 2:
		return bad("q = %d: the ratio of adjacent chunk sizes must be at least 2", q)
	case max != 0 && max < s0:
		return bad("chunk cap %d is below s0 = %d", max, s0)
	}
	g := Geometry{S0: s0, Q: q, Max: s0}
	limit := max
	if limit == 0 {
		limit = DefaultMax
	}
	for levels := 1; ; levels++ {
		next, ok := mul(g.Max, q)
		if !ok || next > limit {
			break
		}
		if levels == MaxLevels {
			return bad("more than %d chunk sizes from s0 = %d to the cap %d", MaxLevels, s0, limit)
		}
		g.Max = next
	}
	if max != 0 && g.Max != max {
		return bad("chunk cap %d is not s0·q^i (s0 = %d, q = %d; the nearest below is %d)", max, s0, q, g.Max)
	}
	return g, nil
}

// mul returns a·b and whether it fits in an int64 (a, b ≥ 0).
func mul(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int64(lo), hi == 0 && lo <= 1<<63-1
}

// Levels returns the number of chunk sizes.
func (g Geometry) Levels() int {
	n := 1
	for s := g.S0; s < g.Max; s *= g.Q {
		n++
	}
	return n
}

// Size returns the chunk size of level i, S0·Q^i.
func (g Geometry) Size(level int) int64 {
	s := g.S0
	for range level {
		s *= g.Q
	}
	return s
}

// Level returns the level whose chunk size is size, or −1.
func (g Geometry) Level(size int64) int {
	s := g.S0
	for i := range g.Levels() {
		if s == size {
			return i
		}
		s *= g.Q
	}
	return -1
}

// Partition is how one object is cut: its front (the first Front bytes,
// Front < S0) goes to the small-size bucket, and then Counts[i] chunks of
// size S0·Q^i follow for each level i, smallest first.
type Partition struct {
	Size   int64 // the object size
	Front  int64 // size mod S0: the bytes in the small-size bucket
	Counts []int // chunks per level; len(Counts) = the levels used, every entry ≥ 1
}

// Partition cuts an object of size bytes by the paper's Algorithm 1 (§4.3),
// capped at g.Max. The first pass takes one chunk of each size S0, S0·Q, …
// while the rest still holds it (and the cap allows); the second pass goes
// back down from the largest size used, taking as many chunks of each size
// as fit. The rest, below S0, is the front. Every level up to the largest
// used has at least one chunk, so adjacent chunks differ in size by at most
// Q, which keeps a degraded read's pipeline fed (§4.3, "Help Pipelining").
// The number of chunks is at most Q·n + ⌊size/Max⌋ for the n = O(log_Q
// size/S0) levels used.
func (g Geometry) Partition(size int64) Partition {
	if size < 0 {
		size = 0
	}
	p := Partition{Size: size}
	rest := size
	levels := g.Levels()
	s := g.S0
	for len(p.Counts) < levels && rest >= s {
		p.Counts = append(p.Counts, 1)
		rest -= s
		s *= g.Q
	}
	for i := len(p.Counts) - 1; i >= 0; i-- {
		c := rest / g.Size(i)
		p.Counts[i] += int(c)
		rest -= c * g.Size(i)
	}
	p.Front = rest
	return p
}

// Chunk is one piece of an object: the front (Level −1, in the small-size
// bucket) or a chunk of level Level. Offset is its position in the object.
type Chunk struct {
	Level  int
	Offset int64
	Size   int64
}

// Chunks lists the object's pieces in object order: the front first (when
// Front > 0), then the chunks by ascending size. A read sends them in this
// order, so the first piece is the smallest.
func (p Partition) Chunks(g Geometry) []Chunk {
	out := make([]Chunk, 0, p.NumChunks()+1)
	off := int64(0)
	if p.Front > 0 {
		out = append(out, Chunk{Level: -1, Offset: 0, Size: p.Front})
		off = p.Front
	}
	for i, c := range p.Counts {
		s := g.Size(i)
		for range c {
			out = append(out, Chunk{Level: i, Offset: off, Size: s})
			off += s
		}
	}
	return out
}

// NumChunks returns the number of Clay-coded chunks (the front not
// counted).
func (p Partition) NumChunks() int {
	n := 0
	for _, c := range p.Counts {
		n += c
	}
	return n
}
