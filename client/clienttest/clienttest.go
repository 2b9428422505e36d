// Package clienttest has a working in-memory fake of client.Shards with
// fault injection, for tests of the data path and of what sits on it (the
// S3 gateway). The node protocol below it has its own tests.
package clienttest

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"cairn"
	"cairn/node/wire"
)

// MemShards is an in-memory shard store. Tests inject faults by setting
// the maps under Mu.
type MemShards struct {
	Mu      sync.Mutex
	Files   map[string][]byte              // disk + "/" + name
	Idents  map[string][]byte              // disk + "/" + name: the identity a file records, if any
	FailPut map[cairn.DiskID]error         // PutShard fails on these disks
	FailGet map[cairn.DiskID]error         // GetShard fails on these disks
	Slow    map[cairn.DiskID]time.Duration // GetShard waits this long before answering
	// SlowPut makes PutShard take this long per 64 KiB of body it reads
	// on a disk (a slow disk that still makes progress).
	SlowPut  map[cairn.DiskID]time.Duration
	Gets     map[cairn.DiskID]int // GetShard calls per disk
	Puts     map[cairn.DiskID]int // PutShard calls per disk
	PutBytes int64
}

// Set runs fn with Mu held, for injecting faults while requests may be in
// flight (e.g. s.Set(func() { s.FailGet[d] = err })).
func (s *MemShards) Set(fn func()) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	fn()
}

// NewMemShards returns an empty store with no faults.
func NewMemShards() *MemShards {
	return &MemShards{Files: map[string][]byte{}, Idents: map[string][]byte{}, FailPut: map[cairn.DiskID]error{}, FailGet: map[cairn.DiskID]error{},
		Slow: map[cairn.DiskID]time.Duration{}, SlowPut: map[cairn.DiskID]time.Duration{}, Gets: map[cairn.DiskID]int{}, Puts: map[cairn.DiskID]int{}}
}

// PutShard implements client.Shards.
func (s *MemShards) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error) {
	return s.PutShardIdentified(ctx, disk, name, nil, r)
}

// PutShardIdentified implements client.IdentifiedPutter: the file records
// ident (checked as a volume checks it), which Idents keeps.
func (s *MemShards) PutShardIdentified(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (wire.ShardInfo, error) {
	if ident != nil {
		id, err := cairn.DecodeIdentity(ident)
		if err != nil {
			return wire.ShardInfo{}, fmt.Errorf("%w: %w", cairn.ErrInvalid, err)
		}
		if id.Name() != name {
			return wire.ShardInfo{}, fmt.Errorf("%w: identity of %s sent for %s", cairn.ErrInvalid, id.Name(), name)
		}
	}
	s.Mu.Lock()
	ferr, slow := s.FailPut[disk], s.SlowPut[disk]
	s.Puts[disk]++
	s.Mu.Unlock()
	if ferr != nil {
		io.Copy(io.Discard, io.LimitReader(r, 1)) // fail after the first byte arrives
		return wire.ShardInfo{}, ferr
	}
	var buf bytes.Buffer
	for {
		n, err := io.Copy(&buf, io.LimitReader(r, 64<<10))
		if err != nil {
			return wire.ShardInfo{}, err
		}
		if n == 0 {
			break
		}
		if slow > 0 {
			select {
			case <-time.After(slow):
			case <-ctx.Done():
				return wire.ShardInfo{}, ctx.Err()
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return wire.ShardInfo{}, err
	}
	s.Mu.Lock()
	defer s.Mu.Unlock()
	s.Files[string(disk)+"/"+name] = buf.Bytes()
	delete(s.Idents, string(disk)+"/"+name)
	if ident != nil {
		s.Idents[string(disk)+"/"+name] = bytes.Clone(ident)
	}
	s.PutBytes += int64(buf.Len())
	return wire.ShardInfo{Size: int64(buf.Len()), CRC: crc32.Checksum(buf.Bytes(), crc32.MakeTable(crc32.Castagnoli)), Ident: len(ident)}, nil
}

// GetShard implements client.Shards.
func (s *MemShards) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	s.Mu.Lock()
	s.Gets[disk]++
	ferr, delay := s.FailGet[disk], s.Slow[disk]
	b, ok := s.Files[string(disk)+"/"+name]
	s.Mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if ferr != nil {
		return nil, ferr
	}
	if !ok {
		return nil, fmt.Errorf("shard %s on %s: %w", name, disk, cairn.ErrNotFound)
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	end := int64(len(b))
	if n >= 0 && off+n < end {
		end = off + n
	}
	return io.NopCloser(bytes.NewReader(b[off:end])), nil
}

// DeleteShard implements client.Shards.
func (s *MemShards) DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	k := string(disk) + "/" + name
	if _, ok := s.Files[k]; !ok {
		return cairn.ErrNotFound
	}
	delete(s.Files, k)
	delete(s.Idents, k)
	return nil
}

// Count returns the number of shard files stored.
func (s *MemShards) Count() int {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return len(s.Files)
}
