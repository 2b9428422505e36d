package raidp

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of building and checking a layout.
var (
	// ErrGroupSize: a group needs at least 3 disks (with 2, one failure
	// leaves no disk to re-mirror to) and at most MaxDisks.
	ErrGroupSize = errors.New("raidp: group size out of range")
	// ErrRows: the requested number of superchunk rows does not fit the
	// construction (1..N−1) or the disks' slots.
	ErrRows = errors.New("raidp: superchunk rows out of range")
	// ErrInvariant: a layout breaks 1-mirroring, 1-sharing or its slots.
	ErrInvariant = errors.New("raidp: layout invariant broken")
)

// MaxDisks bounds a group: the layout and the matching are quadratic and
// cubic in it, and a group of thousands of disks would make superchunks
// needlessly small (capacity/(N−1)) anyway.
const MaxDisks = 1024

// Place is one replica of a superchunk: disk Disk (an index into the
// group), slot Slot (the superchunk occupies bytes [Slot·size,
// (Slot+1)·size) of the disk's data file).
type Place struct {
	Disk int `json:"disk"`
	Slot int `json:"slot"`
}

// Superchunk is one superchunk and its two replicas. Byte o of the
// superchunk is byte o of the slot on both replica disks (1-mirroring is
// bitwise at the same offset within the superchunk; the two slots may
// differ).
type Superchunk struct {
	ID       int      `json:"id"`
	Replicas [2]Place `json:"replicas"`
}

// Other returns the replica of s that is not on disk d, and whether d holds
// a replica of s at all.
func (s Superchunk) Other(d int) (Place, bool) {
	switch d {
	case s.Replicas[0].Disk:
		return s.Replicas[1], true
	case s.Replicas[1].Disk:
		return s.Replicas[0], true
	}
	return Place{}, false
}

// On returns the replica of s on disk d, and whether there is one.
func (s Superchunk) On(d int) (Place, bool) {
	for _, p := range s.Replicas {
		if p.Disk == d {
			return p, true
		}
	}
	return Place{}, false
}

// Layout is a RAIDP group: Disks disks (on distinct failure domains, the
// caller's duty), each with Slots superchunk slots, and the superchunks
// placed on them. A Layout is a value: methods do not modify it, and
// Apply returns a new one. Superchunks are sorted by ID.
type Layout struct {
	Disks       int          `json:"disks"`
	Slots       int          `json:"slots"`
	Superchunks []Superchunk `json:"superchunks"`
}

// New builds the layout of the paper's Fig. 3 construction (§3.1) for n
// disks, using rows of the slots and leaving the rest free for recovery.
//
// Rows come in pairs: for shift i = 1, 2, …, row 2i−2 of disk d holds a
// primary superchunk whose mirror is row 2i−1 of disk (d+i) mod n. Every
// pair of rows makes each disk share one superchunk with the disks at
// circular distance i, so over shifts 1..⌊(n−1)/2⌋ every pair of disks at
// distance < n/2 shares exactly one superchunk. For even n the pairs at
// distance n/2 fill one last row: disk d < n/2 holds the primary and disk
// d+n/2 the mirror, both in that row. With rows = n−1 the layout is
// complete (every two disks share one superchunk); fewer rows leave pairs
// that share nothing, which the re-mirroring after a failure needs.
//
// rows must be in 1..n−1 and at most slots; an odd rows < n−1 uses only
// the primary row of its last shift, whose mirrors go to the same row
// (the distance-i pairs {d, d+i} are then covered for half the disks when
// mirrors land in row rows−1: see the property test).
//
// For an even n and rows < n/2 the shifts are the odd ones only (1, 3,
// 5, …; a last half row pairs each even disk d with d+shift): every
// superchunk then joins an even and an odd disk, so the sharing graph is
// bipartite and no two disks that share a superchunk have a common
// neighbour — a disk holding a superchunk of each. After those two fail,
// each side of the rebuild reads its own mirrors, none holds the only
// copies both sides need, and no disk has to send a whole superchunk
// (docs/design/raidp.md, "The experiment"). Bipartite layouts hold at most
// n/2 rows (Mantel), and at n/2 none is left free for re-mirroring; so
// more rows, and odd n, use every shift.
func New(n, slots, rows int) (Layout, error) {
	if n < 3 || n > MaxDisks {
		return Layout{}, fmt.Errorf("%w: %d disks (want 3..%d)", ErrGroupSize, n, MaxDisks)
	}
	if rows < 1 || rows > n-1 || rows > slots {
		return Layout{}, fmt.Errorf("%w: %d rows for %d disks of %d slots (want 1..min(N−1, slots))", ErrRows, rows, n, slots)
	}
	l := Layout{Disks: n, Slots: slots}
	add := func(a, sa, b, sb int) {
		l.Superchunks = append(l.Superchunks, Superchunk{ID: len(l.Superchunks), Replicas: [2]Place{{a, sa}, {b, sb}}})
	}
	bipartite, step := n%2 == 0 && rows < n/2, 1
	if bipartite {
		step = 2
	}
	row := 0
	for shift := 1; row < rows; shift += step {
		switch {
		case 2*shift == n:
			// The last row of an even group: pairs at distance n/2.
			for d := range n / 2 {
				add(d, row, d+n/2, row)
			}
			row++
		case row+2 <= rows:
			for d := range n {
				add(d, row, (d+shift)%n, row+1)
			}
			row += 2
		case bipartite:
			// One row left: each even disk's primary mirrored in the same
			// row on the odd disk d+shift (n/2 superchunks, every disk once).
			for d := 0; d < n; d += 2 {
				add(d, row, (d+shift)%n, row)
			}
			row++
		default:
			// One row left: half a pair, the primaries of disks with
			// even index mirrored in the same row on disk d+shift,
			// taking each disk at most once.
			used := make([]bool, n)
			for d := range n {
				e := (d + shift) % n
				if used[d] || used[e] {
					continue
				}
				used[d], used[e] = true, true
				add(d, row, e, row)
			}
			row++
		}
	}
	return l, nil
}

// Check verifies the layout's invariants and returns an error wrapping
// ErrInvariant naming the first one broken:
//   - every replica is on a disk of the group in a slot of the disk;
//   - 1-mirroring: every superchunk has two replicas on two distinct disks;
//   - a slot holds at most one superchunk;
//   - 1-sharing: no two disks share more than one superchunk (hence at most
//     N−1 superchunks per disk);
//   - IDs are unique and sorted.
func (l Layout) Check() error { return l.check(nil) }

// check is Check, where a pair of disks one of which is dead (dead[d];
// nil: none) may share more than one superchunk: a recovery plan's
// intermediate layout, where what a failed disk shares goes away with it.
func (l Layout) check(dead []bool) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvariant, fmt.Sprintf(format, a...))
	}
	if l.Disks < 2 || l.Slots < 1 {
		return bad("%d disks of %d slots", l.Disks, l.Slots)
	}
	slot := make(map[Place]int)
	pair := make(map[[2]int]int)
	perDisk := make([]int, l.Disks)
	for i, s := range l.Superchunks {
		if i > 0 && s.ID <= l.Superchunks[i-1].ID {
			return bad("superchunk IDs not strictly increasing at %d", s.ID)
		}
		a, b := s.Replicas[0], s.Replicas[1]
		for _, p := range s.Replicas {
			if p.Disk < 0 || p.Disk >= l.Disks || p.Slot < 0 || p.Slot >= l.Slots {
				return bad("superchunk %d at disk %d slot %d, outside %d disks of %d slots", s.ID, p.Disk, p.Slot, l.Disks, l.Slots)
			}
			if o, dup := slot[p]; dup {
				return bad("disk %d slot %d holds superchunks %d and %d", p.Disk, p.Slot, o, s.ID)
			}
			slot[p] = s.ID
			perDisk[p.Disk]++
		}
		if a.Disk == b.Disk {
			return bad("superchunk %d has both replicas on disk %d (1-mirroring)", s.ID, a.Disk)
		}
		k := [2]int{min(a.Disk, b.Disk), max(a.Disk, b.Disk)}
		if o, dup := pair[k]; dup && (dead == nil || !dead[k[0]] && !dead[k[1]]) {
			return bad("disks %d and %d share superchunks %d and %d (1-sharing)", k[0], k[1], o, s.ID)
		}
		pair[k] = s.ID
	}
	for d, c := range perDisk {
		if c > l.Disks-1 {
			return bad("disk %d holds %d superchunks, more than N−1 = %d", d, c, l.Disks-1)
		}
	}
	return nil
}

// OnDisk returns the superchunks with a replica on disk d, by ID.
func (l Layout) OnDisk(d int) []Superchunk {
	var out []Superchunk
	for _, s := range l.Superchunks {
		if _, ok := s.On(d); ok {
			out = append(out, s)
		}
	}
	return out
}

// Shared returns the superchunk disks a and b share, and whether they share
// one (1-sharing: at most one).
func (l Layout) Shared(a, b int) (Superchunk, bool) {
	for _, s := range l.Superchunks {
		_, okA := s.On(a)
		_, okB := s.On(b)
		if okA && okB {
			return s, true
		}
	}
	return Superchunk{}, false
}

// Load returns the number of superchunk replicas on each disk.
func (l Layout) Load() []int {
	load := make([]int, l.Disks)
	for _, s := range l.Superchunks {
		for _, p := range s.Replicas {
			load[p.Disk]++
		}
	}
	return load
}

// freeSlot returns the lowest slot of disk d that holds no superchunk, or
// −1.
func (l Layout) freeSlot(d int) int {
	used := make([]bool, l.Slots)
	for _, s := range l.Superchunks {
		if p, ok := s.On(d); ok {
			used[p.Slot] = true
		}
	}
	return slices.Index(used, false)
}

// sharing returns, for every disk, the set of disks it shares a superchunk
// with.
func (l Layout) sharing() []map[int]bool {
	sh := make([]map[int]bool, l.Disks)
	for d := range sh {
		sh[d] = make(map[int]bool)
	}
	for _, s := range l.Superchunks {
		a, b := s.Replicas[0].Disk, s.Replicas[1].Disk
		sh[a][b], sh[b][a] = true, true
	}
	return sh
}

// String renders the layout as the paper's Fig. 3: one line per slot, one
// column per disk, each cell the ID of the superchunk there ("." if free).
func (l Layout) String() string {
	cells := make([][]string, l.Slots)
	for r := range cells {
		cells[r] = slices.Repeat([]string{"."}, l.Disks)
	}
	for _, s := range l.Superchunks {
		for _, p := range s.Replicas {
			if p.Slot >= 0 && p.Slot < l.Slots && p.Disk >= 0 && p.Disk < l.Disks {
				cells[p.Slot][p.Disk] = fmt.Sprint(s.ID)
			}
		}
	}
	var b strings.Builder
	b.WriteString("slot")
	for d := range l.Disks {
		fmt.Fprintf(&b, " %4s", fmt.Sprintf("D%d", d))
	}
	b.WriteByte('\n')
	for r, row := range cells {
		fmt.Fprintf(&b, "%4d", r)
		for _, c := range row {
			fmt.Fprintf(&b, " %4s", c)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
