package node

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cairn"
	"cairn/internal/linkshape"
	"cairn/node/lstor"
	"cairn/node/volume"
	"cairn/node/wire"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// HandlerConfig configures a Handler.
type HandlerConfig struct {
	// Node is this node's ID (reported by /v1/health).
	Node cairn.NodeID
	// Secret is the cluster secret; every request must be signed with the
	// key derived from it (docs/design/node-protocol.md, "Authentication").
	// Required.
	Secret string
	// Skew is how far a request's signing time may be from the node's
	// clock, either way (0: DefaultSkew).
	Skew time.Duration
	// ReplayEntries bounds the nonces remembered within the skew window;
	// when full, requests are refused with 503 (0: DefaultReplayEntries).
	ReplayEntries int
	// Volumes are the disks served. Their IDs must be distinct.
	Volumes []*volume.Volume
	// Lstors are the RAIDP stores of the disks served with an Lstor
	// (docs/design/raidp.md, "In the cluster"), by disk ID; each must be
	// one of Volumes' disks. The caller owns and closes them.
	Lstors map[cairn.DiskID]*lstor.Store
	// MaxShardSize refuses PUTs whose Content-Length is larger (413) before
	// reading them; the volume enforces its own limit on chunked bodies.
	// 0: volume.DefaultMaxShardSize.
	MaxShardSize int64
	// IdleTimeout ends a request whose body read or response write makes no
	// progress for this long (0: 1 minute). Whole transfers have no limit:
	// shards may be large.
	IdleTimeout time.Duration
	// HTTPClient makes the node's own requests to other nodes: forwarding
	// partials to the next hop of a push, PUTs of rebuilt shards to remote
	// targets, and a pull's fetches. They carry the cluster secret. nil: a
	// client like NewClient's default (pooled keep-alive connections, no
	// overall timeout, no redirects).
	HTTPClient *http.Client
	// RepairRate, in bytes per second, caps the repair data this node
	// computes — the partials it forwards and the rebuilt shards it stores
	// — over all its push and pull jobs together, so repair leaves the
	// disks and links room for client traffic (0: unlimited). Every hop of
	// a chain applies its own node's cap.
	RepairRate int64
	// Logger (nil: discarded).
	Logger *slog.Logger

	repairClock linkshape.Clock // tests: the clock of the RepairRate limiter
}

// Handler serves the node protocol over a fixed set of volumes. It is an
// http.Handler; safe for concurrent use.
type Handler struct {
	node    cairn.NodeID
	auth    verifier
	order   []cairn.DiskID
	maxSize int64
	idle    time.Duration
	log     *slog.Logger
	mux     *http.ServeMux
	ops     map[string]op // the kind of request of each mux pattern (roleOps)
	peer    *Client       // the node's requests to other nodes (repair)
	// repairLimit paces repair jobs' output (HandlerConfig.RepairRate;
	// nil: unlimited).
	repairLimit *linkshape.Limiter

	// active counts the requests in flight other than health checks
	// (Busy).
	active atomic.Int64

	lstors map[cairn.DiskID]*lstor.Store // fixed at NewHandler (HandlerConfig.Lstors)

	mu   sync.RWMutex
	vols map[cairn.DiskID]*volume.Volume // guarded by mu: the volume served for each disk (SetVolume swaps one)
}

// Busy reports whether the handler is serving a request other than a
// health check: client or repair traffic the scrubber yields to
// (node/scrub, Config.Share).
func (h *Handler) Busy() bool { return h.active.Load() > 0 }

// InFlight returns the number of requests in flight other than health
// checks (for metrics).
func (h *Handler) InFlight() int64 { return h.active.Load() }

var _ http.Handler = (*Handler)(nil)

// vol returns the volume served for disk id, or nil.
func (h *Handler) vol(id cairn.DiskID) *volume.Volume {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.vols[id]
}

// SetVolume serves v for its disk from now on, in place of the volume
// served so far, and returns that one (the caller closes it). Requests
// already running keep the old volume. ErrNotFound if the handler does not
// serve v's disk.
func (h *Handler) SetVolume(v *volume.Volume) (*volume.Volume, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.vols[v.ID()]
	if old == nil {
		return nil, fmt.Errorf("node %s: %w: serves no disk %s", h.node, cairn.ErrNotFound, v.ID())
	}
	h.vols[v.ID()] = v
	return old, nil
}

// NewHandler returns a handler for cfg. Errors wrap cairn.ErrInvalid.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Secret == "" {
		return nil, fmt.Errorf("node handler: %w: empty cluster secret", cairn.ErrInvalid)
	}
	h := &Handler{
		node:    cfg.Node,
		vols:    map[cairn.DiskID]*volume.Volume{},
		maxSize: cfg.MaxShardSize,
		idle:    cfg.IdleTimeout,
		log:     cfg.Logger,
	}
	if cfg.Skew < 0 || cfg.ReplayEntries < 0 {
		return nil, fmt.Errorf("node handler: %w: negative skew %v or replay entries %d", cairn.ErrInvalid, cfg.Skew, cfg.ReplayEntries)
	}
	h.auth = verifier{secret: cfg.Secret, skew: cfg.Skew, replay: newReplayCache(cmp.Or(cfg.ReplayEntries, DefaultReplayEntries))}
	if h.auth.skew == 0 {
		h.auth.skew = DefaultSkew
	}
	if h.maxSize <= 0 {
		h.maxSize = volume.DefaultMaxShardSize
	}
	if h.idle <= 0 {
		h.idle = time.Minute
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if cfg.RepairRate < 0 {
		return nil, fmt.Errorf("node handler: %w: negative repair rate %d", cairn.ErrInvalid, cfg.RepairRate)
	}
	if cfg.RepairRate > 0 {
		clock := cfg.repairClock
		if clock == nil {
			clock = linkshape.WallClock{}
		}
		h.repairLimit = linkshape.NewLimiter(cfg.RepairRate, clock)
	}
	peerKey, err := DeriveKey(cfg.Secret, KeyID{Role: RoleNode, Name: KeyName(string(cfg.Node))})
	if err != nil {
		return nil, fmt.Errorf("node handler: %w", err)
	}
	h.peer = NewKeyClient(peerKey, func(_ context.Context, d cairn.DiskID) (string, error) {
		return "", fmt.Errorf("%w: node %s resolves no disks (%s)", cairn.ErrInvalid, cfg.Node, d)
	}, cfg.HTTPClient)
	for _, v := range cfg.Volumes {
		if _, dup := h.vols[v.ID()]; dup {
			return nil, fmt.Errorf("node handler: %w: disk %s served twice", cairn.ErrInvalid, v.ID())
		}
		h.vols[v.ID()] = v
		h.order = append(h.order, v.ID())
	}
	h.lstors = map[cairn.DiskID]*lstor.Store{}
	for id, st := range cfg.Lstors {
		if h.vols[id] == nil || st == nil {
			return nil, fmt.Errorf("node handler: %w: Lstor of disk %s, which is not served (or nil)", cairn.ErrInvalid, id)
		}
		h.lstors[id] = st
	}
	m := http.NewServeMux()
	h.ops = map[string]op{}
	route := func(pattern string, o op, fn http.HandlerFunc) {
		m.HandleFunc(pattern, fn)
		h.ops[pattern] = o
	}
	route("PUT "+wire.Prefix+"/disks/{disk}/shards/{name}", opPut, h.put)
	route("GET "+wire.Prefix+"/disks/{disk}/shards/{name}", opGet, h.get)
	route("DELETE "+wire.Prefix+"/disks/{disk}/shards/{name}", opDelete, h.delete)
	route("GET "+wire.Prefix+"/disks/{disk}/shards", opList, h.list)
	route("GET "+wire.Prefix+"/disks/{disk}", opStat, h.stat)
	route("GET "+wire.Prefix+"/health", opHealth, h.health)
	route("PUT "+wire.Prefix+"/disks/{disk}/raidp/{slot}", opPut, h.raidpWrite)
	route("GET "+wire.Prefix+"/disks/{disk}/raidp/{slot}", opRAIDPRead, h.raidpRead)
	route("POST "+wire.Prefix+"/disks/{disk}/raidp/{slot}/zero", opDelete, h.raidpZero)
	route("GET "+wire.Prefix+"/disks/{disk}/lstor", opRAIDPRead, h.lstorRead)
	route("POST "+wire.PushPath, opPush, h.push)
	route("POST "+wire.PullPath, opPull, h.pull)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, "no_route", http.StatusNotFound, fmt.Errorf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	h.mux = m
	return h, nil
}

// ServeHTTP authenticates the request (verifier), checks that its key's
// role may make it (roleOps; 403 forbidden) and dispatches it. The connection's
// write deadline is cleared first: the handlers set their own (idleConn,
// writeJSON), and one left by the connection's previous request must not
// fail this one's writes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	id, err := h.auth.verify(r)
	if err != nil {
		if errors.Is(err, cairn.ErrAuth) {
			w.Header().Set("WWW-Authenticate", wire.AuthScheme+` realm="cairn-node"`)
		}
		h.writeError(w, r, err)
		return
	}
	if p := r.URL.EscapedPath(); p != cleanPath(p) {
		// The mux would answer a redirect to the clean path, which is no
		// answer of the protocol: clients never send such a path.
		h.writeError(w, r, fmt.Errorf("%w: path %q is not in canonical form", cairn.ErrInvalid, p))
		return
	}
	if _, pattern := h.mux.Handler(r); pattern != "" && pattern != "/" {
		if o := h.ops[pattern]; !id.Role.allows(o) {
			// A valid key asking beyond its role is a misconfigured
			// process or a user trying: worth an operator's look.
			h.log.Warn("node request refused for its key's role", "key_id", id.String(), "request", string(o), "method", r.Method, "path", r.URL.Path, "from", r.RemoteAddr)
			h.fail(w, r, wire.CodeForbidden, http.StatusForbidden, fmt.Errorf("%w: key %s: role %s may not %s (it may: %s)", cairn.ErrAuth, id, id.Role, o, opNames(roleOps[id.Role])))
			return
		}
	}
	if r.URL.Path != wire.HealthPath {
		h.active.Add(1)
		defer h.active.Add(-1)
	}
	h.mux.ServeHTTP(w, r)
}

// cleanPath is p as http.ServeMux cleans it before routing: rooted,
// without . and .. elements or repeated slashes, a trailing slash kept.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, status := wire.EncodeError(err)
	h.fail(w, r, code, status, err)
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, code string, status int, err error) {
	lvl := slog.LevelDebug
	if status >= 500 && !errors.Is(r.Context().Err(), context.Canceled) {
		lvl = slog.LevelWarn
	}
	h.log.Log(r.Context(), lvl, "node request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	writeJSON(w, status, wire.ErrorBody{Code: code, Message: err.Error()})
}

// volume finds the request's disk or answers 404 no_disk.
func (h *Handler) volume(w http.ResponseWriter, r *http.Request) *volume.Volume {
	id := cairn.DiskID(r.PathValue("disk"))
	v := h.vol(id)
	if v == nil {
		h.fail(w, r, "no_disk", http.StatusNotFound, fmt.Errorf("%w: node %s serves no disk %q", cairn.ErrNotFound, h.node, id))
	}
	return v
}

// idleConn extends the connection's read or write deadline before each
// transfer step, so a stalled peer ends the request after h.idle while a
// slow but moving transfer of any size goes on. Deadlines are cleared when
// the request ends (the server does not reset them between requests when
// it has no timeouts of its own).
type idleConn struct {
	rc   *http.ResponseController
	idle time.Duration
}

func (c idleConn) read()  { _ = c.rc.SetReadDeadline(time.Now().Add(c.idle)) }
func (c idleConn) write() { _ = c.rc.SetWriteDeadline(time.Now().Add(c.idle)) }
func (c idleConn) clear() {
	_ = c.rc.SetReadDeadline(time.Time{})
	_ = c.rc.SetWriteDeadline(time.Time{})
}

// errTooLarge: a PUT body went past MaxShardSize.
var errTooLarge = errors.New("shard too large")

// bodyReader reads a PUT body under the idle deadline and the size limit.
type bodyReader struct {
	r    io.Reader
	c    idleConn
	max  int64
	left int64 // bytes still allowed
	size int64 // the declared Content-Length; -1 if unknown (chunked)
}

// Size is the declared length (a hint for the volume's write runs).
func (r *bodyReader) Size() int64 { return r.size }

func (r *bodyReader) Read(p []byte) (int, error) {
	if r.c.rc != nil { // nil: a write in process (localPut), no connection
		r.c.read()
	}
	n, err := r.r.Read(p)
	if r.left -= int64(n); r.left < 0 {
		return n, fmt.Errorf("%w: %w: the body is longer than %d bytes", cairn.ErrInvalid, errTooLarge, r.max)
	}
	return n, err
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request) {
	v := h.volume(w, r)
	if v == nil {
		return
	}
	name := r.PathValue("name")
	if err := volume.ValidateName(name); err != nil {
		h.writeError(w, r, err)
		return
	}
	if r.ContentLength > h.maxSize {
		h.fail(w, r, "too_large", http.StatusRequestEntityTooLarge,
			fmt.Errorf("%w: shard of %d bytes is larger than %d", cairn.ErrInvalid, r.ContentLength, h.maxSize))
		return
	}
	var ident []byte
	if hv := r.Header.Get(wire.HeaderIdentity); hv != "" {
		var err error
		if ident, err = base64.StdEncoding.DecodeString(hv); err != nil {
			h.writeError(w, r, fmt.Errorf("%w: %s is not base64: %v", cairn.ErrInvalid, wire.HeaderIdentity, err))
			return
		}
	}
	ic := idleConn{rc: http.NewResponseController(w), idle: h.idle}
	defer ic.clear()
	info, err := v.PutIdentified(r.Context(), name, ident, &bodyReader{r: r.Body, c: ic, max: h.maxSize, left: h.maxSize, size: r.ContentLength})
	if errors.Is(err, errTooLarge) {
		h.fail(w, r, "too_large", http.StatusRequestEntityTooLarge, err)
		return
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set(wire.HeaderSize, strconv.FormatInt(info.Size, 10))
	w.Header().Set(wire.HeaderCRC, wire.FormatCRC(info.CRC))
	writeJSON(w, http.StatusCreated, wire.PutResponse{Size: info.Size, CRC: info.CRC, Ident: info.Ident})
}

// getReadRun is the disk request size of a GET: a streamed shard is read
// 1 MiB at a time (a smaller range in one request).
const getReadRun = 1 << 20

var copyPool = sync.Pool{New: func() any { b := make([]byte, volume.BlockSize); return &b }}

// get streams a verified range. The first block is read and checked before
// the status line is sent, so a shard that is missing, has a bad footer or
// a bad first block gets a plain error response. After that the status is
// 200 and the verdict travels in the trailers: a block that fails its CRC
// (or any read error) stops the body there and sets X-Cairn-Status to the
// error code — never are bad bytes sent — and the client turns that into
// cairn.ErrCorrupt after the good bytes before it.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	v := h.volume(w, r)
	if v == nil {
		return
	}
	q := r.URL.Query()
	off, n := int64(0), int64(-1)
	var perr error
	if s := q.Get("offset"); s != "" {
		off, perr = strconv.ParseInt(s, 10, 64)
	}
	if s := q.Get("length"); s != "" && perr == nil {
		n, perr = strconv.ParseInt(s, 10, 64)
	}
	if perr != nil {
		h.fail(w, r, "range", http.StatusRequestedRangeNotSatisfiable, fmt.Errorf("%w: bad offset or length: %v", cairn.ErrInvalid, perr))
		return
	}
	rr, err := v.NewReader(r.Context(), r.PathValue("name"), off, n)
	if err != nil {
		if errors.Is(err, cairn.ErrInvalid) && volume.ValidateName(r.PathValue("name")) == nil {
			h.fail(w, r, "range", http.StatusRequestedRangeNotSatisfiable, err)
			return
		}
		h.writeError(w, r, err)
		return
	}
	defer rr.Close()
	rr.ReadAhead(getReadRun)
	length := rr.Remaining()
	bp := copyPool.Get().(*[]byte)
	defer copyPool.Put(bp)
	buf := *bp
	k, rerr := rr.Read(buf)
	if rerr != nil && rerr != io.EOF {
		h.writeError(w, r, rerr)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Trailer", wire.TrailerStatus+", "+wire.TrailerError+", "+wire.TrailerBodyCRC)
	hd.Set(wire.HeaderLength, strconv.FormatInt(length, 10))
	hd.Set(wire.HeaderSize, strconv.FormatInt(rr.Size(), 10))
	hd.Set(wire.HeaderCRC, wire.FormatCRC(rr.CRC()))
	ic := idleConn{rc: http.NewResponseController(w), idle: h.idle}
	defer ic.clear()
	ic.write()
	w.WriteHeader(http.StatusOK)
	var crc uint32
	for k > 0 {
		crc = crc32.Update(crc, castagnoli, buf[:k])
		ic.write()
		if _, err := w.Write(buf[:k]); err != nil {
			h.log.Debug("get: client went away", "path", r.URL.Path, "err", err)
			return
		}
		if rerr == io.EOF {
			break
		}
		k, rerr = rr.Read(buf)
		if rerr != nil && rerr != io.EOF {
			code, _ := wire.EncodeError(rerr)
			if r.Context().Err() == nil {
				h.log.Warn("get: stopped mid-stream", "path", r.URL.Path, "code", code, "err", rerr)
			}
			hd.Set(wire.TrailerStatus, code)
			hd.Set(wire.TrailerError, rerr.Error())
			return
		}
	}
	hd.Set(wire.TrailerStatus, wire.StatusOK)
	hd.Set(wire.TrailerBodyCRC, wire.FormatCRC(crc))
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	v := h.volume(w, r)
	if v == nil {
		return
	}
	if err := v.Delete(r.Context(), r.PathValue("name")); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	v := h.volume(w, r)
	if v == nil {
		return
	}
	q := r.URL.Query()
	limit := 0
	if s := q.Get("limit"); s != "" {
		var err error
		if limit, err = strconv.Atoi(s); err != nil || limit < 0 {
			h.writeError(w, r, fmt.Errorf("%w: bad limit %q", cairn.ErrInvalid, s))
			return
		}
	}
	page, more, err := v.List(r.Context(), q.Get("after"), limit)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	resp := wire.ListResponse{Shards: make([]wire.ShardStat, len(page)), More: more}
	for i, s := range page {
		resp.Shards[i] = wire.ShardStat{Name: s.Name, Size: s.Size}
		if q.Get("identity") == "1" {
			resp.Shards[i] = inspect(r.Context(), v, s.Name)
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// inspect reads a shard's footer and identity for a listing with
// identities; a file it cannot read has Size −1 and Error set.
func inspect(ctx context.Context, v *volume.Volume, name string) wire.ShardStat {
	st := wire.ShardStat{Name: name, Size: -1}
	r, err := v.NewReader(ctx, name, 0, 0)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	defer r.Close()
	st.Size, st.CRC, st.Written = r.Size(), r.CRC(), r.ModTime().UTC()
	id, ok, err := r.Identity()
	switch {
	case err != nil:
		st.Error = err.Error()
	case ok:
		st.Identity = &id
		st.Ident = r.IdentLen()
	}
	return st
}

func (h *Handler) diskStat(v *volume.Volume) (wire.DiskStat, error) {
	u, err := v.Usage()
	if err != nil {
		return wire.DiskStat{}, err
	}
	st := wire.DiskStat{ID: v.ID(), Capacity: u.Capacity, Free: u.Free}
	if err := v.Err(); err != nil {
		st.Broken = err.Error()
	}
	return st, nil
}

func (h *Handler) stat(w http.ResponseWriter, r *http.Request) {
	v := h.volume(w, r)
	if v == nil {
		return
	}
	st, err := h.diskStat(v)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	resp := wire.HealthResponse{Node: h.node, OK: true, Disks: []wire.DiskStat{}}
	for _, id := range h.order {
		st, err := h.diskStat(h.vol(id))
		if err != nil {
			st = wire.DiskStat{ID: id, Broken: err.Error()}
		}
		if st.Broken != "" {
			resp.OK = false
		}
		resp.Disks = append(resp.Disks, st)
	}
	writeJSON(w, http.StatusOK, resp)
}
