package coldtier

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
)

// Stream returns n bytes drawn from seed, generated as they are read: an
// object of any size is written and checked without holding it in memory.
// It seeks (the S3 SDK rewinds a body after hashing it): back to a lower
// offset by drawing the bytes again from the start, so rewinding to 0 is
// cheap and seeking far forward costs the bytes skipped.
func Stream(seed uint64, n int64) io.ReadSeeker {
	s := &stream{seed: seed, n: n}
	s.reset()
	return s
}

type stream struct {
	seed   uint64
	n, pos int64
	gen    *rand.ChaCha8
}

func (s *stream) reset() {
	var k [32]byte
	for i := range 8 {
		k[i] = byte(s.seed >> (8 * i))
	}
	s.gen, s.pos = rand.NewChaCha8(k), 0
}

func (s *stream) Read(p []byte) (int, error) {
	if s.pos >= s.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), s.n-s.pos)]
	n, err := s.gen.Read(p)
	s.pos += int64(n)
	return n, err
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
	if off < s.pos {
		s.reset()
	}
	if _, err := io.CopyN(io.Discard, s, off-s.pos); err != nil {
		return s.pos, err
	}
	return s.pos, nil
}

// Sum returns the SHA-256 of bytes [off, off+n) of Stream(seed, size).
func Sum(seed uint64, size, off, n int64) [32]byte {
	r := Stream(seed, size)
	h := sha256.New()
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		panic(err) // a caller's bug: the range is outside the stream
	}
	if _, err := io.CopyN(h, r, n); err != nil {
		panic(err)
	}
	return [32]byte(h.Sum(nil))
}
