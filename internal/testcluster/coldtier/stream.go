package coldtier

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
)

// streamBlock is the unit Stream draws its bytes in: block b of a stream
// comes from a generator seeded with the stream's seed and b, so a seek
// costs at most one block.
const streamBlock = 64 << 10

// Stream returns n bytes drawn from seed, generated as they are read: an
// object of any size is written and checked without holding it in memory.
// It seeks (the S3 SDK rewinds a body after hashing it; a range is checked
// by seeking to its start).
func Stream(seed uint64, n int64) io.ReadSeeker {
	return &stream{seed: seed, n: n, block: -1}
}

type stream struct {
	seed   uint64
	n, pos int64
	block  int64 // the block in buf (-1: none)
	buf    [streamBlock]byte
}

func (s *stream) Read(p []byte) (int, error) {
	if s.pos >= s.n {
		return 0, io.EOF
	}
	if b := s.pos / streamBlock; b != s.block {
		var k [32]byte
		binary.LittleEndian.PutUint64(k[:], s.seed)
		binary.LittleEndian.PutUint64(k[8:], uint64(b))
		g := rand.NewChaCha8(k)
		g.Read(s.buf[:])
		s.block = b
	}
	off := s.pos % streamBlock
	n := copy(p[:min(int64(len(p)), s.n-s.pos)], s.buf[off:])
	s.pos += int64(n)
	return n, nil
}

var errSeek = errors.New("coldtier: seek out of range")

func (s *stream) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += s.pos
	case io.SeekEnd:
		off += s.n
	}
	if off < 0 || off > s.n {
		return s.pos, fmt.Errorf("%w: %d of %d bytes", errSeek, off, s.n)
	}
	s.pos = off
	return off, nil
}

// Sum returns the SHA-256 of bytes [off, off+n) of Stream(seed, size).
func Sum(seed uint64, size, off, n int64) [32]byte {
	r := Stream(seed, size)
	h := sha256.New()
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		panic(err) // a caller's bug: the range is outside the stream
	}
	if _, err := io.CopyN(h, r, n); err != nil {
		panic(err) // likewise
	}
	return [32]byte(h.Sum(nil))
}
