package plan

import (
	"fmt"

	"cairn/codec"
)

// Simulate runs a plan in memory, slice by slice and hop by hop, the way
// an executor would, and returns the bytes each storing node wrote:
// rebuilt[node][lostShard] is a ShardSize buffer. shards is the stripe as
// the helpers see it (index = shard number); only the helpers' shards are
// read, and they must be ShardSize long. Nothing in shards is modified.
//
// It fails if a plan reads a shard it lacks, if a lost shard's slice is
// written twice or never, or if a chain hands partials of the wrong count
// along; it does not check the bytes against anything (the caller compares
// with the originals).
func Simulate(p *Plan, shards [][]byte) (map[string]map[int][]byte, error) {
	out := map[string]map[int][]byte{}
	written := map[int][]int{} // lost shard → times each slice was written
	for _, l := range p.Lost {
		written[l] = make([]int, p.Slices())
	}
	store := func(node string, lost, s int, data []byte) error {
		if out[node] == nil {
			out[node] = map[int][]byte{}
		}
		if out[node][lost] == nil {
			out[node][lost] = make([]byte, p.ShardSize)
		}
		off, _ := p.Range(s)
		copy(out[node][lost][off:], data)
		w, ok := written[lost]
		if !ok {
			return fmt.Errorf("simulate: shard %d is not lost", lost)
		}
		w[s]++
		return nil
	}
	for ti, t := range p.Tasks {
		if len(t.Store) != len(t.Lost) || len(t.Helpers) == 0 {
			return nil, fmt.Errorf("simulate: task %d malformed", ti)
		}
		for s := t.First; s < t.End; s++ {
			off, end := p.Range(s)
			read := func(h Helper) ([]byte, error) {
				if h.Shard < 0 || h.Shard >= len(shards) || int64(len(shards[h.Shard])) != p.ShardSize {
					return nil, fmt.Errorf("simulate: task %d: helper shard %d on %s is missing", ti, h.Shard, h.Node)
				}
				return shards[h.Shard][off:end], nil
			}
			var results [][]byte
			if t.Puller != "" {
				// The puller gathers every helper slice, then decodes.
				got := make([][]byte, len(t.Helpers))
				for i, h := range t.Helpers {
					b, err := read(h)
					if err != nil {
						return nil, err
					}
					got[i] = append([]byte(nil), b...) // the copy that crossed the network
				}
				results = make([][]byte, len(t.Lost))
				for j := range t.Lost {
					results[j] = make([]byte, end-off)
					for i, h := range t.Helpers {
						codec.MulAdd(results[j], got[i], h.Coeffs[j])
					}
				}
			} else {
				// The chain: each hop receives f partials, adds its own
				// multiples, and forwards a fresh message.
				var in [][]byte // I_0 = 0: the first hop receives nothing
				for i, h := range t.Helpers {
					if len(h.Coeffs) != len(t.Lost) {
						return nil, fmt.Errorf("simulate: task %d hop %d has %d coefficients for %d lost shards", ti, i, len(h.Coeffs), len(t.Lost))
					}
					b, err := read(h)
					if err != nil {
						return nil, err
					}
					outp := make([][]byte, len(t.Lost))
					for j := range t.Lost {
						outp[j] = make([]byte, end-off)
						if in != nil {
							copy(outp[j], in[j])
						}
						codec.MulAdd(outp[j], b, h.Coeffs[j])
					}
					in = outp
				}
				results = in
			}
			for j, l := range t.Lost {
				if err := store(t.Store[j], l, s, results[j]); err != nil {
					return nil, err
				}
			}
		}
	}
	for l, w := range written {
		for s, c := range w {
			if c != 1 {
				return nil, fmt.Errorf("simulate: slice %d of shard %d written %d times", s, l, c)
			}
		}
	}
	return out, nil
}

// Assemble joins the pieces Simulate returned into whole rebuilt shards,
// keyed by lost shard: a plan that spreads a shard over survivors (the
// -Sur schemes) leaves each node with its share; this is the migration
// step the paper runs afterwards.
func Assemble(p *Plan, rebuilt map[string]map[int][]byte) map[int][]byte {
	out := map[int][]byte{}
	for _, l := range p.Lost {
		out[l] = make([]byte, p.ShardSize)
	}
	for _, t := range p.Tasks {
		if t.End <= t.First {
			continue
		}
		a, _ := p.Range(t.First)
		_, b := p.Range(t.End - 1)
		for j, l := range t.Lost {
			copy(out[l][a:b], rebuilt[t.Store[j]][l][a:b])
		}
	}
	return out
}
