package grid

import (
	"bytes"
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"time"

	"cairn"
	"cairn/client"
	"cairn/codec"
	"cairn/codec/all"
)

// Parts of the experiment, the Part of each Row.
const (
	PartTransfer     = "transfer"     // (a) upload and download at k=5, n=8 by file size
	PartPacket       = "packet-size"  // (a) the same at one size, by packet (block) size
	PartCodec        = "codec"        // (a) the code alone in memory, by packet size (the paper's Fig. 5)
	PartReplication  = "replication"  // (b) rs-5-4 against rep-5
	PartAvailability = "availability" // (c) readable with nodes down
)

// Policies of the experiment.
const (
	Striped    = "rs-5-3" // the paper's k=5, n=8
	Striped4   = "rs-5-4" // k=5, n=9: survives 4 losses
	Replicated = "rep-5"  // five copies: survives 4 losses
)

// OpDegraded is the download of a transfer point with the first M data
// shards' files deleted, so that every stripe is decoded — the paper's
// decoding measurement (three of the five original stripes removed).
const OpDegraded = "download-degraded"

// Cases of the replication comparison.
const (
	Global = "global" // every node far away (the links as given)
	Near   = "near"   // the node of shard (copy) 0 — the one a read asks first — on the Near link
)

// Config describes a run.
type Config struct {
	Bucket      string  // an existing bucket
	Sizes       []int64 // (a) file sizes, at cairn's default block size
	PacketSize  int64   // (a) the file size of the packet-size sweep
	Packets     []int   // (a) block sizes swept (0: cairn's default, 1 MiB)
	CompareSize int64   // (b) the file size
	Near        Link    // (b) the nearby node's link
	Reps        int     // uploads and downloads per point
	Down        []float64
	Trials      int // (c) Monte-Carlo trials per point
	Seed        uint64
	Log         func(format string, args ...any)
	// Progress, if not nil, is called with the points measured and their
	// total: (0, total) first, then after each.
	Progress func(done, total int)
}

// Env is the cluster the experiment drives.
type Env struct {
	// NewClient returns a data path (over the shaped links) storing
	// blockSize shard bytes per stripe (0: the default), with codes built
	// by codes.
	NewClient func(blockSize int, codes func(string) (codec.Code, error)) *client.Client
	Links     *Links
	// Addr returns the address of the node that holds a disk.
	Addr func(cairn.DiskID) (string, error)
	// Remove deletes an object and its shard files (not over the shaped
	// links).
	Remove func(ctx context.Context, m *cairn.Manifest) error
	// Drop deletes the files of m's shards (shard slots) — lost stripes
	// for a degraded download (not over the shaped links).
	Drop func(ctx context.Context, m *cairn.Manifest, shards []int) error
	// Placement returns the cluster's PG table of a width, and its disks.
	Placement func(ctx context.Context, width int) (cairn.PGTable, []cairn.Disk, error)
}

// Row is one point of one part. Fields a part does not use are zero.
type Row struct {
	Part      string
	Case      string // replication: Global or Near
	Policy    string
	Size      int64 // file bytes
	BlockSize int   // packet: shard bytes per stripe
	Op        string
	Reps      int
	Seconds   float64 // mean wall time of the operation
	Coding    float64 // mean seconds in Encode (upload) or Reconstruct (download)
	Share     float64 // Coding ÷ Seconds
	Moved     float64 // mean bytes over the links (sent on upload, received on download) ÷ Size
	Model     float64 // the links-only model's seconds (UploadModel, DownloadModel), mean
	DownPct   float64 // availability: percent of nodes down
	Readable  float64 // availability: Monte-Carlo estimate
	Exact     float64 // availability: ReadableExact (PGs on distinct nodes)
}

// Transfer returns the time left to transfers: Seconds − Coding.
func (r Row) Transfer() float64 { return r.Seconds - r.Coding }

// Run runs every part and returns the rows.
func Run(ctx context.Context, cfg Config, env Env) ([]Row, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.Reps <= 0 || cfg.Bucket == "" {
		return nil, fmt.Errorf("grid: bad config: %d reps, bucket %q", cfg.Reps, cfg.Bucket)
	}
	x := &experiment{cfg: cfg, env: env, rng: mrand.New(mrand.NewPCG(cfg.Seed, 0x67726964))}
	if cfg.Progress == nil {
		cfg.Progress = func(int, int) {}
	}
	done, total := 0, len(cfg.Sizes)+len(cfg.Packets)+2 // the 2: availability of each policy
	if cfg.CompareSize > 0 {
		total += 4
	}
	step := func() { done++; cfg.Progress(done, total) }
	cfg.Progress(0, total)
	var rows []Row
	for _, size := range cfg.Sizes {
		rs, err := x.point(ctx, PartTransfer, Global, Striped, size, 0)
		if err != nil {
			return rows, err
		}
		rows = append(rows, rs...)
		step()
	}
	for _, bs := range cfg.Packets {
		rs, err := x.point(ctx, PartPacket, Global, Striped, cfg.PacketSize, bs)
		if err != nil {
			return rows, err
		}
		rows = append(rows, rs...)
		cr, err := CodecRows(Striped, cfg.PacketSize, bs, cfg.Reps)
		if err != nil {
			return rows, err
		}
		rows = append(rows, cr...)
		cfg.Log("codec %s, packet %s: encode %.0f MB/s, worst-case decode %.0f MB/s", Striped, packetName(bs),
			float64(cr[0].Size)/cr[0].Seconds/1e6, float64(cr[1].Size)/cr[1].Seconds/1e6)
		step()
	}
	if cfg.CompareSize > 0 {
		for _, cs := range []string{Global, Near} {
			for _, pol := range []string{Striped4, Replicated} {
				rs, err := x.point(ctx, PartReplication, cs, pol, cfg.CompareSize, 0)
				if err != nil {
					return rows, err
				}
				rows = append(rows, rs...)
				step()
			}
		}
	}
	for _, pol := range []string{Striped4, Replicated} {
		rs, err := x.availability(ctx, pol)
		if err != nil {
			return rows, err
		}
		rows = append(rows, rs...)
		step()
	}
	return rows, nil
}

type experiment struct {
	cfg Config
	env Env
	rng *mrand.Rand
	obj int // objects written so far (their keys)
}

// sample is one timed operation.
type sample struct {
	seconds, coding, model float64
	bytes                  int64
}

// point uploads and downloads a file of size with policy cfg.Reps times
// and returns an upload row and a download row, and for PartTransfer an
// OpDegraded row. In the Near case, the node of shard 0 is put on the
// Near link for the download.
func (x *experiment) point(ctx context.Context, part, cs, policy string, size int64, bs int) ([]Row, error) {
	data := make([]byte, size)
	for i := 0; i < len(data); i += 8 {
		v := x.rng.Uint64()
		for j := i; j < min(i+8, len(data)); j++ {
			data[j] = byte(v)
			v >>= 8
		}
	}
	code, err := all.New(policy)
	if err != nil {
		return nil, err
	}
	p := code.Params()
	var coding Coding
	cl := x.env.NewClient(bs, coding.Codes)
	var ups, downs, degs []sample
	for range x.cfg.Reps {
		x.obj++
		key := fmt.Sprintf("%s/%s/%d", part, policy, x.obj)
		var m *cairn.Manifest
		up, err := x.timed(&coding, func() error {
			var err error
			m, err = cl.Put(ctx, x.cfg.Bucket, key, bytes.NewReader(data), client.PutOptions{Size: size, Policy: policy})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s upload of %d bytes: %w", policy, size, err)
		}
		links, addrs, err := x.links(m)
		if err != nil {
			return nil, err
		}
		up.model = UploadModel(size, p.K, links).Seconds()
		old := links[0]
		if cs == Near {
			x.env.Links.Set(addrs[0], x.cfg.Near)
			links[0] = x.cfg.Near
		}
		down, err := x.timed(&coding, func() error { return x.download(ctx, cl, key, data) })
		if cs == Near {
			x.env.Links.Set(addrs[0], old)
		}
		if err != nil {
			return nil, fmt.Errorf("%s download of %d bytes: %w", policy, size, err)
		}
		down.model = DownloadModel(size, p.K, p.K+1, links).Seconds()
		if part == PartTransfer {
			// The paper's decoding measurement: M of the original
			// stripes removed, rebuilt from the parity.
			lost := codec.Data(min(p.M, p.K))
			if err := x.env.Drop(ctx, m, lost); err != nil {
				return nil, fmt.Errorf("dropping shards of %s: %w", key, err)
			}
			deg, err := x.timed(&coding, func() error { return x.download(ctx, cl, key, data) })
			if err != nil {
				return nil, fmt.Errorf("%s degraded download of %d bytes: %w", policy, size, err)
			}
			deg.model = DownloadModel(size, p.K, p.K, links[len(lost):]).Seconds()
			degs = append(degs, deg)
		}
		if err := x.env.Remove(context.WithoutCancel(ctx), m); err != nil {
			return nil, fmt.Errorf("removing %s: %w", key, err)
		}
		ups, downs = append(ups, up), append(downs, down)
	}
	rows := []Row{x.row(part, cs, policy, size, bs, "upload", ups), x.row(part, cs, policy, size, bs, "download", downs)}
	if len(degs) > 0 {
		rows = append(rows, x.row(part, cs, policy, size, bs, OpDegraded, degs))
	}
	for _, r := range rows {
		x.cfg.Log("%-12s %-6s %-6s %9s packet %-8s %-17s %7.2f s (coding %5.1f%%, model %6.2f s) moved %.2f× size",
			r.Part, r.Case, r.Policy, sizeName(r.Size), packetName(r.BlockSize), r.Op, r.Seconds, 100*r.Share, r.Model, r.Moved)
	}
	return rows, nil
}

// download reads key back whole and checks its bytes.
func (x *experiment) download(ctx context.Context, cl *client.Client, key string, data []byte) error {
	_, rc, err := cl.Get(ctx, x.cfg.Bucket, key, 0, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err == nil && !bytes.Equal(got, data) {
		err = fmt.Errorf("%w: %s read back wrong", cairn.ErrCorrupt, key)
	}
	return err
}

// timed runs f and measures its wall time, its coding time and the bytes
// it moved over the links (sent plus received).
func (x *experiment) timed(c *Coding, f func() error) (sample, error) {
	e0, d0 := c.Times()
	s0, r0 := x.env.Links.Bytes()
	start := time.Now()
	err := f()
	wall := time.Since(start)
	e1, d1 := c.Times()
	s1, r1 := x.env.Links.Bytes()
	return sample{seconds: wall.Seconds(), coding: (e1 - e0 + d1 - d0).Seconds(), bytes: s1 - s0 + r1 - r0}, err
}

// links returns the links and node addresses of m's shards, in shard
// order.
func (x *experiment) links(m *cairn.Manifest) ([]Link, []string, error) {
	var links []Link
	var addrs []string
	for _, s := range m.Shards {
		a, err := x.env.Addr(s.Disk)
		if err != nil {
			return nil, nil, err
		}
		links, addrs = append(links, x.env.Links.Get(a)), append(addrs, a)
	}
	return links, addrs, nil
}

func (x *experiment) row(part, cs, policy string, size int64, bs int, op string, ss []sample) Row {
	r := Row{Part: part, Case: cs, Policy: policy, Size: size, BlockSize: bs, Op: op, Reps: len(ss)}
	for _, s := range ss {
		r.Seconds += s.seconds / float64(len(ss))
		r.Coding += s.coding / float64(len(ss))
		r.Model += s.model / float64(len(ss))
		r.Moved += float64(s.bytes) / float64(size) / float64(len(ss))
	}
	if r.Seconds > 0 {
		r.Share = r.Coding / r.Seconds
	}
	return r
}

// availability estimates, for each fraction of nodes down, the
// probability that a file of policy is readable, on the cluster's PG
// table of the policy's width.
func (x *experiment) availability(ctx context.Context, policy string) ([]Row, error) {
	code, err := all.New(policy)
	if err != nil {
		return nil, err
	}
	p := code.Params()
	t, disks, err := x.env.Placement(ctx, p.N())
	if err != nil {
		return nil, fmt.Errorf("placement of %s: %w", policy, err)
	}
	st, nodes, err := StripesOf(t, disks)
	if err != nil {
		return nil, err
	}
	var rows []Row
	for i, down := range x.cfg.Down {
		rng := mrand.New(mrand.NewPCG(x.cfg.Seed, uint64(i)))
		r := Row{Part: PartAvailability, Policy: policy, DownPct: 100 * down, Reps: x.cfg.Trials,
			Readable: Readable(st, len(nodes), code.CanReconstruct, down, x.cfg.Trials, rng), Exact: ReadableExact(p.K, p.N(), down)}
		x.cfg.Log("availability %-6s %3.0f%% of %d nodes down: readable %.4f (binomial %.4f), %d PGs", policy, r.DownPct, len(nodes), r.Readable, r.Exact, len(st))
		rows = append(rows, r)
	}
	return rows, nil
}

// CodecRows times the code of policy alone, in memory, over a file of
// about size bytes (whole stripes of blockSize shard bytes; 0: 1 MiB),
// reps times: an encode row, and a worst-case decode row (the first M
// data shards of every stripe rebuilt) — the paper's Fig. 5, without its
// file I/O. The file is one buffer the stripes are cut from, so the code
// streams through memory as a client's does; each row's Size is the
// bytes coded.
func CodecRows(policy string, size int64, blockSize, reps int) ([]Row, error) {
	code, err := all.New(policy)
	if err != nil {
		return nil, err
	}
	p := code.Params()
	bs := blockSize
	if bs == 0 {
		bs = 1 << 20
	}
	sd := p.K * bs
	stripes := max(1, int(size/int64(sd)))
	file := make([]byte, stripes*sd)
	for i := range file {
		file[i] = byte(i * 31)
	}
	spare := make([][]byte, p.N()) // parity, and rebuilt data shards
	for i := range spare {
		spare[i] = make([]byte, bs)
	}
	lost := min(p.M, p.K)
	shards := make([][]byte, p.N())
	var enc, dec time.Duration
	for range reps {
		start := time.Now()
		for s := range stripes {
			for i := range p.K {
				shards[i] = file[s*sd+i*bs : s*sd+(i+1)*bs]
			}
			copy(shards[p.K:], spare[p.K:])
			if err := code.Encode(shards); err != nil {
				return nil, err
			}
		}
		enc += time.Since(start)
		start = time.Now()
		for s := range stripes {
			for i := range p.K {
				shards[i] = file[s*sd+i*bs : s*sd+(i+1)*bs]
			}
			copy(shards[p.K:], spare[p.K:])
			for i := range lost {
				shards[i] = spare[i][:0]
			}
			if err := code.Reconstruct(shards, codec.Data(p.K)); err != nil {
				return nil, err
			}
		}
		dec += time.Since(start)
	}
	row := func(op string, d time.Duration) Row {
		s := d.Seconds() / float64(reps)
		return Row{Part: PartCodec, Policy: policy, Size: int64(len(file)), BlockSize: blockSize, Op: op, Reps: reps, Seconds: s, Coding: s, Share: 1}
	}
	return []Row{row("encode", enc), row("decode-worst", dec)}, nil
}
