package clay

import (
	"fmt"

	"cairn/codec"

	"github.com/klauspost/reedsolomon"
)

// maxPart is the most inputs (and outputs) one klauspost call takes on its
// fused fast path: with more, klauspost falls back from the GFNI kernels to
// a slower split (measured here: 12×4 at 7.9 GB/s against 28 GB/s for 10×4).
const maxPart = 10

// kernel applies a fixed GF(2^8) matrix to batches of sub-chunks with
// klauspost's fused multi-input, multi-output SIMD kernels:
// out[r] = Σ_c coeffs[r][c]·in[c]. Matrices wider than maxPart are split
// into blocks of at most maxPart inputs and outputs; the first input block
// of an output block writes the outputs, later ones write scratch that is
// XORed in.
type kernel struct {
	nIn, nOut int
	parts     []kernelPart
}

type kernelPart struct {
	in0, in1   int // inputs [in0, in1)
	out0, out1 int // outputs [out0, out1)
	first      bool
	enc        reedsolomon.Encoder
}

// split divides n into ⌈n/maxPart⌉ near-equal blocks.
func split(n int) [][2]int {
	blocks := (n + maxPart - 1) / maxPart
	var out [][2]int
	for b := range blocks {
		out = append(out, [2]int{b * n / blocks, (b + 1) * n / blocks})
	}
	return out
}

func newKernel(coeffs [][]byte) (*kernel, error) {
	k := &kernel{nIn: len(coeffs[0]), nOut: len(coeffs)}
	for _, ob := range split(k.nOut) {
		for bi, ib := range split(k.nIn) {
			rows := make([][]byte, ob[1]-ob[0])
			for r := range rows {
				rows[r] = coeffs[ob[0]+r][ib[0]:ib[1]]
			}
			enc, err := reedsolomon.New(ib[1]-ib[0], len(rows),
				reedsolomon.WithCustomMatrix(rows), reedsolomon.WithMaxGoroutines(1))
			if err != nil {
				return nil, fmt.Errorf("clay: building a %d×%d plane kernel: %w", len(rows), ib[1]-ib[0], err)
			}
			k.parts = append(k.parts, kernelPart{in0: ib[0], in1: ib[1], out0: ob[0], out1: ob[1], first: bi == 0, enc: enc})
		}
	}
	return k, nil
}

// run computes out from in: len(in) = nIn, len(out) = nOut, all of one
// positive length. Shapes are fixed by construction, so an error is a bug
// in this package, never bad input.
func (k *kernel) run(in, out [][]byte, w *work) error {
	size := len(out[0])
	for _, p := range k.parts {
		dst := out[p.out0:p.out1]
		if !p.first {
			dst = w.partial(p.out1-p.out0, size)
		}
		hdr := w.shards(p.in1 - p.in0 + len(dst))
		copy(hdr, in[p.in0:p.in1])
		copy(hdr[p.in1-p.in0:], dst)
		if err := p.enc.Encode(hdr); err != nil {
			return fmt.Errorf("clay: plane kernel: %w", err)
		}
		if !p.first {
			for r, d := range dst {
				codec.MulAdd(out[p.out0+r], d, 1)
			}
		}
	}
	return nil
}
