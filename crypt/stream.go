package crypt

import (
	"fmt"
	"io"

	"cairn"
)

const (
	segPlain  = cairn.SegmentSize
	segCipher = cairn.SegmentSize + cairn.SegmentOverhead
)

// Encrypter is an io.Reader of the ciphertext of the plaintext it reads
// (NewEncrypter). It reads one segment (and one byte more, to know whether
// the segment is the last) ahead of what it returns.
type Encrypter struct {
	c     *StreamCipher
	r     io.Reader
	plain []byte // held plaintext: up to a segment and the next one's first byte
	out   []byte // sealed bytes not yet returned
	buf   []byte // out's backing array
	next  int64  // index of the next segment to seal
	done  bool   // the final segment is sealed
	err   error  // sticky read error
}

// NewEncrypter returns a reader of the ciphertext of r's bytes under c.
// r's io.EOF ends the stream (the final segment); any other error of r is
// returned as is, and the Encrypter stays broken.
func NewEncrypter(c *StreamCipher, r io.Reader) *Encrypter {
	return &Encrypter{c: c, r: r, plain: make([]byte, 0, segPlain+1), buf: make([]byte, 0, segCipher)}
}

// Read implements io.Reader.
func (e *Encrypter) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		if e.done {
			return 0, io.EOF
		}
		e.sealNext()
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// sealNext fills the held plaintext to a segment and one byte, and seals a
// segment: a full one if a byte follows it, else the final one.
func (e *Encrypter) sealNext() {
	eof := false
	for len(e.plain) < segPlain+1 {
		n, err := e.r.Read(e.plain[len(e.plain) : segPlain+1])
		e.plain = e.plain[:len(e.plain)+n]
		if err == io.EOF {
			eof = true
			break
		}
		if err != nil {
			e.err = err
			return
		}
	}
	if !eof || len(e.plain) > segPlain {
		e.out = e.c.SealSegment(e.buf[:0], e.plain[:segPlain], e.next, false)
		e.plain[0] = e.plain[segPlain]
		e.plain = e.plain[:1]
		e.next++
		return
	}
	e.out = e.c.SealSegment(e.buf[:0], e.plain, e.next, true)
	e.plain = e.plain[:0]
	e.done = true
}

// CipherRange is where a plaintext range [Off, End) of a stream lives in
// its ciphertext (Range).
type CipherRange struct {
	Off, End         int64 // the plaintext range
	First            int64 // index of the first segment it touches
	CipherOff        int64 // ciphertext offset of segment First
	CipherEnd        int64 // ciphertext end of the last segment it touches
	Skip             int64 // plaintext bytes of segment First before Off
	Segments, Length int64 // segments of the stream; plaintext bytes of the range
}

// Range maps the plaintext range [off, end) of a stream of size plaintext
// bytes (0 ≤ off ≤ end ≤ size) to the whole segments that hold it. An
// empty range maps to an empty ciphertext range.
func Range(off, end, size int64) (CipherRange, error) {
	if off < 0 || end < off || end > size {
		return CipherRange{}, fmt.Errorf("%w: range [%d, %d) of a %d-byte stream", cairn.ErrInvalid, off, end, size)
	}
	r := CipherRange{Off: off, End: end, Segments: cairn.Segments(size), Length: end - off}
	if off == end {
		r.First = off / segPlain
		r.CipherOff = min(r.First*segCipher, cairn.EncryptedSize(size))
		r.CipherEnd = r.CipherOff
		return r, nil
	}
	last := (end - 1) / segPlain
	r.First = off / segPlain
	r.CipherOff = r.First * segCipher
	r.CipherEnd = min((last+1)*segCipher, cairn.EncryptedSize(size))
	r.Skip = off - r.First*segPlain
	return r, nil
}

// Decrypter is an io.Reader of a plaintext range, decrypted from the
// ciphertext of the segments that hold it (NewDecrypter).
type Decrypter struct {
	c    *StreamCipher
	r    io.Reader
	rg   CipherRange
	seg  int64  // next segment to open
	left int64  // plaintext bytes still to return
	skip int64  // plaintext bytes of the next segment to drop
	ct   []byte // one segment's ciphertext
	pt   []byte // opened plaintext's backing array
	out  []byte // plaintext not yet returned
	err  error  // sticky
}

// NewDecrypter returns a reader of the plaintext range rg (from Range)
// that reads ciphertext from r, starting at rg.CipherOff, until
// rg.CipherEnd. A segment that fails its tag is ErrAuthentication; r
// ending early wraps cairn.ErrCorrupt; r's other errors come through as
// they are. Nothing of a segment is returned before the whole segment
// authenticates.
func NewDecrypter(c *StreamCipher, r io.Reader, rg CipherRange) *Decrypter {
	return &Decrypter{c: c, r: r, rg: rg, seg: rg.First, left: rg.Length, skip: rg.Skip,
		ct: make([]byte, segCipher), pt: make([]byte, 0, segPlain)}
}

// Read implements io.Reader.
func (d *Decrypter) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		if d.left == 0 {
			return 0, io.EOF
		}
		d.err = d.openNext()
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

// Peek opens the next segment without returning its bytes yet (Read
// returns them), so a caller can tell whether the ciphertext it reads
// authenticates. It returns Read's error for that segment; nil at the end
// of the range.
func (d *Decrypter) Peek() error {
	if len(d.out) == 0 && d.err == nil && d.left > 0 {
		d.err = d.openNext()
	}
	return d.err
}

// Remaining returns the part of the range not yet returned, from the
// segment the Decrypter reads next (the one that failed, after an error),
// for reading it again from elsewhere. Bytes already read but not yet
// returned by Read are counted as returned.
func (d *Decrypter) Remaining() CipherRange {
	r := d.rg
	r.First, r.CipherOff, r.Skip, r.Length = d.seg, d.seg*segCipher, d.skip, d.left
	r.Off = r.End - d.left
	return r
}

// openNext reads and opens the next segment into out (trimmed to the range).
func (d *Decrypter) openNext() error {
	final := d.seg == d.rg.Segments-1
	n := int64(segCipher)
	if final {
		n = d.rg.CipherEnd - d.seg*segCipher // the stream's last segment: the range ends with it
	}
	ct := d.ct[:n]
	if _, err := io.ReadFull(d.r, ct); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%w: segment %d: %w", cairn.ErrCorrupt, d.seg, errShort)
		}
		return err
	}
	pt, err := d.c.OpenSegment(d.pt[:0], ct, d.seg, final)
	if err != nil {
		return err
	}
	pt = pt[d.skip:]
	d.skip = 0
	if int64(len(pt)) > d.left {
		pt = pt[:d.left]
	}
	d.left -= int64(len(pt))
	d.out = pt
	d.seg++
	return nil
}
