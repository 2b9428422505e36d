package decide

import (
	"cairn/node/wire"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
// moved to targets[j] (sizes and CRCs unchanged: they were checked), the
// rebuilt file carrying an identity of idents[j] bytes (ShardLoc.Ident:
// what the node reported storing). m is not modified.
func WithShards(m *cairn.Manifest, part int, lost []int, targets []cairn.DiskID, idents []int) *cairn.Manifest {
	next := *m
	move := func(shards []cairn.ShardLoc) []cairn.ShardLoc {
		out := slices.Clone(shards)
		for j, i := range lost {
			out[i].Disk, out[i].Ident = targets[j], idents[j]
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

// IdentifyTargets sets the identity of every target of jobs, rebuilt
// shard files of part (0: the object) of m: the identity the file's
// writer recorded, derived from m (Manifest.IdentityOf), so the rebuilt
// file is the same as the lost one. A target whose identity m cannot
// give (a multipart object committed before manifests named their
// upload) gets none, as its lost file had none; so do the targets of a
// job whose request would grow past what a header carries (many targets
// of a long key): repair must not fail for want of an identity, and the
// manifest records what was stored (ShardLoc.Ident from the reply).
func IdentifyTargets(jobs []Job, m *cairn.Manifest, part int) {
	for _, job := range jobs {
		for k, t := range job.Spec.Store {
			_, r, _ := strings.Cut(t.Shard, ".")
			row, err := strconv.Atoi(r)
			if err != nil {
				continue
			}
			id, err := m.IdentityOf(part, row)
			if err != nil {
				continue
			}
			if b, err := id.Encode(); err == nil {
				job.Spec.Store[k].Identity = b
			}
		}
		if job.Op == Create {
			continue // no request header: a plain PUT
		}
		if _, err := wire.EncodeRepairRequest(wire.RepairRequest{Spec: job.Spec}); err != nil {
			for k := range job.Spec.Store {
				job.Spec.Store[k].Identity = nil
			}
		}
	}
}
