package node

import (
	"context"
	"io"
	"sync"

	"cairn"
	"cairn/node/volume"
	"cairn/node/wire"
)

// WithLocal returns a copy of c that reads the shards of the disks h
// serves straight from their volumes, in this process, instead of over
// the node protocol: for a gateway and a node in one process (cairn
// server), where the loopback HTTP hop — a socket write on the node's
// side, a read on the client's, a CRC of the body on each — cost about
// half the CPU of a GET (docs/benchmarks.md, "GET CPU per byte"). The
// bytes are the same: the volume's Reader checks every block's CRC as
// the node's GET does, and the reader has the shard's footer (Footer), so
// the data path checks the file against its manifest as before. The read
// counts as a request the handler is serving (Handler.Busy), so scrub
// still yields to it. Only reads go this way: writes and deletes keep the
// node protocol, whose handler does their bookkeeping. A disk h does not
// serve (any more) is read over the network as usual.
func (c *Client) WithLocal(h *Handler) *Client {
	cc := *c
	cc.local = h
	return &cc
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
