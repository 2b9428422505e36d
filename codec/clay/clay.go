package clay

import (
	"bytes"
	"fmt"
	"sync"

	"cairn/codec"
	"cairn/codec/internal/patcache"
)

// defaultBatchBytes is the per-node size of a plane batch: planes of one
// erasure pattern are decoded together, up to this many bytes of each node
// per plane-code kernel call. 16 KiB keeps a batch of ~16 nodes in L2.
const defaultBatchBytes = 16 << 10

// maxCached bounds each schedule cache; when full it is emptied. Patterns
// are few in practice (one per failure pattern of a stripe).
const maxCached = 4096

// Code is clay-K-M-D. It implements codec.Code and codec.SubChunkRepairer.
type Code struct {
	g       geometry
	tf      transform   // the pairwise coupling
	gen     [][]byte    // per-plane scalar code generator, n×(k+ν), read-only
	encPlan *decodePlan // decode of the parity nodes: the encoder

	// batchBytes is the per-node byte budget of a plane batch (see
	// defaultBatchBytes); tests and benchmarks lower it to 0 (one plane per
	// kernel call) to measure what batching buys.
	batchBytes int

	decodes *patcache.Cache[*decodePlan]  // by erased set
	repairs *patcache.Cache[*repairSched] // by (lost, helpers)

	pool sync.Pool // *work
}

var (
	_ codec.Code             = (*Code)(nil)
	_ codec.SubChunkRepairer = (*Code)(nil)
)

// New returns clay-K-M-D: K data and M parity shards, any K of which
// rebuild the stripe, and one lost shard is rebuilt from d helpers reading
// β = α/q sub-chunks each, q = d−K+1.
//
// It needs K ≥ 1, M ≥ 2, K+1 ≤ d ≤ K+M−1, K+M+ν ≤ MaxNodes and α = q^t ≤
// MaxAlpha (t = (K+M+ν)/q, ν the shortening). Errors wrap
// codec.ErrInvalidParams and say which limit was hit.
func New(k, m, d int) (*Code, error) {
	g, err := newGeometry(k, m, d)
	if err != nil {
		return nil, err
	}
	c := &Code{
		g:          g,
		tf:         cephForm,
		gen:        generator(&g),
		batchBytes: defaultBatchBytes,
		decodes:    patcache.New[*decodePlan](maxCached),
		repairs:    patcache.New[*repairSched](maxCached),
	}
	c.pool.New = func() any { return new(work) }
	parity := make([]int, m)
	for j := range parity {
		parity[j] = g.node(k + j)
	}
	if c.encPlan, err = newDecodePlan(&c.g, c.gen, parity); err != nil {
		return nil, fmt.Errorf("clay-%d-%d-%d: %w", k, m, d, err)
	}
	c.encPlan.enableDirect(&c.g)
	return c, nil
}

// Params implements codec.Code: Alpha = ShardMultiple = α.
func (c *Code) Params() codec.Params {
	return codec.Params{K: c.g.k, M: c.g.m, Alpha: c.g.alpha, ShardMultiple: c.g.alpha}
}

// Policy implements codec.Code: clay-K-M-D.
func (c *Code) Policy() codec.Policy {
	return codec.Policy{Scheme: "clay", Args: []int{c.g.k, c.g.m, c.g.d}}
}

// D returns the number of helpers a sub-chunk repair reads.
func (c *Code) D() int { return c.g.d }

// Beta returns β = α/q, the sub-chunks a repair reads from each helper.
func (c *Code) Beta() int { return c.g.beta }

func (c *Code) getWork() *work  { return c.pool.Get().(*work) }
func (c *Code) putWork(w *work) { c.pool.Put(w) }

// batchPlanes returns how many planes of sc-byte sub-chunks go into one
// kernel call.
func (c *Code) batchPlanes(sc int) int { return max(1, c.batchBytes/sc) }

// nodeBufs maps a stripe (by shard) onto internal nodes; virtual nodes get
// nil (all zero).
func (c *Code) nodeBufs(w *work, shards [][]byte) [][]byte {
	if cap(w.nodes) < c.g.n {
		w.nodes = make([][]byte, c.g.n)
	}
	bufs := w.nodes[:c.g.n]
	clear(bufs)
	for j, s := range shards {
		bufs[c.g.node(j)] = s
	}
	return bufs
}

// Encode implements codec.Code. It is the layered decode of the M parity
// nodes (docs/codes.md#clay-layered-decode).
func (c *Code) Encode(shards [][]byte) error {
	size, err := codec.PrepareEncode(c.Params(), shards)
	if err != nil {
		return fmt.Errorf("clay encode: %w", err)
	}
	w := c.getWork()
	defer c.putWork(w)
	v := view{bufs: c.nodeBufs(w, shards), sc: size / c.g.alpha}
	return c.decode(c.encPlan, &v, w)
}

// Verify implements codec.Code: it re-encodes the parity into scratch and
// compares.
func (c *Code) Verify(shards [][]byte) (bool, error) {
	size, err := codec.StripeSize(c.Params(), shards, true)
	if err != nil {
		return false, fmt.Errorf("clay verify: %w", err)
	}
	w := c.getWork()
	defer c.putWork(w)
	k := c.g.k
	parity := w.spares(c.g.m, size)
	stripe := make([][]byte, 0, c.g.k+c.g.m)
	stripe = append(append(stripe, shards[:k]...), parity...)
	v := view{bufs: c.nodeBufs(w, stripe), sc: size / c.g.alpha}
	if err := c.decode(c.encPlan, &v, w); err != nil {
		return false, err
	}
	for j, p := range parity {
		if !bytes.Equal(p, shards[k+j]) {
			return false, nil
		}
	}
	return true, nil
}

// CanReconstruct implements codec.Code: Clay is MDS, any K shards suffice.
func (c *Code) CanReconstruct(present []bool) bool {
	if len(present) != c.g.k+c.g.m {
		return false
	}
	n := 0
	for _, p := range present {
		if p {
			n++
		}
	}
	return n >= c.g.k
}

// Reconstruct implements codec.Code. One wanted shard whose column-mates and
// d helpers are present is rebuilt by the sub-chunk repair (reading β of α
// sub-chunks of d shards and decoding β planes instead of α); otherwise the
// layered decode (docs/codes.md#clay-layered-decode) runs over every missing
// shard, keeping only the wanted ones.
func (c *Code) Reconstruct(shards [][]byte, want []int) error {
	p := c.Params()
	size, err := codec.StripeSize(p, shards, false)
	if err != nil {
		return fmt.Errorf("clay reconstruct: %w", err)
	}
	if want != nil {
		if err := codec.CheckIndices("wanted", want, p.N()); err != nil {
			return fmt.Errorf("clay reconstruct: %w", err)
		}
	}
	var targets, missing []int
	for i, s := range shards {
		if len(s) == 0 {
			missing = append(missing, i)
		}
	}
	if want == nil {
		targets = missing
	} else {
		for _, i := range want {
			if len(shards[i]) == 0 {
				targets = append(targets, i)
			}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	present := codec.Present(shards)
	if len(present) < p.K {
		return fmt.Errorf("clay reconstruct: %w", &codec.UndecodableError{Op: "reconstruct", Want: targets, Available: present})
	}
	w := c.getWork()
	defer c.putWork(w)
	sc := size / c.g.alpha
	if len(targets) == 1 {
		if s, err := c.repairSchedule(targets[0], present); err != nil {
			return fmt.Errorf("clay reconstruct: %w", err)
		} else if s != nil {
			out := codec.Buffer(shards[targets[0]], size)
			v := view{bufs: c.nodeBufs(w, shards), sc: sc}
			if err := c.repair(s, &v, out, w); err != nil {
				return err
			}
			shards[targets[0]] = out
			return nil
		}
	}
	erased := make([]int, len(missing))
	for j, i := range missing {
		erased[j] = c.g.node(i)
	}
	plan, err := c.decodePlan(erased)
	if err != nil {
		return err
	}
	stripe := make([][]byte, len(shards))
	copy(stripe, shards)
	spares := w.spares(len(missing)-len(targets), size)
	isTarget := make(map[int]bool, len(targets))
	for _, i := range targets {
		isTarget[i] = true
		stripe[i] = codec.Buffer(shards[i], size)
	}
	for _, i := range missing {
		if !isTarget[i] {
			stripe[i], spares = spares[0], spares[1:]
		}
	}
	v := view{bufs: c.nodeBufs(w, stripe), sc: sc}
	if err := c.decode(plan, &v, w); err != nil {
		return err
	}
	for _, i := range targets {
		shards[i] = stripe[i]
	}
	return nil
}

// decodePlan returns the cached layered-decode schedule for the erased
// internal nodes (ascending).
func (c *Code) decodePlan(erased []int) (*decodePlan, error) {
	return c.decodes.Get(patcache.Key(erased), func() (*decodePlan, error) {
		return newDecodePlan(&c.g, c.gen, erased)
	})
}
