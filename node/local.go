package node

import (
	"context"
	"fmt"
	"io"

	"cairn"
	"cairn/node/volume"
	"cairn/node/wire"
)

// WithLocal returns a copy of c that reads and writes the shards of the
// disks h serves straight through their volumes, in this process, instead
// of over the node protocol: for a gateway and a node in one process
// (cairn server), where the loopback HTTP hop — a socket write on one side
// and a read on the other, a CRC of the body on each, signing and parsing
// — cost about half the CPU of a GET (docs/benchmarks.md, "GET CPU per
// byte"). The bytes and their checks are the same: a read checks every
// block's CRC as the node's GET does and has the shard's footer (Footer),
// so the data path checks the file against its manifest as before; a
// write is the volume's durable put with its read-back, under the node's
// size limit. Each counts as a request the handler is serving
// (Handler.Busy), so scrub yields to it. Deletes, listings and repair keep
// the node protocol. A disk h does not serve (any more) is reached over
// the network as usual.
//
// A call returns when its context ends, as a remote one does, even while
// its disk I/O goes on (a slow or stuck disk): that I/O then finishes on a
// goroutine of its own, as the node's handler would finish it, and
// releases the volume's buffers and the handler's count when it does. So
// a data path that cancels a straggler (a GET's extra shard, a PUT stream
// replaced by a spare) is not held up by the disk it gave up on.
func (c *Client) WithLocal(h *Handler) *Client {
	cc := *c
	cc.local = h
	return &cc
}

// localPut stores a shard on a disk h serves, as the node's PUT does (the
// same size limit, the volume's durable write with its read-back); ok is
// false when h does not serve disk. It returns when ctx ends; the write
// then goes on (its body, the data path's, stops at its next read).
func (h *Handler) localPut(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (info wire.ShardInfo, ok bool, err error) {
	v := h.vol(disk)
	if v == nil {
		return wire.ShardInfo{}, false, nil
	}
	fail := func(err error) (wire.ShardInfo, bool, error) {
		return wire.ShardInfo{}, true, &wire.Error{Op: "put", Disk: disk, Shard: name, Err: err}
	}
	if len(ident) > cairn.MaxIdentityBytes {
		return fail(fmt.Errorf("%w: identity of %d bytes, more than %d", cairn.ErrInvalid, len(ident), cairn.MaxIdentityBytes))
	}
	size := int64(-1)
	if sz, ok := r.(interface{ Size() int64 }); ok {
		size = sz.Size()
	}
	if size > h.maxSize {
		return fail(fmt.Errorf("%w: shard of %d bytes is larger than %d", cairn.ErrInvalid, size, h.maxSize))
	}
	type result struct {
		info volume.ShardInfo
		err  error
	}
	done := make(chan result, 1)
	h.active.Add(1)
	go func() {
		vi, err := v.PutIdentified(ctx, name, ident, &bodyReader{r: r, max: h.maxSize, left: h.maxSize, size: size})
		h.active.Add(-1) // before the answer: a caller that has it sees the handler idle
		done <- result{vi, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return fail(res.err)
		}
		return wire.ShardInfo{Size: res.info.Size, CRC: res.info.CRC, Ident: res.info.Ident}, true, nil
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// localGet opens a shard of a disk h serves; ok is false when h does not
// serve disk.
func (h *Handler) localGet(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (rc io.ReadCloser, ok bool, err error) {
	v := h.vol(disk)
	if v == nil {
		return nil, false, nil
	}
	type opened struct {
		rr  *volume.Reader
		err error
	}
	done := make(chan opened, 1)
	h.active.Add(1)
	go func() { // opening reads the footer: disk I/O too
		rr, err := v.NewReader(ctx, name, off, n)
		done <- opened{rr, err}
	}()
	var o opened
	select {
	case o = <-done:
	case <-ctx.Done():
		go func() { // the open goes on; undo it when it ends
			if o := <-done; o.err == nil {
				o.rr.Close()
			}
			h.active.Add(-1)
		}()
		return nil, true, &wire.Error{Op: "get", Disk: disk, Shard: name, Err: ctx.Err()}
	}
	if o.err != nil {
		h.active.Add(-1)
		return nil, true, &wire.Error{Op: "get", Disk: disk, Shard: name, Err: o.err}
	}
	o.rr.ReadAhead(getReadRun)
	return &localShard{h: h, rr: o.rr, ctx: ctx, op: wire.Error{Op: "get", Disk: disk, Shard: name}, res: make(chan readResult, 1)}, true, nil
}

// localShard is a shard read from a volume of this process. A Read that
// needs the disk runs on a goroutine of its own, into the shard's own
// block buffer, so that it can return when ctx ends while the disk read
// goes on; the caller's buffer is never written after Read returned.
// Not safe for concurrent use (as any reader); Close may come while a
// disk read runs, and the read's goroutine then closes the reader.
type localShard struct {
	h   *Handler
	rr  *volume.Reader
	ctx context.Context
	op  wire.Error // template for errors
	bp  *[]byte    // block buffer of the reads that touch the disk (copyPool)
	res chan readResult
	// busy: a disk read's goroutine runs (it owns rr and bp until it
	// sends on res). closed: Close was called.
	busy, closed bool
}

type readResult struct {
	n   int
	err error
}

func (s *localShard) Read(p []byte) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if s.rr.Buffered() > 0 { // verified bytes in memory: no disk wait
		return s.wrap(s.rr.Read(p))
	}
	if s.bp == nil {
		s.bp = copyPool.Get().(*[]byte)
	}
	buf := (*s.bp)[:min(len(p), len(*s.bp))]
	r, err := s.onDisk(func() (int, error) { return s.rr.Read(buf) })
	if err != nil {
		return 0, err
	}
	copy(p, buf[:r.n])
	return s.wrap(r.n, r.err)
}

// Fill reads exactly len(p) bytes into p (io.ErrUnexpectedEOF if the
// shard's range ends first): the disk reads run on one goroutine and copy
// each verified block straight into p, not through the block buffer Read
// uses. The data path of an in-process GET reads whole shard ranges this
// way (client's shardFiller). Unlike Read it may go on writing p after it
// returned: if ctx ends first, Fill returns at once and the goroutine
// finishes its disk read into p before it lets go of the reader (Close
// waits for it). A caller that got an error must therefore not use p
// again.
func (s *localShard) Fill(p []byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	r, err := s.onDisk(func() (int, error) { return io.ReadFull(s.rr, p) })
	if err != nil {
		return err
	}
	if r.err == io.EOF {
		r.err = io.ErrUnexpectedEOF // p was not empty: the range ended before it
	}
	_, err = s.wrap(r.n, r.err)
	return err
}

// usable is the error of a Read or Fill on a reader that was closed or
// whose last disk read was abandoned (and may still run).
func (s *localShard) usable() error {
	if s.closed || s.busy {
		e := s.op
		e.Err = fmt.Errorf("%w: read of an abandoned local shard reader", cairn.ErrInvalid)
		return &e
	}
	return nil
}

// onDisk runs read on a goroutine of its own (it owns rr, and whatever
// buffer read writes, until it sends on res) and waits for it or for ctx.
// When ctx ends first the error is ctx's and the reader stays busy: the
// read goes on, and Close lets go of the reader when it ends.
func (s *localShard) onDisk(read func() (int, error)) (readResult, error) {
	s.busy = true
	go func() {
		n, err := read()
		s.res <- readResult{n, err}
	}()
	select {
	case r := <-s.res:
		s.busy = false
		return r, nil
	case <-s.ctx.Done():
		e := s.op
		e.Err = s.ctx.Err()
		return readResult{}, &e
	}
}

func (s *localShard) wrap(n int, err error) (int, error) {
	if err != nil && err != io.EOF {
		e := s.op
		e.Err = err
		return n, &e
	}
	return n, err
}

// Footer implements the data path's check of a shard against its
// manifest entry: the whole content's size and CRC-32C from the file.
func (s *localShard) Footer() (size int64, crc uint32, ok bool) {
	return s.rr.Size(), s.rr.CRC(), true
}

// Close releases the reader at once, or, while a disk read still runs,
// when that read ends.
func (s *localShard) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.busy {
		go func() {
			<-s.res
			s.release()
		}()
		return nil
	}
	return s.release()
}

func (s *localShard) release() error {
	err := s.rr.Close()
	if s.bp != nil {
		copyPool.Put(s.bp)
		s.bp = nil
	}
	s.h.active.Add(-1)
	return err
}
