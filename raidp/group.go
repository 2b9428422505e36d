package raidp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ErrGroup: a group's state is inconsistent (disks, domains, size, or its
// layout).
var ErrGroup = errors.New("raidp: bad group")

// GroupDisk is one disk of a group: its cluster disk ID and its failure
// domain (the node, or a rack); no two disks of a group share a domain.
type GroupDisk struct {
	ID     string `json:"id"`
	Domain string `json:"domain"`
}

// Group is a RAIDP group as the cluster stores it: the value kept in the
// metadata store (etcd) and changed only by a compare-and-swap from
// Generation to Generation+1, so two directors never both apply a
// recovery. Layout disk i is Disks[i]; Out lists the disks that left the
// group (failed and re-mirrored away: they hold no superchunk).
type Group struct {
	Name       string      `json:"name"`
	Generation uint64      `json:"generation"`
	Size       int64       `json:"superchunk_size"`
	Disks      []GroupDisk `json:"disks"`
	Out        []int       `json:"out,omitempty"`
	Layout     Layout      `json:"layout"`
}

// NewGroup lays out a new group of disks (Generation 1) with the Fig. 3
// construction (New).
func NewGroup(name string, disks []GroupDisk, size int64, slots, rows int) (Group, error) {
	l, err := New(len(disks), slots, rows)
	if err != nil {
		return Group{}, err
	}
	g := Group{Name: name, Generation: 1, Size: size, Disks: slices.Clone(disks), Layout: l}
	return g, g.Validate()
}

// Validate checks a group: a name, a positive size, distinct disk IDs and
// failure domains, the layout over exactly these disks with its invariants
// (Layout.Check), and no superchunk on a disk that is out.
func (g Group) Validate() error {
	if g.Name == "" || g.Size <= 0 || g.Generation == 0 {
		return fmt.Errorf("%w: name %q, size %d, generation %d", ErrGroup, g.Name, g.Size, g.Generation)
	}
	if g.Layout.Disks != len(g.Disks) {
		return fmt.Errorf("%w: %s: layout of %d disks for %d disks", ErrGroup, g.Name, g.Layout.Disks, len(g.Disks))
	}
	ids, domains := make(map[string]bool), make(map[string]bool)
	for i, d := range g.Disks {
		switch {
		case d.ID == "" || d.Domain == "":
			return fmt.Errorf("%w: %s: disk %d has no ID or domain", ErrGroup, g.Name, i)
		case ids[d.ID]:
			return fmt.Errorf("%w: %s: disk %s twice", ErrGroup, g.Name, d.ID)
		case domains[d.Domain]:
			return fmt.Errorf("%w: %s: two disks in failure domain %s", ErrGroup, g.Name, d.Domain)
		}
		ids[d.ID], domains[d.Domain] = true, true
	}
	if err := g.Layout.Check(); err != nil {
		return fmt.Errorf("%s: %w", g.Name, err)
	}
	for _, d := range g.Out {
		if d < 0 || d >= len(g.Disks) {
			return fmt.Errorf("%w: %s: out disk %d", ErrGroup, g.Name, d)
		}
		if n := len(g.Layout.OnDisk(d)); n > 0 {
			return fmt.Errorf("%w: %s: disk %s is out but holds %d superchunks", ErrGroup, g.Name, g.Disks[d].ID, n)
		}
	}
	return nil
}

// Recovered returns the group once a recovery is done: the plan's layout,
// the failed disks out, and the next generation — the value to
// compare-and-swap against g.
func (g Group) Recovered(after Layout, failed ...int) (Group, error) {
	n := g
	n.Generation++
	n.Layout = after
	n.Out = slices.Clone(g.Out)
	for _, d := range failed {
		if !slices.Contains(n.Out, d) {
			n.Out = append(n.Out, d)
		}
	}
	slices.Sort(n.Out)
	return n, n.Validate()
}

// DecodeGroup parses a stored group and validates it.
func DecodeGroup(b []byte) (Group, error) {
	var g Group
	if err := json.Unmarshal(b, &g); err != nil {
		return Group{}, fmt.Errorf("%w: %v", ErrGroup, err)
	}
	return g, g.Validate()
}
