package client

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"cairn"
	"cairn/client/drive"
	"cairn/client/engine"
	"cairn/client/slowdisk"
	"cairn/codec"
)

// Get opens bucket/key for reading bytes [off, off+length) (length < 0: to
// the end). The reader fetches and decodes one window of stripes ahead of
// the caller; Close stops it. Errors: cairn.ErrNotFound, cairn.ErrInvalid
// (a range outside the object), cairn.ErrCorrupt (a stored manifest that
// fails ValidateStored against its code), and from the reader
// cairn.ErrUnavailable when too few shards of a window could be read.
//
// An encrypted object is read with GetWith (Get is GetWith without
// options: it reads SSE-S3 objects, not SSE-C ones).
func (c *Client) Get(ctx context.Context, bucket, key string, off, length int64) (*cairn.Manifest, io.ReadCloser, error) {
	return c.GetWith(ctx, bucket, key, off, length, GetOptions{})
}

// open reads bytes [off, off+length) of the stored bytes of m (the
// ciphertext of an encrypted object): Get without the decryption.
func (c *Client) open(ctx context.Context, m *cairn.Manifest, off, length int64) (*cairn.Manifest, io.ReadCloser, error) {
	return c.openAvoiding(ctx, m, off, length, -1)
}

// readable returns which disks a read of m may ask for shards: the
// disks whose state is readable, from the disk states read at most
// disksMaxAge ago (clusterDisks: a GET of a healthy object makes no
// metadata call for them). If that map holds any disk m names unreadable
// or unknown, it is read again first, so a disk that has just come back
// is used at once; a disk that has just gone down may still be asked
// for up to disksMaxAge, and its failure is read around as any other.
// The map is shared: the caller must not change it.
func (c *Client) readable(ctx context.Context, m *cairn.Manifest) (map[cairn.DiskID]bool, error) {
	if _, err := c.clusterDisks(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	readable := c.readableAt
	c.mu.Unlock()
	if !allReadable(m, readable) {
		disks, err := c.meta.Disks(ctx)
		if err != nil {
			return nil, err
		}
		c.setDisks(disks)
		readable = readableOf(disks)
	}
	return readable, nil
}

// readableOf maps each disk to whether its state is readable.
func readableOf(disks []cairn.Disk) map[cairn.DiskID]bool {
	readable := make(map[cairn.DiskID]bool, len(disks))
	for _, d := range disks {
		readable[d.ID] = d.State.Readable()
	}
	return readable
}

// allReadable reports whether every disk holding a shard of m (of its
// parts too) is readable.
func allReadable(m *cairn.Manifest, readable map[cairn.DiskID]bool) bool {
	for _, s := range m.Shards {
		if s.Disk != "" && !readable[s.Disk] {
			return false
		}
	}
	for _, p := range m.Parts {
		for _, s := range p.Shards {
			if s.Disk != "" && !readable[s.Disk] {
				return false
			}
		}
	}
	return true
}

// openAvoiding is open reading no byte of shard slot avoid (≥ 0) of a
// single-part layout with shards, as if it had failed: for reading around
// a shard whose bytes decode into ciphertext that fails authentication.
func (c *Client) openAvoiding(ctx context.Context, m *cairn.Manifest, off, length int64, avoid int) (*cairn.Manifest, io.ReadCloser, error) {
	if off < 0 || off > m.Size || (off == m.Size && m.Size > 0 && length != 0) {
		return m, nil, fmt.Errorf("%w: range starts at %d, the object has %d bytes", cairn.ErrInvalid, off, m.Size)
	}
	end := m.Size
	if length >= 0 && off+length < end {
		end = off + length
	}
	if m.Cold != nil {
		if err := m.Validate(); err != nil {
			return m, nil, fmt.Errorf("%w: stored manifest: %v", cairn.ErrCorrupt, err)
		}
		rc, err := c.openCold(ctx, m, off, end)
		return m, rc, err
	}
	if m.Policy == cairn.RAIDPPolicy {
		rc, err := c.openRAIDP(ctx, m, off, end)
		return m, rc, err
	}
	code, err := c.code(m.LayoutCode())
	if err != nil {
		return m, nil, err
	}
	params := code.Params()
	if err := m.ValidateStored(params.K, params.N()); err != nil {
		return m, nil, err
	}
	release, err := c.cfg.Memory.take(ctx, c.getMemory(params, end-off))
	if err != nil {
		return m, nil, err
	}
	readable, err := c.readable(ctx, m)
	if err != nil {
		release()
		return m, nil, fmt.Errorf("reading the cluster map: %w", err)
	}
	gctx, cancel := context.WithCancel(ctx)
	out := make(chan window, 1)
	newGetter := func(m *cairn.Manifest) (*getter, error) {
		g := &getter{c: c, m: m, code: code, p: code.Params(), readable: readable, bad: map[int]bool{}, extra: c.cfg.ReadExtra}
		if avoid >= 0 {
			g.bad[avoid] = true
		}
		if pol, err := codec.ParsePolicy(m.Policy); err == nil {
			all, extra := pol.ReadExtra()
			switch {
			case all:
				g.extra = -1
			case extra >= 0:
				g.extra = extra
			}
		}
		if rows := cairn.Rows(m.Shards); rows > g.p.N() {
			// A spare parity row took some shard's place at write time:
			// decode with the code extended to it.
			x, ok := code.(codec.Extensible)
			if !ok {
				return nil, fmt.Errorf("%w: %s/%s holds row %d of %s, which has no spare rows", cairn.ErrCorrupt, m.Bucket, m.Key, rows-1, m.Policy)
			}
			if g.code, err = x.ExtendTo(rows); err != nil {
				return nil, fmt.Errorf("%w: %s/%s: %w", cairn.ErrCorrupt, m.Bucket, m.Key, err)
			}
		}
		return g, nil
	}
	if len(m.Parts) == 0 {
		g, err := newGetter(m)
		if err != nil {
			cancel()
			release()
			return m, nil, err
		}
		go func() {
			defer close(out)
			g.produce(gctx, off, end, out)
		}()
		return m, &reader{ch: out, cancel: cancel, release: release}, nil
	}
	// A multipart object: read the parts the range touches, in order, each
	// like a single-part object (only the stripes the range touches).
	first, last, base, _ := partSpan(m.Parts, func(p cairn.Part) (int64, error) { return p.Size, nil }, off, end)
	go func() {
		defer close(out)
		for _, p := range m.Parts[first:last] {
			pe := base + p.Size
			g, err := newGetter(m.PartManifest(p))
			if err != nil {
				select {
				case out <- window{err: err}:
				case <-gctx.Done():
				}
				return
			}
			if !g.produce(gctx, max(off-base, 0), min(end, pe)-base, out) {
				return
			}
			base = pe
		}
	}()
	return m, &reader{ch: out, cancel: cancel, release: release}, nil
}

// partSpan returns the parts of a multipart object that hold bytes of the
// range [off, end) of its content, parts[first:last], and the offset of
// parts[first]; size gives a part's size in the content (its stored size,
// or its plaintext's). The parts' offsets are summed (no I/O: the sizes
// are in the manifest) and the first and last part found by binary
// search, so a read opens only the parts the range touches. An empty
// range touches no part. size's first error is returned.
func partSpan(parts []cairn.Part, size func(cairn.Part) (int64, error), off, end int64) (first, last int, base int64, err error) {
	offs := make([]int64, len(parts)+1) // offs[i]: where part i starts
	for i, p := range parts {
		n, err := size(p)
		if err != nil {
			return 0, 0, 0, err
		}
		offs[i+1] = offs[i] + n
	}
	if off >= end {
		return 0, 0, 0, nil
	}
	// The first part that ends after off, and the first that starts at or
	// after end.
	first = sort.Search(len(parts), func(i int) bool { return offs[i+1] > off })
	last = sort.Search(len(parts), func(i int) bool { return offs[i] >= end })
	return first, max(first, last), offs[first], nil
}

// getMemory is what a GET of n bytes holds (Config.Memory): its
// window's shards, N/K windows, the window being decoded and the one
// queued for the reader — windows of WindowBytes, or of n if smaller.
func (c *Client) getMemory(p codec.Params, n int64) int64 {
	w := min(c.cfg.WindowBytes, n)
	return w*int64(p.N())/int64(max(p.K, 1)) + 2*w
}

// window is a run of the object's bytes: data's slices in order (blocks
// of the shards as read, or decoded ones), or an error. bufs are the
// pooled buffers (getBuf) data slices: the reader gives them back when it
// is done with the window.
type window struct {
	data [][]byte
	bufs [][]byte
	err  error
}

// free gives the window's buffers back; nothing may use its data after.
func (w *window) free() {
	putBufs(w.bufs)
	w.data, w.bufs = nil, nil
}

// cut returns bytes [lo, hi) of the concatenation of segs (hi may exceed
// its length), slicing segs without copying them.
func cut(segs [][]byte, lo, hi int64) [][]byte {
	var out [][]byte
	var at int64
	for _, b := range segs {
		n := int64(len(b))
		if at+n > lo && at < hi {
			out = append(out, b[max(lo-at, 0):min(hi-at, n)])
		}
		at += n
	}
	return out
}

type getter struct {
	c        *Client
	m        *cairn.Manifest
	code     codec.Code            // decodes the stripe: the policy's, extended if a shard holds a spare row
	p        codec.Params          // the policy's code's (N shard slots)
	readable map[cairn.DiskID]bool // disks that may be asked (Client.readable: shared, read only)
	bad      map[int]bool          // shards that failed in this read; owned by produce
	extra    int                   // δ: shards asked beyond K; −1: every shard (the policy's read mode)
}

// produce sends the data of [off, end) window by window. It returns false
// if it stopped early (an error was sent, or ctx ended).
func (g *getter) produce(ctx context.Context, off, end int64, out chan<- window) bool {
	if len(g.m.Coded) > 0 {
		return g.produceCoded(ctx, off, end, out)
	}
	sd := g.m.StripeData(g.p.K)
	perWin := max(1, g.c.cfg.WindowBytes/sd)
	if off == end {
		return true
	}
	first, last := off/sd, (end-1)/sd
	for s := first; s <= last; s += perWin {
		e := min(s+perWin, last+1)
		data, bufs, err := g.window(ctx, s, e)
		if err != nil {
			select {
			case out <- window{err: err}:
			case <-ctx.Done():
			}
			return false
		}
		select {
		case out <- window{data: cut(data, max(off-s*sd, 0), end-s*sd), bufs: bufs}:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// window fetches stripes [s, e) from the first decodable set of shards and
// returns their data bytes, and the pooled buffers those bytes are in
// (window.bufs). The choice of shards — K+δ at first, a
// replacement for each failure, a hedge for each straggler, stop at the
// first decodable set — is the engine's (client/engine), carried out by
// drive: each shard slot is a disk of its own with one request, and the
// window returns once every fetch it started has ended.
func (g *getter) window(ctx context.Context, s, e int64) (data, bufs [][]byte, err error) {
	p, bs := g.p, int64(g.m.BlockSize)
	// Every shard holds stripes [s, e) in bytes [s·bs, end): full blocks,
	// the last stripe's maybe shorter.
	end := min(e*bs, g.m.Shards[0].Size)
	// Candidates (shard slots) in order of preference: data rows (no
	// decoding needed), then parity, and shards on slow disks last; skip
	// disks that are down and shards that already failed.
	var locs []engine.Loc
	for i := range p.N() {
		if !g.bad[i] && g.m.Shards[i].Disk != "" && g.readable[g.m.Shards[i].Disk] {
			locs = append(locs, engine.Loc{Block: i, Disk: i})
		}
	}
	if len(locs) == 0 {
		return nil, nil, fmt.Errorf("%w: %s/%s: no readable shard", cairn.ErrUnavailable, g.m.Bucket, g.m.Key)
	}
	// Shards on disks held slow (Config.SlowDisks) come last: asked for
	// only if the others fail or straggle.
	slow := g.c.slowNow()
	late := func(l engine.Loc) int {
		if slow(g.m.Shards[l.Block].Disk) {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(locs, func(a, b engine.Loc) int {
		if d := late(a) - late(b); d != 0 {
			return d
		}
		return g.row(a.Block) - g.row(b.Block)
	})
	present := make([]bool, g.code.Params().N())
	rd, err := engine.NewRead(engine.ReadConfig{
		Blocks: locs,
		Decodable: func(blocks []int) bool {
			clear(present)
			for _, b := range blocks {
				present[g.row(b)] = true
			}
			return len(blocks) > 0 && g.code.CanReconstruct(present)
		},
		Initial: g.initial(),
		MinWait: g.c.cfg.HedgeAfter,
	})
	if err != nil {
		return nil, nil, err
	}
	have := make([][]byte, p.N()) // by shard slot
	var lastErr error
	var (
		mu     sync.Mutex
		took   = map[int]time.Duration{} // by shard slot: how long its fetch ran; guarded by mu
		failed = map[int]bool{}          // shard slots whose fetch failed
	)
	_, err = drive.Run(ctx, drive.ReadMachine{Read: rd}, drive.Options{Tick: g.c.cfg.HedgeAfter / 2, Counts: &g.c.stats.reads,
		Do: func(ctx context.Context, r *drive.Request) ([]byte, error) {
			t0 := time.Now()
			b, err := g.fetch(ctx, r.Block, s*bs, end-s*bs)
			mu.Lock()
			took[r.Block] = time.Since(t0)
			mu.Unlock()
			return b, err
		},
		Got: func(a engine.Action, buf []byte) { have[a.Block] = buf },
		Failed: func(a engine.Action, err error) {
			lastErr = err
			failed[a.Block] = true
			g.bad[a.Block] = true
			g.damage(a.Block, err)
		},
	})
	if err == nil {
		// Every fetch has ended: tell Config.SlowDisks how long each that
		// delivered took. One the read cancelled says nothing: it lost a
		// race it did not need to win (K of K+δ were enough), and one that
		// failed says nothing about speed either.
		var batch []slowdisk.Sample
		for i, d := range took {
			if !failed[i] && have[i] != nil {
				batch = append(batch, slowdisk.Sample{Disk: g.m.Shards[i].Disk, Took: d})
			}
		}
		g.c.observe(batch)
	}
	for _, b := range have {
		if b != nil {
			bufs = append(bufs, b)
		}
	}
	if err != nil {
		putBufs(bufs)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		err := fmt.Errorf("%w: %s/%s stripes %d–%d: too few readable shards", cairn.ErrUnavailable, g.m.Bucket, g.m.Key, s, e-1)
		if lastErr != nil {
			err = fmt.Errorf("%w (last error: %w)", err, shardErr(lastErr))
		}
		return nil, nil, err
	}
	data, rebuilt, err := g.decode(have, s, e)
	if rebuilt != nil {
		bufs = append(bufs, rebuilt)
	}
	if err != nil {
		putBufs(bufs)
		return nil, nil, err
	}
	return data, bufs, nil
}

// initial is how many shards a window asks for at first: K+δ, or all.
func (g *getter) initial() int {
	if g.extra < 0 {
		return 0 // every shard (the engine's RobuSTore mode)
	}
	return g.p.K + g.extra
}

// row returns the code row shard slot i holds.
func (g *getter) row(i int) int { return cairn.RowOf(g.m.Shards, i) }

func (g *getter) fetch(ctx context.Context, i int, off, n int64) ([]byte, error) {
	return g.c.readShard(ctx, g.m.Shards[i].Disk, cairn.ShardName(g.m.Version, g.row(i)), off, n, &g.m.Shards[i])
}

// shardFooter is implemented by a GetShard reader that knows the whole
// shard's size and CRC-32C before its first byte (node.Client's, from
// the file's footer).
type shardFooter interface {
	Footer() (size int64, crc uint32, ok bool)
}

// readShard reads n bytes at off of a shard (or block) file; a file
// shorter than that is cairn.ErrCorrupt: the manifest says how long it is.
// With want (the manifest's entry), a file whose size or CRC-32C is not
// the manifest's is cairn.ErrCorrupt too — a well-formed file of other
// content (docs/design/manifest.md, "End-to-end integrity"): checked on
// the reader's footer before any byte is used, or else, on a whole-shard
// read, on the bytes read.
func (c *Client) readShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64, want *cairn.ShardLoc) ([]byte, error) {
	rc, err := c.shards.GetShard(ctx, disk, name, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	checked := false
	if f, ok := rc.(shardFooter); ok && want != nil {
		if size, crc, ok := f.Footer(); ok {
			if size != want.Size || crc != want.CRC {
				return nil, mismatch(disk, name, size, crc, want)
			}
			checked = true
		}
	}
	// buf is pooled (getBuf); on an error it is dropped, not given back:
	// a filler's abandoned disk read may still be writing it.
	buf := getBuf(int(n))
	if f, ok := rc.(shardFiller); ok {
		err = f.Fill(buf)
	} else {
		_, err = io.ReadFull(rc, buf)
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %s on %s is shorter than the manifest says", cairn.ErrCorrupt, name, disk)
		}
		return nil, err
	}
	if want != nil && !checked && off == 0 && n == want.Size {
		if crc := crc32.Checksum(buf, castagnoli); crc != want.CRC {
			putBuf(buf)
			return nil, mismatch(disk, name, n, crc, want)
		}
	}
	return buf, nil
}

// shardFiller is implemented by a GetShard reader that fills a whole
// buffer at once (node.Client's in-process reader: one disk goroutine and
// one copy from the verified block, instead of a goroutine and two copies
// per block). Fill reads exactly len(p) bytes (io.ErrUnexpectedEOF if the
// shard ends first). If it returns an error, a disk read it abandoned
// (its context ended) may go on writing p: the caller must not use p
// again.
type shardFiller interface {
	Fill(p []byte) error
}

// mismatch is the error of a shard file that is not the one the manifest
// names.
func mismatch(disk cairn.DiskID, name string, size int64, crc uint32, want *cairn.ShardLoc) error {
	return fmt.Errorf("%w: %s on %s holds %d bytes with CRC-32C %08x, the manifest says %d with %08x",
		cairn.ErrCorrupt, name, disk, size, crc, want.Size, want.CRC)
}

func (g *getter) damage(shard int, err error) {
	g.c.cfg.Logger.Warn("shard unreadable; decoding around it", "bucket", g.m.Bucket, "key", g.m.Key,
		"version", g.m.Version, "shard", shard, "disk", g.m.Shards[shard].Disk, "err", err)
	if f := g.c.cfg.OnDamage; f != nil {
		f(Damage{Bucket: g.m.Bucket, Key: g.m.Key, Version: g.m.Version, Shard: shard, Disk: g.m.Shards[shard].Disk,
			Name: cairn.ShardName(g.m.Version, cairn.RowOf(g.m.Shards, shard)), Err: err})
	}
}

// decode rebuilds missing data blocks of stripes [s, e) stripe by stripe
// and returns their data bytes in order: K blocks per stripe, of BlockSize
// bytes but in the last stripe (cairn.Layout.StripeBlock). have is by
// shard slot, each shard's bytes of the window. The blocks read are
// returned as slices of have, not copied (the window's buffers are its
// own); only rebuilt blocks take new memory: rebuilt, a pooled buffer
// (getBuf) the caller gives back when done with the data, or nil.
func (g *getter) decode(bySlot [][]byte, s, e int64) (data [][]byte, rebuilt []byte, err error) {
	p, bs, k := g.p, int64(g.m.BlockSize), int64(g.p.K)
	rows := g.code.Params().N()
	have := make([][]byte, rows) // by code row
	for i, b := range bySlot {
		if b != nil {
			have[g.row(i)] = b
		}
	}
	missing := 0
	for _, b := range have[:p.K] {
		if b == nil {
			missing++
		}
	}
	// rebuilt: the missing rows' blocks, stripe by stripe.
	if missing > 0 {
		start := time.Now() // for Stats only
		defer func() {
			g.c.stats.decodes.Add(1)
			g.c.stats.decodeNanos.Add(int64(time.Since(start)))
		}()
		rebuilt = getBuf(int((e - s) * bs * int64(missing)))[:0]
	}
	out := make([][]byte, 0, (e-s)*k)
	stripe := make([][]byte, rows)
	for j := range e - s {
		b := g.m.StripeBlock(g.m.Size, p.K, s+j)
		for i := range rows {
			switch {
			case have[i] != nil:
				stripe[i] = have[i][j*bs : j*bs+b]
			case i < p.K:
				// Decode into rebuilt: a zero-length slice with the
				// block's capacity.
				o := int64(len(rebuilt))
				rebuilt = rebuilt[:o+b]
				stripe[i] = rebuilt[o : o : o+b]
			default:
				stripe[i] = nil
			}
		}
		if missing > 0 {
			if err := g.code.Reconstruct(stripe, codec.Data(p.K)); err != nil {
				return nil, rebuilt, fmt.Errorf("decoding %s/%s: %w", g.m.Bucket, g.m.Key, err)
			}
		}
		out = append(out, stripe[:p.K]...)
	}
	return out, rebuilt, nil
}

// reader hands out windows as an io.ReadCloser.
type reader struct {
	ch      <-chan window
	win     window   // the current window (its buffers go back when it is done)
	cur     [][]byte // unread bytes of the current window
	err     error
	cancel  context.CancelFunc
	release func() // gives the GET's memory back (Config.Memory)
}

// next returns the next unread bytes, waiting for a window if needed;
// (nil, err) at the end or on the producer's error.
func (r *reader) next() ([]byte, error) {
	for {
		for len(r.cur) > 0 && len(r.cur[0]) == 0 {
			r.cur = r.cur[1:]
		}
		if len(r.cur) > 0 {
			return r.cur[0], nil
		}
		if r.err != nil {
			return nil, r.err
		}
		r.win.free() // every byte of it was read or written
		w, ok := <-r.ch
		if !ok {
			r.err = io.EOF
			continue
		}
		r.win = w
		r.cur, r.err = w.data, w.err
	}
}

func (r *reader) Read(b []byte) (int, error) {
	cur, err := r.next()
	if err != nil {
		return 0, err
	}
	n := copy(b, cur)
	r.cur[0] = cur[n:]
	return n, nil
}

// WriteTo writes the rest of the data to w without copying it through a
// buffer of the caller's (io.Copy uses it).
func (r *reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		cur, err := r.next()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, err := w.Write(cur)
		total += int64(n)
		r.cur[0] = cur[n:]
		if err != nil {
			return total, err
		}
	}
}

// Close stops the read-ahead.
func (r *reader) Close() error {
	r.cancel()
	for w := range r.ch { // let the producer finish
		w.free()
	}
	r.cur = nil
	r.win.free()
	r.release()
	return nil
}
