package codecbench

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"cairn/codec"
)

// overheadTrials is the number of seeded trials behind the overhead_*
// fields.
const overheadTrials = 1000

// ratelessOps returns the operations for a rateless code that is also a
// codec.Code with K source and (X−1)·K repair shards (lt-K-X). Bytes
// credited per call are K·shard, the stripe's source data, for every op
// but mulacc:
//
//	encode        Encode: all (X−1)·K repair blocks of a stripe (plan cached)
//	encodeblocks  K repair blocks (fresh IDs ≥ X·K) from a RatelessEncoder made
//	              once: the per-block cost of on-demand encoding
//	decode        a rateless decoder fed the first decodable blocks of a random
//	              order over all X·K IDs, then Source (symbolic solves included)
//	decoderepair  the same from repair blocks only (every source block lost)
//	decode1       Reconstruct of one lost source shard (the data path)
//	mulacc, memcpy  as for every code
//
// decode and decoderepair carry the reception overhead over 1000 seeded
// trials of their kind of order, as fractions of K: overhead_mean,
// overhead_p50, overhead_p99, overhead_max (and overhead_trials). The
// trials use the payload-free Decodable check.
func ratelessOps(c codec.Code, r codec.Rateless, shard int, seed uint64) ([]Op, error) {
	p := c.Params()
	if m := max(p.ShardMultiple, r.BlockMultiple(), 1); shard%m != 0 {
		return nil, fmt.Errorf("shard size %d is not a multiple of %d, which %s needs", shard, m, c.Policy())
	}
	k, n := p.K, p.N()
	if r.SourceBlocks() != k {
		return nil, fmt.Errorf("%s: %d source blocks but K=%d shards", c.Policy(), r.SourceBlocks(), k)
	}
	stripe := func() ([][]byte, error) {
		rng := rand.New(rand.NewPCG(seed, 1))
		shards := make([][]byte, n)
		for i := range k {
			shards[i] = make([]byte, shard)
			for j := range shards[i] {
				shards[i][j] = byte(rng.Uint32())
			}
		}
		return shards, c.Encode(shards)
	}
	data := int64(k * shard)
	ops := []Op{{
		Name: "encode", Bytes: data,
		Extra: map[string]float64{"repair_blocks": float64(n - k)},
		New: func() (func() error, error) {
			s, err := stripe()
			return func() error { return c.Encode(s) }, err
		},
	}, {
		Name: "encodeblocks", Bytes: data,
		Extra: map[string]float64{"repair_blocks": float64(k)},
		New: func() (func() error, error) {
			s, err := stripe()
			if err != nil {
				return nil, err
			}
			enc, err := r.NewEncoder(s[:k])
			if err != nil {
				return nil, err
			}
			ids := make([]int, k)
			dst := make([][]byte, k)
			for i := range dst {
				dst[i] = make([]byte, shard)
			}
			next := n
			return func() error {
				for i := range ids {
					ids[i] = next % r.MaxBlockID()
					next++
				}
				return enc.EncodeBlocks(ids, dst)
			}, nil
		},
	}}
	for _, d := range []struct {
		name       string
		repairOnly bool
	}{{"decode", false}, {"decoderepair", true}} {
		order, err := decodableOrder(r, k, n, seed, d.repairOnly)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Policy(), err)
		}
		st := overheadStats(r, k, n, overheadTrials, seed, d.repairOnly)
		have := 0 // source blocks among the blocks read
		for _, id := range order {
			if id < k {
				have++
			}
		}
		st["blocks_read"] = float64(len(order))
		st["source_lost"] = float64(k - have)
		ops = append(ops, Op{
			Name: d.name, Bytes: data, Extra: st,
			New: func() (func() error, error) {
				s, err := stripe()
				out := make([][]byte, k)
				for i := range out {
					out[i] = make([]byte, shard)
				}
				return func() error {
					dec, err := r.NewDecoder(shard)
					if err != nil {
						return err
					}
					for _, id := range order {
						if _, err := dec.Add(id, s[id]); err != nil {
							return err
						}
					}
					return dec.Source(out)
				}, err
			},
		})
	}
	lost, err := dataPattern(c, 1)
	if err != nil {
		return nil, err
	}
	ops = append(ops, Op{
		Name: "decode1", Bytes: data,
		Extra: map[string]float64{"lost": float64(len(lost))},
		New: func() (func() error, error) {
			s, err := stripe()
			return func() error {
				for _, i := range lost {
					s[i] = s[i][:0]
				}
				return c.Reconstruct(s, codec.Data(k))
			}, err
		},
	})
	return append(ops, referenceOps(shard, data)...), nil
}

// shuffled returns the IDs 0..n−1 (K..n−1 with repairOnly) in a seeded
// random order.
func shuffled(k, n int, rng *rand.Rand, repairOnly bool) []int {
	lo := 0
	if repairOnly {
		lo = k
	}
	ids := make([]int, n-lo)
	for i := range ids {
		ids[i] = lo + i
	}
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// minDecodable returns the length of the shortest decodable prefix of ids
// (len(ids)+1 if none).
func minDecodable(r codec.Rateless, k int, ids []int) int {
	m := k
	for m <= len(ids) && !r.Decodable(ids[:m]) {
		m++
	}
	return m
}

// decodableOrder returns the shortest decodable prefix of a seeded random
// order of the stripe's IDs.
func decodableOrder(r codec.Rateless, k, n int, seed uint64, repairOnly bool) ([]int, error) {
	ids := shuffled(k, n, rand.New(rand.NewPCG(seed, 2)), repairOnly)
	m := minDecodable(r, k, ids)
	if m > len(ids) {
		return nil, fmt.Errorf("the stripe's %d blocks do not decode", len(ids))
	}
	return ids[:m], nil
}

// overheadStats measures the reception overhead (blocks beyond K needed,
// as a fraction of K) over seeded random orders.
func overheadStats(r codec.Rateless, k, n, trials int, seed uint64, repairOnly bool) map[string]float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	extra := make([]int, trials)
	for t := range extra {
		extra[t] = minDecodable(r, k, shuffled(k, n, rng, repairOnly)) - k
	}
	slices.Sort(extra)
	sum := 0
	for _, e := range extra {
		sum += e
	}
	fk := float64(k)
	return map[string]float64{
		"overhead_mean":   float64(sum) / float64(trials) / fk,
		"overhead_p50":    float64(extra[(trials-1)/2]) / fk,
		"overhead_p99":    float64(extra[(trials*99+99)/100-1]) / fk,
		"overhead_max":    float64(extra[trials-1]) / fk,
		"overhead_trials": float64(trials),
	}
}
