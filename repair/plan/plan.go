package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"cairn/codec"
)

// Scheme is one of the four reconstruction schemes of the PUSH paper.
type Scheme int

// The schemes. The zero value is not a scheme.
const (
	// PullRep: a replacement node fetches the helper shards and decodes.
	PullRep Scheme = iota + 1
	// PullSur: the lost shards are split into shares; each share is
	// rebuilt by a survivor that pulls the helpers' slices.
	PullSur
	// PushRep: one chain of helpers whose last hop forwards the finished
	// partials to the replacement node(s).
	PushRep
	// PushSur: one chain per share, each ending at the survivor that
	// stores the share.
	PushSur
)

// Schemes lists every scheme, in the chooser's order of preference (ties
// go to the earlier one).
var Schemes = []Scheme{PushSur, PushRep, PullSur, PullRep}

func (s Scheme) String() string {
	switch s {
	case PullRep:
		return "pull-rep"
	case PullSur:
		return "pull-sur"
	case PushRep:
		return "push-rep"
	case PushSur:
		return "push-sur"
	}
	return fmt.Sprintf("scheme(%d)", int(s))
}

// Push reports whether s is a chain (PUSH) scheme.
func (s Scheme) Push() bool { return s == PushRep || s == PushSur }

// Rep reports whether s writes the rebuilt shards to replacement nodes.
func (s Scheme) Rep() bool { return s == PullRep || s == PushRep }

// ParseScheme parses the String form of a scheme ("push-sur", ...).
func ParseScheme(name string) (Scheme, error) {
	for _, s := range Schemes {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown scheme %q (known: pull-rep, pull-sur, push-rep, push-sur)", ErrInvalid, name)
}

// Errors returned by Build. Errors from the code's RepairPlan (an
// *codec.UndecodableError, test with errors.Is(err, codec.ErrUndecodable))
// are wrapped and passed through.
var (
	// ErrInvalid: the input is malformed (see the message).
	ErrInvalid = errors.New("repair plan: invalid input")
	// ErrNotLinear: the code is not a scalar linear code (it does not
	// implement codec.LinearRepairer, or its sub-packetization is not 1),
	// so it cannot be repaired slice by slice with MulAdd.
	ErrNotLinear = errors.New("repair plan: code has no linear repair")
	// ErrNoTarget: the scheme needs a replacement (-Rep) or a survivor
	// (-Sur) to store rebuilt data and the input names none.
	ErrNoTarget = errors.New("repair plan: no node to store rebuilt data")
)

// Input describes one stripe to repair. Build does not modify it or keep
// references to its slices.
type Input struct {
	// Code is the stripe's code; it must implement codec.LinearRepairer
	// with Params().Alpha == 1 (RS, LRC).
	Code codec.Code
	// Lost lists the shard indices to rebuild (f of them), in the order
	// the plan reports them.
	Lost []int
	// Nodes[i] is the node holding shard i, for every shard index of the
	// stripe; "" marks a shard that is unavailable. Entries of lost shards
	// are ignored.
	Nodes []string
	// Replacements are the nodes that may receive rebuilt shards under
	// PULL-Rep and PUSH-Rep: Lost[j] goes to Replacements[j mod
	// len(Replacements)], so one replacement per lost shard spreads them.
	Replacements []string
	// Survivors are the nodes that may store shares of the rebuilt data
	// under PULL-Sur and PUSH-Sur. nil means every node in Nodes holding an
	// available shard. A survivor that is also a helper of its share is the
	// last hop of its chain; any other survivor is one hop more.
	Survivors []string
	// Weights gives the survivors' relative speeds (optional, default 1
	// each; zero or negative weights are treated as 1). Shares of the
	// rebuilt data are proportional to weight, so slow nodes end fewer
	// chains (the paper's heterogeneity-aware future work, first step).
	Weights map[string]float64
	// ShardSize is the shard length in bytes (> 0).
	ShardSize int64
	// Unit is the request unit (slice) in bytes (> 0): the granularity at
	// which chains pipeline and shares are cut. The last slice may be short.
	Unit int64
	// Rotate (e.g. the stripe number) rotates helper choice, chain order
	// and share assignment so that, summed over many stripes, every node
	// carries an equal share. Any integer; the same value gives the same plan.
	Rotate int
}

// Plan says, for one stripe and one scheme, who reads, sends, computes and
// stores what. The shard is cut into Slices() slices of Unit bytes; each
// Task covers a contiguous run of slices and is run slice by slice.
//
// A plan is a value: it shares the coefficient slices of the codec's
// cached RepairPlan, which must not be modified.
type Plan struct {
	Scheme    Scheme
	Policy    string
	Lost      []int // all shards rebuilt by the plan
	ShardSize int64
	Unit      int64
	Tasks     []Task
}

// Task rebuilds the shards in Lost on the slices [First, End).
//
// PULL (Puller != ""): for every slice, each helper reads its slice of
// Shard and sends it to Puller (a local read when Puller is the helper's
// node); Puller computes D_j = Σ_i Helpers[i].Coeffs[j]·S_i and hands D_j to
// Store[j] (a send if Store[j] != Puller), which writes it.
//
// PUSH (Puller == ""): Helpers is the chain in order. For every slice,
// hop i reads its slice S_i of Shard, receives the f partials I_{i-1}
// from hop i−1 (I_0 = 0, nothing received), computes
// I_i[j] = Helpers[i].Coeffs[j]·S_i + I_{i−1}[j] for every j, and forwards
// the f partials to hop i+1. The last hop sends I_k[j] — the rebuilt slice
// of Lost[j] — to Store[j], or writes it itself when it is Store[j].
// Consecutive hops on one node hand partials over in memory.
type Task struct {
	First, End int      // slice range [First, End)
	Lost       []int    // shards this task rebuilds (a subset of Plan.Lost)
	Helpers    []Helper // PUSH: chain order; PULL: fetch order
	Puller     string   // PULL only: the node that gathers and decodes
	Store      []string // Store[j]: node that writes the rebuilt Lost[j]
}

// Helper is one helper shard's role in a task.
type Helper struct {
	Node   string
	Shard  int
	Coeffs []byte // Coeffs[j]: weight of this shard in Task.Lost[j]
}

// Slices returns the number of slices of a shard: ⌈ShardSize/Unit⌉.
func (p *Plan) Slices() int { return int((p.ShardSize + p.Unit - 1) / p.Unit) }

// Range returns the byte range [off, end) of slice s.
func (p *Plan) Range(s int) (off, end int64) {
	off = int64(s) * p.Unit
	return off, min(off+p.Unit, p.ShardSize)
}

// Bytes returns the bytes covered by slices [first, end).
func (p *Plan) Bytes(first, end int) int64 {
	if end <= first {
		return 0
	}
	a, _ := p.Range(first)
	_, b := p.Range(end - 1)
	return b - a
}

// Last returns the node of the chain's last hop (PUSH tasks).
func (t *Task) Last() string { return t.Helpers[len(t.Helpers)-1].Node }

// Build plans the repair of one stripe with one scheme. See Input for the
// inputs and Plan for the meaning of the result. It returns ErrInvalid,
// ErrNotLinear or ErrNoTarget (wrapped), or the codec's error when the
// available shards do not determine the lost ones.
func Build(s Scheme, in Input) (*Plan, error) {
	lr, err := check(s, in)
	if err != nil {
		return nil, err
	}
	avail := available(in)
	p := &Plan{Scheme: s, Policy: in.Code.Policy().String(), Lost: slices.Clone(in.Lost), ShardSize: in.ShardSize, Unit: in.Unit}
	n := p.Slices()
	switch s {
	case PullRep, PushRep:
		if len(in.Replacements) == 0 {
			return nil, fmt.Errorf("%w: %s needs a replacement node", ErrNoTarget, s)
		}
		rp, err := lr.RepairPlan(in.Lost, rotate(avail, in.Rotate))
		if err != nil {
			return nil, fmt.Errorf("repair plan: %w", err)
		}
		store := make([]string, len(in.Lost))
		for j := range store {
			store[j] = in.Replacements[j%len(in.Replacements)]
		}
		if s == PushRep {
			t := Task{First: 0, End: n, Lost: p.Lost, Store: store}
			t.Helpers = chain(helpers(rp, in.Nodes, allRows(len(in.Lost))), "", in.Rotate)
			p.Tasks = append(p.Tasks, t)
			break
		}
		// PULL-Rep: each replacement pulls every helper once and decodes
		// the lost shards assigned to it.
		for ri, r := range in.Replacements {
			var rows []int
			for j := range in.Lost {
				if j%len(in.Replacements) == ri {
					rows = append(rows, j)
				}
			}
			if len(rows) == 0 {
				continue
			}
			t := Task{First: 0, End: n, Puller: r, Helpers: helpers(rp, in.Nodes, rows)}
			for _, j := range rows {
				t.Lost = append(t.Lost, in.Lost[j])
				t.Store = append(t.Store, r)
			}
			p.Tasks = append(p.Tasks, t)
		}
	case PullSur, PushSur:
		sur := in.Survivors
		if sur == nil {
			sur = holders(in, avail)
		}
		if len(sur) == 0 {
			return nil, fmt.Errorf("%w: %s needs a surviving node", ErrNoTarget, s)
		}
		sur = rotate(sur, in.Rotate)
		for g, sh := range shares(sur, in.Weights, n) {
			if sh.first == sh.end {
				continue
			}
			x := sh.node
			// Prefer x's own shards, so x is a helper (the chain's last hop,
			// or the puller reading one helper locally), then the others
			// rotated per share so helper sets and first hops vary.
			var own, rest []int
			for _, i := range avail {
				if in.Nodes[i] == x {
					own = append(own, i)
				} else {
					rest = append(rest, i)
				}
			}
			rp, err := lr.RepairPlan(in.Lost, append(own, rotate(rest, in.Rotate+g)...))
			if err != nil {
				return nil, fmt.Errorf("repair plan: %w", err)
			}
			t := Task{First: sh.first, End: sh.end, Lost: p.Lost}
			for range in.Lost {
				t.Store = append(t.Store, x)
			}
			hs := helpers(rp, in.Nodes, allRows(len(in.Lost)))
			if s == PushSur {
				t.Helpers = chain(hs, x, in.Rotate+g)
			} else {
				t.Helpers = hs
				t.Puller = x
			}
			p.Tasks = append(p.Tasks, t)
		}
	}
	return p, nil
}

func check(s Scheme, in Input) (codec.LinearRepairer, error) {
	if s < PullRep || s > PushSur {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, s)
	}
	if in.Code == nil {
		return nil, fmt.Errorf("%w: no code", ErrInvalid)
	}
	lr, ok := in.Code.(codec.LinearRepairer)
	if !ok || in.Code.Params().Alpha != 1 {
		return nil, fmt.Errorf("%w: %s", ErrNotLinear, in.Code.Policy())
	}
	n := in.Code.Params().N()
	if len(in.Nodes) != n {
		return nil, fmt.Errorf("%w: %d node entries for a stripe of %d shards", ErrInvalid, len(in.Nodes), n)
	}
	if len(in.Lost) == 0 {
		return nil, fmt.Errorf("%w: nothing lost", ErrInvalid)
	}
	if err := codec.CheckIndices("lost", in.Lost, n); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if in.ShardSize <= 0 || in.Unit <= 0 {
		return nil, fmt.Errorf("%w: shard size %d and unit %d must be positive", ErrInvalid, in.ShardSize, in.Unit)
	}
	for _, list := range [][]string{in.Replacements, in.Survivors} {
		for i, x := range list {
			if x == "" || slices.Contains(list[:i], x) {
				return nil, fmt.Errorf("%w: target node %q empty or repeated", ErrInvalid, x)
			}
		}
	}
	return lr, nil
}

// available returns the shard indices that are neither lost nor without a
// node, ascending.
func available(in Input) []int {
	var out []int
	for i, n := range in.Nodes {
		if n != "" && !slices.Contains(in.Lost, i) {
			out = append(out, i)
		}
	}
	return out
}

// holders returns the distinct nodes holding available shards, in shard order.
func holders(in Input, avail []int) []string {
	var out []string
	for _, i := range avail {
		if !slices.Contains(out, in.Nodes[i]) {
			out = append(out, in.Nodes[i])
		}
	}
	return out
}

// rotate returns a copy of xs rotated left by r (mod len).
func rotate[T any](xs []T, r int) []T {
	if len(xs) == 0 {
		return nil
	}
	r = ((r % len(xs)) + len(xs)) % len(xs)
	return append(slices.Clone(xs[r:]), xs[:r]...)
}

func allRows(f int) []int {
	rows := make([]int, f)
	for j := range rows {
		rows[j] = j
	}
	return rows
}

// helpers turns a codec repair plan into Helper entries carrying the
// coefficient rows listed in rows (indices into the plan's Lost).
func helpers(rp *codec.RepairPlan, nodes []string, rows []int) []Helper {
	out := make([]Helper, len(rp.Helpers))
	for i, sh := range rp.Helpers {
		c := make([]byte, len(rows))
		for jj, j := range rows {
			c[jj] = rp.Coeffs[j][i]
		}
		out[i] = Helper{Node: nodes[sh], Shard: sh, Coeffs: c}
	}
	return out
}

// chain orders helpers into a chain: by shard index rotated by rot (so the
// first hop, which receives nothing, varies), hops on the same node
// adjacent (so a node receives each partial once), and the hops of node
// last at the end.
func chain(hs []Helper, last string, rot int) []Helper {
	hs = slices.Clone(hs)
	slices.SortFunc(hs, func(a, b Helper) int { return a.Shard - b.Shard })
	var order []string
	for _, h := range hs {
		if h.Node != last && !slices.Contains(order, h.Node) {
			order = append(order, h.Node)
		}
	}
	order = append(rotate(order, rot), last)
	out := make([]Helper, 0, len(hs))
	for _, n := range order {
		for _, h := range hs {
			if h.Node == n {
				out = append(out, h)
			}
		}
	}
	return out
}

type share struct {
	node       string
	first, end int
}

// shares cuts n slices into contiguous runs, one per node, proportional to
// weight (default 1), using cumulative rounding so sizes differ by at most
// one slice for equal weights.
func shares(nodes []string, weights map[string]float64, n int) []share {
	w := func(x string) float64 {
		if v := weights[x]; v > 0 && !math.IsInf(v, 0) {
			return v
		}
		return 1
	}
	total := 0.0
	for _, x := range nodes {
		total += w(x)
	}
	out := make([]share, len(nodes))
	acc, prev := 0.0, 0
	for g, x := range nodes {
		acc += w(x)
		end := int(math.Round(float64(n) * acc / total))
		if g == len(nodes)-1 {
			end = n
		}
		out[g] = share{node: x, first: prev, end: end}
		prev = end
	}
	return out
}
