package decide

import (
	"fmt"
	"slices"

	"cairn"
	"cairn/codec"
)

// Stripe is one shard set of a manifest.
type Stripe struct {
	Part    int    // 0: the object; n: part n
	Version string // names the shard files
	Shards  []cairn.ShardLoc
}

// Row returns the code row shard i holds (and names its file).
func (st Stripe) Row(i int) int { return cairn.RowOf(st.Shards, i) }

// SpareRows returns the shards holding spare rows, by index (nil if none).
func (st Stripe) SpareRows() map[int]int {
	var out map[int]int
	for i, s := range st.Shards {
		if s.Row != 0 {
			if out == nil {
				out = map[int]int{}
			}
			out[i] = s.Row
		}
	}
	return out
}

// Stripes returns m's stripes: the object's, or one per part.
func Stripes(m *cairn.Manifest) []Stripe {
	if len(m.Parts) == 0 {
		return []Stripe{{0, m.Version, m.Shards}}
	}
	out := make([]Stripe, len(m.Parts))
	for i, p := range m.Parts {
		out[i] = Stripe{p.Number, p.Version, p.Shards}
	}
	return out
}

// FindStripe returns m's stripe of part (0: the object's).
func FindStripe(m *cairn.Manifest, part int) (Stripe, bool) {
	for _, s := range Stripes(m) {
		if s.Part == part {
			return s, true
		}
	}
	return Stripe{}, false
}

// StripeCode returns the code that decodes st: the policy's code, or the
// code extended to the spare rows some of its shards hold. A spare row on
// a code without spare rows is cairn.ErrCorrupt.
func StripeCode(code codec.Code, st Stripe) (codec.Code, error) {
	rows := cairn.Rows(st.Shards)
	if rows == code.Params().N() {
		return code, nil
	}
	x, ok := code.(codec.Extensible)
	if !ok {
		return nil, fmt.Errorf("%w: a shard holds row %d, and the code has no spare rows", cairn.ErrCorrupt, rows-1)
	}
	return x.ExtendTo(rows)
}

// HelperIndex returns the index of the shard of st stored as file shard on
// disk (what a node's error names), or -1.
func HelperIndex(st Stripe, disk cairn.DiskID, shard string) int {
	for i, s := range st.Shards {
		if s.Disk == disk && cairn.ShardName(st.Version, st.Row(i)) == shard {
			return i
		}
	}
	return -1
}

// WithShards returns a copy of m whose stripe part has shards lost[j]
// moved to targets[j] (sizes and CRCs unchanged: they were checked). m is
// not modified.
func WithShards(m *cairn.Manifest, part int, lost []int, targets []cairn.DiskID) *cairn.Manifest {
	next := *m
	move := func(shards []cairn.ShardLoc) []cairn.ShardLoc {
		out := slices.Clone(shards)
		for j, i := range lost {
			out[i].Disk = targets[j]
		}
		return out
	}
	if part == 0 {
		next.Shards = move(m.Shards)
		return &next
	}
	next.Parts = slices.Clone(m.Parts)
	for k := range next.Parts {
		if next.Parts[k].Number == part {
			next.Parts[k].Shards = move(next.Parts[k].Shards)
		}
	}
	return &next
}
