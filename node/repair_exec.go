package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/node/volume"
	"cairn/node/wire"
)

// The node's part of a push or pull: a repairJob reads its sources slice
// by slice, computes the f sums of each slice, and hands them to its
// outputs (the next hop, or the f targets).
//
// Goroutines, all owned by the handler that runs the job and waited for
// before it answers:
//
//   - one per source (a local shard, a shard fetched from another node, or
//     the partials from the previous hop), reading at most repairReadAhead
//     slices (a local shard: a whole RepairReadRun of slices) ahead of the
//     computation into its own buffers;
//   - one per output, writing computed slices into an io.Pipe whose reader
//     is the body of the request to the next hop, or a target's PUT body,
//     or a local volume's Put;
//   - one per consumer of those pipes (the HTTP call or the Put).
//
// The handler's goroutine computes. Memory is bounded by (readAhead+1)
// slices per source (a local shard: about 2·RepairReadRun with its
// volume reader's run buffer) and repairSlots·f slices of output; back-pressure
// comes from the pipes, which are synchronous, and from TCP.
//
// Failure: the first error recorded (fail) is the job's verdict and names
// its culprit; fail cancels the job's context, which stops the disk reads
// and the outgoing requests, and closes the pipes, so every goroutine
// ends. Errors that follow from that cancellation are ignored. A write
// into a pipe that fails is never recorded: the consumer's own result
// (e.g. the next hop's error response naming a corrupt helper further
// down) is what counts.
//
// Commit: outputs are closed with EOF — which lets the next hop finish and
// the targets fsync and rename — only after every source has been read to
// its end and checked (a remote shard's trailers, the exact length of the
// partial stream). Otherwise the pipes are closed with the error and the
// targets remove their temporary files. A failure after the commit began
// (a target full at its last block, or failing its rename) no longer
// cancels the other targets: each finishes, and the job then deletes those
// that stored their shard, so a failed repair leaves no rebuilt shard
// behind.
const (
	repairReadAhead = 2 // slices a source reads ahead of the computation
	repairSlots     = 2 // output buffers: one being computed while one is written
)

// RepairReadRun is the read region of a local helper shard: the disk
// request size of its sequential read (PUSH's read-ahead into a bounded
// memory region), so chains sharing a spinning disk pay one head movement
// per run, not per block. Pulls fetch remote helpers one request unit per
// GET instead.
const RepairReadRun = 4 << 20

// source is one input stream of a job, read slice by slice: a helper
// shard (width 1: L bytes per slice) or the partials from the previous hop
// (width f: f·L bytes per slice).
type source struct {
	open   func(ctx context.Context) (io.ReadCloser, error)
	width  int
	coeffs []byte                // a helper's Coeffs; nil for partials
	blame  func(err error) error // wraps a read failure so that it names the culprit
	ready  chan []byte           // filled slices, in order
	free   chan []byte           // buffers to fill; nil entries are allocated on first use
}

// newSource makes a source that reads up to ahead slices (at least
// repairReadAhead) ahead of the computation.
func newSource(width, ahead int, coeffs []byte, open func(context.Context) (io.ReadCloser, error), blame func(error) error) *source {
	ahead = max(ahead, repairReadAhead)
	s := &source{open: open, width: width, coeffs: coeffs, blame: blame,
		ready: make(chan []byte, ahead), free: make(chan []byte, ahead+1)}
	for range ahead + 1 {
		s.free <- nil
	}
	return s
}

// output is one consumer of computed slices: the next hop (part -1: all f
// partials of a slice) or target part.
type output struct {
	part  int
	ch    chan slicePart
	pw    *io.PipeWriter
	final error // how pw is closed (nil: EOF); set before ch is closed
}

type slicePart struct {
	b    []byte
	done *sync.WaitGroup
}

type repairJob struct {
	h      *Handler
	op     string // "push" or "pull"
	spec   *wire.RepairSpec
	f, n   int             // targets, slices
	parent context.Context // the request's context
	ctx    context.Context // the job's: cancelled by the first failure
	cancel context.CancelFunc
	// sinkCtx is the outputs' consumers' context: cancelled by a failure
	// only before the commit, so that once the targets have all their
	// bytes each one finishes, and the job knows which ones it must delete.
	sinkCtx    context.Context
	sinkCancel context.CancelFunc
	// abortHook, if set, runs once, right after the first failure has
	// cancelled ctx, if that is before the commit (push: unblocks the read
	// of the previous hop's body; in net/http this also cancels the
	// request's context).
	abortHook func()

	mu         sync.Mutex
	err        error // the first failure; guarded by mu
	committing bool  // the outputs were closed with EOF; guarded by mu

	srcs sync.WaitGroup // source goroutines
	outs sync.WaitGroup // output writers and their consumers

	pipes     []*io.PipeReader // closed when sinkCtx ends
	stored    []wire.ShardInfo // per target; each written by one consumer before outs.Done
	committed []bool           // per target: a local or remote shard was stored by this job
}

func (h *Handler) newRepairJob(r *http.Request, op string, spec *wire.RepairSpec) *repairJob {
	j := &repairJob{h: h, op: op, spec: spec, f: len(spec.Store), n: spec.Slices(), parent: r.Context(),
		stored: make([]wire.ShardInfo, len(spec.Store)), committed: make([]bool, len(spec.Store))}
	j.ctx, j.cancel = context.WithCancel(r.Context())
	j.sinkCtx, j.sinkCancel = context.WithCancel(r.Context())
	return j
}

// stop releases the job's contexts (deferred by the handler).
func (j *repairJob) stop() {
	j.cancel()
	j.sinkCancel()
}

// fail records err as the job's verdict if it is the first failure, and
// aborts the job.
func (j *repairJob) fail(err error) {
	j.mu.Lock()
	first := j.err == nil
	if first {
		j.err = err
	}
	committing := j.committing
	j.mu.Unlock()
	if first {
		j.cancel()
		if !committing { // else every source has ended: nothing to unblock
			j.sinkCancel()
			if j.abortHook != nil {
				j.abortHook()
			}
		}
	}
}

func (j *repairJob) failure() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// pipe returns a pipe whose reader is closed when the consumers' context
// ends, so no writer or consumer stays blocked on it.
func (j *repairJob) pipe() (*io.PipeReader, *io.PipeWriter) {
	pr, pw := io.Pipe()
	j.pipes = append(j.pipes, pr)
	return pr, pw
}

// localSource reads a helper shard from one of this node's volumes.
func (j *repairJob) localSource(v *volume.Volume, hop wire.Hop) *source {
	// Slices buffered ahead cover a whole run, so the disk reads the next
	// run while the computation uses this one.
	ahead := int(min(RepairReadRun, j.spec.Size) / max(j.spec.Unit, 1))
	return newSource(1, ahead, hop.Coeffs, func(ctx context.Context) (io.ReadCloser, error) {
		r, err := v.NewReader(ctx, hop.Shard, 0, j.spec.Size)
		if err == nil {
			r.ReadAhead(RepairReadRun)
		}
		return r, err
	}, j.blameHop(hop))
}

// remoteSource fetches a helper shard from its node (pull), one request
// unit per GET: a puller asks each helper for the next unit as it needs
// it, which is the PULL of the paper and what its helpers' disks see as
// unit-sized requests from several pullers at once.
func (j *repairJob) remoteSource(hop wire.Hop) *source {
	return newSource(1, 0, hop.Coeffs, func(ctx context.Context) (io.ReadCloser, error) {
		return &unitReader{end: j.spec.Size, unit: j.spec.Unit, open: func(off, n int64) (io.ReadCloser, error) {
			return j.h.peer.getShardAt(ctx, hop.Addr, hop.Disk, hop.Shard, off, n)
		}}, nil
	}, j.blameHop(hop))
}

// unitReader reads [0, end) as consecutive ranges of at most unit bytes,
// each from its own reader; a range's reader must end with io.EOF only
// after checking its range (a node GET's trailers do).
type unitReader struct {
	off, end, unit int64
	open           func(off, n int64) (io.ReadCloser, error)
	cur            io.ReadCloser
	err            error // sticky
}

func (u *unitReader) Read(p []byte) (int, error) {
	for u.err == nil {
		if u.cur == nil {
			if u.off >= u.end {
				return 0, io.EOF
			}
			n := min(u.unit, u.end-u.off)
			if u.cur, u.err = u.open(u.off, n); u.err != nil {
				u.cur = nil
				break
			}
			u.off += n
		}
		n, err := u.cur.Read(p)
		if err == io.EOF {
			u.cur.Close()
			u.cur = nil
			err = nil
		}
		if n > 0 || err != nil {
			u.err = err
			return n, err
		}
	}
	return 0, u.err
}

func (u *unitReader) Close() error {
	if u.cur != nil {
		u.cur.Close()
		u.cur = nil
	}
	return nil
}

// blameHop names the helper in an error that does not name a culprit yet
// (a node call's *wire.Error already does).
func (j *repairJob) blameHop(hop wire.Hop) func(error) error {
	return func(err error) error {
		var ne *wire.Error
		if errors.As(err, &ne) {
			return err
		}
		return &wire.Error{Op: j.op, Disk: hop.Disk, Shard: hop.Shard, Err: err}
	}
}

// forward sends the computed partials to hop b, which answers for the
// rest of the chain.
func (j *repairJob) forward(b int) []*output {
	pr, pw := j.pipe()
	o := &output{part: -1, ch: make(chan slicePart, repairSlots), pw: pw}
	next := j.spec.Hops[b]
	j.outs.Add(1)
	go func() {
		defer j.outs.Done()
		k := call{op: j.op, method: http.MethodPost, addr: next.Addr, disk: next.Disk, shard: next.Shard,
			path: wire.PushPath, body: pr, length: int64(j.f) * j.spec.Size}
		stored, err := j.h.peer.repair(j.sinkCtx, k, wire.RepairRequest{Spec: *j.spec, Hop: b})
		pr.CloseWithError(errOutputDone)
		if err != nil {
			j.fail(err)
			return
		}
		copy(j.stored, stored)
	}()
	return []*output{o}
}

// sizedReader is a stream that declares its length.
type sizedReader struct {
	io.Reader
	size int64
}

func (r sizedReader) Size() int64 { return r.size }

// errOutputDone closes a pipe whose consumer has returned.
var errOutputDone = errors.New("node: repair output consumer returned")

// store writes the f rebuilt shards to their targets: a local Put when
// this node serves the target's disk, else a PUT to its node.
func (j *repairJob) store() []*output {
	outs := make([]*output, j.f)
	for k, t := range j.spec.Store {
		pr, pw := j.pipe()
		outs[k] = &output{part: k, ch: make(chan slicePart, repairSlots), pw: pw}
		v := j.h.vol(t.Disk)
		j.outs.Add(1)
		go func() {
			defer j.outs.Done()
			var info wire.ShardInfo
			var err error
			body := sizedReader{pr, j.spec.Size} // the write region: runs of up to volume.WriteRun
			if v != nil {
				var vi volume.ShardInfo
				vi, err = v.PutIdentified(j.sinkCtx, t.Shard, t.Identity, body)
				info = wire.ShardInfo{Size: vi.Size, CRC: vi.CRC, Ident: vi.Ident}
			} else {
				info, err = j.h.peer.putShardAt(j.sinkCtx, t.Addr, t.Disk, t.Shard, t.Identity, body)
			}
			pr.CloseWithError(errOutputDone)
			if err != nil {
				var ne *wire.Error
				if !errors.As(err, &ne) {
					err = &wire.Error{Op: j.op, Disk: t.Disk, Shard: t.Shard, Err: err}
				}
				j.fail(err)
				return
			}
			j.stored[k], j.committed[k] = info, true
		}()
	}
	return outs
}

// run reads the sources, computes and feeds the outputs until the job is
// done or failed; then every goroutine of the job has ended. up is the
// partial stream from the previous hop (nil if none).
func (j *repairJob) run(up *source, helpers []*source, outs []*output) {
	stop := context.AfterFunc(j.sinkCtx, func() {
		for _, pr := range j.pipes {
			pr.CloseWithError(j.sinkCtx.Err())
		}
	})
	defer stop()
	all := helpers
	if up != nil {
		all = append([]*source{up}, helpers...)
	}
	for _, s := range all {
		j.srcs.Add(1)
		go j.read(s)
	}
	for _, o := range outs {
		j.outs.Add(1)
		go j.write(o)
	}
	done := j.compute(up, helpers, outs)
	if done {
		j.srcs.Wait() // each source checks its end before anything commits
	} else {
		j.fail(&wire.Error{Op: j.op, Err: fmt.Errorf("repair stopped: %w", context.Cause(j.ctx))}) // if nothing failed before
	}
	j.mu.Lock()
	final := j.err
	j.committing = final == nil
	j.mu.Unlock()
	for _, o := range outs {
		o.final = final
		close(o.ch)
	}
	j.srcs.Wait()
	j.outs.Wait()
}

// read is a source's goroutine.
func (j *repairJob) read(s *source) {
	defer j.srcs.Done()
	rc, err := s.open(j.ctx)
	if err != nil {
		j.fail(s.blame(err))
		return
	}
	defer rc.Close()
	var total int64
	for i := range j.n {
		var buf []byte
		select {
		case buf = <-s.free:
		case <-j.ctx.Done():
			return
		}
		l := s.width * j.spec.SliceLen(i)
		if cap(buf) < l {
			buf = make([]byte, l) // slice 0 is the longest
		}
		buf = buf[:l]
		if _, err := io.ReadFull(rc, buf); err != nil {
			j.fail(s.blame(fmt.Errorf("slice %d (after %d bytes): %w", i, total, err)))
			return
		}
		total += int64(l)
		select {
		case s.ready <- buf:
		case <-j.ctx.Done():
			return
		}
	}
	// The stream must end exactly here; a fetched shard's reader checks the
	// node's trailers (status, body CRC) only now.
	var one [1]byte
	switch n, err := io.ReadFull(rc, one[:]); {
	case err == io.EOF:
	case n > 0:
		j.fail(s.blame(fmt.Errorf("%w: the stream is longer than %d bytes", cairn.ErrInvalid, total)))
	default:
		j.fail(s.blame(err))
	}
}

// write is an output's goroutine: it copies computed slices into the
// output's pipe and closes it with the verdict.
func (j *repairJob) write(o *output) {
	defer j.outs.Done()
	var werr error // once the consumer is gone, slices are dropped; its result tells why
	for p := range o.ch {
		if werr == nil {
			_, werr = o.pw.Write(p.b)
		}
		p.done.Done()
	}
	o.pw.CloseWithError(o.final)
}

// compute runs on the handler's goroutine. For each slice it gathers the
// upstream partials and the helpers' slices, computes
// out[k] = I_prev[k] + Σ_i coeffs_i[k]·S_i, and hands out to the outputs.
// It reports whether every slice was computed (false: the job ended).
func (j *repairJob) compute(up *source, helpers []*source, outs []*output) bool {
	type slot struct {
		buf  []byte
		busy sync.WaitGroup // outputs still writing buf
	}
	var slots [repairSlots]slot
	for i := range j.n {
		sl := &slots[i%repairSlots]
		sl.busy.Wait()
		if j.ctx.Err() != nil {
			return false
		}
		l := j.spec.SliceLen(i)
		if cap(sl.buf) < j.f*l {
			sl.buf = make([]byte, j.f*l)
		}
		out := sl.buf[:j.f*l]
		first := true
		if up != nil {
			b, ok := j.recv(up)
			if !ok {
				return false
			}
			copy(out, b)
			up.free <- b
			first = false
		}
		for _, s := range helpers {
			b, ok := j.recv(s)
			if !ok {
				return false
			}
			for k, c := range s.coeffs {
				dst := out[k*l : (k+1)*l]
				if first {
					codec.Mul(dst, b, c)
				} else {
					codec.MulAdd(dst, b, c)
				}
			}
			first = false
			s.free <- b
		}
		if j.h.repairLimit != nil && j.h.repairLimit.Wait(len(out), j.ctx.Done()) != nil {
			return false
		}
		sl.busy.Add(len(outs))
		for _, o := range outs {
			p := out
			if o.part >= 0 {
				p = out[o.part*l : (o.part+1)*l]
			}
			o.ch <- slicePart{b: p, done: &sl.busy} // never blocks: at most repairSlots parts are out
		}
	}
	return true
}

func (j *repairJob) recv(s *source) ([]byte, bool) {
	select {
	case b := <-s.ready:
		return b, true
	case <-j.ctx.Done():
		return nil, false
	}
}

// cleanup deletes the targets this job stored, after the job failed (a
// target stored while another failed would otherwise stay as garbage).
// Every consumer has returned, so committed is exact, except for a remote
// target whose answer was lost when the request itself was cancelled.
func (j *repairJob) cleanup() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(j.parent), j.h.idle)
	defer cancel()
	for k, t := range j.spec.Store {
		if !j.committed[k] {
			continue
		}
		var err error
		if v := j.h.vol(t.Disk); v != nil {
			err = v.Delete(ctx, t.Shard)
		} else {
			err = j.h.peer.deleteShardAt(ctx, t.Addr, t.Disk, t.Shard)
		}
		if err != nil {
			j.h.log.Warn("repair: cannot delete a rebuilt shard after the repair failed", "disk", string(t.Disk), "shard", t.Shard, "err", err)
		}
	}
}

// idleReader reads a request body under the idle deadline. It checks ctx
// after extending the deadline, so an abort (cancel, then a deadline in
// the past) cannot be undone by a read that starts after it.
type idleReader struct {
	ctx context.Context
	r   io.Reader
	c   idleConn
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.c.read()
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(p)
	if err == io.EOF {
		// The rest of the chain may take a while to answer; net/http reads
		// the idle connection meanwhile, and a deadline would cancel it.
		_ = r.c.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (r *idleReader) Close() error { return nil } // the server closes the body

// push runs the hops of a chain that this node serves, from the hop the
// request names to the last consecutive hop with the same address, then
// forwards the partials or stores the rebuilt shards.
func (h *Handler) push(w http.ResponseWriter, r *http.Request) {
	req, err := wire.DecodeRepairRequest(r.Header.Get(wire.HeaderRepair))
	if err != nil {
		h.repairError(w, r, "push", err)
		return
	}
	spec, a := &req.Spec, req.Hop
	b := a + 1
	for b < len(spec.Hops) && spec.Hops[b].Addr == spec.Hops[a].Addr {
		b++
	}
	var vols []*volume.Volume
	for _, hop := range spec.Hops[a:b] {
		v := h.vol(hop.Disk)
		if v == nil {
			h.repairError(w, r, "push", h.noDisk("push", hop.Disk, hop.Shard))
			return
		}
		vols = append(vols, v)
	}
	f := len(spec.Store)
	want := int64(f) * spec.Size // the partial stream
	if a == 0 {
		want = 0
	}
	if r.ContentLength != want && (a == 0 || r.ContentLength != -1) {
		h.repairError(w, r, "push", fmt.Errorf("%w: hop %d takes %d bytes of partials, the request has %d",
			cairn.ErrInvalid, a, want, r.ContentLength))
		return
	}
	ic := idleConn{rc: http.NewResponseController(w), idle: h.idle}
	defer ic.clear()
	j := h.newRepairJob(r, "push", spec)
	defer j.stop()
	var up *source
	if a > 0 {
		prev := spec.Hops[a-1]
		body := &idleReader{ctx: j.ctx, r: r.Body, c: ic}
		up = newSource(f, 0, nil, func(context.Context) (io.ReadCloser, error) { return body, nil }, func(err error) error {
			return &wire.Error{Op: "push", Disk: prev.Disk, Shard: prev.Shard,
				Err: fmt.Errorf("%w: partials from the previous hop (%s) broke off: %w", cairn.ErrUnavailable, prev.Addr, err)}
		})
		j.abortHook = func() { _ = ic.rc.SetReadDeadline(time.Now()) } // unblocks the body read
	}
	helpers := make([]*source, len(vols))
	for i, v := range vols {
		helpers[i] = j.localSource(v, spec.Hops[a+i])
	}
	var outs []*output
	if b < len(spec.Hops) {
		outs = j.forward(b)
	} else {
		outs = j.store()
	}
	j.run(up, helpers, outs)
	if a > 0 && j.failure() != nil {
		// The body may be unread, and a deadline set to stop reading it
		// cancels the connection's context in net/http: the connection
		// must not serve another request. Closing the body first lets the
		// server drain a short rest, or half-close and wait before closing
		// a long one, so the previous hop reads this answer instead of a
		// reset.
		ic.read()
		_ = r.Body.Close()
		w.Header().Set("Connection", "close")
	}
	h.finishRepair(w, r, j, ic)
}

// pull fetches every helper (reading its own disks locally), computes the
// rebuilt shards and stores them.
func (h *Handler) pull(w http.ResponseWriter, r *http.Request) {
	req, err := wire.DecodeRepairRequest(r.Header.Get(wire.HeaderRepair))
	if err == nil && req.Hop != 0 {
		err = fmt.Errorf("%w: a pull has no hop index", cairn.ErrInvalid)
	}
	if err == nil && r.ContentLength != 0 {
		err = fmt.Errorf("%w: a pull takes no body", cairn.ErrInvalid)
	}
	if err != nil {
		h.repairError(w, r, "pull", err)
		return
	}
	ic := idleConn{rc: http.NewResponseController(w), idle: h.idle}
	defer ic.clear()
	j := h.newRepairJob(r, "pull", &req.Spec)
	defer j.stop()
	helpers := make([]*source, len(req.Spec.Hops))
	for i, hop := range req.Spec.Hops {
		if v := h.vol(hop.Disk); v != nil {
			helpers[i] = j.localSource(v, hop)
		} else {
			helpers[i] = j.remoteSource(hop)
		}
	}
	j.run(nil, helpers, j.store())
	h.finishRepair(w, r, j, ic)
}

// finishRepair answers a job that has ended.
func (h *Handler) finishRepair(w http.ResponseWriter, r *http.Request, j *repairJob, ic idleConn) {
	if err := j.failure(); err != nil {
		j.cleanup()
		h.repairError(w, r, j.op, err)
		return
	}
	h.log.Debug("repair done", "op", j.op, "size", j.spec.Size, "targets", j.f)
	ic.write()
	writeJSON(w, http.StatusOK, wire.RepairResponse{Stored: j.stored})
}

// noDisk is the error for a hop whose disk this node does not serve.
func (h *Handler) noDisk(op string, disk cairn.DiskID, shard string) *wire.Error {
	msg := fmt.Sprintf("node %s serves no disk %q", h.node, disk)
	return &wire.Error{Op: op, Disk: disk, Shard: shard, Status: http.StatusNotFound, Code: "no_disk", Message: msg,
		Err: fmt.Errorf("%w: %s", cairn.ErrNotFound, msg)}
}

// repairError answers a failed push or pull. An error that came from
// another node (a *wire.Error with a code) passes through with its code and
// message; the body names the culprit's disk and shard.
func (h *Handler) repairError(w http.ResponseWriter, r *http.Request, op string, err error) {
	eb := wire.ErrorBody{Message: err.Error()}
	var status int
	var ne *wire.Error
	if errors.As(err, &ne) && ne.Code != "" {
		eb.Code, status = ne.Code, ne.Status
		if ne.Message != "" {
			eb.Message = ne.Message
		}
		if status < 400 { // a code from a GET's trailer
			_, status = wire.EncodeError(ne)
		}
	} else {
		eb.Code, status = wire.EncodeError(err)
		if ne, ok := err.(*wire.Error); ok {
			eb.Message = ne.Err.Error() // the body names the disk and shard
		}
	}
	var ve *volume.Error
	switch {
	case ne != nil:
		eb.Disk, eb.Shard = ne.Disk, ne.Shard
	case errors.As(err, &ve):
		eb.Disk, eb.Shard = ve.Disk, ve.Shard
	}
	lvl := slog.LevelWarn // where the failure was found; the hops before pass it on
	if errors.Is(err, context.Canceled) || eb.Code == "invalid" || ne != nil && ne.Code != "" {
		lvl = slog.LevelDebug
	}
	h.log.Log(r.Context(), lvl, "repair failed", "op", op, "code", eb.Code, "disk", string(eb.Disk), "shard", eb.Shard, "err", err)
	writeJSON(w, status, eb)
}
