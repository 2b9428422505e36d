package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"cairn"
	"cairn/node/lstor"
	"cairn/node/wire"

	"golang.org/x/sync/errgroup"
)

// The RAIDP calls (docs/design/raidp.md, "In the cluster"; paths in
// node/wire): a disk's superchunk slots and its Lstor parity. The node does
// the read-modify-write and the parity update (lstor.Store.Write), so the
// wire carries only the new bytes.

// lstorFor finds the request's disk's Lstor, or answers 404 no_disk (the
// node does not serve the disk) or no_lstor (it serves it without one).
func (h *Handler) lstorFor(w http.ResponseWriter, r *http.Request) *lstor.Store {
	id := cairn.DiskID(r.PathValue("disk"))
	if st := h.lstors[id]; st != nil {
		return st
	}
	if h.vol(id) == nil {
		h.fail(w, r, "no_disk", http.StatusNotFound, fmt.Errorf("%w: node %s serves no disk %q", cairn.ErrNotFound, h.node, id))
		return nil
	}
	h.fail(w, r, wire.CodeNoLstor, http.StatusNotFound, fmt.Errorf("%w: node %s serves disk %q without an Lstor", cairn.ErrNotFound, h.node, id))
	return nil
}

// raidpRange parses the slot (unless noSlot), offset and length (unless
// noLength) of a RAIDP request.
func raidpRange(r *http.Request, noSlot, noLength bool) (slot int, off, n int64, err error) {
	num := func(name, s string) (int64, error) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%w: RAIDP %s %q is not a non-negative integer", cairn.ErrInvalid, name, s)
		}
		return v, nil
	}
	if !noSlot {
		s, err := num("slot", r.PathValue("slot"))
		if err != nil {
			return 0, 0, 0, err
		}
		if s > 1<<30 {
			return 0, 0, 0, fmt.Errorf("%w: RAIDP slot %d out of range", cairn.ErrInvalid, s)
		}
		slot = int(s)
	}
	q := r.URL.Query()
	if off, err = num("offset", q.Get("offset")); err != nil {
		return 0, 0, 0, err
	}
	if !noLength {
		if n, err = num("length", q.Get("length")); err != nil {
			return 0, 0, 0, err
		}
		if n > wire.MaxRAIDPCall {
			return 0, 0, 0, fmt.Errorf("%w: RAIDP length %d is more than %d", cairn.ErrInvalid, n, wire.MaxRAIDPCall)
		}
	}
	return slot, off, n, nil
}

// lstorError maps the Lstor's errors to the protocol's sentinels.
func lstorError(err error) error {
	switch {
	case errors.Is(err, lstor.ErrRange):
		return fmt.Errorf("%w: %w", cairn.ErrInvalid, err)
	case errors.Is(err, lstor.ErrCorrupt):
		return fmt.Errorf("%w: %w", cairn.ErrCorrupt, err)
	case errors.Is(err, lstor.ErrNeedsVerify), errors.Is(err, lstor.ErrClosed):
		return fmt.Errorf("%w: %w", cairn.ErrUnavailable, err)
	}
	return err
}

// lstorWriteError answers a failed RAIDP write or zero. A disk whose
// Lstor is marked for verification answers CodeLstorVerify (422): the
// write cannot succeed until an operator resyncs the parity, so the
// client must not retry it.
func (h *Handler) lstorWriteError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, lstor.ErrNeedsVerify) {
		h.fail(w, r, wire.CodeLstorVerify, http.StatusUnprocessableEntity, fmt.Errorf(
			"%w: node %s disk %s: RAIDP writes refused: the Lstor is marked for verification (a journal record failed its CRC, a write failed half-way, or the disk or its Lstor is new); stop the node and run `cairn admin raidp verify --resync`: %w",
			cairn.ErrCorrupt, h.node, r.PathValue("disk"), err))
		return
	}
	h.writeError(w, r, lstorError(err))
}

// raidpWrite writes the body into a slot: durable, parity included, when
// it answers 204. The body's CRC must be the one its header declares.
func (h *Handler) raidpWrite(w http.ResponseWriter, r *http.Request) {
	st := h.lstorFor(w, r)
	if st == nil {
		return
	}
	slot, off, _, err := raidpRange(r, false, true)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if r.ContentLength < 0 || r.ContentLength > wire.MaxRAIDPCall {
		h.fail(w, r, "too_large", http.StatusRequestEntityTooLarge,
			fmt.Errorf("%w: a RAIDP write needs a Content-Length of at most %d (got %d)", cairn.ErrInvalid, wire.MaxRAIDPCall, r.ContentLength))
		return
	}
	want, err := wire.ParseCRC(r.Header.Get(wire.HeaderCRC))
	if err != nil {
		h.writeError(w, r, fmt.Errorf("%w: RAIDP write without a valid %s: %v", cairn.ErrInvalid, wire.HeaderCRC, err))
		return
	}
	var blocks []uint32
	if v := r.Header.Get(wire.HeaderBlockCRCs); v != "" {
		if blocks, err = wire.ParseBlockCRCs(v, r.ContentLength); err != nil {
			h.writeError(w, r, fmt.Errorf("%w: RAIDP write: %v", cairn.ErrInvalid, err))
			return
		}
	}
	ic := idleConn{rc: http.NewResponseController(w), idle: h.idle}
	defer ic.clear()
	body := &bodyReader{r: r.Body, c: ic, max: r.ContentLength, left: r.ContentLength, size: r.ContentLength}
	if blocks != nil {
		if err := writeBlocks(r.Context(), st, slot, off, body, r.ContentLength, want, blocks); err != nil {
			h.lstorWriteError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	p := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(body, p); err != nil {
		h.writeError(w, r, fmt.Errorf("%w: reading the RAIDP write's body: %v", cairn.ErrUnavailable, err))
		return
	}
	if got := crc32.Checksum(p, castagnoli); got != want {
		h.writeError(w, r, fmt.Errorf("%w: RAIDP write body has CRC %08x, its header says %08x", cairn.ErrCorrupt, got, want))
		return
	}
	if err := st.Write(r.Context(), slot, off, p); err != nil {
		h.lstorWriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeBlocks writes a RAIDP write's body of n bytes, declared with the
// CRC of each of its blocks (wire.HeaderBlockCRCs) and of the whole
// (whole), into slot at off block by block as it arrives: one goroutine
// reads block i+1 off the connection while another writes block i
// (journal, disk, parity: lstor.Store.Write), so the link and the disks
// work at once instead of one after the other. Memory: two blocks.
// Goroutines: the two, both ended before it returns (the reader at the
// latest when the connection's idle deadline ends a stalled read).
//
// A block is written only once it has matched its CRC. A block that does
// not, a body cut short, or a failed write ends the call there with an
// error: the blocks before are durable, those after untouched — as after
// any failed RAIDP write, the caller may not assume either and zeroes
// the range (client undoSpans). The whole body's CRC, checked at the
// end, can only disagree with the blocks' through a caller's bug; it
// fails the call too.
func writeBlocks(ctx context.Context, st *lstor.Store, slot int, off int64, body io.Reader, n int64, whole uint32, crcs []uint32) error {
	// The reader stops when the writer fails (gctx); the writer writes
	// every block the reader handed it, under the request's ctx, even
	// after the reader failed: so a body cut short leaves exactly the
	// blocks that arrived whole written, as the protocol says.
	g, gctx := errgroup.WithContext(ctx)
	free := make(chan []byte, 2)
	free <- nil // allocated on first use
	free <- nil
	full := make(chan []byte, 1)
	g.Go(func() error {
		defer close(full)
		for o := int64(0); o < n; o += wire.RAIDPWriteBlock {
			var p []byte
			select {
			case p = <-free:
			case <-gctx.Done():
				// The writer failed (its error, returned first, is the
				// call's) or the request was cancelled.
				return gctx.Err()
			}
			if p == nil {
				p = make([]byte, wire.RAIDPWriteBlock)
			}
			p = p[:min(wire.RAIDPWriteBlock, n-o)]
			if _, err := io.ReadFull(body, p); err != nil {
				return fmt.Errorf("%w: reading the RAIDP write's body at byte %d: %v", cairn.ErrUnavailable, o, err)
			}
			select {
			case full <- p:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error {
		var sum uint32
		i := 0
		for p := range full {
			c := crc32.Checksum(p, castagnoli)
			if c != crcs[i] {
				return fmt.Errorf("%w: RAIDP write block %d has CRC %08x, its header says %08x (blocks before it are written)", cairn.ErrCorrupt, i, c, crcs[i])
			}
			if err := st.Write(ctx, slot, off+int64(i)*wire.RAIDPWriteBlock, p); err != nil {
				return err
			}
			sum = crc32.Update(sum, castagnoli, p)
			i++
			free <- p[:cap(p)]
		}
		switch {
		case i < len(crcs): // the reader stopped: its error is the call's
			return fmt.Errorf("%w: RAIDP write ended after %d of %d blocks", cairn.ErrUnavailable, i, len(crcs))
		case sum != whole:
			return fmt.Errorf("%w: RAIDP write body has CRC %08x, its header says %08x, though every block matched", cairn.ErrCorrupt, sum, whole)
		}
		return nil
	})
	return g.Wait()
}

// raidpZero zeroes a range of a slot (data and parity, journaled).
func (h *Handler) raidpZero(w http.ResponseWriter, r *http.Request) {
	st := h.lstorFor(w, r)
	if st == nil {
		return
	}
	slot, off, n, err := raidpRange(r, false, false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if err := st.Zero(r.Context(), slot, off, n); err != nil {
		h.lstorWriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// raidpRead answers a range of a slot.
func (h *Handler) raidpRead(w http.ResponseWriter, r *http.Request) {
	h.raidpSend(w, r, false)
}

// lstorRead answers a range of the disk's Lstor parity.
func (h *Handler) lstorRead(w http.ResponseWriter, r *http.Request) {
	h.raidpSend(w, r, true)
}

func (h *Handler) raidpSend(w http.ResponseWriter, r *http.Request, parity bool) {
	st := h.lstorFor(w, r)
	if st == nil {
		return
	}
	slot, off, n, err := raidpRange(r, parity, false)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	p := make([]byte, n)
	if parity {
		err = st.Parity(p, off)
	} else {
		err = st.ReadAt(slot, p, off)
	}
	if err != nil {
		h.writeError(w, r, lstorError(err))
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.Itoa(len(p)))
	hd.Set(wire.HeaderCRC, wire.FormatCRC(crc32.Checksum(p, castagnoli)))
	ic := idleConn{rc: http.NewResponseController(w), idle: h.idle}
	defer ic.clear()
	ic.write()
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(p); err != nil {
		h.log.Debug("raidp read: client went away", "path", r.URL.Path, "err", err)
	}
}

// WriteRAIDP writes p at offset off of slot on disk's RAIDP space; when it
// returns nil the node has made the write durable with the Lstor parity
// updated. len(p) is at most wire.MaxRAIDPCall. The node writes it block
// by block as it arrives (wire.HeaderBlockCRCs); when it fails, any part
// of p may have been written.
func (c *Client) WriteRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off int64, p []byte) error {
	if len(p) > wire.MaxRAIDPCall || slot < 0 || off < 0 {
		return c.errf("raidp write", disk, "", cairn.ErrInvalid, "slot %d offset %d length %d (at most %d)", slot, off, len(p), wire.MaxRAIDPCall)
	}
	addr, err := c.resolveDisk(ctx, "raidp write", disk, "")
	if err != nil {
		return err
	}
	cr := &crcReader{r: bytes.NewReader(p), idle: c.t.Idle, header: c.t.Header, size: int64(len(p))}
	k := call{op: "raidp write", method: http.MethodPut, addr: addr, disk: disk,
		path: wire.RAIDPPath(disk, slot), query: url.Values{"offset": {strconv.FormatInt(off, 10)}},
		header: http.Header{wire.HeaderCRC: {wire.FormatCRC(crc32.Checksum(p, castagnoli))}, wire.HeaderBlockCRCs: {wire.FormatBlockCRCs(p)}},
		body:   io.NopCloser(cr), length: int64(len(p)), idle: c.t.Idle,
		watch: func(wd *watchdog) { cr.wd = wd }}
	if len(p) == 0 {
		// No body to arm the watchdog: bound the call as a small one.
		k.body, k.idle, k.limit = http.NoBody, 0, c.t.Call
	}
	resp, err := c.send(ctx, k)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// ZeroRAIDP zeroes n bytes at offset off of slot on disk's RAIDP space
// (data and parity); durable when it returns nil.
func (c *Client) ZeroRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off, n int64) error {
	if n > wire.MaxRAIDPCall || n < 0 || slot < 0 || off < 0 {
		return c.errf("raidp zero", disk, "", cairn.ErrInvalid, "slot %d offset %d length %d (at most %d)", slot, off, n, wire.MaxRAIDPCall)
	}
	q := url.Values{"offset": {strconv.FormatInt(off, 10)}, "length": {strconv.FormatInt(n, 10)}}
	resp, err := c.request(ctx, "raidp zero", http.MethodPost, disk, "", wire.RAIDPPath(disk, slot)+"/zero", q, nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// ReadRAIDP fills p from offset off of slot on disk's RAIDP space,
// checking the bytes against the CRC the node sent (ErrCorrupt).
func (c *Client) ReadRAIDP(ctx context.Context, disk cairn.DiskID, slot int, p []byte, off int64) error {
	if slot < 0 {
		return c.errf("raidp read", disk, "", cairn.ErrInvalid, "slot %d", slot)
	}
	return c.readRAIDP(ctx, "raidp read", disk, wire.RAIDPPath(disk, slot), p, off)
}

// ReadLstor fills p from offset off of disk's Lstor parity (for a
// dual-failure rebuild), checked like ReadRAIDP.
func (c *Client) ReadLstor(ctx context.Context, disk cairn.DiskID, p []byte, off int64) error {
	return c.readRAIDP(ctx, "lstor read", disk, wire.LstorPath(disk), p, off)
}

func (c *Client) readRAIDP(ctx context.Context, op string, disk cairn.DiskID, path string, p []byte, off int64) error {
	if len(p) > wire.MaxRAIDPCall || off < 0 {
		return c.errf(op, disk, "", cairn.ErrInvalid, "offset %d length %d (at most %d)", off, len(p), wire.MaxRAIDPCall)
	}
	addr, err := c.resolveDisk(ctx, op, disk, "")
	if err != nil {
		return err
	}
	q := url.Values{"offset": {strconv.FormatInt(off, 10)}, "length": {strconv.Itoa(len(p))}}
	resp, err := c.send(ctx, call{op: op, method: http.MethodGet, addr: addr, disk: disk, path: path, query: q,
		answer: c.t.Header, idle: c.t.Idle})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	want, err := wire.ParseCRC(resp.Header.Get(wire.HeaderCRC))
	if err != nil {
		return c.errf(op, disk, "", cairn.ErrUnavailable, "node sent a bad %s: %v", wire.HeaderCRC, err)
	}
	if _, err := io.ReadFull(resp.Body, p); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return &wire.Error{Op: op, Disk: disk, Err: cerr}
		}
		return c.errf(op, disk, "", cairn.ErrUnavailable, "reading %d bytes: %v", len(p), err)
	}
	if got := crc32.Checksum(p, castagnoli); got != want {
		return c.errf(op, disk, "", cairn.ErrCorrupt, "received CRC %08x, node sent %08x", got, want)
	}
	return nil
}
