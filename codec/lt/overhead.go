package lt

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// OverheadStats is the reception overhead of a code over seeded trials:
// in each trial the blocks arrive in a random order and the decoder stops
// at the first prefix that determines the source; the overhead is how many
// blocks beyond K that prefix holds. Fractions are of K.
type OverheadStats struct {
	K, X       int
	Trials     int
	Seed       uint64
	RepairOnly bool // blocks were drawn from the repair IDs K..X·K−1 only

	Mean, P50, P99, Max float64 // extra blocks / K
	MeanBlocks          float64 // extra blocks
	P50Blocks           int
	P99Blocks           int
	MaxBlocks           int
	AtK                 float64 // fraction of trials decoded from exactly K blocks
	Failures            int     // trials in which all drawn IDs did not decode (counted as one block more than drawn)
}

func (s OverheadStats) String() string {
	what := "random order over IDs 0..X·K−1"
	if s.RepairOnly {
		what = "repair blocks only"
	}
	return fmt.Sprintf("K=%d X=%d, %d trials (%s, seed %d): overhead mean %.4f%% (%.3f blocks), p50 %d, p99 %d, max %d blocks; %.2f%% decode from exactly K",
		s.K, s.X, s.Trials, what, s.Seed, 100*s.Mean, s.MeanBlocks, s.P50Blocks, s.P99Blocks, s.MaxBlocks, 100*s.AtK)
}

// Overhead measures the reception overhead over trials seeded trials with
// blocks drawn in random order from IDs 0..X·K−1 (or only the repair IDs
// K..X·K−1). It is symbolic: no payload is decoded, so 1000 trials at
// K = 1024 take well under a second per core.
func (c *Code) Overhead(trials int, seed uint64, repairOnly bool) OverheadStats {
	st := OverheadStats{K: c.k, X: c.x, Trials: trials, Seed: seed, RepairOnly: repairOnly}
	if trials <= 0 {
		return st
	}
	rng := rand.New(rand.NewPCG(seed, uint64(c.k)<<32|uint64(c.x)))
	lo := 0
	if repairOnly {
		lo = c.k
	}
	ids := make([]int, c.k*c.x-lo)
	extra := make([]int, trials)
	s := c.solver()
	defer c.solvers.Put(s)
	atK := 0
	for t := range trials {
		for i := range ids {
			ids[i] = lo + i
		}
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		n := c.k
		for n <= len(ids) {
			d := s.deficit(ids[:n])
			if d == 0 {
				break
			}
			n += d
		}
		if n > len(ids) {
			n = len(ids) + 1
			st.Failures++
		}
		extra[t] = n - c.k
		if n == c.k {
			atK++
		}
	}
	slices.Sort(extra)
	sum := 0
	for _, e := range extra {
		sum += e
	}
	st.MeanBlocks = float64(sum) / float64(trials)
	st.P50Blocks = extra[(trials-1)/2]
	st.P99Blocks = extra[min(trials-1, (trials*99+99)/100-1)]
	st.MaxBlocks = extra[trials-1]
	k := float64(c.k)
	st.Mean, st.P50, st.P99, st.Max = st.MeanBlocks/k, float64(st.P50Blocks)/k, float64(st.P99Blocks)/k, float64(st.MaxBlocks)/k
	st.AtK = float64(atK) / float64(trials)
	return st
}

// OverheadTableKs are the K of the reception-overhead table the issue asks
// for.
var OverheadTableKs = []int{128, 256, 1024}

// OverheadTable measures lt-K-X (seed 0) for each K in ks (OverheadTableKs
// if nil) over trials trials with blocks in random order over all X·K IDs:
// one row per K. The error (a bad K or X) wraps codec.ErrInvalidParams.
func OverheadTable(ks []int, x, trials int, seed uint64) ([]OverheadStats, error) {
	if ks == nil {
		ks = OverheadTableKs
	}
	var rows []OverheadStats
	for _, k := range ks {
		c, err := New(k, x)
		if err != nil {
			return nil, err
		}
		rows = append(rows, c.Overhead(trials, seed, false))
	}
	return rows, nil
}
