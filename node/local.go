package node

import (
	"context"
	"fmt"
	"io"
	"sync"

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
func (c *Client) WithLocal(h *Handler) *Client {
	cc := *c
	cc.local = h
	return &cc
}

// localPut stores a shard on a disk h serves, as the node's PUT does (the
// same size limit, the volume's durable write with its read-back); ok is
// false when h does not serve disk.
func (h *Handler) localPut(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (info wire.ShardInfo, ok bool, err error) {
	v := h.vol(disk)
	if v == nil {
		return wire.ShardInfo{}, false, nil
	}
	if len(ident) > cairn.MaxIdentityBytes {
		return wire.ShardInfo{}, true, &wire.Error{Op: "put", Disk: disk, Shard: name,
			Err: fmt.Errorf("%w: identity of %d bytes, more than %d", cairn.ErrInvalid, len(ident), cairn.MaxIdentityBytes)}
	}
	h.active.Add(1)
	defer h.active.Add(-1)
	size := int64(-1)
	if sz, ok := r.(interface{ Size() int64 }); ok {
		size = sz.Size()
	}
	if size > h.maxSize {
		return wire.ShardInfo{}, true, &wire.Error{Op: "put", Disk: disk, Shard: name,
			Err: fmt.Errorf("%w: shard of %d bytes is larger than %d", cairn.ErrInvalid, size, h.maxSize)}
	}
	vi, err := v.PutIdentified(ctx, name, ident, &bodyReader{r: r, max: h.maxSize, left: h.maxSize, size: size})
	if err != nil {
		return wire.ShardInfo{}, true, &wire.Error{Op: "put", Disk: disk, Shard: name, Err: err}
	}
	return wire.ShardInfo{Size: vi.Size, CRC: vi.CRC, Ident: vi.Ident}, true, nil
}

// localGet opens a shard of a disk h serves; ok is false when h does not
// serve disk.
func (h *Handler) localGet(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (rc io.ReadCloser, ok bool, err error) {
	v := h.vol(disk)
	if v == nil {
		return nil, false, nil
	}
	h.active.Add(1)
	rr, err := v.NewReader(ctx, name, off, n)
	if err != nil {
		h.active.Add(-1)
		return nil, true, &wire.Error{Op: "get", Disk: disk, Shard: name, Err: err}
	}
	rr.ReadAhead(getReadRun)
	return &localShard{h: h, rr: rr, op: wire.Error{Op: "get", Disk: disk, Shard: name}}, true, nil
}

// localShard is a shard read from a volume of this process.
type localShard struct {
	h    *Handler
	rr   *volume.Reader
	op   wire.Error // template for errors
	once sync.Once
}

func (s *localShard) Read(p []byte) (int, error) {
	k, err := s.rr.Read(p)
	if err != nil && err != io.EOF {
		e := s.op
		e.Err = err
		return k, &e
	}
	return k, err
}

// Footer implements the data path's check of a shard against its
// manifest entry: the whole content's size and CRC-32C from the file.
func (s *localShard) Footer() (size int64, crc uint32, ok bool) {
	return s.rr.Size(), s.rr.CRC(), true
}

func (s *localShard) Close() error {
	err := s.rr.Close()
	s.once.Do(func() { s.h.active.Add(-1) })
	return err
}
