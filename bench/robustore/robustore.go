// Package robustore is the RobuSTore paper's experiment (its Figs. 8–9) on
// real storage nodes: one client writes and reads an object over many
// heterogeneous disks with four schemes, at several degrees of
// redundancy, and measures bandwidth, the standard deviation of latency
// and I/O overhead.
//
// Vocabulary:
//
//   - source block: one of the K equal pieces of the object.
//   - redundancy D (percent): the extra storage; a scheme at D stores
//     (1+D/100)·K blocks.
//   - RAID-0: the K source blocks striped round-robin over the disks, no
//     redundancy (D = 0). A write waits for every disk, a read too.
//   - RRAID-S: each source block replicated 1+D/100 times on distinct
//     disks (same share per disk); writes wait for every copy; a read
//     requests every copy at once and is done when each block has arrived
//     once (speculative access), the rest cancelled.
//   - RRAID-A: the same layout and write; a read requests each block's
//     first copy, and a disk that has served its share asks for blocks not
//     yet received from the other copies it holds (adaptive access,
//     engine.AdaptiveRead).
//   - cairn (RobuSTore): the fountain code lt-K-X with X = 1+D/100, written
//     and read by the client's own data path for lt objects
//     (client.WriteCodedStripe, ReadCodedStripe): a write keeps every disk
//     busy with new coded blocks (fast disks take more) and stops once X·K
//     are durable, cancelling the rest; a read requests every stored block
//     and decodes from the first that arrive, cancelling the rest.
//
// Each block is one shard file on one disk (node.Client PutShard and
// GetShard), so every request is one block, as in the paper's simulator.
// Metrics follow the paper: bandwidth = object size ÷ latency, the
// standard deviation of latency over the repetitions, I/O overhead =
// (bytes sent over the network − object size) ÷ object size, counting the
// bytes of cancelled requests that had been moved.
package robustore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/client"
	"cairn/client/drive"
	"cairn/client/engine"
	"cairn/node/wire"
)

// Schemes in the order they are measured and plotted.
const (
	RAID0  = "raid-0"
	RRAIDS = "rraid-s"
	RRAIDA = "rraid-a"
	Cairn  = "cairn"
)

// Config describes the experiment.
type Config struct {
	Disks        []cairn.DiskID
	ObjectSize   int64 // bytes; a multiple of SourceBlocks·64
	SourceBlocks int   // K
	Redundancies []int // percent, ≥ 100 (RAID-0 is measured at 0 regardless)
	Reps         int   // writes and reads per scheme and redundancy
	Depth        int   // requests a disk serves at once for the baselines (default 2; cairn's is the client's, also 2)
	Seed         uint64
	// CPU returns the CPU time of every process of the experiment so far
	// (the nodes' and this one's); Cores is the machine's.
	CPU   func() time.Duration
	Cores int
	Log   func(format string, args ...any)
	// Progress, if not nil, is called with the schemes and redundancies
	// measured and their total: (0, total) first, then after each.
	Progress func(done, total int)
}

// Row is one scheme at one redundancy, for one operation.
type Row struct {
	Scheme     string
	Redundancy int // percent
	Op         string
	Reps       int
	Mean       float64 // seconds
	Std        float64 // seconds, over the repetitions
	Bandwidth  float64 // bytes per second: object size ÷ mean latency
	IOOverhead float64 // mean (bytes moved − object size) ÷ object size
	CPUUtil    float64 // CPU time ÷ (wall × cores) over the operations
	Seconds    []float64
}

// Run measures every scheme and returns write and read rows.
func Run(ctx context.Context, cfg Config, nc client.Shards) ([]Row, error) {
	x, err := newExperiment(cfg, nc)
	if err != nil {
		return nil, err
	}
	cfg = x.cfg
	var rows []Row
	done, total := 0, 1+2*len(cfg.Redundancies)
	if cfg.Progress == nil {
		cfg.Progress = func(int, int) {}
	}
	cfg.Progress(0, total)
	add := func(scheme string, red int) error {
		got, err := x.measure(ctx, scheme, red)
		if err != nil {
			return fmt.Errorf("%s at %d%%: %w", scheme, red, err)
		}
		for i := 0; i < len(got); i += 2 {
			w, r := got[i], got[i+1]
			cfg.Log("%-8s %4d%%  write %7.2f MB/s (σ %.3f s, I/O +%.0f%%)  read %7.2f MB/s (σ %.3f s, I/O +%.0f%%)  cpu %.0f%%",
				w.Scheme, red, w.Bandwidth/1e6, w.Std, 100*w.IOOverhead, r.Bandwidth/1e6, r.Std, 100*r.IOOverhead, 100*max(w.CPUUtil, r.CPUUtil))
		}
		rows = append(rows, got...)
		done++
		cfg.Progress(done, total)
		return nil
	}
	if err := add(RAID0, 0); err != nil {
		return rows, err
	}
	for _, red := range cfg.Redundancies {
		for _, s := range []string{RRAIDS, Cairn} { // RRAID-A is measured with RRAID-S: same layout and write
			if err := add(s, red); err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

// Warmup writes and reads cfg.Reps objects with cairn at redundancy red
// (untimed for the results) and returns the CPU use during them: CPU time
// ÷ (wall × cores), to check that the disks, not this machine, set the
// pace.
func Warmup(ctx context.Context, cfg Config, nc client.Shards, red int) (float64, error) {
	cfg.Redundancies = []int{red}
	x, err := newExperiment(cfg, nc)
	if err != nil {
		return 0, err
	}
	rows, err := x.measure(ctx, Cairn, red)
	if err != nil {
		return 0, err
	}
	return max(rows[0].CPUUtil, rows[1].CPUUtil), nil
}

func newExperiment(cfg Config, nc client.Shards) (*experiment, error) {
	if cfg.Depth <= 0 {
		cfg.Depth = 2
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.CPU == nil {
		cfg.CPU = func() time.Duration { return 0 }
	}
	if len(cfg.Disks) == 0 || cfg.SourceBlocks <= 0 || cfg.ObjectSize%int64(cfg.SourceBlocks) != 0 || cfg.Reps <= 0 {
		return nil, fmt.Errorf("robustore: bad config: %d disks, %d bytes in %d blocks, %d reps", len(cfg.Disks), cfg.ObjectSize, cfg.SourceBlocks, cfg.Reps)
	}
	data := make([]byte, cfg.ObjectSize)
	rng := mrand.New(mrand.NewPCG(cfg.Seed, 0x726f62))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	return &experiment{cfg: cfg, nc: nc, data: data, bs: int(cfg.ObjectSize) / cfg.SourceBlocks}, nil
}

type experiment struct {
	cfg  Config
	nc   client.Shards
	data []byte
	bs   int // bytes per block
}

// stored is one written object: where each block went.
type stored struct {
	version string
	copies  int                // replication: copies per source block
	locs    []engine.Loc       // durable copies; Block is the file index b + j·K of copy j of source block b
	sent    []engine.Loc       // every copy a request was started for (to delete)
	coded   *cairn.CodedStripe // cairn: the stripe as the client wrote it
}

// sample is one timed operation.
type sample struct {
	seconds float64
	bytes   int64 // moved over the network
	cpu     time.Duration
}

// measure runs the repetitions of scheme at redundancy red and returns a
// write row and a read row; for RRAID-S also RRAID-A's, whose write is
// the same operation and whose reads read the same objects.
func (x *experiment) measure(ctx context.Context, scheme string, red int) ([]Row, error) {
	var ws, rs, as []sample
	for rep := range x.cfg.Reps {
		obj, w, err := x.write(ctx, scheme, red)
		if err != nil {
			return nil, fmt.Errorf("write %d: %w", rep, err)
		}
		ws = append(ws, w)
		r, err := x.read(ctx, scheme, obj, false)
		if err == nil && scheme == RRAIDS {
			var a sample
			if a, err = x.read(ctx, scheme, obj, true); err == nil {
				as = append(as, a)
			}
		}
		x.remove(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("read %d: %w", rep, err)
		}
		rs = append(rs, r)
	}
	rows := []Row{x.row(scheme, red, "write", ws), x.row(scheme, red, "read", rs)}
	if scheme == RRAIDS {
		rows = append(rows, x.row(RRAIDA, red, "write", ws), x.row(RRAIDA, red, "read", as))
	}
	return rows, nil
}

func (x *experiment) row(scheme string, red int, op string, ss []sample) Row {
	r := Row{Scheme: scheme, Redundancy: red, Op: op, Reps: len(ss)}
	var sum, over float64
	var cpu time.Duration
	for _, s := range ss {
		r.Seconds = append(r.Seconds, s.seconds)
		sum += s.seconds
		over += float64(s.bytes-x.cfg.ObjectSize) / float64(x.cfg.ObjectSize)
		cpu += s.cpu
	}
	n := float64(len(ss))
	r.Mean, r.IOOverhead = sum/n, over/n
	for _, s := range ss {
		r.Std += (s.seconds - r.Mean) * (s.seconds - r.Mean)
	}
	r.Std = math.Sqrt(r.Std / n)
	r.Bandwidth = float64(x.cfg.ObjectSize) / r.Mean
	if x.cfg.Cores > 0 && sum > 0 {
		r.CPUUtil = cpu.Seconds() / (sum * float64(x.cfg.Cores))
	}
	return r
}

func newVersion() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// source returns source block b of the object.
func (x *experiment) source(b int) []byte { return x.data[b*x.bs : (b+1)*x.bs] }

// replicaLayout is RAID-0 (copies 1) and RRAID's layout: copy j of source
// block b on disk (b + j·⌊H/copies⌋) mod H, so copies are on distinct
// disks and every disk holds the same share; its file index is b + j·K.
func (x *experiment) replicaLayout(copies int) []engine.Loc {
	h, k := len(x.cfg.Disks), x.cfg.SourceBlocks
	var locs []engine.Loc
	for j := range copies { // first copies first: they are the primaries (AdaptiveRead)
		for b := range k {
			locs = append(locs, engine.Loc{Block: b + j*k, Disk: (b + j*(h/copies)) % h})
		}
	}
	return locs
}

// write stores a new object with scheme at redundancy red and times it.
// cairn's write is the client's own (client.WriteCodedStripe: what a PUT
// of an lt object does); the baselines write a fixed layout.
func (x *experiment) write(ctx context.Context, scheme string, red int) (*stored, sample, error) {
	obj := &stored{version: newVersion(), copies: 1 + red/100}
	counted := &countingShards{Shards: x.nc}
	cpu0 := x.cfg.CPU()
	var lat time.Duration
	var err error
	switch scheme {
	case RAID0, RRAIDS:
		if scheme == RAID0 {
			obj.copies = 1
		}
		var mu sync.Mutex
		start := time.Now()
		_, err = drive.Run(ctx, &drive.Fixed{Locs: x.replicaLayout(obj.copies)}, drive.Options{Depth: x.cfg.Depth, Tick: 10 * time.Millisecond,
			Do: func(ctx context.Context, a *drive.Request) ([]byte, error) {
				mu.Lock()
				obj.sent = append(obj.sent, engine.Loc{Block: a.Block, Disk: a.Disk})
				mu.Unlock()
				name := cairn.ShardName(obj.version, a.Block)
				_, err := counted.PutShard(ctx, x.cfg.Disks[a.Disk], name, bytes.NewReader(x.source(a.Block%x.cfg.SourceBlocks)))
				return nil, err
			}})
		lat = time.Since(start)
		obj.locs = x.replicaLayout(obj.copies)
	case Cairn:
		cl := client.New(nil, counted, client.Config{})
		start := time.Now()
		var st cairn.CodedStripe
		st, err = cl.WriteCodedStripe(ctx, x.policy(red), x.data, x.cfg.Disks)
		lat = time.Since(start)
		obj.coded = &st
	default:
		return nil, sample{}, fmt.Errorf("unknown scheme %q", scheme)
	}
	s := sample{seconds: lat.Seconds(), bytes: counted.n.Load(), cpu: x.cfg.CPU() - cpu0}
	if err != nil {
		x.remove(ctx, obj)
		return nil, s, err
	}
	return obj, s, nil
}

// policy is cairn's code at redundancy red: lt-K-(1+red/100).
func (x *experiment) policy(red int) string {
	return fmt.Sprintf("lt-%d-%d", x.cfg.SourceBlocks, 1+red/100)
}

// read reads obj back with scheme's access (adaptive: RRAID-A), checks
// the bytes and times it.
func (x *experiment) read(ctx context.Context, scheme string, obj *stored, adaptive bool) (sample, error) {
	k := x.cfg.SourceBlocks
	got := make([][]byte, k) // source blocks as they arrive or decode
	have := 0
	var m drive.Machine
	var feed func(a engine.Action, data []byte)
	file := map[engine.Loc]int{} // (block, disk) of a request → its file index, where they differ
	counted := &countingShards{Shards: x.nc}
	cpu0 := x.cfg.CPU()
	switch scheme {
	case RAID0, RRAIDS:
		feed = func(a engine.Action, data []byte) {
			if b := a.Block % k; got[b] == nil {
				got[b] = data
				have++
			}
		}
		if adaptive {
			// AdaptiveRead names copies by source block; the files by
			// copy (b + j·K): map back in do.
			var locs []engine.Loc
			for _, l := range obj.locs {
				file[engine.Loc{Block: l.Block % k, Disk: l.Disk}] = l.Block
				locs = append(locs, engine.Loc{Block: l.Block % k, Disk: l.Disk})
			}
			ar, err := engine.NewAdaptiveRead(engine.AdaptiveConfig{Blocks: locs, Need: k, Depth: x.cfg.Depth})
			if err != nil {
				return sample{}, err
			}
			m = drive.AdaptiveMachine{AdaptiveRead: ar}
		} else {
			rd, err := engine.NewRead(engine.ReadConfig{Blocks: obj.locs, Decodable: func([]int) bool { return have == k }})
			if err != nil {
				return sample{}, err
			}
			m = drive.ReadMachine{Read: rd}
		}
	case Cairn:
		cl := client.New(nil, counted, client.Config{})
		start := time.Now()
		data, err := cl.ReadCodedStripe(ctx, fmt.Sprintf("lt-%d-2", k), *obj.coded, x.bs) // X does not matter to a reader
		s := sample{seconds: time.Since(start).Seconds(), bytes: counted.n.Load(), cpu: x.cfg.CPU() - cpu0}
		if err == nil && !bytes.Equal(data, x.data) {
			err = fmt.Errorf("%w: the object read back wrong", cairn.ErrCorrupt)
		}
		return s, err
	}
	start := time.Now()
	_, err := drive.Run(ctx, m, drive.Options{Depth: x.cfg.Depth, Tick: 10 * time.Millisecond, Got: feed,
		Do: func(ctx context.Context, a *drive.Request) ([]byte, error) {
			idx, ok := file[engine.Loc{Block: a.Block, Disk: a.Disk}]
			if !ok {
				idx = a.Block
			}
			rc, err := counted.GetShard(ctx, x.cfg.Disks[a.Disk], cairn.ShardName(obj.version, idx), 0, -1)
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(rc)
		}})
	lat := time.Since(start)
	s := sample{seconds: lat.Seconds(), bytes: counted.n.Load(), cpu: x.cfg.CPU() - cpu0}
	if err != nil {
		return s, err
	}
	for b := range k {
		if !bytes.Equal(got[b], x.source(b)) {
			return s, fmt.Errorf("%w: source block %d read back wrong", cairn.ErrCorrupt, b)
		}
	}
	return s, nil
}

// remove deletes every block a request was started for (best effort,
// even after ctx ended); the client already deleted cairn's blocks that
// it did not keep.
func (x *experiment) remove(ctx context.Context, obj *stored) {
	if obj.coded != nil {
		for _, b := range obj.coded.Blocks {
			i := slices.Index(x.cfg.Disks, b.Disk)
			obj.sent = append(obj.sent, engine.Loc{Block: b.ID, Disk: i})
		}
		obj.version = obj.coded.Version
	}
	ctx = context.WithoutCancel(ctx)
	var g errgroup.Group
	g.SetLimit(32)
	seen := map[engine.Loc]bool{}
	for _, l := range obj.sent {
		if seen[l] {
			continue
		}
		seen[l] = true
		g.Go(func() error {
			_ = x.nc.DeleteShard(ctx, x.cfg.Disks[l.Disk], cairn.ShardName(obj.version, l.Block))
			return nil
		})
	}
	_ = g.Wait()
}

// countingShards counts the bytes moved over the network: sent in PUT
// bodies and received from GETs, cancelled requests' included.
type countingShards struct {
	client.Shards
	n atomic.Int64
}

var _ client.Shards = (*countingShards)(nil)

func (c *countingShards) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error) {
	return c.Shards.PutShard(ctx, disk, name, &countingReader{r: r, n: &c.n})
}

func (c *countingShards) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	rc, err := c.Shards.GetShard(ctx, disk, name, off, n)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{&countingReader{r: rc, n: &c.n}, rc}, nil
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
