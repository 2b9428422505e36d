package node

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cairn"
	"cairn/node/wire"
)

// Client speaks the node protocol. It resolves a disk to its node's
// address on every call (so a disk that moved is found again), and bounds
// every call but a repair's Push and Pull by its Timeouts. Safe for
// concurrent use.
//
// Errors are *wire.Error values whose chain holds a cairn sentinel: ErrInvalid
// (bad name or range, refused before sending when it can be told locally),
// ErrNotFound (no such shard or disk), ErrNoSpace, ErrCorrupt (the node
// found a bad block, or the bytes received do not match what the node
// sent), ErrAuth (wrong secret), ErrUnavailable (the node is unreachable,
// broke the connection, answered garbage or had an internal error, or
// did not answer or move data within its Timeouts) — or ctx's error when
// ctx ended.
type Client struct {
	key     Key // signs every request
	resolve Resolver
	hc      *http.Client
	t       Timeouts
	// unreachable, if set, hears of every call that could not connect
	// to the address resolve gave (WithUnreachable).
	unreachable func(disk cairn.DiskID, addr string)
	// local, if set, serves reads of its disks in this process
	// (WithLocal).
	local *Handler
}

// Resolver finds the address of a disk's node: "host:port", or a base
// URL with a scheme. It may read the cluster map under ctx.
type Resolver func(ctx context.Context, disk cairn.DiskID) (addr string, err error)

// NewClient returns a client that signs its requests with the admin key
// AdminKeyID derived from the cluster secret (docs/design/node-protocol.md,
// "Keys and roles"): it may make every request. Processes with a narrower
// job use NewKeyClient with their role's key.
func NewClient(secret string, resolve Resolver, hc *http.Client) *Client {
	return NewKeyClient(Key{ID: AdminKeyID, key: deriveKey(secret, AdminKeyID)}, resolve, hc)
}

// AdminKeyID is the principal of NewClient's key.
var AdminKeyID = KeyID{Role: RoleAdmin, Name: "cluster"}

// NewKeyClient returns a client that signs its requests with key
// (docs/design/node-protocol.md, "Authentication") and finds a disk's
// node with resolve, with DefaultTimeouts. hc nil:
// NewHTTPClient(DefaultTimeouts). A node refuses the requests key's role
// may not make (ErrAuth, code forbidden).
func NewKeyClient(key Key, resolve Resolver, hc *http.Client) *Client {
	if hc == nil {
		hc = defaultHTTPClient()
	}
	return &Client{key: key, resolve: resolve, hc: hc, t: DefaultTimeouts}
}

// Key returns the principal whose key signs c's requests.
func (c *Client) Key() KeyID { return c.key.ID }

// WithTimeouts returns a copy of c that bounds its calls by t (zero
// fields: DefaultTimeouts'). The HTTP client stays c's: its dial timeout
// is NewHTTPClient's.
func (c *Client) WithTimeouts(t Timeouts) *Client {
	cc := *c
	cc.t = t.withDefaults()
	return &cc
}

// WithUnreachable returns a copy of c that calls f(disk, addr) whenever a
// call about disk cannot connect to addr, the address its Resolver gave
// (refused, or no route): a resolver that caches the cluster map can
// forget it, since a node that restarted elsewhere (a new port) is found
// only in a fresh map. f must not block.
func (c *Client) WithUnreachable(f func(disk cairn.DiskID, addr string)) *Client {
	cc := *c
	cc.unreachable = f
	return &cc
}

// defaultHTTPClient is NewClient's default client.
func defaultHTTPClient() *http.Client { return NewHTTPClient(DefaultTimeouts) }

func (c *Client) errf(op string, disk cairn.DiskID, shard string, sentinel error, format string, args ...any) *wire.Error {
	return &wire.Error{Op: op, Disk: disk, Shard: shard, Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
}

// request resolves disk and sends one request; a transport failure
// becomes ErrUnavailable (or ctx's error), an error status a *wire.Error.
func (c *Client) request(ctx context.Context, op, method string, disk cairn.DiskID, shard, path string, q url.Values, body io.Reader) (*http.Response, error) {
	addr, err := c.resolveDisk(ctx, op, disk, shard)
	if err != nil {
		return nil, err
	}
	return c.send(ctx, call{op: op, method: method, addr: addr, disk: disk, shard: shard, path: path, query: q, body: body, limit: c.t.Call})
}

// resolveDisk is resolve under the small calls' limit, with errors
// naming the call.
func (c *Client) resolveDisk(ctx context.Context, op string, disk cairn.DiskID, shard string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.t.Call)
	defer cancel()
	addr, err := c.resolve(ctx, disk)
	if err != nil {
		return "", &wire.Error{Op: op, Disk: disk, Shard: shard, Err: fmt.Errorf("resolve disk: %w", err)}
	}
	return addr, nil
}

// call is one request to a node at a known address. disk and shard name
// what the call is about, for errors.
type call struct {
	op, method  string
	addr        string // "host:port" or a base URL with a scheme
	disk        cairn.DiskID
	shard, path string
	query       url.Values
	header      http.Header
	body        io.Reader // nil: none
	length      int64     // body length if > 0; otherwise unknown (chunked)

	// Watchdog (Timeouts): limit bounds the whole call (small calls);
	// else answer bounds the wait for the response headers of a call
	// without a body, and idle each wait on the node for the request or
	// response body. All zero: only ctx bounds the call (repair).
	limit, answer, idle time.Duration
	// watch, if set, gets the call's watchdog before the request is sent
	// (a PUT's body arms it).
	watch func(*watchdog)
}

// send sends one request under its watchdog; a transport failure becomes
// ErrUnavailable (or ctx's error), an error status a *wire.Error. The
// response's body is read under the watchdog, and closing it releases
// the watchdog.
func (c *Client) send(ctx context.Context, k call) (*http.Response, error) {
	base := k.addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u := base + k.path
	if len(k.query) > 0 {
		u += "?" + k.query.Encode()
	}
	wctx, wd := newWatchdog(ctx)
	req, err := http.NewRequestWithContext(wctx, k.method, u, k.body)
	if err != nil {
		wd.stop()
		return nil, c.errf(k.op, k.disk, k.shard, cairn.ErrInvalid, "%v", err)
	}
	if k.watch != nil {
		k.watch(wd)
	}
	switch {
	case k.limit > 0:
		wd.arm(k.limit, stall("did not finish the call", k.limit))
	case k.body == nil && k.answer > 0:
		wd.arm(k.answer, stall("did not answer", k.answer))
	case k.body != nil && k.idle > 0:
		wd.arm(k.idle, stall("took no byte", k.idle)) // until the body is first read
	}
	for h, v := range k.header {
		req.Header[h] = v
	}
	digest := emptySHA256
	if k.body != nil {
		digest = wire.UnsignedPayload // streamed: covered by the protocol's CRCs, not the signature
	}
	sign(req, &c.key, time.Now(), newNonce(), digest)
	if k.body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
		if k.length > 0 {
			req.ContentLength = k.length
		}
		// Streamed bodies cannot be rewound, but a request that failed on a
		// stale pooled connection before any of its body was read may be
		// retried as is: the transport calls GetBody only if it was read.
		req.GetBody = func() (io.ReadCloser, error) { return nil, errNoRewind }
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		wd.stop()
		if cerr := ctx.Err(); cerr != nil {
			return nil, &wire.Error{Op: k.op, Disk: k.disk, Shard: k.shard, Err: cerr}
		}
		if cause := wd.cause(); cause != nil {
			return nil, &wire.Error{Op: k.op, Disk: k.disk, Shard: k.shard, Err: fmt.Errorf("%s: %w", k.addr, cause)}
		}
		if op := (*net.OpError)(nil); c.unreachable != nil && errors.As(err, &op) && op.Op == "dial" {
			c.unreachable(k.disk, k.addr)
		}
		return nil, &wire.Error{Op: k.op, Disk: k.disk, Shard: k.shard, Err: fmt.Errorf("%w: %s: %w", cairn.ErrUnavailable, k.addr, err)}
	}
	if k.limit == 0 {
		wd.disarm() // the answer is here; the body is read under idle
	}
	resp.Body = &guardedBody{ReadCloser: resp.Body, wd: wd, idle: k.idle}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, responseError(k.op, k.disk, k.shard, resp)
	}
	return resp, nil
}

// errNoRewind: a streamed request body cannot be sent again.
var errNoRewind = errors.New("node: a streamed body cannot be sent twice")

// responseError decodes an error response (the body is read, up to 64 KiB).
// A body naming a disk and shard (a repair's culprit) overrides disk and
// shard.
func responseError(op string, disk cairn.DiskID, shard string, resp *http.Response) *wire.Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb wire.ErrorBody
	e := &wire.Error{Op: op, Disk: disk, Shard: shard, Status: resp.StatusCode}
	if json.Unmarshal(b, &eb) != nil || eb.Code == "" {
		e.Err = fmt.Errorf("%w: node answered %s without a protocol error body", wire.DecodeError("", resp.StatusCode), resp.Status)
		return e
	}
	if eb.Disk != "" {
		e.Disk, e.Shard = eb.Disk, eb.Shard
	}
	e.Code, e.Message = eb.Code, eb.Message
	e.Err = fmt.Errorf("%w: %s (%s)", wire.DecodeError(eb.Code, resp.StatusCode), eb.Message, eb.Code)
	return e
}

// crcReader counts and checksums a PUT body read through it, and arms the
// call's watchdog (if any) while the transport sends what it read: a
// node that takes no byte for idle, or answers not within header after
// the last byte, ends the call. Waits on the source (the data path
// making the next block) are not the node's and do not count.
type crcReader struct {
	r            io.Reader
	n            int64
	crc          uint32
	size         int64     // the declared length (> 0), which the transport reads to without an EOF
	wd           *watchdog // nil: none
	idle, header time.Duration
}

// sending arms the watchdog while the transport sends (idle), or after
// the last byte (header).
func (c *crcReader) sending(end bool) {
	switch {
	case c.wd == nil:
	case end:
		c.wd.arm(c.header, stall("did not answer", c.header))
	default:
		c.wd.arm(c.idle, stall("took no byte", c.idle))
	}
}

// waiting disarms the watchdog while the source is read.
func (c *crcReader) waiting() {
	if c.wd != nil {
		c.wd.disarm()
	}
}

func (c *crcReader) Read(p []byte) (int, error) {
	c.waiting()
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.sending(err == io.EOF || c.size > 0 && c.n >= c.size)
	return n, err
}

// WriteTo lets the transport's io.Copy write the source's own buffers to the
// connection when the source is an io.WriterTo, saving a copy per byte.
func (c *crcReader) WriteTo(w io.Writer) (int64, error) {
	c.waiting()
	n, err := io.Copy(crcWriter{w: w, c: c}, c.r)
	c.sending(err == nil)
	return n, err
}

type crcWriter struct {
	w io.Writer
	c *crcReader
}

func (cw crcWriter) Write(p []byte) (int, error) {
	cw.c.sending(false)
	n, err := cw.w.Write(p)
	cw.c.waiting()
	cw.c.n += int64(n)
	cw.c.crc = crc32.Update(cw.c.crc, castagnoli, p[:n])
	return n, err
}

// PutShard streams r to the node as shard name on disk and returns what
// the node stored once it is durable there. The reply's size and CRC are
// checked against what was sent (ErrCorrupt on mismatch). r is read to EOF
// (or until the call fails); it is never buffered whole.
//
// The file records no identity; PutShardIdentified writes one.
func (c *Client) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error) {
	return c.PutShardIdentified(ctx, disk, name, nil, r)
}

// PutShardIdentified is PutShard with the identity the file is to record
// before its footer: ident is a cairn.ShardIdentity.Encode naming the
// file (nil: none). The reply's Ident is the identity's length as stored:
// len(ident), or 0 from a node that predates identities.
func (c *Client) PutShardIdentified(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (wire.ShardInfo, error) {
	if err := cairn.ValidateShardName(name); err != nil {
		return wire.ShardInfo{}, &wire.Error{Op: "put", Disk: disk, Shard: name, Err: err}
	}
	if c.local != nil {
		if info, ok, err := c.local.localPut(ctx, disk, name, ident, r); ok {
			return info, err
		}
	}
	addr, err := c.resolveDisk(ctx, "put", disk, name)
	if err != nil {
		return wire.ShardInfo{}, err
	}
	return c.putShardAt(ctx, addr, disk, name, ident, r)
}

// putShardAt is PutShardIdentified to the node at addr.
func (c *Client) putShardAt(ctx context.Context, addr string, disk cairn.DiskID, name string, ident []byte, r io.Reader) (wire.ShardInfo, error) {
	if err := cairn.ValidateShardName(name); err != nil {
		return wire.ShardInfo{}, &wire.Error{Op: "put", Disk: disk, Shard: name, Err: err}
	}
	if len(ident) > cairn.MaxIdentityBytes {
		return wire.ShardInfo{}, c.errf("put", disk, name, cairn.ErrInvalid, "identity of %d bytes, more than %d", len(ident), cairn.MaxIdentityBytes)
	}
	cr := &crcReader{r: r, idle: c.t.Idle, header: c.t.Header}
	// A body with no Len is sent chunked; wrapping hides any Len, so the
	// transport never sets a wrong Content-Length. A reader that knows its
	// Size declares it, which lets the node write it in larger runs.
	k := call{op: "put", method: http.MethodPut, addr: addr, disk: disk, shard: name,
		path: wire.ShardPath(disk, name), body: io.NopCloser(cr), idle: c.t.Idle,
		watch: func(wd *watchdog) { cr.wd = wd }}
	if ident != nil {
		k.header = http.Header{wire.HeaderIdentity: {base64.StdEncoding.EncodeToString(ident)}}
	}
	if sz, ok := r.(interface{ Size() int64 }); ok {
		k.length = sz.Size()
		cr.size = k.length
	}
	resp, err := c.send(ctx, k)
	if err != nil {
		return wire.ShardInfo{}, err
	}
	defer resp.Body.Close()
	var pr wire.PutResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&pr); err != nil {
		return wire.ShardInfo{}, c.errf("put", disk, name, cairn.ErrUnavailable, "bad reply: %v", err)
	}
	if pr.Size != cr.n || pr.CRC != cr.crc {
		return wire.ShardInfo{}, c.errf("put", disk, name, cairn.ErrCorrupt,
			"node stored %d bytes with CRC %08x, sent %d with CRC %08x", pr.Size, pr.CRC, cr.n, cr.crc)
	}
	if pr.Ident != 0 && pr.Ident != len(ident) {
		return wire.ShardInfo{}, c.errf("put", disk, name, cairn.ErrCorrupt,
			"node stored an identity of %d bytes, sent %d", pr.Ident, len(ident))
	}
	return pr, nil
}

// GetShard returns a reader of n bytes of shard name from offset off
// (n < 0: to the end). The range must lie within the shard (ErrInvalid).
// The node checks every block's CRC before sending it; the reader returns
// the good bytes and then an error wrapping cairn.ErrCorrupt if the node
// found corruption (even mid-stream), or if the bytes received differ from
// what the node sent. It returns io.EOF only after the node confirmed the
// whole range. The caller must Close it; cancelling ctx stops the node's
// reading.
func (c *Client) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	if err := cairn.ValidateShardName(name); err != nil {
		return nil, &wire.Error{Op: "get", Disk: disk, Shard: name, Err: err}
	}
	if c.local != nil && off >= 0 {
		if rc, ok, err := c.local.localGet(ctx, disk, name, off, n); ok {
			return rc, err
		}
	}
	addr, err := c.resolveDisk(ctx, "get", disk, name)
	if err != nil {
		return nil, err
	}
	return c.getShardAt(ctx, addr, disk, name, off, n)
}

// getShardAt is GetShard from the node at addr.
func (c *Client) getShardAt(ctx context.Context, addr string, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	if err := cairn.ValidateShardName(name); err != nil {
		return nil, &wire.Error{Op: "get", Disk: disk, Shard: name, Err: err}
	}
	if off < 0 {
		return nil, c.errf("get", disk, name, cairn.ErrInvalid, "bad range offset %d length %d", off, n)
	}
	q := url.Values{"offset": {strconv.FormatInt(off, 10)}}
	if n >= 0 {
		q.Set("length", strconv.FormatInt(n, 10))
	}
	resp, err := c.send(ctx, call{op: "get", method: http.MethodGet, addr: addr, disk: disk, shard: name,
		path: wire.ShardPath(disk, name), query: q, answer: c.t.Header, idle: c.t.Idle})
	if err != nil {
		return nil, err
	}
	want, err := strconv.ParseInt(resp.Header.Get(wire.HeaderLength), 10, 64)
	if err != nil || want < 0 || (n >= 0 && want != n) {
		resp.Body.Close()
		return nil, c.errf("get", disk, name, cairn.ErrUnavailable, "node sent a bad %s %q", wire.HeaderLength, resp.Header.Get(wire.HeaderLength))
	}
	sr := &shardReader{ctx: ctx, op: &wire.Error{Op: "get", Disk: disk, Shard: name}, resp: resp, want: want}
	if hs, hc := resp.Header.Get(wire.HeaderSize), resp.Header.Get(wire.HeaderCRC); hs != "" || hc != "" {
		size, serr := strconv.ParseInt(hs, 10, 64)
		crc, cerr := wire.ParseCRC(hc)
		if serr != nil || cerr != nil || size < 0 {
			resp.Body.Close()
			return nil, c.errf("get", disk, name, cairn.ErrUnavailable, "node sent a bad footer: %s %q, %s %q", wire.HeaderSize, hs, wire.HeaderCRC, hc)
		}
		sr.size, sr.footerCRC, sr.footer = size, crc, true
	}
	return sr, nil
}

// shardReader checks a GET body against its header and trailers.
type shardReader struct {
	ctx  context.Context
	op   *wire.Error // template for errors
	resp *http.Response
	want int64
	got  int64
	crc  uint32
	err  error // sticky
	// The shard's footer as the node's headers give it (footer: they did).
	size      int64
	footerCRC uint32
	footer    bool
}

// Footer returns the whole shard's content size and CRC-32C from the
// file's footer (headers X-Cairn-Size, X-Cairn-Crc32c), available before
// the first byte is read: a ranged reader can check that the file is the
// shard its manifest names (docs/design/node-protocol.md). ok is false if
// the node sent no footer.
func (r *shardReader) Footer() (size int64, crc uint32, ok bool) {
	return r.size, r.footerCRC, r.footer
}

func (r *shardReader) fail(sentinel error, format string, args ...any) error {
	e := *r.op
	e.Status = r.resp.StatusCode
	e.Err = fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
	return &e
}

func (r *shardReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.resp.Body.Read(p)
	r.got += int64(n)
	r.crc = crc32.Update(r.crc, castagnoli, p[:n])
	if r.got > r.want {
		r.err = r.fail(cairn.ErrUnavailable, "node sent more than the %d bytes it announced", r.want)
		return n, r.err
	}
	switch {
	case err == io.EOF:
		r.err = r.finish()
	case err != nil:
		if cerr := r.ctx.Err(); cerr != nil {
			e := *r.op
			e.Err = cerr
			r.err = &e
		} else {
			r.err = r.fail(cairn.ErrUnavailable, "transfer broke after %d of %d bytes: %v", r.got, r.want, err)
		}
	}
	if r.err != nil && r.err != io.EOF {
		return n, r.err
	}
	return n, err
}

// finish judges the trailers once the body ended.
func (r *shardReader) finish() error {
	tr := r.resp.Trailer
	switch st := tr.Get(wire.TrailerStatus); st {
	case wire.StatusOK:
	case "":
		return r.fail(cairn.ErrUnavailable, "body ended after %d of %d bytes without a status trailer", r.got, r.want)
	default:
		e := *r.op
		e.Status, e.Code = r.resp.StatusCode, st
		e.Message = fmt.Sprintf("node stopped after %d of %d bytes: %s", r.got, r.want, tr.Get(wire.TrailerError))
		e.Err = fmt.Errorf("%w: %s (%s)", wire.DecodeError(st, 0), e.Message, st)
		return &e
	}
	if r.got != r.want {
		return r.fail(cairn.ErrUnavailable, "node confirmed %d bytes, announced %d", r.got, r.want)
	}
	sent, err := wire.ParseCRC(tr.Get(wire.TrailerBodyCRC))
	if err != nil {
		return r.fail(cairn.ErrUnavailable, "bad %s trailer: %v", wire.TrailerBodyCRC, err)
	}
	if sent != r.crc {
		return r.fail(cairn.ErrCorrupt, "received bytes have CRC %08x, node sent %08x", r.crc, sent)
	}
	return io.EOF
}

// Close releases the connection (closing it if the body was not read to
// the end, which stops the node's reading).
func (r *shardReader) Close() error {
	if r.err == nil {
		r.err = errors.New("node: reader closed")
	}
	return r.resp.Body.Close()
}

// DeleteShard removes shard name from disk. ErrNotFound if it is not there.
func (c *Client) DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error {
	if err := cairn.ValidateShardName(name); err != nil {
		return &wire.Error{Op: "delete", Disk: disk, Shard: name, Err: err}
	}
	addr, err := c.resolveDisk(ctx, "delete", disk, name)
	if err != nil {
		return err
	}
	return c.deleteShardAt(ctx, addr, disk, name)
}

// deleteShardAt is DeleteShard on the node at addr.
func (c *Client) deleteShardAt(ctx context.Context, addr string, disk cairn.DiskID, name string) error {
	if err := cairn.ValidateShardName(name); err != nil {
		return &wire.Error{Op: "delete", Disk: disk, Shard: name, Err: err}
	}
	resp, err := c.send(ctx, call{op: "delete", method: http.MethodDelete, addr: addr, disk: disk, shard: name,
		path: wire.ShardPath(disk, name), limit: c.t.Call})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// ListShards returns up to limit shards of disk whose names sort after
// after, in name order, and whether more follow (limit <= 0: the node's
// default page, 1000).
func (c *Client) ListShards(ctx context.Context, disk cairn.DiskID, after string, limit int) ([]wire.ShardStat, bool, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var lr wire.ListResponse
	if err := c.getJSON(ctx, "list", disk, wire.DiskPath(disk)+"/shards", q, &lr); err != nil {
		return nil, false, err
	}
	return lr.Shards, lr.More, nil
}

// ListIdentities is ListShards with each file's footer and identity
// (wire.ShardStat): for rebuilding the metadata from disks. The node
// reads every listed file's footer and identity, so a page costs a small
// read per file.
func (c *Client) ListIdentities(ctx context.Context, disk cairn.DiskID, after string, limit int) ([]wire.ShardStat, bool, error) {
	q := url.Values{"identity": {"1"}}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var lr wire.ListResponse
	if err := c.getJSON(ctx, "list", disk, wire.DiskPath(disk)+"/shards", q, &lr); err != nil {
		return nil, false, err
	}
	return lr.Shards, lr.More, nil
}

// DiskStat returns a disk's capacity and free space.
func (c *Client) DiskStat(ctx context.Context, disk cairn.DiskID) (wire.DiskStat, error) {
	var st wire.DiskStat
	err := c.getJSON(ctx, "stat", disk, wire.DiskPath(disk), nil, &st)
	return st, err
}

func (c *Client) getJSON(ctx context.Context, op string, disk cairn.DiskID, path string, q url.Values, v any) error {
	resp, err := c.request(ctx, op, http.MethodGet, disk, "", path, q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return c.errf(op, disk, "", cairn.ErrUnavailable, "bad reply: %v", err)
	}
	return nil
}
