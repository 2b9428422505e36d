package clay

import (
	"cairn/codec/internal/patcache"
	"fmt"
	"slices"

	"cairn/codec"
)

// repairSched is the schedule of the sub-chunk repair of one node from one
// set of d helpers (docs/codes.md#clay-repair, paper §3.3). Immutable and
// shared.
type repairSched struct {
	lost     int   // internal node L = (x0, y0)
	x0, y0   int   // its coordinates
	helpers  []int // internal nodes read, ascending: L's column-mates and others up to d
	aloof    []int // real nodes neither L nor helpers, ascending
	aloofIdx []int // by internal node: index in aloof, or −1
	// inputs are the K = k+ν nodes outside column y0 that are not aloof
	// (helpers and virtual nodes); their U feed the plane code. erased are
	// the others: column y0 (L, its mates) then the aloof nodes, M in all.
	inputs, erased []int
	kern           *kernel
	planes         []int32   // repair planes (z_{y0} = x0), ascending: the sub-chunks read
	subChunks      []int     // planes as ints, for HelperRead
	pos            []int32   // by plane: index in planes, or −1
	levels         [][]int32 // repair planes by number of aloof dots, lowest first
}

// chooseHelpers picks the helpers for repairing shard lost from the
// available shards (preference order, lost not among them): every
// column-mate of lost, then others in order up to d. ok is false when a
// column-mate is unavailable or fewer than d shards are.
func (g *geometry) chooseHelpers(lost int, available []int) (helpers []int, ok bool) {
	l := g.node(lost)
	y0 := l / g.q
	avail := make([]bool, g.n)
	for _, a := range available {
		avail[g.node(a)] = true
	}
	for x := range g.q {
		i := y0*g.q + x
		if i == l || g.virtual(i) {
			continue
		}
		if !avail[i] {
			return nil, false
		}
		helpers = append(helpers, i)
	}
	for _, a := range available {
		if len(helpers) == g.d {
			break
		}
		if i := g.node(a); i/g.q != y0 {
			helpers = append(helpers, i)
		}
	}
	if len(helpers) < g.d {
		return nil, false
	}
	slices.Sort(helpers)
	return helpers, true
}

// repairSchedule returns the cached schedule for repairing shard lost from
// available (preference order), or nil if the sub-chunk repair is
// impossible from them.
func (c *Code) repairSchedule(lost int, available []int) (*repairSched, error) {
	helpers, ok := c.g.chooseHelpers(lost, available)
	if !ok {
		return nil, nil
	}
	l := c.g.node(lost)
	return c.repairs.Get(patcache.Key([]int{l}, helpers), func() (*repairSched, error) {
		return newRepairSched(&c.g, c.gen, l, helpers)
	})
}

func newRepairSched(g *geometry, gen [][]byte, l int, helpers []int) (*repairSched, error) {
	s := &repairSched{lost: l, x0: l % g.q, y0: l / g.q, helpers: helpers, aloofIdx: make([]int, g.n)}
	isHelper := make([]bool, g.n)
	for _, h := range helpers {
		isHelper[h] = true
	}
	for i := range g.n {
		s.aloofIdx[i] = -1
		if i != l && !g.virtual(i) && !isHelper[i] {
			s.aloofIdx[i] = len(s.aloof)
			s.aloof = append(s.aloof, i)
		}
	}
	for i := range g.n {
		switch {
		case i/g.q == s.y0:
			s.erased = append(s.erased, i)
		case s.aloofIdx[i] < 0:
			s.inputs = append(s.inputs, i)
		}
	}
	s.erased = append(s.erased, s.aloof...)
	if len(s.inputs) != g.k+g.nu || len(s.erased) != g.m {
		return nil, fmt.Errorf("clay: repair of node %d from %v: %d inputs, %d erased (bug: want %d and %d)",
			l, helpers, len(s.inputs), len(s.erased), g.k+g.nu, g.m)
	}
	coeffs, err := planeMatrix(gen, s.inputs, s.erased)
	if err != nil {
		return nil, err
	}
	if s.kern, err = newKernel(coeffs); err != nil {
		return nil, err
	}
	s.planes = g.repairPlanes(l)
	s.pos = make([]int32, g.alpha)
	for z := range s.pos {
		s.pos[z] = -1
	}
	s.subChunks = make([]int, len(s.planes))
	score := make([]int, len(s.planes))
	maxScore := 0
	for j, z := range s.planes {
		s.pos[z] = int32(j)
		s.subChunks[j] = int(z)
		for _, a := range s.aloof {
			if g.isDot(a, int(z)) {
				score[j]++
			}
		}
		maxScore = max(maxScore, score[j])
	}
	s.levels = make([][]int32, maxScore+1)
	for j, sc := range score {
		s.levels[sc] = append(s.levels[sc], s.planes[j])
	}
	return s, nil
}

// repair rebuilds node s.lost into out (a whole shard) from the helpers'
// sub-chunks on the repair planes, in v (full shards, or packed with
// v.pos = s.pos). Per level (number of aloof dots), lowest first, and in
// batches of planes:
//
//  1. uncouple: U of every input node, from C of the node and of its
//     companion, or, when the companion is aloof, from C and the aloof
//     companion's U decoded on a lower level;
//  2. one plane-code kernel call gives U of column y0 and of the aloof
//     nodes for the whole batch;
//  3. C(L, z) = U(L, z) (L is a dot on every repair plane); each mate
//     (x, y0) gives the lost node's sub-chunk on plane z with digit y0 := x,
//     outside the repair set, from the mate's (C, U); the aloof
//     nodes' U are kept for higher levels.
//
// β repair planes × q outputs = α sub-chunks: the whole shard.
func (c *Code) repair(s *repairSched, v *view, out []byte, w *work) error {
	for k := range v.strips() {
		st := v.strip(k)
		if err := c.repairStrip(s, &st, out, w); err != nil {
			return err
		}
	}
	return nil
}

func (c *Code) repairStrip(s *repairSched, v *view, out []byte, w *work) error {
	g := &c.g
	sc := v.width // bytes per plane in this strip
	nb := c.batchPlanes(sc)
	outAt := func(z int) []byte {
		a := z*v.sc + v.off
		return out[a : a+sc]
	}
	kk, ne := len(s.inputs), len(s.erased)
	in := w.bufs(kk, nb*sc)
	outB := w.bufs2(ne, nb*sc)
	ins, outs := w.headers(kk, ne)
	ua := w.aloofBufs(len(s.aloof), g.beta*sc)
	aloofU := func(i, z int) []byte {
		p := int(s.pos[z])
		return ua[s.aloofIdx[i]][p*sc : (p+1)*sc]
	}
	for _, level := range s.levels {
		for off := 0; off < len(level); off += nb {
			batch := level[off:min(off+nb, len(level))]
			size := len(batch) * sc
			for j, z := range batch {
				for si, i := range s.inputs {
					dst := in[si][j*sc : (j+1)*sc]
					cs, zs, ok := g.companion(i, int(z))
					ci := v.sub(i, int(z))
					switch {
					case !ok && ci != nil:
						copy(dst, ci)
					case !ok:
						clear(dst)
					case s.aloofIdx[cs] >= 0:
						c.tf.uncoupleFromU(dst, side(i%g.q, cs%g.q), ci, aloofU(cs, zs))
					default:
						c.tf.uncouple(dst, side(i%g.q, cs%g.q), ci, v.sub(cs, zs))
					}
				}
			}
			for si := range kk {
				ins[si] = in[si][:size]
			}
			for e := range ne {
				outs[e] = outB[e][:size]
			}
			if err := s.kern.run(ins, outs, w); err != nil {
				return err
			}
			for j, z := range batch {
				for e, i := range s.erased {
					u := outB[e][j*sc : (j+1)*sc]
					switch {
					case i == s.lost:
						copy(outAt(int(z)), u)
					case i/g.q == s.y0:
						zp := int(z) + (i%g.q-s.x0)*g.pow[s.y0]
						c.tf.companionC(outAt(zp), side(i%g.q, s.x0), u, v.sub(i, int(z)))
					default:
						copy(aloofU(i, int(z)), u)
					}
				}
			}
		}
	}
	return nil
}

// SubChunkPlan implements codec.SubChunkRepairer. The helpers are every
// column-mate of lost (the q−1 other shards of its y-section; virtual ones
// need no reading) and then the earliest other shards of available, d in all;
// each reads the β sub-chunks of the repair planes, z_{y0} = x0, which lie in
// q^{y0} runs of q^{t−1−y0} sub-chunks (docs/codes.md#clay-repair). The
// shards not chosen are aloof. When a column-mate is unavailable or fewer
// than d shards are, the plan is degraded: the first K available shards are
// read whole and the lost one is decoded from them.
func (c *Code) SubChunkPlan(lost int, available []int, shardSize int) (*codec.SubChunkPlan, error) {
	p := c.Params()
	if err := codec.CheckIndices("lost", []int{lost}, p.N()); err != nil {
		return nil, fmt.Errorf("clay sub-chunk plan: %w", err)
	}
	if err := codec.CheckIndices("available", available, p.N()); err != nil {
		return nil, fmt.Errorf("clay sub-chunk plan: %w", err)
	}
	if slices.Contains(available, lost) {
		return nil, fmt.Errorf("clay sub-chunk plan: %w: shard %d is both lost and available", codec.ErrShardIndex, lost)
	}
	if shardSize <= 0 || shardSize%c.g.alpha != 0 {
		return nil, fmt.Errorf("clay sub-chunk plan: %w: shard size %d is not a positive multiple of α = %d", codec.ErrShardSize, shardSize, c.g.alpha)
	}
	sc := shardSize / c.g.alpha
	s, err := c.repairSchedule(lost, available)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.degradedPlan(lost, available, shardSize)
	}
	rs := runs(s.subChunks, sc)
	helpers := make([]codec.HelperRead, 0, len(s.helpers))
	slot := make([]int, c.g.n) // internal node → index in helpers
	for _, i := range s.helpers {
		if c.g.virtual(i) {
			continue
		}
		slot[i] = len(helpers)
		helpers = append(helpers, codec.HelperRead{Shard: c.g.shard(i), SubChunks: s.subChunks, Runs: rs})
	}
	repair := func(reads [][]byte, out []byte) error {
		w := c.getWork()
		defer c.putWork(w)
		bufs := c.nodeBufs(w, nil)
		for _, i := range s.helpers {
			bufs[i] = reads[slot[i]]
		}
		v := view{bufs: bufs, sc: sc, pos: s.pos}
		return c.repair(s, &v, out, w)
	}
	return codec.NewSubChunkPlan(lost, shardSize, sc, helpers, repair), nil
}

// degradedPlan reads K whole shards and decodes the lost one.
func (c *Code) degradedPlan(lost int, available []int, shardSize int) (*codec.SubChunkPlan, error) {
	g := &c.g
	if len(available) < g.k {
		return nil, fmt.Errorf("clay sub-chunk plan: %w", &codec.UndecodableError{
			Op: "repair", Want: []int{lost}, Available: slices.Clone(available)})
	}
	chosen := slices.Sorted(slices.Values(available[:g.k]))
	all := make([]int, g.alpha)
	for z := range all {
		all[z] = z
	}
	whole := []codec.Run{{Offset: 0, Length: shardSize}}
	helpers := make([]codec.HelperRead, len(chosen))
	isHelper := make([]bool, g.k+g.m)
	for j, h := range chosen {
		helpers[j] = codec.HelperRead{Shard: h, SubChunks: all, Runs: whole}
		isHelper[h] = true
	}
	var erased []int
	for j := range g.k + g.m {
		if !isHelper[j] {
			erased = append(erased, g.node(j))
		}
	}
	plan, err := c.decodePlan(erased)
	if err != nil {
		return nil, err
	}
	repair := func(reads [][]byte, out []byte) error {
		w := c.getWork()
		defer c.putWork(w)
		stripe := make([][]byte, g.k+g.m)
		spares := w.spares(g.m-1, shardSize)
		for j := range stripe {
			switch {
			case j == lost:
				stripe[j] = out
			case !isHelper[j]:
				stripe[j], spares = spares[0], spares[1:]
			}
		}
		for j, h := range chosen {
			stripe[h] = reads[j]
		}
		v := view{bufs: c.nodeBufs(w, stripe), sc: shardSize / g.alpha}
		return c.decode(plan, &v, w)
	}
	return codec.NewSubChunkPlan(lost, shardSize, shardSize/g.alpha, helpers, repair), nil
}
