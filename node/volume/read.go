package volume

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"cairn"
	"cairn/internal/vfs"
)

// Reader streams a byte range of a shard, reading only the blocks the
// range touches and checking each block's CRC before returning any of its
// bytes. A block that fails yields an *Error wrapping cairn.ErrCorrupt
// that names the shard and block; bytes of earlier blocks have been
// returned and are good. Read checks ctx before each block. Not safe for
// concurrent use; Close releases the file.
type Reader struct {
	v    *Volume
	ctx  context.Context
	f    vfs.File
	name string
	size int64  // content length
	crc  uint32 // whole-content CRC from the footer
	// ident is the length of the identity before the footer (0: none).
	ident int64
	// mod is the file's modification time when it was opened: when the
	// shard was written (a rename keeps it).
	mod time.Time
	off int64  // next content offset to return
	end int64  // end of the range
	buf []byte // block buffer (blockBuf)
	bp  *[]byte
	cur []byte // verified bytes of the current block not yet returned
	err error  // sticky

	// Read-ahead (ReadAhead): blocks fetched in runs of up to run blocks
	// per disk request into rbuf; rfirst is the first block held there
	// and rn how many are complete. Each block's CRC is still checked
	// when the block is served.
	run    int64
	rbuf   []byte
	rp     *[]byte
	rfirst int64
	rn     int64
}

// ReadAhead makes the reader fetch up to n bytes of whole blocks (rounded
// up to blocks, never past the range) in each disk request, instead of one
// block per request. A sequential reader sharing a spinning disk with
// other streams then pays one head movement per n bytes rather than per
// block; the cost is a buffer of n bytes while the reader is open. Call it
// before the first Read; n ≤ BlockSize keeps the default.
func (r *Reader) ReadAhead(n int64) {
	r.run = (n + BlockSize - 1) / BlockSize
}

// NewReader opens name for reading n bytes from offset off (n = -1: to the
// end). The range must lie within the content. The footer is checked
// here; blocks are checked as they are read. Errors: cairn.ErrInvalid (name
// or range), cairn.ErrNotFound, cairn.ErrCorrupt (footer), I/O.
func (v *Volume) NewReader(ctx context.Context, name string, off, n int64) (*Reader, error) {
	r, err := v.openReader(ctx, "get", name)
	if err != nil {
		return nil, err
	}
	if n == -1 && off >= 0 && off <= r.size {
		n = r.size - off
	}
	if off < 0 || n < 0 || off > r.size || n > r.size-off {
		r.Close()
		return nil, v.err("get", name, fmt.Errorf("%w: range offset %d length %d outside the shard's %d bytes",
			cairn.ErrInvalid, off, n, r.size))
	}
	r.off, r.end = off, off+n
	return r, nil
}

func (v *Volume) openReader(ctx context.Context, op, name string) (*Reader, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := v.check(false); err != nil {
		return nil, v.err(op, name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, v.err(op, name, err)
	}
	f, err := v.fs.Open(v.shardPath(name))
	if err != nil {
		return nil, v.err(op, name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, v.err(op, name, err)
	}
	fb := make([]byte, footerSize)
	if fi.Size() < footerSize {
		f.Close()
		return nil, v.corrupt(op, name, -1, "file is %d bytes, shorter than a footer", fi.Size())
	}
	if _, err := f.ReadAt(fb, fi.Size()-footerSize); err != nil {
		f.Close()
		return nil, v.err(op, name, err)
	}
	ft, err := decodeFooter(fb, fi.Size())
	if err != nil {
		f.Close()
		return nil, v.corrupt(op, name, -1, "%v", err)
	}
	r := &Reader{v: v, ctx: ctx, f: f, name: name, size: int64(ft.Length), crc: ft.CRC, ident: ft.identLen(), mod: fi.ModTime()}
	r.end = r.size
	return r, nil
}

// Identity returns the identity the shard records (checked: its CRC,
// and that it names this file; cairn.ErrCorrupt otherwise); ok is false
// for a file without one (format 1).
func (r *Reader) Identity() (id cairn.ShardIdentity, ok bool, err error) {
	if r.ident == 0 {
		return id, false, nil
	}
	id, err = r.identity("identity")
	return id, err == nil, err
}

// IdentLen is the length of the identity the file records (0: none).
func (r *Reader) IdentLen() int { return int(r.ident) }

// ModTime is when the shard file was last written (its modification
// time when the reader opened it).
func (r *Reader) ModTime() time.Time { return r.mod }

// Size is the shard's content length.
func (r *Reader) Size() int64 { return r.size }

// CRC is the CRC-32C of the shard's whole content, from its footer.
func (r *Reader) CRC() uint32 { return r.crc }

// Remaining is the number of bytes of the range not yet returned.
func (r *Reader) Remaining() int64 { return r.end - r.off + int64(len(r.cur)) }

// Buffered is the number of verified bytes the next Read returns without
// touching the disk.
func (r *Reader) Buffered() int { return len(r.cur) }

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.off >= r.end {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = err
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// next loads and checks the block holding r.off and points r.cur at the
// part of it inside the range.
func (r *Reader) next() error {
	if err := r.ctx.Err(); err != nil {
		return r.v.err("get", r.name, err)
	}
	if r.buf == nil {
		r.bp = blockBuf()
		r.buf = *r.bp
	}
	b := r.off / BlockSize
	data, err := r.block(b)
	if err != nil {
		return err
	}
	lo := r.off - b*BlockSize
	hi := min(int64(len(data)), r.end-b*BlockSize)
	r.cur = data[lo:hi]
	r.off = b*BlockSize + hi
	return nil
}

// block reads and checks block b, returning its data (aliasing r.buf or
// the read-ahead buffer).
func (r *Reader) block(b int64) ([]byte, error) {
	dlen := min(BlockSize, r.size-b*BlockSize)
	var raw []byte
	if r.run > 1 {
		var err error
		if raw, err = r.ahead(b); err != nil {
			return nil, err
		}
	} else {
		raw = r.buf[:dlen+crcSize]
		if err := r.readRaw(raw, b); err != nil {
			return nil, err
		}
	}
	data := raw[:dlen]
	want := binary.LittleEndian.Uint32(raw[dlen:])
	if got := crc32.Checksum(data, castagnoli); got != want {
		return nil, r.v.corrupt("get", r.name, b, "block CRC %08x, stored %08x", got, want)
	}
	return data, nil
}

// readRaw fills raw with the stored bytes from the start of block b on.
func (r *Reader) readRaw(raw []byte, b int64) error {
	n, err := r.f.ReadAt(raw, b*(BlockSize+crcSize))
	if n < len(raw) {
		if err == nil || err == io.EOF {
			return r.v.corrupt("get", r.name, b, "short read: %d of %d bytes", n, len(raw))
		}
		return r.v.err("get", r.name, err)
	}
	return nil
}

// ahead returns block b's stored bytes (data and CRC) from the read-ahead
// buffer, first loading a run of blocks starting at b if b is not there.
// A run ends at the range's last block. A file that ends early yields the
// complete blocks before the gap; the block at the gap then fails as a
// short read, like a one-block read would.
func (r *Reader) ahead(b int64) ([]byte, error) {
	if b < r.rfirst || b >= r.rfirst+r.rn {
		last := (max(r.end, r.off+1) - 1) / BlockSize // the range's last block
		count := max(1, min(r.run, last-b+1))
		tail := min(BlockSize, r.size-(b+count-1)*BlockSize) // data in the run's last block
		want := (count-1)*(BlockSize+crcSize) + tail + crcSize
		if r.rbuf == nil {
			// The first run is the longest: size the buffer for it, in a
			// power of two of blocks, so a small range holds little.
			blocks := int64(1)
			for blocks < count {
				blocks *= 2
			}
			size := int(blocks * (BlockSize + crcSize))
			r.rp = bufs.Get(size, size)
			r.rbuf = *r.rp
		}
		raw := r.rbuf[:want]
		n, err := r.f.ReadAt(raw, b*(BlockSize+crcSize))
		r.rfirst, r.rn = b, 0
		switch {
		case int64(n) == want:
			r.rn = count
		case err == nil || err == io.EOF:
			r.rn = int64(n) / (BlockSize + crcSize)
			if r.rn == 0 {
				return nil, r.v.corrupt("get", r.name, b, "short read: %d of %d bytes", n, min(BlockSize, r.size-b*BlockSize)+crcSize)
			}
		default:
			return nil, r.v.err("get", r.name, err)
		}
	}
	at := (b - r.rfirst) * (BlockSize + crcSize)
	dlen := min(BlockSize, r.size-b*BlockSize)
	return r.rbuf[at : at+dlen+crcSize], nil
}

// verifyAll reads every block of the shard and returns the content CRC.
func (r *Reader) verifyAll() (uint32, error) {
	if r.buf == nil {
		r.bp = blockBuf()
		r.buf = *r.bp
		defer func() { bufs.Put(r.bp); r.buf, r.bp = nil, nil }()
	}
	var whole uint32
	for b := int64(0); b*BlockSize < r.size; b++ {
		if err := r.ctx.Err(); err != nil {
			return 0, r.v.err("verify", r.name, err)
		}
		data, err := r.block(b)
		if err != nil {
			return 0, err
		}
		whole = crc32.Update(whole, castagnoli, data)
	}
	return whole, nil
}

// Close releases the file and buffer. It is idempotent.
func (r *Reader) Close() error {
	if r.bp != nil {
		bufs.Put(r.bp)
		r.bp, r.buf, r.cur = nil, nil, nil
	}
	if r.rp != nil {
		bufs.Put(r.rp)
		r.rp, r.rbuf, r.rn, r.cur = nil, nil, 0, nil
	}
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	if r.err == nil {
		r.err = ErrClosed
	}
	return err
}
