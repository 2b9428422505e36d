package lt

import (
	"fmt"

	"cairn/codec"
)

// Encoder makes coded blocks of one stripe on demand. It holds the L
// intermediate symbols (about 1.07·K blocks at K = 1024), so each block
// costs only the XOR of its 2–32 neighbours. It is not safe for concurrent
// use.
type Encoder struct {
	c    *Code
	size int
	sym  [][]byte // the intermediate symbols
}

var _ codec.RatelessEncoder = (*Encoder)(nil)

// NewEncoder implements codec.Rateless: it computes the intermediate
// symbols of the K source blocks (one solve, about the cost of encoding K
// repair blocks).
func (c *Code) NewEncoder(source [][]byte) (codec.RatelessEncoder, error) {
	return c.Encoder(source)
}

// Encoder is NewEncoder with the concrete type.
func (c *Code) Encoder(source [][]byte) (*Encoder, error) {
	size, err := c.sourceSize(source)
	if err != nil {
		return nil, fmt.Errorf("lt encoder: %w", err)
	}
	buf := make([]byte, c.p.L*size)
	sym := make([][]byte, c.p.L)
	for i := range sym {
		sym[i] = buf[i*size : (i+1)*size : (i+1)*size]
	}
	c.symbolPlan().run(source, sym, size)
	return &Encoder{c: c, size: size, sym: sym}, nil
}

func (c *Code) sourceSize(source [][]byte) (int, error) {
	if len(source) != c.k {
		return 0, fmt.Errorf("%w: got %d source blocks, code has %d", codec.ErrShardCount, len(source), c.k)
	}
	size := len(source[0])
	for i, s := range source {
		if len(s) != size {
			return 0, fmt.Errorf("%w: source block %d has %d bytes, block 0 %d", codec.ErrShardSize, i, len(s), size)
		}
	}
	if size == 0 || size%BlockMultiple != 0 {
		return 0, fmt.Errorf("%w: block size %d is not a positive multiple of %d", codec.ErrShardSize, size, BlockMultiple)
	}
	return size, nil
}

// EncodeBlocks implements codec.RatelessEncoder.
func (e *Encoder) EncodeBlocks(ids []int, dst [][]byte) error {
	if len(ids) != len(dst) {
		return fmt.Errorf("lt encode blocks: %w: %d IDs but %d buffers", codec.ErrShardCount, len(ids), len(dst))
	}
	for i, id := range ids {
		if id < 0 || id >= MaxID {
			return fmt.Errorf("lt encode blocks: %w: block ID %d is outside 0..%d", codec.ErrShardIndex, id, MaxID-1)
		}
		if len(dst[i]) != e.size {
			return fmt.Errorf("lt encode blocks: %w: buffer %d has %d bytes, blocks have %d", codec.ErrShardSize, i, len(dst[i]), e.size)
		}
	}
	e.c.p.intermediatePlan(ids).run(e.sym, dst, e.size)
	return nil
}

// Decoder collects coded blocks of one stripe until they determine the
// source blocks. It is not safe for concurrent use.
//
// It checks decodability (a symbolic solve on the IDs) only when the rank
// can have become full: not before K blocks, and after a failed check not
// before as many further blocks as the check found missing. Typically it
// solves once.
type Decoder struct {
	c      *Code
	size   int
	ids    []int
	blocks [][]byte
	have   map[int]bool
	next   int // number of blocks at which to check again
	done   bool
	plan   *plan // the missing source blocks from the blocks added, once done
}

var _ codec.RatelessDecoder = (*Decoder)(nil)

// NewDecoder implements codec.Rateless.
func (c *Code) NewDecoder(blockSize int) (codec.RatelessDecoder, error) {
	return c.Decoder(blockSize)
}

// Decoder is NewDecoder with the concrete type.
func (c *Code) Decoder(blockSize int) (*Decoder, error) {
	if blockSize <= 0 || blockSize%BlockMultiple != 0 {
		return nil, fmt.Errorf("lt decoder: %w: block size %d is not a positive multiple of %d", codec.ErrShardSize, blockSize, BlockMultiple)
	}
	return &Decoder{c: c, size: blockSize, have: make(map[int]bool), next: c.k}, nil
}

// Add implements codec.RatelessDecoder.
func (d *Decoder) Add(id int, block []byte) (bool, error) {
	if d.done {
		return true, nil
	}
	if id < 0 || id >= MaxID {
		return false, fmt.Errorf("lt decoder: %w: block ID %d is outside 0..%d", codec.ErrShardIndex, id, MaxID-1)
	}
	if d.have[id] {
		return false, fmt.Errorf("lt decoder: %w: block %d added twice", codec.ErrShardIndex, id)
	}
	if len(block) != d.size {
		return false, fmt.Errorf("lt decoder: %w: block %d has %d bytes, want %d", codec.ErrShardSize, id, len(block), d.size)
	}
	d.have[id] = true
	d.ids = append(d.ids, id)
	d.blocks = append(d.blocks, block)
	if len(d.ids) >= d.next {
		// The check is the full solve: when it succeeds, Source only runs
		// the plan.
		var lost []int
		for i := range d.c.k {
			if !d.have[i] {
				lost = append(lost, i)
			}
		}
		pl, def := d.c.plan(d.ids, lost, false)
		if def == 0 {
			d.done, d.plan = true, pl
		} else {
			d.next = len(d.ids) + def
		}
	}
	return d.done, nil
}

// Done implements codec.RatelessDecoder.
func (d *Decoder) Done() bool { return d.done }

// Received returns the number of blocks added (up to being done).
func (d *Decoder) Received() int { return len(d.ids) }

// Source implements codec.RatelessDecoder.
func (d *Decoder) Source(dst [][]byte) error {
	if len(dst) != d.c.k {
		return fmt.Errorf("lt decode: %w: got %d buffers for %d source blocks", codec.ErrShardCount, len(dst), d.c.k)
	}
	if !d.done {
		var want []int
		for i := range d.c.k {
			if !d.have[i] {
				want = append(want, i)
			}
		}
		return fmt.Errorf("lt decode: %w", &codec.UndecodableError{Op: "decode", Want: want, Available: d.ids})
	}
	var lost []int
	var out [][]byte
	for i := range d.c.k {
		if len(dst[i]) != d.size {
			dst[i] = codec.Buffer(dst[i][:0], d.size)
		}
		if !d.have[i] {
			lost = append(lost, i)
			out = append(out, dst[i])
		}
	}
	for j, id := range d.ids {
		if id < d.c.k {
			copy(dst[id], d.blocks[j])
		}
	}
	if len(lost) > 0 {
		d.plan.run(d.blocks, out, d.size)
	}
	return nil
}
