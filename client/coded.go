package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"time"

	"cairn"
	"cairn/client/drive"
	"cairn/client/engine"
	"cairn/client/slowdisk"
	"cairn/codec"
	"cairn/node/wire"
	"cairn/placement"
)

// Fountain-coded (lt) objects, written and read the RobuSTore way: the
// object is cut into stripes of K source blocks; the writer keeps every
// disk of the object busy with new coded blocks, each disk getting more
// as it acknowledges faster, and stops as soon as X·K blocks are durable
// (engine.Write, Eager mode), cancelling the rest; a reader asks every
// disk for every block of a stripe and decodes from the first that
// arrive (engine.Read, every block at once), cancelling the rest. Each
// block is one shard file, named by its stripe's version and block ID.

const (
	// codedMaxStripe bounds the data bytes of one stripe, which the writer
	// holds in memory to encode (and the reader to decode).
	codedMaxStripe = 64 << 20
	// codedMaxWidth bounds the disks one fountain-coded object spreads over.
	codedMaxWidth = 64
	// codedDepth is the block requests a disk serves at once.
	codedDepth = 2
	// codedMaxID bounds block IDs: shard file names allow indices up to
	// 9999, and a write hands out at most X·K plus what is in flight.
	codedMaxID = 10000
)

// rateless is what the fountain-coded path needs of a code.
type rateless interface {
	codec.Code
	codec.Rateless
}

// codedBlockSize returns the block size for an object of a known size n
// (or −1) under code: the configured block size, smaller if a stripe would
// exceed codedMaxStripe, and for an object of at most one stripe just
// enough for it, all multiples of the code's block multiple.
func (c *Client) codedBlockSize(code rateless) int {
	k, mult := code.SourceBlocks(), code.BlockMultiple()
	bs := min(c.cfg.BlockSize, codedMaxStripe/k)
	return max(mult, bs/mult*mult)
}

// codedDisks returns the disks a fountain-coded object of this version
// spreads over, and their nodes: the writable ones, in an order of their
// own for every version (rendezvous), at most codedMaxWidth.
func (c *Client) codedDisks(ctx context.Context, version string) ([]cairn.DiskID, []cairn.NodeID, error) {
	all, err := c.clusterDisks(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []cairn.DiskID
	var nodes []cairn.NodeID
	taken := map[cairn.DiskID]bool{}
	nodeOf := map[cairn.DiskID]cairn.NodeID{}
	for _, d := range all {
		nodeOf[d.ID] = d.Node
	}
	for len(out) < codedMaxWidth {
		d, ok := placement.Spare(all, version, func(d cairn.Disk) bool { return !taken[d.ID] && d.Writable() },
			func(cairn.Disk) int { return 0 })
		if !ok {
			break
		}
		taken[d] = true
		out = append(out, d)
		nodes = append(nodes, nodeOf[d])
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: no writable disk", cairn.ErrUnavailable)
	}
	return out, nodes, nil
}

// codedAvoidSlow drops the disks Config.SlowDisks holds slow from a
// fountain-coded object's disks (and their nodes), so that its writes stop
// offering blocks to a disk far behind the others — but only when the
// rest hold a stripe of n blocks (k source) within bounds no looser than
// all of them would (placement.CodedBounds): avoiding a slow disk never
// lets a lost disk or node cost a stripe more blocks. Otherwise, and when
// no disk is slow, the lists come back as they were.
func (c *Client) codedAvoidSlow(k, n int, disks []cairn.DiskID, nodes []cairn.NodeID) ([]cairn.DiskID, []cairn.NodeID) {
	slow := c.slowNow()
	var fast []cairn.DiskID
	var fastNodes []cairn.NodeID
	for i, d := range disks {
		if !slow(d) {
			fast = append(fast, d)
			fastNodes = append(fastNodes, nodes[i])
		}
	}
	if len(fast) == len(disks) || len(fast) == 0 {
		return disks, nodes
	}
	all := placement.CodedBounds(k, n, placement.CodedMargin, nodes)
	rest := placement.CodedBounds(k, n, placement.CodedMargin, fastNodes)
	if rest.PerDisk > all.PerDisk || rest.PerNode > all.PerNode {
		return disks, nodes
	}
	return fast, fastNodes
}

// storeCoded is store for fountain-coded policies (version: the one
// store drew, or "" to draw one).
//
// ident is the identity of the blocks' files but the versions, block IDs
// and block size, which storeCoded sets.
func (c *Client) storeCoded(ctx context.Context, bucket, key, version string, code rateless, r io.Reader, opts PutOptions, ident cairn.ShardIdentity) (*stored, error) {
	if err := checkCoded(code); err != nil {
		return nil, err
	}
	k := code.SourceBlocks()
	if version == "" {
		var err error
		if version, err = c.newVersion(); err != nil {
			return nil, err
		}
	}
	disks, nodes, err := c.codedDisks(ctx, version)
	if err != nil {
		return nil, err
	}
	disks, nodes = c.codedAvoidSlow(k, code.Params().N(), disks, nodes)
	bs := c.codedBlockSize(code)
	ident.Object, ident.BlockSize = version, bs
	release, err := c.cfg.Memory.take(ctx, int64(k*bs))
	if err != nil {
		return nil, err
	}
	defer release()
	buf := getBuf(k * bs)
	defer putBuf(buf)
	md := md5.New()
	d := &stored{version: version, layout: cairn.Layout{BlockSize: bs}}
	fail := func(err error) (*stored, error) {
		c.discard(ctx, bucket, key, d.files())
		return nil, err
	}
	// blocksFor is the block size just big enough for got bytes.
	blocksFor := func(got int) int {
		mult := code.BlockMultiple()
		perBlock := (got + k - 1) / k
		return max(1, (perBlock+mult-1)/mult) * mult
	}
	for s := 0; ; s++ {
		got, end, err := fill(r, buf[:k*bs])
		if err != nil {
			return fail(fmt.Errorf("reading the body: %w", err))
		}
		if got == 0 && end && s > 0 {
			break // the previous stripe was the last
		}
		sbs := bs // this stripe's block size
		switch {
		case s == 0 && end:
			// A one-stripe object gets blocks just big enough for it.
			bs = blocksFor(got)
			sbs, d.layout.BlockSize = bs, bs
		case got < k*bs:
			// The last stripe of a longer one: blocks just big enough for
			// what is left.
			sbs = blocksFor(got)
		}
		d.size += int64(got)
		md.Write(buf[:got])
		if opts.Progress != nil {
			opts.Progress(d.size)
		}
		if opts.Size >= 0 && d.size > opts.Size {
			return fail(fmt.Errorf("%w: the body is longer than the %d bytes announced", cairn.ErrInvalid, opts.Size))
		}
		clear(buf[got : k*sbs])
		st, err := c.writeCodedStripe(ctx, code, buf[:k*sbs], sbs, disks, nodes, &ident)
		if err != nil {
			return fail(err)
		}
		if sbs != bs {
			st.BlockSize = sbs
		}
		d.layout.Coded = append(d.layout.Coded, st)
		if end || got < k*bs {
			break
		}
	}
	if opts.Size >= 0 && d.size != opts.Size {
		return fail(fmt.Errorf("%w: the body was %d bytes, %d were announced", cairn.ErrInvalid, d.size, opts.Size))
	}
	d.etag = hex.EncodeToString(md.Sum(nil))
	return d, nil
}

// WriteCodedStripe writes one stripe of a fountain-coded object exactly
// as a PUT does: data is the K source blocks of policy (an lt policy)
// back to back, coded blocks go to disks until X·K are durable, and the
// stripe's layout is returned. On error nothing of it is kept. It uses no
// metadata (the RobuSTore experiment calls it on a Client without any).
func (c *Client) WriteCodedStripe(ctx context.Context, policy string, data []byte, disks []cairn.DiskID) (cairn.CodedStripe, error) {
	code, err := c.ratelessCode(policy)
	if err != nil {
		return cairn.CodedStripe{}, err
	}
	k := code.SourceBlocks()
	if len(data) == 0 || len(data)%(k*code.BlockMultiple()) != 0 {
		return cairn.CodedStripe{}, fmt.Errorf("%w: %d bytes are not %d source blocks of a multiple of %d", cairn.ErrInvalid, len(data), k, code.BlockMultiple())
	}
	return c.writeCodedStripe(ctx, code, data, len(data)/k, disks, nil, nil)
}

// ReadCodedStripe reads one stripe of a fountain-coded object exactly as
// a GET does (every disk asked for every block, decoded from the first
// arrivals) and returns its K·blockSize data bytes. It uses no metadata:
// every disk counts as readable.
func (c *Client) ReadCodedStripe(ctx context.Context, policy string, st cairn.CodedStripe, blockSize int) ([]byte, error) {
	code, err := c.ratelessCode(policy)
	if err != nil {
		return nil, err
	}
	return c.readCodedStripe(ctx, code, st, blockSize, func(cairn.DiskID) bool { return true }, "stripe "+st.Version, nil)
}

func (c *Client) ratelessCode(policy string) (rateless, error) {
	code, err := c.code(policy)
	if err != nil {
		return nil, err
	}
	rc, ok := code.(rateless)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a fountain code", cairn.ErrInvalid, policy)
	}
	return rc, checkCoded(rc)
}

// checkCoded refuses codes whose stripes need more block IDs than shard
// names allow (X·K plus the requests in flight when the write stops).
func checkCoded(code rateless) error {
	if n := code.Params().N(); n+codedDepth*codedMaxWidth > codedMaxID {
		return fmt.Errorf("%w: %s makes %d blocks per stripe; the data path stores at most %d", cairn.ErrInvalid,
			code.Policy(), n, codedMaxID-codedDepth*codedMaxWidth)
	}
	return nil
}

// writeCodedStripe encodes one stripe (K source blocks of bs bytes back to
// back in data) and writes coded blocks to disks until X·K are durable,
// within the bounds per disk and, if nodes names the disks' nodes (nil:
// unknown), per node (placement.CodedBounds).
// It returns the stripe's layout; on error it deletes what may be stored.
// ident, if set, is the identity the blocks' files record (its Version
// and Row are set per block: the stripe's version, the block ID).
func (c *Client) writeCodedStripe(ctx context.Context, code rateless, data []byte, bs int, disks []cairn.DiskID, nodes []cairn.NodeID, ident *cairn.ShardIdentity) (cairn.CodedStripe, error) {
	k := code.SourceBlocks()
	target := code.Params().N()
	version, err := c.newVersion()
	if err != nil {
		return cairn.CodedStripe{}, err
	}
	st := cairn.CodedStripe{Version: version}
	src := make([][]byte, k)
	for i := range k {
		src[i] = data[i*bs : (i+1)*bs]
	}
	enc, err := code.NewEncoder(src)
	if err != nil {
		return cairn.CodedStripe{}, err
	}
	wc := engine.WriteConfig{Disks: len(disks), Primaries: min(len(disks), target), Target: target,
		MaxBlock: codedMaxID, Depth: codedDepth, Eager: true, MinWait: c.cfg.StreamWait}
	wc.MaxPerDisk, wc.Group, wc.MaxPerGroup = codedBounds(k, target, disks, nodes)
	w, err := engine.NewWrite(wc)
	if err != nil {
		return cairn.CodedStripe{}, err
	}
	var mu sync.Mutex // guards enc (not safe for concurrent use), crcs, idents and sent
	crcs := map[int]uint32{}
	idents := map[int]int{}
	var sent []cairn.BlockLoc
	times := newCodedTimes() // guarded by mu
	var lastErr error        // set on Run's goroutine
	_, err = drive.Run(ctx, drive.WriteMachine{Write: w}, drive.Options{Depth: codedDepth, Tick: c.cfg.StreamWait / 4, Counts: &c.stats.writes,
		Do: func(ctx context.Context, a *drive.Request) (_ []byte, err error) {
			start := time.Now()
			defer func() {
				mu.Lock()
				times.add(a.Disk, time.Since(start), err)
				mu.Unlock()
			}()
			var b []byte
			if a.Block < k {
				b = src[a.Block]
			} else {
				b = make([]byte, bs)
				mu.Lock()
				err := enc.EncodeBlocks([]int{a.Block}, [][]byte{b})
				mu.Unlock()
				if err != nil {
					return nil, err
				}
			}
			mu.Lock()
			sent = append(sent, cairn.BlockLoc{ID: a.Block, Disk: disks[a.Disk]})
			mu.Unlock()
			// PutShard checks the stored CRC against the bytes it sent.
			name := cairn.ShardName(version, a.Block)
			var info wire.ShardInfo
			if ident != nil {
				id := *ident
				id.Version = version
				info, err = c.putShard(ctx, disks[a.Disk], name, id, a.Block, bytes.NewReader(b))
			} else {
				info, err = c.shards.PutShard(ctx, disks[a.Disk], name, bytes.NewReader(b))
			}
			if err != nil {
				return nil, err
			}
			mu.Lock()
			crcs[a.Block], idents[a.Block] = info.CRC, info.Ident
			mu.Unlock()
			return nil, nil
		},
		Failed: func(a engine.Action, err error) {
			if !errors.Is(err, context.Canceled) {
				lastErr = fmt.Errorf("block %d on disk %s: %w", a.Block, disks[a.Disk], err)
			}
		},
	})
	if err != nil {
		c.discard(ctx, "", "", codedFiles(version, sent))
		if errors.Is(err, engine.ErrUnavailable) {
			err = fmt.Errorf("%w: only %d of %d blocks of a stripe could be stored: %w", cairn.ErrUnavailable, len(w.Durable()), target, err)
			if lastErr != nil {
				err = fmt.Errorf("%w (last error: %w)", err, shardErr(lastErr))
			}
		}
		return cairn.CodedStripe{}, err
	}
	c.observe(times.samples(disks))
	for _, p := range w.Durable() {
		st.Blocks = append(st.Blocks, cairn.BlockLoc{ID: p.Block, Disk: disks[p.Disk], CRC: crcs[p.Block], Ident: idents[p.Block]})
	}
	// Every ID handed out may name a file (kept, or discarded below): a
	// repair's new blocks take IDs above them (CodedStripe.Next).
	for _, b := range sent {
		st.Next = max(st.Next, b.ID+1)
	}
	// Blocks sent but not kept (cancelled, or durable after the target):
	// their nodes may have stored them anyway.
	var stray []cairn.BlockLoc
	for _, b := range sent {
		if !slices.ContainsFunc(st.Blocks, func(k cairn.BlockLoc) bool { return k.ID == b.ID }) {
			stray = append(stray, b)
		}
	}
	c.discard(ctx, "", "", codedFiles(version, stray))
	return st, nil
}

// codedBounds bounds the blocks of one stripe of n blocks (k source) a
// disk and a node may take (placement.CodedBounds). The speculative write
// gives fast disks more, but not so many that losing any two disks or
// nodes leaves fewer than K+placement.CodedMargin blocks. nodes are the
// disks' nodes (nil: unknown, each disk counts as a node of its own). It
// returns the engine's MaxPerDisk, Group and MaxPerGroup.
func codedBounds(k, n int, disks []cairn.DiskID, nodes []cairn.NodeID) (perDisk int, group []int, perGroup int) {
	if len(nodes) != len(disks) {
		nodes = make([]cairn.NodeID, len(disks))
		for i, d := range disks {
			nodes[i] = cairn.NodeID(d) // unknown: a node per disk
		}
	}
	b := placement.CodedBounds(k, n, placement.CodedMargin, nodes)
	idx := map[cairn.NodeID]int{}
	group = make([]int, len(nodes))
	for i, nd := range nodes {
		if _, ok := idx[nd]; !ok {
			idx[nd] = len(idx)
		}
		group[i] = idx[nd]
	}
	return b.PerDisk, group, b.PerNode
}

// codedTimes gathers how long each disk took for the block requests of
// one stripe's write, for Config.SlowDisks: the blocks of a stripe are one
// batch of equal work, so a disk far behind its peers shows in them.
type codedTimes struct {
	done      map[int][]time.Duration // durable blocks' times, per disk index
	cancelled map[int]time.Duration   // the longest cancelled request per disk: a lower bound
	failed    map[int]bool            // a failure says nothing about speed
}

func newCodedTimes() *codedTimes {
	return &codedTimes{done: map[int][]time.Duration{}, cancelled: map[int]time.Duration{}, failed: map[int]bool{}}
}

func (t *codedTimes) add(disk int, took time.Duration, err error) {
	switch {
	case err == nil:
		t.done[disk] = append(t.done[disk], took)
	case errors.Is(err, context.Canceled):
		t.cancelled[disk] = max(t.cancelled[disk], took)
	default:
		t.failed[disk] = true
	}
}

// samples returns one sample per disk, as a PUT's streams give one each:
// the mean time of its durable blocks, or, if none finished, its longest
// cancelled request (marked as cancelled). Disks whose requests failed
// are left out.
func (t *codedTimes) samples(disks []cairn.DiskID) []slowdisk.Sample {
	var out []slowdisk.Sample
	for d := range disks {
		switch ts := t.done[d]; {
		case t.failed[d]:
		case len(ts) > 0:
			var sum time.Duration
			for _, x := range ts {
				sum += x
			}
			out = append(out, slowdisk.Sample{Disk: disks[d], Took: sum / time.Duration(len(ts))})
		default:
			if took, ok := t.cancelled[d]; ok {
				out = append(out, slowdisk.Sample{Disk: disks[d], Took: took, Cancelled: true})
			}
		}
	}
	return out
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// codedFiles returns the files of blocks of a stripe's version.
func codedFiles(version string, blocks []cairn.BlockLoc) []cairn.ShardFile {
	l := cairn.Layout{Coded: []cairn.CodedStripe{{Version: version, Blocks: blocks}}}
	return l.Files("")
}

// produceCoded sends the data of [off, end) of a fountain-coded object
// stripe by stripe. It returns false if it stopped early.
func (g *getter) produceCoded(ctx context.Context, off, end int64, out chan<- window) bool {
	code, ok := g.code.(rateless)
	if !ok {
		return sendErr(ctx, out, fmt.Errorf("%w: %s/%s has a fountain-coded layout but policy %s", cairn.ErrCorrupt, g.m.Bucket, g.m.Key, g.m.Policy))
	}
	k := code.SourceBlocks()
	sd := int64(k) * int64(g.m.BlockSize)
	if off == end {
		return true
	}
	for s := off / sd; s <= (end-1)/sd; s++ { // Get checked that every stripe is there (ValidateStored)
		bs := int(g.m.StripeBlock(g.m.Size, k, s))
		data, err := g.c.readCodedStripe(ctx, code, g.m.Coded[s], bs, func(d cairn.DiskID) bool { return g.readable[d] },
			fmt.Sprintf("%s/%s", g.m.Bucket, g.m.Key), g.damageBlock)
		if err != nil {
			return sendErr(ctx, out, err)
		}
		select {
		case out <- window{data: [][]byte{data[max(off-s*sd, 0):min(end-s*sd, int64(len(data)))]}}:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

func sendErr(ctx context.Context, out chan<- window, err error) bool {
	select {
	case out <- window{err: err}:
	case <-ctx.Done():
	}
	return false
}

// damageBlock reports a block of stripe st that a read found unreadable
// (Config.OnDamage), so that its repair is queued.
func (g *getter) damageBlock(st cairn.CodedStripe, b cairn.BlockLoc, err error) {
	if f := g.c.cfg.OnDamage; f != nil {
		f(Damage{Bucket: g.m.Bucket, Key: g.m.Key, Version: g.m.Version, Shard: b.ID, Disk: b.Disk,
			Name: cairn.ShardName(st.Version, b.ID), Err: err})
	}
}

// readCodedStripe asks every readable disk of the stripe for every block
// it holds (source blocks first), decodes from the first that arrive and
// cancels the rest. Blocks whose CRC does not match are erasures. what
// names the object in errors and logs; damage, if set, is told of every
// block that failed (the getter's damageBlock).
func (c *Client) readCodedStripe(ctx context.Context, code rateless, st cairn.CodedStripe, bs int, readable func(cairn.DiskID) bool, what string,
	damage func(cairn.CodedStripe, cairn.BlockLoc, error)) ([]byte, error) {
	k := code.SourceBlocks()
	var locs []engine.Loc
	for i, b := range st.Blocks {
		if readable(b.Disk) {
			locs = append(locs, engine.Loc{Block: i, Disk: i}) // by index into st.Blocks; drive queues by disk below
		}
	}
	slices.SortStableFunc(locs, func(a, b engine.Loc) int { return st.Blocks[a.Block].ID - st.Blocks[b.Block].ID })
	if len(locs) == 0 {
		return nil, fmt.Errorf("%w: %s: no readable block", cairn.ErrUnavailable, what)
	}
	// The driver queues requests per disk: give each distinct disk one index.
	diskIdx := map[cairn.DiskID]int{}
	for j := range locs {
		d := st.Blocks[locs[j].Block].Disk
		if _, ok := diskIdx[d]; !ok {
			diskIdx[d] = len(diskIdx)
		}
		locs[j].Disk = diskIdx[d]
	}
	dec, err := code.NewDecoder(bs)
	if err != nil {
		return nil, err
	}
	done := false
	var lastErr error
	rd, err := engine.NewRead(engine.ReadConfig{Blocks: locs, Decodable: func([]int) bool { return done }, MinWait: c.cfg.HedgeAfter})
	if err != nil {
		return nil, err
	}
	_, err = drive.Run(ctx, drive.ReadMachine{Read: rd}, drive.Options{Depth: codedDepth, Tick: c.cfg.HedgeAfter / 2, Counts: &c.stats.reads,
		Do: func(ctx context.Context, a *drive.Request) ([]byte, error) {
			b := st.Blocks[a.Block]
			buf, err := c.readShard(ctx, b.Disk, cairn.ShardName(st.Version, b.ID), 0, int64(bs), nil)
			if err != nil {
				return nil, err
			}
			if crc32.Checksum(buf, castagnoli) != b.CRC {
				return nil, fmt.Errorf("%w: block %d of stripe %s has the wrong CRC", cairn.ErrCorrupt, b.ID, st.Version)
			}
			return buf, nil
		},
		Got: func(a engine.Action, data []byte) {
			if !done {
				var err error
				if done, err = dec.Add(st.Blocks[a.Block].ID, data); err != nil {
					lastErr = err
				}
			}
		},
		Failed: func(a engine.Action, err error) {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				lastErr = err
				b := st.Blocks[a.Block]
				c.cfg.Logger.Warn("block unreadable; decoding around it", "object", what,
					"stripe", st.Version, "block", b.ID, "disk", b.Disk, "err", err)
				if damage != nil {
					damage(st, b, err)
				}
			}
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = fmt.Errorf("%w: %s: too few blocks of stripe %s could be read", cairn.ErrUnavailable, what, st.Version)
		if lastErr != nil {
			err = fmt.Errorf("%w (last error: %w)", err, shardErr(lastErr))
		}
		return nil, err
	}
	out := make([]byte, k*bs)
	dst := make([][]byte, k)
	for i := range dst {
		dst[i] = out[i*bs : (i+1)*bs : (i+1)*bs]
	}
	if err := dec.Source(dst); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", what, err)
	}
	return out, nil
}
