package codecbench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn/codec"
)

// Op is one measured operation.
type Op struct {
	Name  string             // encode | decode1 | decodem | repair | mulacc | memcpy
	Bytes int64              // bytes credited per call of the runner
	Extra map[string]float64 // extra result fields (e.g. repair_read_bytes)
	// New prepares private buffers for one goroutine and returns the
	// function to time.
	New func() (run func() error, err error)
}

// Result is one measurement.
type Result struct {
	Code      string             `json:"code"`
	Op        string             `json:"op"`
	Threads   int                `json:"threads"`
	Shard     int                `json:"shard_bytes"`
	Bytes     int64              `json:"bytes"`
	Seconds   float64            `json:"seconds"`
	BytesPerS float64            `json:"bytes_per_s"`
	Extra     map[string]float64 `json:"-"`
}

// Ops returns the operations for code c with shards of the given size.
func Ops(c codec.Code, shard int, seed uint64) ([]Op, error) {
	if r, ok := c.(codec.Rateless); ok {
		return ratelessOps(c, r, shard, seed)
	}
	p := c.Params()
	if m := max(p.ShardMultiple, 1); shard%m != 0 {
		return nil, fmt.Errorf("shard size %d is not a multiple of %d, which %s needs", shard, m, c.Policy())
	}
	stripe := func() ([][]byte, error) {
		rng := rand.New(rand.NewPCG(seed, 1))
		shards := make([][]byte, p.N())
		for i := range p.K {
			shards[i] = make([]byte, shard)
			for j := range shards[i] {
				shards[i][j] = byte(rng.Uint32())
			}
		}
		return shards, c.Encode(shards)
	}
	data := int64(p.K * shard)
	ops := []Op{{
		Name: "encode", Bytes: data,
		New: func() (func() error, error) {
			s, err := stripe()
			return func() error { return c.Encode(s) }, err
		},
	}}
	for _, d := range []struct {
		name string
		lost int
	}{{"decode1", 1}, {"decodem", p.M}} {
		lost, err := dataPattern(c, d.lost)
		if err != nil {
			return nil, err
		}
		ops = append(ops, Op{
			Name: d.name, Bytes: data,
			Extra: map[string]float64{"lost": float64(len(lost))},
			New: func() (func() error, error) {
				s, err := stripe()
				return func() error {
					for _, i := range lost {
						s[i] = s[i][:0]
					}
					return c.Reconstruct(s, codec.Data(p.K))
				}, err
			},
		})
	}
	if op, ok, err := repairOp(c, shard, stripe); err != nil {
		return nil, err
	} else if ok {
		ops = append(ops, op)
	}
	return append(ops, referenceOps(shard, data)...), nil
}

// referenceOps measures the mul-acc primitive on one shard and memcpy of
// data bytes, the reference every other op is compared with.
func referenceOps(shard int, data int64) []Op {
	return []Op{{
		Name: "mulacc", Bytes: int64(shard),
		New: func() (func() error, error) {
			src, dst := make([]byte, shard), make([]byte, shard)
			for i := range src {
				src[i] = byte(i*7 + 1)
			}
			return func() error { codec.MulAdd(dst, src, 0x8e); return nil }, nil
		},
	}, {
		Name: "memcpy", Bytes: data,
		New: func() (func() error, error) {
			src, dst := make([]byte, data), make([]byte, data)
			return func() error { copy(dst, src); return nil }, nil
		},
	}}
}

// dataPattern returns up to n data shards to lose that the code can
// decode: the first decodable choice, spreading losses over the stripe (for
// an LRC, across local groups).
func dataPattern(c codec.Code, n int) ([]int, error) {
	p := c.Params()
	n = min(n, p.K)
	for ; n > 0; n-- {
		// Spread: shard i·K/n for i < n.
		lost := make([]int, n)
		present := make([]bool, p.N())
		for i := range present {
			present[i] = true
		}
		for i := range lost {
			lost[i] = i * p.K / n
			present[lost[i]] = false
		}
		if c.CanReconstruct(present) {
			return lost, nil
		}
	}
	return nil, fmt.Errorf("%s cannot lose even one data shard", c.Policy())
}

// repairOp returns the repair operation for codes with a repair capability.
// Codes with a cheaper repair than a full decode add their case here.
func repairOp(c codec.Code, shard int, stripe func() ([][]byte, error)) (Op, bool, error) {
	p := c.Params()
	switch r := c.(type) {
	case codec.SubChunkRepairer:
		return subChunkRepairOp(c, r, shard, stripe)
	case codec.LinearRepairer:
		avail := make([]int, 0, p.N()-1)
		for i := 1; i < p.N(); i++ {
			avail = append(avail, i)
		}
		plan, err := r.RepairPlan([]int{0}, avail)
		if err != nil {
			return Op{}, false, err
		}
		return Op{
			Name: "repair", Bytes: int64(shard),
			Extra: map[string]float64{"repair_read_bytes": float64(len(plan.Helpers)), "helpers": float64(len(plan.Helpers))},
			New: func() (func() error, error) {
				s, err := stripe()
				in := make([][]byte, len(plan.Helpers))
				for i, h := range plan.Helpers {
					in[i] = s[h]
				}
				out := [][]byte{make([]byte, shard)}
				return func() error { return plan.Repair(in, out) }, err
			},
		}, true, nil
	}
	return Op{}, false, nil
}

// Measure runs op on threads goroutines for about d and returns the
// throughput over all of them. threads ≤ 0 means GOMAXPROCS.
func Measure(op Op, threads int, d time.Duration) (Result, error) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	runs := make([]func() error, threads)
	for i := range runs {
		run, err := op.New()
		if err != nil {
			return Result{}, fmt.Errorf("%s: setup: %w", op.Name, err)
		}
		// Warm up: caches, plan caches, page faults.
		for range 3 {
			if err := run(); err != nil {
				return Result{}, fmt.Errorf("%s: %w", op.Name, err)
			}
		}
		runs[i] = run
	}
	var g errgroup.Group
	calls := make([]int64, threads)
	start := time.Now()
	deadline := start.Add(d)
	for i := range threads {
		g.Go(func() error {
			// At least one round each, even if this goroutine starts after
			// the deadline (a loaded machine): a measure is never empty.
			for first := true; first || time.Now().Before(deadline); first = false {
				for range 4 {
					if err := runs[i](); err != nil {
						return err
					}
					calls[i]++
				}
			}
			return nil
		})
	}
	err := g.Wait()
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", op.Name, err)
	}
	var total int64
	for i := range threads {
		total += calls[i] * op.Bytes
	}
	return Result{Op: op.Name, Threads: threads, Bytes: total, Seconds: elapsed, BytesPerS: float64(total) / elapsed, Extra: op.Extra}, nil
}
