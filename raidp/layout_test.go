package raidp

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"cairn/internal/golden"
)

// TestNewInvariants is the property test: for every group size up to 64
// and every number of rows, the construction keeps 1-mirroring, 1-sharing
// and its slots, uses exactly the rows asked for, and a complete layout
// (N−1 rows) makes every two disks share exactly one superchunk.
func TestNewInvariants(t *testing.T) {
	for n := 3; n <= 64; n++ {
		for rows := 1; rows <= n-1; rows++ {
			l, err := New(n, rows+1, rows)
			if err != nil {
				t.Fatalf("New(%d, %d, %d): %v", n, rows+1, rows, err)
			}
			if err := l.Check(); err != nil {
				t.Fatalf("N=%d rows=%d: %v", n, rows, err)
			}
			for d, c := range l.Load() {
				if c > rows {
					t.Fatalf("N=%d rows=%d: disk %d holds %d superchunks", n, rows, d, c)
				}
				if rows%2 == 0 && c != rows && !(n%2 == 0 && rows == n-1) {
					t.Fatalf("N=%d rows=%d: disk %d holds %d superchunks, want every row full", n, rows, d, c)
				}
			}
			if l.freeSlot(0) != rows && l.Load()[0] == rows {
				t.Fatalf("N=%d rows=%d: first free slot of disk 0 is %d", n, rows, l.freeSlot(0))
			}
			// Even n, rows < n/2: bipartite (every superchunk joins an even
			// and an odd disk), so no sharing pair has a common neighbour.
			if n%2 == 0 && rows < n/2 {
				sh := l.sharing()
				for _, s := range l.Superchunks {
					a, b := s.Replicas[0].Disk, s.Replicas[1].Disk
					if a%2 == b%2 {
						t.Fatalf("N=%d rows=%d: superchunk %d joins disks %d and %d", n, rows, s.ID, a, b)
					}
					for d := range sh[a] {
						if sh[b][d] {
							t.Fatalf("N=%d rows=%d: disks %d and %d share superchunk %d and a neighbour, disk %d", n, rows, a, b, s.ID, d)
						}
					}
				}
				if len(l.Superchunks) != rows*n/2 {
					t.Fatalf("N=%d rows=%d: %d superchunks, want rows·N/2 = %d", n, rows, len(l.Superchunks), rows*n/2)
				}
			}
			if rows == n-1 {
				sh := l.sharing()
				for a := range n {
					if len(sh[a]) != n-1 {
						t.Fatalf("N=%d complete: disk %d shares with %d disks, want %d", n, a, len(sh[a]), n-1)
					}
				}
				if got, want := len(l.Superchunks), n*(n-1)/2; got != want {
					t.Fatalf("N=%d complete: %d superchunks, want N(N−1)/2 = %d", n, got, want)
				}
			}
		}
	}
}

func TestNewBadInput(t *testing.T) {
	tests := []struct {
		n, slots, rows int
		want           error
	}{
		{2, 1, 1, ErrGroupSize},
		{MaxDisks + 1, 4, 2, ErrGroupSize},
		{7, 6, 7, ErrRows},
		{7, 6, 0, ErrRows},
		{7, 3, 4, ErrRows},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.n, "/", tc.slots, "/", tc.rows), func(t *testing.T) {
			if _, err := New(tc.n, tc.slots, tc.rows); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCheckFindsBrokenLayouts(t *testing.T) {
	tests := []struct {
		name string
		sc   []Superchunk
		want string
	}{
		{"mirror on one disk", []Superchunk{{0, [2]Place{{0, 0}, {0, 1}}}}, "1-mirroring"},
		{"two shared", []Superchunk{{0, [2]Place{{0, 0}, {1, 0}}}, {1, [2]Place{{1, 1}, {0, 1}}}}, "1-sharing"},
		{"slot twice", []Superchunk{{0, [2]Place{{0, 0}, {1, 0}}}, {1, [2]Place{{0, 0}, {2, 0}}}}, "holds superchunks"},
		{"outside", []Superchunk{{0, [2]Place{{0, 0}, {3, 0}}}}, "outside"},
		{"ids", []Superchunk{{1, [2]Place{{0, 0}, {1, 0}}}, {0, [2]Place{{0, 1}, {2, 0}}}}, "IDs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Layout{Disks: 3, Slots: 2, Superchunks: tc.sc}.Check()
			if !errors.Is(err, ErrInvariant) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvariant about %q", err, tc.want)
			}
		})
	}
}

// TestLayoutGolden pins the construction: N=7 complete is the paper's
// Fig. 3 (shifts 1, 2, 3 over row pairs), N=8 adds the half row of
// distance-4 pairs, and N=8 with 4 of 7 slots is what a group with room
// for re-mirroring looks like.
func TestLayoutGolden(t *testing.T) {
	var b strings.Builder
	for _, c := range []struct{ n, slots, rows int }{{7, 6, 6}, {8, 7, 7}, {8, 7, 4}, {5, 4, 3}} {
		l, err := New(c.n, c.slots, c.rows)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "# N=%d slots=%d rows=%d\n%s\n", c.n, c.slots, c.rows, l)
	}
	golden.Check(t, "layouts.txt", b.String())
}
