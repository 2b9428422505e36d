package s3

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"cairn"
)

// memShards is an in-memory shard store with fault injection, copied from
// package client's test fakes (the node protocol has its own tests).
type memShards struct {
	mu       sync.Mutex
	files    map[string][]byte      // disk + "/" + name
	failPut  map[cairn.DiskID]error // PutShard fails on these disks
	failGet  map[cairn.DiskID]error // GetShard fails on these disks
	slow     map[cairn.DiskID]time.Duration
	gets     map[cairn.DiskID]int // GetShard calls per disk
	putBytes int64
}

func newMemShards() *memShards {
	return &memShards{files: map[string][]byte{}, failPut: map[cairn.DiskID]error{}, failGet: map[cairn.DiskID]error{},
		slow: map[cairn.DiskID]time.Duration{}, gets: map[cairn.DiskID]int{}}
}

func (s *memShards) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (int64, uint32, error) {
	s.mu.Lock()
	ferr := s.failPut[disk]
	s.mu.Unlock()
	if ferr != nil {
		io.Copy(io.Discard, io.LimitReader(r, 1)) // fail after the first byte arrives
		return 0, 0, ferr
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[string(disk)+"/"+name] = buf.Bytes()
	s.putBytes += int64(buf.Len())
	return int64(buf.Len()), crc32.Checksum(buf.Bytes(), crc32.MakeTable(crc32.Castagnoli)), nil
}

func (s *memShards) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	s.mu.Lock()
	s.gets[disk]++
	ferr, delay := s.failGet[disk], s.slow[disk]
	b, ok := s.files[string(disk)+"/"+name]
	s.mu.Unlock()
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

func (s *memShards) DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := string(disk) + "/" + name
	if _, ok := s.files[k]; !ok {
		return cairn.ErrNotFound
	}
	delete(s.files, k)
	return nil
}

func (s *memShards) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.files)
}
