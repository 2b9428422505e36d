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
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/codec/all"
	"cairn/node"
	"cairn/node/volume"
	"cairn/node/wire"
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
	PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error)
	DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error
	Push(ctx context.Context, spec wire.RepairSpec) ([]wire.ShardInfo, error)
	Pull(ctx context.Context, puller string, spec wire.RepairSpec) ([]wire.ShardInfo, error)
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
	// DiskRate and Seek are each node's disk as the nodes were started
	// with it (vfs.Throttle): sequential bytes/s and the time of a request
	// that does not continue the previous one. DiskRate 0: not throttled
	// (the model then uses 100× the link and no seeks).
	DiskRate float64
	Seek     time.Duration
	// Concurrency is the number of stripes rebuilt at once. By default
	// the -Sur schemes rebuild one stripe per survivor at once (each
	// survivor stores one), and the -Rep schemes, whose every stripe ends
	// at the replacements, RepConcurrency: enough to keep the
	// replacements' links busy, where more would only queue there.
	Concurrency int
	Seed        uint64
	Log         func(format string, args ...any)
	// Progress, if not nil, is called with the measurements done and
	// their total: (0, total) first, then after each.
	Progress func(done, total int)
}

// Row is one measurement.
type Row struct {
	K, R, F     int
	Unit        int64
	Scheme      string
	Stripes     int
	NodeData    int64
	Seconds     float64 // measured
	Model       float64 // repair/plan's bottleneck model of these plans, plus the fill and drain of a finite run
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
	if cfg.Progress == nil {
		cfg.Progress = func(int, int) {}
	}
	total := len(cfg.Points) * len(cfg.Schemes)
	cfg.Progress(0, total)
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
				lay.cleanup(ctx, nc)
				return rows, fmt.Errorf("k=%d r=%d f=%d unit=%d %s: %w", pt.K, pt.R, pt.F, pt.Unit, s, err)
			}
			cfg.Log("k=%d r=%d f=%d unit=%s %-8s %6.2f s (model %6.2f s, paper %6.2f s, error %4.1f%%, cpu %3.0f%%)",
				pt.K, pt.R, pt.F, sizeString(pt.Unit), s, row.Seconds, row.Model, row.Paper, 100*row.ModelError, 100*row.CPUUtil)
			rows = append(rows, row)
			cfg.Progress(len(rows), total)
		}
		lay.cleanup(ctx, nc)
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

// cleanup deletes the point's shards, best effort, even after ctx ended.
func (l *layout) cleanup(ctx context.Context, nc Nodes) {
	ctx = context.WithoutCancel(ctx)
	for s := range l.stripes {
		for j, n := range l.holder[s] {
			_ = nc.DeleteShard(ctx, l.nodes[n].Disk, cairn.ShardName(l.version, s*32+j))
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
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for s := range stripes {
		if gctx.Err() != nil {
			break // a write failed: Wait returns its error
		}
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
			g.Go(func() error {
				_, err := nc.PutShard(gctx, nodes[holder[j]].Disk, cairn.ShardName(l.version, s*32+j), bytes.NewReader(shards[j]))
				return err
			})
		}
	}
	return l, g.Wait()
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
		if s.Rep() {
			conc = RepConcurrency
		}
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
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	var written []struct {
		disk cairn.DiskID
		name string
	}
	for _, jb := range jobs {
		for _, t := range jb.p.Tasks {
			spec := wire.RepairSpec{Size: cfg.ShardSize, Unit: pt.Unit}
			for _, h := range t.Helpers {
				nd := byID[h.Node]
				spec.Hops = append(spec.Hops, wire.Hop{Addr: nd.Addr, Disk: nd.Disk, Shard: cairn.ShardName(l.version, jb.stripe*32+h.Shard), Coeffs: h.Coeffs})
			}
			var want []uint32
			for j, lostIdx := range t.Lost {
				nd := byID[t.Store[j]]
				name := cairn.ShardName(fmt.Sprintf("%s%02x", l.version[:30], int(s)), jb.stripe*32+lostIdx)
				spec.Store = append(spec.Store, wire.Target{Addr: nd.Addr, Disk: nd.Disk, Shard: name})
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
			g.Go(func() error {
				var got []wire.ShardInfo
				var err error
				if puller != "" {
					got, err = nc.Pull(gctx, puller, spec)
				} else {
					got, err = nc.Push(gctx, spec)
				}
				if err != nil {
					return err
				}
				for j := range got {
					if got[j].CRC != want[j] || got[j].Size != cfg.ShardSize {
						return fmt.Errorf("%w: rebuilt shard %s is wrong", cairn.ErrCorrupt, spec.Store[j].Shard)
					}
				}
				return nil
			})
		}
	}
	err = g.Wait()
	wall := time.Since(start).Seconds()
	cpu := (cpuOf(nodes) - cpu0).Seconds()
	for _, w := range written {
		_ = nc.DeleteShard(context.WithoutCancel(ctx), w.disk, w.name)
	}
	if err != nil {
		return Row{}, err
	}
	rates := DiskRates(cfg.DiskRate, cfg.Seek, cfg.ShardSize, pt.Unit)
	rates.Send, rates.Recv = cfg.LinkRate, cfg.LinkRate
	if cfg.DiskRate <= 0 {
		rates = plan.Rates{Read: 100 * cfg.LinkRate, Write: 100 * cfg.LinkRate, Send: cfg.LinkRate, Recv: cfg.LinkRate}
	}
	m := plan.Model{K: pt.K, R: pt.R, F: pt.F, SNode: float64(int64(l.stripes) * cfg.ShardSize), SBlock: float64(pt.Unit),
		Survivors: []plan.Rates{rates}, Replacement: rates}
	pred, err := m.Predict(s)
	if err != nil {
		return Row{}, err
	}
	row := Row{K: pt.K, R: pt.R, F: pt.F, Unit: pt.Unit, Scheme: s.String(), Stripes: l.stripes, NodeData: int64(l.stripes) * cfg.ShardSize,
		Seconds: wall, Model: pred.Seconds + cfg.tail(s, pt, l.stripes, conc, len(survivors)), Paper: pred.Paper, CPUUtil: cpu / (wall * float64(cores)), MaxPartials: maxPartials}
	row.ModelError = abs(row.Model-row.Seconds) / row.Seconds
	return row, nil
}

// DiskRates are the model's disk rates of a node whose one disk streams
// bw bytes/s and pays seek for each request that does not continue the
// previous one — every request, on a disk shared by several repairs. The
// request sizes are the nodes': a push hop (and a puller's own helper)
// reads a shard in runs of node.RepairReadRun, a puller fetches a remote helper one unit per
// GET, and rebuilt shards are written in runs of up to volume.WriteRun.
// Footers are small reads the page cache serves.
func DiskRates(bw float64, seek time.Duration, shard, unit int64) plan.Rates {
	rate := func(bytes int64, requests int) float64 {
		return float64(bytes) / (float64(requests)*seek.Seconds() + float64(bytes)/bw)
	}
	reads := int((shard + node.RepairReadRun - 1) / node.RepairReadRun)
	writes := int((shard + volume.WriteRun - 1) / volume.WriteRun)
	units := int((shard + unit - 1) / unit)
	return plan.Rates{Read: rate(shard, reads), ServeRead: rate(shard, units), Write: rate(shard, writes), SharedDisk: true}
}

// RepConcurrency is the -Rep schemes' default number of stripes in flight.
const RepConcurrency = 4

// tail is what a finite run adds to the steady state the equations
// describe (the paper's 10 GB per node made it negligible): the fill
// before the bottleneck gets its first slice, and on seeking disks the
// drain after the last stream ends.
//
// Fill is the longer of two delays that overlap. The pipeline fill: a
// PUSH chain's first slice (f partials of a unit) crosses k links one
// after the other; a PULL slice crosses one. Every later wave pays it
// again: a stripe starts in a slot freed when another's stream ended, so
// nothing else fills the bottleneck meanwhile. The disk fill: the stripes
// of the first wave start at once, so each survivor's disk gets q =
// ⌈wave·k/n⌉ first requests together (a run for a push hop, a unit for a
// pull) and serves them in turn; a chain or pull starts when the last of
// its k helpers' requests is served, on average after E[max of k positions
// drawn from 1..q] requests.
//
// Drain: a rebuilt shard's last write run reaches the disk only when its
// stream ends. The f shards one chain or pull stores on one survivor
// (-Sur) end together and queue. Different stripes of the final wave do
// not: they started one disk request apart (the disk fill above) and, as
// they share the bottleneck fairly, end at least that far apart, so the
// run of each later one waits only for what is left of the one before it:
// max(0, run − spacing) per further stripe on the target.
func (cfg Config) tail(s plan.Scheme, pt Point, stripes, conc, survivors int) float64 {
	pipe := float64(pt.Unit) / cfg.LinkRate
	if s.Push() {
		pipe *= float64(pt.K * pt.F)
	}
	wave := min(conc, stripes)
	later := float64((stripes+wave-1)/wave-1) * pipe // the later waves' pipeline fills
	if cfg.DiskRate <= 0 {
		return pipe + later
	}
	req := func(b int64) float64 { return cfg.Seek.Seconds() + float64(b)/cfg.DiskRate }
	first := req(min(cfg.ShardSize, node.RepairReadRun))
	if !s.Push() {
		first = req(min(cfg.ShardSize, pt.Unit))
	}
	q := (wave*pt.K + survivors - 1) / survivors
	var start float64 // E[max of k uniform positions in 1..q]
	for j := 1; j <= q; j++ {
		start += 1 - math.Pow(float64(j-1)/float64(q), float64(pt.K))
	}
	last := cfg.ShardSize - (cfg.ShardSize-1)/volume.WriteRun*volume.WriteRun
	final := stripes - (stripes-1)/wave*wave // the stripes of the final wave
	together, each := 1, final               // -Rep: each replacement stores one shard of every stripe
	if !s.Rep() {
		together, each = pt.F, (final+survivors-1)/survivors
	}
	run := float64(together) * req(last)
	drain := run + float64(each-1)*max(0, run-first)
	return max(pipe, start*first) + later + drain
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
