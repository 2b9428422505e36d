package client

import (
	"context"
	"errors"
	"fmt"
	"hash"
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
)

// putter streams one object's shards to their disks. Each shard is one
// request: a stream of the shard's blocks, one per stripe, fed in step
// with the encoder (at most pipelineDepth blocks queued per stream). The
// speculative write engine (client/engine, Stream mode) decides what to
// do when a stream holds the others back: if the code can make spare
// parity rows (codec.Extensible) and a spare disk is free, the stream is
// replaced by a spare row on the spare disk, which catches up from the
// stripes the putter still holds, and cancelled. The putter holds every
// stripe of the first spareWindow data bytes; past that, or without a
// spare, a slow stream is waited for. The manifest records which row each
// shard slot holds (cairn.ShardLoc.Row).
//
// Goroutines: drive.Run (started by newPutter, waited for by finish)
// runs the engine and the streams: every stream is one of its requests,
// whose body reports each block it takes to the engine
// (drive.Request.Progress). The encoder (run, on the caller's goroutine)
// fills the ring and feeds the streams; it tells the engine through the
// inbox when the spare window ends. The engine is touched only on Run's
// goroutine.
//
// Locking: mu guards the stream table and the ring, which the encoder and
// Run's goroutine (open: a new stream takes the stripes made so far)
// share. Nobody holds mu while blocking.
type putter struct {
	c       *Client
	ctx     context.Context // the PUT's; cancelling it aborts every stream
	cancel  context.CancelFunc
	code    codec.Code
	ext     codec.Extensible // nil: no spare rows for this code
	p       codec.Params
	bs      int
	version string
	ident   cairn.ShardIdentity // the shard files' identity but the row
	disks   []cairn.DiskID      // the engine's disks: the stripe's N, then spares
	hold    int                 // stripes held for spares' catch-up

	eng     *engine.Write   // only on drive.Run's goroutine (and what the inbox carries there)
	inbox   *drive.Inbox    // to the engine
	ran     chan struct{}   // closed when drive.Run returned
	outcome error           // drive.Run's; read once ran is closed
	durable []engine.Placed // the engine's; read once ran is closed
	reusing bool            // the encoder reuses ring buffers, and the engine knows; owned by run
	release func()          // gives the ring's memory back to the budget (Config.Memory)

	mu       sync.Mutex
	streams  []*stream    // by engine request ID; guarded by mu
	ring     []*stripeBuf // stripe s lives in ring[s % len]; guarded by mu
	produced int          // stripes handed to the streams; guarded by mu
	closed   bool         // the body ended: no more stripes; guarded by mu
}

// stream is one shard request.
type stream struct {
	row     int
	disk    cairn.DiskID
	ch      chan block      // stripes after its catch-up; closed when the body ends
	backlog []block         // the stripes made before it started
	ctx     context.Context // its request's, ended too when its PUT returned
	cancel  context.CancelFunc
	res     shardResult // final once drive.Run returned
}

type shardResult struct {
	size, sent int64
	crc        uint32 // the node's CRC-32C of what it stored
	ident      int    // the length of the identity the file records
	err        error
	failed     bool // err is the stream's own: not a cancellation by the engine
	// busy is how long the stream ran minus the time it waited for the
	// encoder: its disk's (and the network's) share, for Config.SlowDisks.
	busy time.Duration
}

type stripeBuf struct {
	mem    []byte   // N·BlockSize: the data, then the parity blocks
	data   []byte   // K·BlockSize: mem's first bytes
	shards [][]byte // K views into data + M parity blocks (shape)
	wg     sync.WaitGroup
}

// shape lays the stripe's shards out as blocks of b ≤ bs bytes for a code
// with k data shards: data shard i is data[i·b, (i+1)·b) — so the stripe's
// first k·b data bytes are its data in order — and parity shard j ≥ k the
// first b bytes of its bs-byte block of mem. Every stripe has b = bs but
// an object's last, whose blocks are sized to the data left for it.
func (sb *stripeBuf) shape(k, bs, b int) {
	for j := range sb.shards {
		off := j * b
		if j >= k {
			off = j * bs
		}
		sb.shards[j] = sb.mem[off : off+b : off+b]
	}
}

type block struct {
	b    []byte     // for the hash queue
	sb   *stripeBuf // for shard streams: the stripe
	done *sync.WaitGroup
}

// spareWindowStripes is how many stripes a PUT holds so that a spare can
// start from the beginning: those of the window, but no more than the
// object has (stripes; < 0: unknown) — the ring has a slot for each, and
// a tiny object's stripes are tiny.
func spareWindowStripes(window int64, stripeData int, stripes int64) int {
	if window <= 0 || stripeData <= 0 {
		return 0
	}
	n := window / int64(stripeData)
	if stripes >= 0 {
		n = min(n, stripes)
	}
	return int(n)
}

// newPutter starts the write: drive.Run on a goroutine of its own, which
// finish waits for. stripes is how many the object has, if known (else
// −1). ident is the identity of the shard files (its Version and Row are
// set per file).
func newPutter(ctx context.Context, c *Client, code codec.Code, bs int, stripes int64, version string, ident cairn.ShardIdentity, disks, spares []cairn.DiskID) (*putter, error) {
	p := code.Params()
	ident.Version = version
	w := &putter{c: c, code: code, p: p, bs: bs, version: version, ident: ident, inbox: drive.NewInbox(), ran: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancel(ctx)
	maxBlock := p.N()
	if x, ok := code.(codec.Extensible); ok && len(spares) > 0 {
		w.ext, maxBlock = x, x.MaxRows()
		w.hold = spareWindowStripes(c.cfg.SpareWindow, p.K*bs, stripes)
	}
	if w.ext == nil {
		spares = nil
	}
	var err error
	if w.hold, w.release, err = ringMemory(ctx, c.cfg.Memory, int64(p.N()*bs), stripes, w.hold); err != nil {
		w.cancel()
		return nil, err
	}
	w.disks = append(slices.Clone(disks), spares...)
	eng, err := engine.NewWrite(engine.WriteConfig{Disks: len(w.disks), Primaries: p.N(), Target: p.N(), MaxBlock: maxBlock,
		MaxPerDisk: 1, Stream: true, Lag: pipelineDepth, MinWait: c.cfg.StreamWait})
	if err != nil {
		w.release()
		w.cancel()
		return nil, err
	}
	w.eng = eng
	w.ring = make([]*stripeBuf, max(pipelineDepth, w.hold))
	go func() {
		defer close(w.ran)
		if w.hold == 0 {
			eng.StopSpares()
		}
		_, w.outcome = drive.Run(w.ctx, drive.WriteMachine{Write: eng}, drive.Options{
			Tick:   max(c.cfg.StreamWait/4, time.Millisecond),
			Start:  w.open,
			Counts: &c.stats.writes,
			Do:     w.send,
			Failed: func(a engine.Action, _ error) {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.streams[a.Req].res.failed = true
			},
			Inbox: w.inbox,
		})
		w.durable = eng.Durable()
	}()
	return w, nil
}

// open starts the stream of an engine request (drive's Start, on Run's
// goroutine): it takes the stripes made so far (held: a spare is only
// sent while they are), then the ones queued on its channel.
func (w *putter) open(ctx context.Context, a engine.Action) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if int(a.Req) != len(w.streams) {
		panic(fmt.Sprintf("client: engine request %d out of order (have %d)", a.Req, len(w.streams)))
	}
	if a.Block >= w.p.N() {
		w.c.stats.spares.Add(1) // a spare parity row (codec.Extensible)
	}
	st := &stream{row: a.Block, disk: w.disks[a.Disk], ch: make(chan block, pipelineDepth)}
	st.ctx, st.cancel = context.WithCancel(ctx)
	for s := range w.produced {
		sb := w.ring[s%len(w.ring)]
		sb.wg.Add(1)
		st.backlog = append(st.backlog, block{sb: sb, done: &sb.wg})
	}
	if w.closed {
		close(st.ch)
	}
	w.streams = append(w.streams, st)
}

// send carries out a stream (drive's Do): the shard's PUT, whose body
// reports each block it takes to the engine.
func (w *putter) send(_ context.Context, r *drive.Request) ([]byte, error) {
	w.mu.Lock()
	st := w.streams[r.Req]
	w.mu.Unlock()
	body := &blockReader{ctx: st.ctx, backlog: st.backlog, ch: st.ch, row: st.row, w: w, onTake: r.Progress}
	t0 := time.Now()
	info, err := w.c.putShard(st.ctx, st.disk, cairn.ShardName(w.version, st.row), w.ident, st.row, body)
	took := time.Since(t0)
	size, crc := info.Size, info.CRC
	st.res.ident = info.Ident
	st.cancel()  // the encoder feeds it no more
	body.drain() // release the stripes still queued for this stream
	st.res.busy = max(took-body.idleTime(), 0)
	if err == nil && size != body.sent {
		err = fmt.Errorf("%w: the node stored %d bytes, %d were sent", cairn.ErrCorrupt, size, body.sent)
	}
	st.res.size, st.res.crc, st.res.err, st.res.sent = size, crc, err, body.sent
	return nil, err
}

// slot returns the buffer for stripe s, once nothing uses it any more.
// Reusing a buffer ends the spare window: first the engine hears of it,
// on Run's goroutine, so every stream it started before (the primaries
// and any spare) has taken its share of the buffer, and no stream starts
// after (no spare: a new stream would need stripe 0).
func (w *putter) slot(s int) *stripeBuf {
	if s >= len(w.ring) && !w.reusing {
		w.reusing = true
		w.inbox.Post(func(time.Duration) []engine.Action {
			w.eng.StopSpares() // stripe s−len(ring) is about to be overwritten
			return nil
		})
	}
	w.mu.Lock()
	i := s % len(w.ring)
	sb := w.ring[i]
	if sb == nil {
		mem := getBuf(w.p.N() * w.bs)
		sb = &stripeBuf{mem: mem, data: mem[:w.p.K*w.bs], shards: make([][]byte, w.p.N())}
		w.ring[i] = sb
	}
	w.mu.Unlock()
	sb.wg.Wait()
	return sb
}

// run encodes the body stripe by stripe and feeds the streams. It returns
// the body's length.
func (w *putter) run(r io.Reader, first []byte, n int, single bool, md hash.Hash, opts PutOptions) (int64, error) {
	defer w.closeStreams()
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
		sb := w.slot(s)
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
		// A stripe the body does not fill is the last: its blocks are
		// just big enough for the data (and zero-padded to that).
		b := w.bs
		if got < len(sb.data) {
			b = codec.ShardSize(w.p, got)
		}
		sb.shape(w.p.K, w.bs, b)
		clear(sb.data[got : w.p.K*b])
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
		sb.wg.Add(1)
		hashq <- block{b: sb.data[:got], done: &sb.wg}
		w.mu.Lock()
		w.produced = s + 1
		var open []*stream
		for _, st := range w.streams {
			if st.ctx.Err() == nil {
				open = append(open, st)
			} else {
				release(st.ch) // what was queued before it ended
			}
		}
		sb.wg.Add(len(open))
		w.mu.Unlock()
		for _, st := range open {
			w.feed(st, block{sb: sb, done: &sb.wg})
		}
		if end || got < len(sb.data) {
			return total, nil
		}
	}
}

// feed queues blk for st, waiting while st holds the write back (the
// engine may cancel it meanwhile).
func (w *putter) feed(st *stream, blk block) {
	select {
	case st.ch <- blk:
	case <-st.ctx.Done():
		blk.done.Done() // a cancelled or finished stream takes no more
		release(st.ch)
	}
}

// closeStreams ends every stream's input: after the stripes queued, its
// request body ends. Streams started later get a closed channel.
func (w *putter) closeStreams() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, st := range w.streams {
		if st.ctx.Err() != nil {
			release(st.ch)
		}
		close(st.ch)
	}
}

// release marks the blocks queued on ch as done, without waiting for
// more. The run loop is the only sender: once it has seen a stream end and
// released its channel, no block of it is left behind (the stream's own
// drain may take some of them first; each block is received once).
func release(ch <-chan block) {
	for {
		select {
		case blk, ok := <-ch:
			if !ok {
				return
			}
			blk.done.Done()
		default:
			return
		}
	}
}

// finish waits for drive.Run — the engine done or failed, or the PUT's
// context ended (which it ends itself unless the body was read whole: ok),
// and every stream over — and returns the manifest's shard slots and the
// shard files the object will not use: every stream's unless ok and the
// engine is done, else those of the cancelled, failed and surplus
// streams, whose nodes may have stored them anyway.
func (w *putter) finish(ok bool) (locs []cairn.ShardLoc, unused []cairn.ShardFile, err error) {
	if !ok {
		w.cancel()
	}
	<-w.ran
	defer w.releaseRing()
	switch {
	case !ok:
		err = context.Canceled // the caller has the real error
	case errors.Is(w.outcome, engine.ErrUnavailable):
		err = w.streamError(w.outcome)
	default:
		err = w.outcome // nil, or the context's error
	}
	if err == nil {
		locs = w.slots()
		w.observe()
	}
	return locs, w.unused(locs), err
}

// observe tells Config.SlowDisks how long each stream of a PUT that
// succeeded kept its disk busy. A stream the engine cancelled as a
// straggler counts with the time it had run (a lower bound); one that
// failed on its own says nothing about speed and is left out.
func (w *putter) observe() {
	batch := make([]slowdisk.Sample, 0, len(w.streams))
	for _, st := range w.streams {
		if st.res.failed {
			continue
		}
		batch = append(batch, slowdisk.Sample{Disk: st.disk, Took: st.res.busy, Cancelled: st.res.err != nil})
	}
	w.c.observe(batch)
}

// observe hands the requests of one PUT or GET window to Config.SlowDisks
// and logs the disks it marks slow.
func (c *Client) observe(batch []slowdisk.Sample) {
	if c.cfg.SlowDisks == nil {
		return
	}
	for _, d := range c.cfg.SlowDisks.ObserveBatch(time.Now(), batch) {
		c.cfg.Logger.Warn("disk is slow: new stripes avoid it and reads ask it last, for a while", "disk", d)
	}
}

// streamError explains a failed write by its first stream error that is
// not a cancellation.
func (w *putter) streamError(outcome error) error {
	for _, st := range w.streams {
		if err := st.res.err; st.res.failed && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%w: storing shard %d on disk %s: %w", cairn.ErrUnavailable, st.row, st.disk, shardErr(err))
		}
	}
	return fmt.Errorf("%w: %w", cairn.ErrUnavailable, outcome)
}

// slots maps the engine's durable rows onto the manifest's N shard slots:
// row i < N fills slot i, and spare rows fill the slots whose own row did
// not become durable, in the order they did.
func (w *putter) slots() []cairn.ShardLoc {
	n := w.p.N()
	locs := make([]cairn.ShardLoc, n)
	byRow := map[int]*stream{}
	for _, st := range w.streams {
		if st.res.err == nil {
			byRow[st.row] = st
		}
	}
	var spares []engine.Placed
	for _, pl := range w.durable {
		if pl.Block < n {
			st := byRow[pl.Block]
			locs[pl.Block] = cairn.ShardLoc{Disk: st.disk, Size: st.res.size, CRC: st.res.crc, Ident: st.res.ident}
		} else {
			spares = append(spares, pl)
		}
	}
	for i := range locs {
		if locs[i].Disk == "" && len(spares) > 0 {
			st := byRow[spares[0].Block]
			locs[i] = cairn.ShardLoc{Disk: st.disk, Row: st.row, Size: st.res.size, CRC: st.res.crc, Ident: st.res.ident}
			spares = spares[1:]
		}
	}
	return locs
}

// unused returns the shard files of every stream whose file is not in
// keep.
func (w *putter) unused(keep []cairn.ShardLoc) []cairn.ShardFile {
	var out []cairn.ShardFile
	for _, st := range w.streams {
		if !slices.ContainsFunc(keep, func(l cairn.ShardLoc) bool { return l.Disk == st.disk }) {
			out = append(out, cairn.ShardFile{Disk: st.disk, Name: cairn.ShardName(w.version, st.row)})
		}
	}
	return out
}

func (w *putter) releaseRing() {
	for _, sb := range w.ring {
		if sb != nil {
			sb.wg.Wait()
			putBuf(sb.mem)
		}
	}
	w.release()
}

// ringMemory takes from budget the memory of a PUT's ring of stripes of
// stripeMem bytes: the pipeline's (waiting for it), and the spare
// window's hold stripes beyond that only if the budget has them free now
// — else half as many, and so on down to none. stripes (if known, ≥ 0)
// caps what is taken: the ring's slots are filled as stripes come. It
// returns the spare window the PUT may keep and the function that gives
// the memory back.
func ringMemory(ctx context.Context, budget *Budget, stripeMem, stripes int64, hold int) (int, func(), error) {
	need := int64(max(pipelineDepth, hold))
	if stripes >= 0 {
		need = min(need, stripes)
	}
	base := min(need, pipelineDepth)
	release, err := budget.take(ctx, base*stripeMem)
	if err != nil {
		return 0, nil, err
	}
	for extra := need - base; extra > 0; extra /= 2 {
		if more, ok := budget.tryTake(extra * stripeMem); ok {
			return hold, func() { release(); more() }, nil
		}
		hold = pipelineDepth + int(extra/2) // what the next try would cover
	}
	if need > base {
		hold = min(hold, pipelineDepth)
	}
	return hold, release, nil
}

// blockReader is a shard request's body: the blocks of its row, first
// from the backlog (the stripes made before it started), then from its
// channel. It hands each block's own memory to the transport (WriteTo)
// when the row is one the encoder made, and computes spare rows into a
// buffer of its own. onTake reports each block taken (engine progress).
//
// The transport may still read the body after PutShard returned (a node
// that answers early): mu serializes that against drain.
type blockReader struct {
	ctx     context.Context // the request's: once it ends, nothing more is read
	backlog []block
	ch      <-chan block
	row     int
	w       *putter
	onTake  func()

	mu      sync.Mutex
	drained bool          // guarded by mu
	cur     block         // guarded by mu
	b       []byte        // cur's bytes of this row; guarded by mu
	off     int           // guarded by mu
	sent    int64         // guarded by mu
	spare   []byte        // buffer for a spare row; guarded by mu
	idle    time.Duration // time spent waiting for the encoder; guarded by mu
}

var errDrained = errors.New("shard request already ended")

// nextLocked moves to the next block; it returns false at the end (or if
// the spare row could not be made, which cannot happen for valid
// stripes). r.mu must be held.
func (r *blockReader) nextLocked() bool {
	if r.cur.done != nil {
		r.cur.done.Done()
		r.cur, r.b = block{}, nil
	}
	var blk block
	if len(r.backlog) > 0 {
		blk, r.backlog = r.backlog[0], r.backlog[1:]
	} else {
		var ok bool
		select {
		case blk, ok = <-r.ch:
		default:
			// Nothing queued: the stream waits for the encoder, not for
			// its disk (idle time, which slowness does not count).
			t0 := time.Now()
			select {
			case blk, ok = <-r.ch:
			case <-r.ctx.Done():
			}
			r.idle += time.Since(t0)
		}
		if !ok {
			return false
		}
	}
	r.cur, r.off = blk, 0
	if r.row < len(blk.sb.shards) {
		r.b = blk.sb.shards[r.row]
	} else {
		if r.spare == nil {
			r.spare = make([]byte, r.w.bs)
		}
		b := r.spare[:len(blk.sb.shards[0])] // the last stripe's blocks may be shorter
		if err := r.w.ext.MakeRow(r.row, blk.sb.shards[:r.w.p.K], b); err != nil {
			r.w.c.cfg.Logger.Error("making a spare parity row failed", "row", r.row, "err", err)
			return false
		}
		r.b = b
	}
	if r.onTake != nil {
		r.onTake()
	}
	return true
}

func (r *blockReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drained {
		return 0, errDrained
	}
	for r.cur.done == nil || r.off == len(r.b) {
		if !r.nextLocked() {
			return 0, io.EOF
		}
	}
	n := copy(p, r.b[r.off:])
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
		if r.cur.done != nil && r.off < len(r.b) {
			n, err := w.Write(r.b[r.off:])
			r.off += n
			r.sent += int64(n)
			total += int64(n)
			if err != nil {
				return total, err
			}
		}
		if !r.nextLocked() {
			return total, nil
		}
	}
}

// idleTime returns how long the stream has waited for the encoder.
func (r *blockReader) idleTime() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idle
}

// drain marks every block not consumed as done (after the request
// ended): the backlog, the current block and what is queued (the run loop
// releases what it queues later).
func (r *blockReader) drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drained = true
	r.onTake = nil
	if r.cur.done != nil {
		r.cur.done.Done()
		r.cur = block{}
	}
	for _, blk := range r.backlog {
		blk.done.Done()
	}
	r.backlog = nil
	release(r.ch)
}

// putShard stores shard file name on disk recording id with Row set to
// row, if the Shards can record identities (IdentifiedPutter) and id is
// complete (it is unless a caller outside the S3 path writes without a
// bucket or key): else without one. The reply's Ident says which.
func (c *Client) putShard(ctx context.Context, disk cairn.DiskID, name string, id cairn.ShardIdentity, row int, r io.Reader) (wire.ShardInfo, error) {
	if ip, ok := c.shards.(IdentifiedPutter); ok {
		id.Row = row
		if b, err := id.Encode(); err == nil {
			return ip.PutShardIdentified(ctx, disk, name, b, r)
		}
	}
	return c.shards.PutShard(ctx, disk, name, r)
}
