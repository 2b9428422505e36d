// Package pushbench is the PUSH paper's reconstruction experiment on real
// storage nodes: a (k+r, k) RS stripe layout over k+r nodes, f of them
// failed, each holding NodeData bytes of shards; the lost shards are
// rebuilt with PULL-Rep, PULL-Sur, PUSH-Rep and PUSH-Sur through the
// nodes' repair endpoints (node.Client Push/Pull), over links shaped by
// the nodes themselves, and each measured time is put beside the
// repair/plan model's prediction.
//
// Layout: stripe s puts shard j on node (j+s) mod (k+r), so every node
// holds one shard of every stripe and the failed nodes 0..f−1 lose f
// shards of each. -Rep schemes rebuild onto f replacement nodes (k+r ..
// k+r+f−1); -Sur schemes rebuild each stripe's shards onto one surviving
// node, rotating per stripe so the survivors share the work (cairn stores
// whole shards, so a share is a stripe's worth, not a slice range).
// Stripes run Concurrency at a time.
package pushbench

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/node"
	"cairn/repair/plan"
)

// Node is one storage node of the experiment.
type Node struct {
	ID   string
	Addr string
	Disk cairn.DiskID
	// CPU returns the node process's CPU time so far (for the check that
	// links, not this machine's cores, bound the repair).
	CPU func() time.Duration
}

// Nodes is the node protocol client the experiment drives; node.Client
// satisfies it (its resolver must know every Node's disk).
type Nodes interface {
	PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (node.ShardInfo, error)
	DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error
	Push(ctx context.Context, spec node.RepairSpec) ([]node.ShardInfo, error)
	Pull(ctx context.Context, puller string, spec node.RepairSpec) ([]node.ShardInfo, error)
}

// Point is one configuration to measure.
type Point struct {
	K, R, F int
	Unit    int64
}

// Config describes the experiment.
type Config struct {
	Points    []Point
	Schemes   []plan.Scheme // default plan.Schemes
	NodeData  int64         // bytes of shards each failed node held
	ShardSize int64
	LinkRate  float64 // each node's link, bytes/s each way (what the nodes were started with)
	DiskRate  float64 // each node's disk, bytes/s (0: not throttled; the model then uses 100× the link)
	// Concurrency is the number of stripes rebuilt at once (default: the
	// number of surviving nodes).
	Concurrency int
	Seed        uint64
	Log         func(format string, args ...any)
}

// Row is one measurement.
type Row struct {
	K, R, F     int
	Unit        int64
	Scheme      string
	Stripes     int
	NodeData    int64
	Seconds     float64 // measured
	Model       float64 // repair/plan's bottleneck model of these plans, plus the pipeline fill
	Paper       float64 // the paper's equation (Eqs. 9–12)
	ModelError  float64 // |Model − Seconds| / Seconds
	CPUUtil     float64 // node CPU time ÷ (wall × cores) during the run
	MaxPartials int     // most partial blocks any node receives per stripe slice (PUSH: ≤ f)
}

// Run measures every point with every scheme on nodes (at least
// max(k+r+f) of them). cores is the machine's core count for CPUUtil.
func Run(ctx context.Context, cfg Config, nodes []Node, nc Nodes, cores int) ([]Row, error) {
	if len(cfg.Schemes) == 0 {
		cfg.Schemes = plan.Schemes
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	var rows []Row
	for _, pt := range cfg.Points {
		need := pt.K + pt.R + pt.F
		if need > len(nodes) {
			return rows, fmt.Errorf("point k=%d r=%d f=%d needs %d nodes, have %d", pt.K, pt.R, pt.F, need, len(nodes))
		}
		lay, err := write(ctx, cfg, pt, nodes, nc)
		if err != nil {
			return rows, err
		}
		for _, s := range cfg.Schemes {
			row, err := measure(ctx, cfg, pt, s, lay, nodes, nc, cores)
			if err != nil {
				lay.cleanup(nc)
				return rows, fmt.Errorf("k=%d r=%d f=%d unit=%d %s: %w", pt.K, pt.R, pt.F, pt.Unit, s, err)
			}
			cfg.Log("k=%d r=%d f=%d unit=%s %-8s %6.2f s (model %6.2f s, paper %6.2f s, error %4.1f%%, cpu %3.0f%%)",
				pt.K, pt.R, pt.F, sizeString(pt.Unit), s, row.Seconds, row.Model, row.Paper, 100*row.ModelError, 100*row.CPUUtil)
			rows = append(rows, row)
		}
		lay.cleanup(nc)
	}
	return rows, nil
}

// layout is the stripes of one point as written.
type layout struct {
	version string
	stripes int
	holder  [][]int    // holder[s][j]: node index of shard j of stripe s
	lostCRC [][]uint32 // lostCRC[s][x]: CRC of the x-th lost shard of stripe s
	lost    [][]int    // lost[s]: lost shard indices (on nodes 0..f−1)
	nodes   []Node
}

func (l *layout) cleanup(nc Nodes) {
	for s := range l.stripes {
		for j, n := range l.holder[s] {
			_ = nc.DeleteShard(context.Background(), l.nodes[n].Disk, cairn.ShardName(l.version, s*32+j))
		}
	}
}

func write(ctx context.Context, cfg Config, pt Point, nodes []Node, nc Nodes) (*layout, error) {
	code, err := all.New(fmt.Sprintf("rs-%d-%d", pt.K, pt.R))
	if err != nil {
		return nil, err
	}
	n := pt.K + pt.R
	// A whole number of stripes per survivor, so the -Sur schemes'
	// rotation gives every survivor the same share.
	per := n - pt.F
	stripes := int(max(1, (cfg.NodeData/cfg.ShardSize+int64(per)-1)/int64(per))) * per
	if stripes > 300 {
		return nil, fmt.Errorf("%d stripes: at most 300 (raise the shard size)", stripes)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(pt.K*100+pt.R*10+pt.F)))
	// The helpers' version ends in "ff"; rebuilt shards end in the scheme
	// number instead (shard names are <32 hex>.<index>).
	l := &layout{version: fmt.Sprintf("%016x%014xff", rng.Uint64(), rng.Uint64()>>8), stripes: stripes, nodes: nodes}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for s := range stripes {
		shards := make([][]byte, n)
		for j := range shards {
			shards[j] = make([]byte, cfg.ShardSize)
			if j < pt.K {
				for b := range shards[j] {
					shards[j][b] = byte(rng.Uint32())
				}
			}
		}
		if err := code.Encode(shards); err != nil {
			return nil, err
		}
		holder := make([]int, n)
		var lost []int
		var crcs []uint32
		for j := range n {
			holder[j] = (j + s) % n
			if holder[j] < pt.F {
				lost = append(lost, j)
				crcs = append(crcs, crc32.Checksum(shards[j], crc32.MakeTable(crc32.Castagnoli)))
			}
		}
		l.holder, l.lost, l.lostCRC = append(l.holder, holder), append(l.lost, lost), append(l.lostCRC, crcs)
		for j := range n {
			if holder[j] < pt.F {
				continue // on a failed node: never written
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				_, err := nc.PutShard(ctx, nodes[holder[j]].Disk, cairn.ShardName(l.version, s*32+j), bytes.NewReader(shards[j]))
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return l, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// measure rebuilds every stripe's lost shards with scheme s.
func measure(ctx context.Context, cfg Config, pt Point, s plan.Scheme, l *layout, nodes []Node, nc Nodes, cores int) (Row, error) {
	code, err := all.New(fmt.Sprintf("rs-%d-%d", pt.K, pt.R))
	if err != nil {
		return Row{}, err
	}
	n := pt.K + pt.R
	survivors := make([]string, 0, n-pt.F)
	for i := pt.F; i < n; i++ {
		survivors = append(survivors, nodes[i].ID)
	}
	var reps []string
	for i := n; i < n+pt.F; i++ {
		reps = append(reps, nodes[i].ID)
	}
	byID := map[string]Node{}
	for _, nd := range nodes {
		byID[nd.ID] = nd
	}
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = len(survivors)
	}
	type job struct {
		stripe int
		p      *plan.Plan
	}
	var jobs []job
	maxPartials := 0
	for st := range l.stripes {
		names := make([]string, n)
		for j := range n {
			if l.holder[st][j] >= pt.F {
				names[j] = nodes[l.holder[st][j]].ID
			}
		}
		in := plan.Input{Code: code, Lost: l.lost[st], Nodes: names, ShardSize: cfg.ShardSize, Unit: pt.Unit, Rotate: st}
		if s.Rep() {
			in.Replacements = reps
		} else {
			in.Survivors = []string{survivors[st%len(survivors)]}
		}
		p, err := plan.Build(s, in)
		if err != nil {
			return Row{}, err
		}
		maxPartials = max(maxPartials, p.MaxPartialsPerSlice())
		jobs = append(jobs, job{st, p})
	}
	cpu0 := cpuOf(nodes)
	start := time.Now()
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	var written []struct {
		disk cairn.DiskID
		name string
	}
	for _, jb := range jobs {
		for _, t := range jb.p.Tasks {
			spec := node.RepairSpec{Size: cfg.ShardSize, Unit: pt.Unit}
			for _, h := range t.Helpers {
				nd := byID[h.Node]
				spec.Hops = append(spec.Hops, node.Hop{Addr: nd.Addr, Disk: nd.Disk, Shard: cairn.ShardName(l.version, jb.stripe*32+h.Shard), Coeffs: h.Coeffs})
			}
			var want []uint32
			for j, lostIdx := range t.Lost {
				nd := byID[t.Store[j]]
				name := cairn.ShardName(fmt.Sprintf("%s%02x", l.version[:30], int(s)), jb.stripe*32+lostIdx)
				spec.Store = append(spec.Store, node.Target{Addr: nd.Addr, Disk: nd.Disk, Shard: name})
				want = append(want, l.lostCRC[jb.stripe][slices.Index(l.lost[jb.stripe], lostIdx)])
				written = append(written, struct {
					disk cairn.DiskID
					name string
				}{nd.Disk, name})
			}
			puller := ""
			if t.Puller != "" {
				puller = byID[t.Puller].Addr
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				var got []node.ShardInfo
				var err error
				if puller != "" {
					got, err = nc.Pull(ctx, puller, spec)
				} else {
					got, err = nc.Push(ctx, spec)
				}
				if err == nil {
					for j := range got {
						if got[j].CRC != want[j] || got[j].Size != cfg.ShardSize {
							err = fmt.Errorf("%w: rebuilt shard %s is wrong", cairn.ErrCorrupt, spec.Store[j].Shard)
						}
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	wall := time.Since(start).Seconds()
	cpu := (cpuOf(nodes) - cpu0).Seconds()
	for _, w := range written {
		_ = nc.DeleteShard(context.Background(), w.disk, w.name)
	}
	if firstErr != nil {
		return Row{}, firstErr
	}
	disk := cfg.DiskRate
	if disk <= 0 {
		disk = 100 * cfg.LinkRate
	}
	rates := plan.Rates{Read: disk, Write: disk, Send: cfg.LinkRate, Recv: cfg.LinkRate}
	m := plan.Model{K: pt.K, R: pt.R, F: pt.F, SNode: float64(int64(l.stripes) * cfg.ShardSize), SBlock: float64(pt.Unit),
		Survivors: []plan.Rates{rates}, Replacement: rates}
	pred, err := m.Predict(s)
	if err != nil {
		return Row{}, err
	}
	row := Row{K: pt.K, R: pt.R, F: pt.F, Unit: pt.Unit, Scheme: s.String(), Stripes: l.stripes, NodeData: int64(l.stripes) * cfg.ShardSize,
		Seconds: wall, Model: pred.Seconds + fill(s, pt, cfg.LinkRate), Paper: pred.Paper, CPUUtil: cpu / (wall * float64(cores)), MaxPartials: maxPartials}
	row.ModelError = abs(row.Model-row.Seconds) / row.Seconds
	return row, nil
}

// fill is the time before the bottleneck link gets its first slice, which
// the paper's steady-state models leave out: a PUSH chain's first slice
// (f partials of a unit) crosses k links one after the other; a PULL
// slice crosses one.
func fill(s plan.Scheme, pt Point, link float64) float64 {
	if s.Push() {
		return float64(pt.K*pt.F) * float64(pt.Unit) / link
	}
	return float64(pt.Unit) / link
}

func cpuOf(nodes []Node) time.Duration {
	var t time.Duration
	for _, n := range nodes {
		if n.CPU != nil {
			t += n.CPU()
		}
	}
	return t
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func sizeString(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprint(n)
}
