package raidp

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Errors of packing objects.
var (
	// ErrFull: the open superchunks lack the space for an object.
	ErrFull = errors.New("raidp: no space in the open superchunks")
	// ErrExtent: an extent outside a superchunk the packer knows, or
	// freed twice past what was written.
	ErrExtent = errors.New("raidp: bad extent")
)

// Extent is a byte range of a superchunk; an object is one or more
// extents, in order.
type Extent struct {
	Superchunk int   `json:"superchunk"`
	Off        int64 `json:"off"`
	Len        int64 `json:"len"`
}

// Packer decides where objects go in a group's superchunks (docs/design/raidp.md,
// "Writes"): append-only within a superchunk, the open superchunks filled
// in ID order, an object larger than a superchunk's free space continuing
// in the next. It tracks the dead bytes of deleted objects, so compaction
// can pick mostly-dead superchunks, and the superchunks writes are
// diverted from (being rebuilt). It is a pure state machine, not safe for
// concurrent use; its state is what the metadata store would hold.
type Packer struct {
	size     int64
	fill     map[int]int64 // superchunk → append offset
	dead     map[int]int64 // superchunk → dead bytes below the offset
	diverted map[int]bool
}

// NewPacker returns a packer over superchunks of size bytes, all empty.
func NewPacker(size int64, superchunks []int) (*Packer, error) {
	if size <= 0 || len(superchunks) == 0 {
		return nil, fmt.Errorf("%w: superchunk size %d, %d superchunks", ErrBadInput, size, len(superchunks))
	}
	p := &Packer{size: size, fill: make(map[int]int64), dead: make(map[int]int64), diverted: make(map[int]bool)}
	for _, s := range superchunks {
		if _, dup := p.fill[s]; dup {
			return nil, fmt.Errorf("%w: superchunk %d twice", ErrBadInput, s)
		}
		p.fill[s] = 0
	}
	return p, nil
}

// open returns the superchunks writes may go to, in ID order.
func (p *Packer) open() []int {
	var ids []int
	for s, f := range p.fill {
		if f < p.size && !p.diverted[s] {
			ids = append(ids, s)
		}
	}
	slices.Sort(ids)
	return ids
}

// Place allocates n > 0 bytes and returns their extents. It allocates all
// or nothing (ErrFull).
func (p *Packer) Place(n int64) ([]Extent, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: object of %d bytes", ErrBadInput, n)
	}
	var free int64
	open := p.open()
	for _, s := range open {
		free += p.size - p.fill[s]
	}
	if free < n {
		return nil, fmt.Errorf("%w: %d bytes wanted, %d free", ErrFull, n, free)
	}
	var out []Extent
	for _, s := range open {
		if n == 0 {
			break
		}
		k := min(n, p.size-p.fill[s])
		out = append(out, Extent{Superchunk: s, Off: p.fill[s], Len: k})
		p.fill[s] += k
		n -= k
	}
	return out, nil
}

// Free records the extents of a deleted object as dead.
func (p *Packer) Free(es []Extent) error {
	for _, e := range es {
		f, ok := p.fill[e.Superchunk]
		if !ok || e.Off < 0 || e.Len <= 0 || e.Off+e.Len > f || p.dead[e.Superchunk]+e.Len > f {
			return fmt.Errorf("%w: %+v", ErrExtent, e)
		}
	}
	for _, e := range es {
		p.dead[e.Superchunk] += e.Len
	}
	return nil
}

// Divert stops (on) or resumes (off) writes to a superchunk: a superchunk
// being rebuilt after a dual failure takes no writes.
func (p *Packer) Divert(superchunk int, on bool) {
	if on {
		p.diverted[superchunk] = true
	} else {
		delete(p.diverted, superchunk)
	}
}

// Compactable returns the superchunks with written bytes whose dead share
// of them is at least minDead, most dead first: their
// live objects should move out (Place them anew, copy, Free the old
// extents) so Reset can reuse them.
func (p *Packer) Compactable(minDead float64) []int {
	var ids []int
	for s, f := range p.fill {
		if f > 0 && float64(p.dead[s]) >= minDead*float64(f) {
			ids = append(ids, s)
		}
	}
	slices.SortFunc(ids, func(a, b int) int {
		return cmp.Or(cmp.Compare(p.dead[b]*p.fill[a], p.dead[a]*p.fill[b]), cmp.Compare(a, b))
	})
	return ids
}

// Reset empties a superchunk whose bytes are all dead (compacted and
// zeroed), so it is open again. It refuses one with live bytes.
func (p *Packer) Reset(superchunk int) error {
	f, ok := p.fill[superchunk]
	if !ok || p.dead[superchunk] != f {
		return fmt.Errorf("%w: superchunk %d has %d live bytes", ErrExtent, superchunk, f-p.dead[superchunk])
	}
	p.fill[superchunk], p.dead[superchunk] = 0, 0
	return nil
}

// Usage returns a superchunk's written and dead bytes.
func (p *Packer) Usage(superchunk int) (fill, dead int64) {
	return p.fill[superchunk], p.dead[superchunk]
}
