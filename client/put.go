package client

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"sync"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/placement"
)

// PutOptions are per-object settings for Put.
type PutOptions struct {
	Policy      string            // code for this object; "" = the bucket's default
	ContentType string            // stored and returned as is
	UserMeta    map[string]string // stored and returned as is
	// Size is the body length if known, or -1. A body that ends early or
	// runs long is refused (cairn.ErrInvalid) and nothing is stored.
	Size int64
	// Progress, if set, is called with the body bytes consumed so far.
	Progress func(n int64)
	// Now is the creation time to record (default time.Now).
	Now func() time.Time
}

// pipelineDepth is the number of stripes in flight between the encoder and
// the shard writers.
const pipelineDepth = 4

// Stripe memory is reused across PUTs: a stripe is megabytes, and fresh
// ones cost page faults and zeroing on every object. Pooled buffers come in
// whole MiB (at most poolMax), so few pools exist whatever the object
// sizes; smaller and larger buffers are plain allocations. Pooled memory
// is not zeroed.
const (
	poolUnit = 1 << 20
	poolMax  = 64 << 20
)

var bufPools sync.Map // capacity → *sync.Pool of *[]byte

func getBuf(n int) []byte {
	if n < poolUnit || n > poolMax {
		return make([]byte, n)
	}
	c := (n + poolUnit - 1) / poolUnit * poolUnit
	if pl, ok := bufPools.Load(c); ok {
		if b, ok := pl.(*sync.Pool).Get().(*[]byte); ok {
			return (*b)[:n]
		}
	}
	return make([]byte, n, c)
}

// putBuf returns b (from getBuf, no longer referenced) to its pool.
func putBuf(b []byte) {
	c := cap(b)
	if c < poolUnit || c > poolMax || c%poolUnit != 0 {
		return
	}
	pl, _ := bufPools.LoadOrStore(c, new(sync.Pool))
	b = b[:c]
	pl.(*sync.Pool).Put(&b)
}

type stripeBuf struct {
	data   []byte   // K·BlockSize
	shards [][]byte // K views into data + M parity blocks
	wg     sync.WaitGroup
}

type block struct {
	b    []byte
	done *sync.WaitGroup
}

// Put stores the body of r as bucket/key. It returns the committed
// manifest. Errors: cairn.ErrNotFound (no such bucket), cairn.ErrInvalid
// (bad key, policy, or a body that does not match opts.Size),
// cairn.ErrUnavailable (a shard could not be stored; wraps the cause, e.g.
// cairn.ErrNoSpace), or ctx's error. On error nothing becomes visible and
// the shards written so far are deleted.
func (c *Client) Put(ctx context.Context, bucket, key string, r io.Reader, opts PutOptions) (*cairn.Manifest, error) {
	if err := cairn.ValidateKey(key); err != nil {
		return nil, err
	}
	b, err := c.meta.Bucket(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w", bucket, err)
	}
	policy := opts.Policy
	if policy == "" {
		policy = b.Policy
	}
	d, err := c.store(ctx, bucket, key, policy, r, opts)
	if err != nil {
		return nil, err
	}
	version, total, bs, pg, locs := d.version, d.size, d.blockSize, d.pg, d.shards
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	m := &cairn.Manifest{
		Bucket: bucket, Key: key, Version: version, Size: total,
		ETag: d.etag, ContentType: opts.ContentType,
		UserMeta: maps.Clone(opts.UserMeta), Created: now().UTC(),
		Policy: policy, BlockSize: bs, PG: pg.ID, Shards: locs,
	}
	if err := c.commit(ctx, m); err != nil {
		if sentinel(err) {
			// The store said no: the manifest is certainly not committed.
			c.deleteShards(context.WithoutCancel(ctx), version, locs)
		}
		// Otherwise the outcome is unknown: the manifest may be committed,
		// so the shards stay (garbage for scrub if it was not).
		return nil, err
	}
	return m, nil
}

// stored is a body stored as shard files by store, not yet named by any
// manifest.
type stored struct {
	version   string
	size      int64
	etag      string
	blockSize int
	pg        cairn.PG
	shards    []cairn.ShardLoc
}

// store erasure codes the body of r into fresh shard files (placed as if
// for bucket/key) under a new version. On error nothing is kept.
func (c *Client) store(ctx context.Context, bucket, key, policy string, r io.Reader, opts PutOptions) (*stored, error) {
	code, err := c.code(policy)
	if err != nil {
		return nil, err
	}
	p := code.Params()
	table, err := c.table(ctx, p.N())
	if err != nil {
		return nil, fmt.Errorf("placement for %s: %w", policy, err)
	}
	version, err := c.newVersion()
	if err != nil {
		return nil, err
	}
	pg := table.PGs[placement.PGFor(bucket, key, version, len(table.PGs))]
	disks, err := c.arrange(ctx, policy, code, pg)
	if err != nil {
		return nil, fmt.Errorf("placement for %s: %w", policy, err)
	}
	if disks, err = c.avoidUnwritable(ctx, disks, version); err != nil {
		return nil, fmt.Errorf("placement for %s: %w", policy, err)
	}

	mult := max(p.ShardMultiple, 1)
	bs := (c.cfg.BlockSize + mult - 1) / mult * mult
	first := getBuf(p.K * bs)
	defer putBuf(first)
	n, single, err := fill(r, first)
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	if single {
		bs = codec.ShardSize(p, n) // a small object gets a small stripe
		first = first[:p.K*bs]
	}

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &putter{c: c, ctx: pctx, cancel: cancel, code: code, p: p, bs: bs, version: version, disks: disks}
	w.start()
	md := md5.New()
	total, err := w.run(r, first, n, single, md, opts)
	if err == nil && opts.Size >= 0 && total != opts.Size {
		err = fmt.Errorf("%w: the body was %d bytes, %d were announced", cairn.ErrInvalid, total, opts.Size)
	}
	if err != nil {
		cancel() // abort the shard requests: nothing of this body is kept
	}
	locs, werr := w.finish()
	if werr != nil && (err == nil || errors.Is(err, context.Canceled) && ctx.Err() == nil) {
		err = werr // a shard's failure, not the cancellation it caused
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.deleteShards(context.WithoutCancel(ctx), version, locs)
		return nil, err
	}
	return &stored{version: version, size: total, etag: hex.EncodeToString(md.Sum(nil)), blockSize: bs, pg: pg, shards: locs}, nil
}

// sentinel reports whether err is a definite answer from the metadata store
// (as opposed to an infrastructure error whose outcome is unknown).
func sentinel(err error) bool {
	for _, s := range []error{cairn.ErrConflict, cairn.ErrNotFound, cairn.ErrInvalid, cairn.ErrExists} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fill reads into p until it is full or r ends. Only a clean io.EOF from r
// is the end of the body (eof); any other error, io.ErrUnexpectedEOF from a
// truncated HTTP body included, is returned as an error — unlike
// io.ReadFull, which reports a short read with that same error.
func fill(r io.Reader, p []byte) (n int, eof bool, err error) {
	for n < len(p) {
		k, err := r.Read(p[n:])
		n += k
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// commit makes m current, replacing whatever version is there, and deletes
// the replaced version's shards. Re-committing m after an unknown outcome
// is safe (the store treats an already-current version as success).
func (c *Client) commit(ctx context.Context, m *cairn.Manifest) error {
	for range 16 {
		prev := ""
		old, err := c.meta.Manifest(ctx, m.Bucket, m.Key)
		switch {
		case err == nil:
			prev = old.Version
		case !isNotFound(err):
			return fmt.Errorf("committing %s/%s: %w", m.Bucket, m.Key, err)
		}
		err = c.meta.CommitManifest(ctx, m, prev)
		if errors.Is(err, cairn.ErrConflict) {
			continue // a concurrent writer won; retry against its version
		}
		if err != nil {
			return fmt.Errorf("committing %s/%s: %w", m.Bucket, m.Key, err)
		}
		if old != nil && old.Version != m.Version {
			c.deleteObjectShards(context.WithoutCancel(ctx), old)
		}
		return nil
	}
	return fmt.Errorf("committing %s/%s: %w (too many concurrent writers)", m.Bucket, m.Key, cairn.ErrConflict)
}

// putter streams one object's shards to their disks.
type putter struct {
	c       *Client
	ctx     context.Context
	cancel  context.CancelFunc
	code    codec.Code
	p       codec.Params
	bs      int
	version string
	disks   []cairn.DiskID

	chans   []chan block
	wg      sync.WaitGroup
	results []shardResult
}

type shardResult struct {
	size, sent int64
	crc        uint32 // the node's CRC-32C of what it stored
	err        error
}

func (w *putter) start() {
	n := w.p.N()
	w.chans = make([]chan block, n)
	w.results = make([]shardResult, n)
	for i := range n {
		ch := make(chan block, pipelineDepth)
		w.chans[i] = ch
		res := &w.results[i]
		w.wg.Go(func() {
			body := &blockReader{ch: ch}
			size, crc, err := w.c.shards.PutShard(w.ctx, w.disks[i], cairn.ShardName(w.version, i), body)
			res.size, res.crc, res.err = size, crc, err
			if err != nil {
				w.cancel()
			}
			body.drain()         // release the stripes still queued for this shard
			res.sent = body.sent // final: drain returned
		})
	}
}

// blockReader is a shard request's body: the blocks queued for the shard,
// read in order. It hands each block's own memory to the transport
// (WriteTo), and marks a block done once it has been consumed.
//
// The transport may still read the body after PutShard returned (a node
// that answers early): mu serializes that against drain.
type blockReader struct {
	ch <-chan block

	mu      sync.Mutex
	drained bool  // guarded by mu
	cur     block // guarded by mu
	off     int   // guarded by mu
	sent    int64 // guarded by mu
}

var errDrained = errors.New("shard request already ended")

func (r *blockReader) next() bool {
	if r.cur.done != nil {
		r.cur.done.Done()
		r.cur = block{}
	}
	blk, ok := <-r.ch
	if !ok {
		return false
	}
	r.cur, r.off = blk, 0
	return true
}

func (r *blockReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drained {
		return 0, errDrained
	}
	for r.cur.done == nil || r.off == len(r.cur.b) {
		if !r.next() {
			return 0, io.EOF
		}
	}
	n := copy(p, r.cur.b[r.off:])
	r.off += n
	r.sent += int64(n)
	return n, nil
}

// WriteTo writes the remaining blocks to w without copying them.
func (r *blockReader) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drained {
		return 0, errDrained
	}
	var total int64
	for {
		if r.cur.done != nil && r.off < len(r.cur.b) {
			b := r.cur.b[r.off:]
			n, err := w.Write(b)
			r.off += n
			r.sent += int64(n)
			total += int64(n)
			if err != nil {
				return total, err
			}
		}
		if !r.next() {
			return total, nil
		}
	}
}

// drain marks every block not consumed as done (after the request ended).
func (r *blockReader) drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drained = true
	for r.next() {
	}
}

// run encodes the body stripe by stripe and hands blocks to the feeders.
func (w *putter) run(r io.Reader, first []byte, n int, single bool, md hash.Hash, opts PutOptions) (int64, error) {
	p := w.p
	ring := make([]*stripeBuf, pipelineDepth)
	for i := range ring {
		mem := getBuf(p.N() * w.bs)
		sb := &stripeBuf{data: mem[:p.K*w.bs], shards: make([][]byte, p.N())}
		for j := range p.N() {
			sb.shards[j] = mem[j*w.bs : (j+1)*w.bs : (j+1)*w.bs]
		}
		ring[i] = sb
	}
	defer func() { // never leave a stripe buffer in a feeder's hands
		for _, sb := range ring {
			sb.wg.Wait()
			putBuf(sb.data[:cap(sb.data)])
		}
	}()
	// MD5 (the ETag) runs beside the encoder: at ~0.6 GB/s per core it
	// would otherwise set the pace.
	hashq := make(chan block, pipelineDepth)
	hashed := make(chan struct{})
	go func() {
		for blk := range hashq {
			md.Write(blk.b)
			blk.done.Done()
		}
		close(hashed)
	}()
	defer func() { close(hashq); <-hashed }()
	var total int64
	for s := 0; ; s++ {
		sb := ring[s%len(ring)]
		sb.wg.Wait()
		var got int
		var end bool
		if s == 0 {
			got = copy(sb.data, first[:n])
			end = single
		} else {
			var err error
			got, end, err = fill(r, sb.data)
			if err != nil {
				return total, fmt.Errorf("reading the body: %w", err)
			}
			if got == 0 && end {
				return total, nil // the previous stripe was the last one
			}
		}
		if err := w.ctx.Err(); err != nil {
			return total, err
		}
		clear(sb.data[got:])
		total += int64(got)
		if opts.Progress != nil {
			opts.Progress(total)
		}
		if opts.Size >= 0 && total > opts.Size {
			return total, fmt.Errorf("%w: the body is longer than the %d bytes announced", cairn.ErrInvalid, opts.Size)
		}
		if err := w.code.Encode(sb.shards); err != nil {
			return total, err
		}
		sb.wg.Add(p.N() + 1)
		hashq <- block{b: sb.data[:got], done: &sb.wg}
		for i, ch := range w.chans {
			ch <- block{b: sb.shards[i], done: &sb.wg}
		}
		if end || got < len(sb.data) {
			return total, nil
		}
	}
}

// finish closes the feeders, waits for every shard request, and checks
// them. It returns the locations of the shards that were stored (for
// clean-up on error) and the first error.
func (w *putter) finish() ([]cairn.ShardLoc, error) {
	for _, ch := range w.chans {
		close(ch)
	}
	w.wg.Wait()
	locs := make([]cairn.ShardLoc, len(w.results))
	var first error
	for i, r := range w.results {
		if r.err == nil {
			locs[i] = cairn.ShardLoc{Disk: w.disks[i], Size: r.size, CRC: r.crc}
		}
		var err error
		switch {
		case r.err != nil:
			err = r.err
		case r.size != r.sent:
			err = fmt.Errorf("%w: the node stored %d bytes, %d were sent", cairn.ErrCorrupt, r.size, r.sent)
		}
		if err != nil && first == nil && !errors.Is(err, context.Canceled) {
			first = fmt.Errorf("%w: storing shard %d on disk %s: %w", cairn.ErrUnavailable, i, w.disks[i], err)
		}
	}
	if first == nil {
		for i, r := range w.results {
			if r.err != nil {
				first = fmt.Errorf("storing shard %d on disk %s: %w", i, w.disks[i], r.err)
				break
			}
		}
	}
	return locs, first
}
