package clay

// work is per-call scratch, pooled per Code so steady-state calls do not
// allocate. Each accessor hands out a region that stays valid until the
// work is returned to the pool; regions from different accessors never
// overlap.
type work struct {
	in, out   []byte   // plane batches: inputs and (non-contiguous) outputs
	inS, outS [][]byte // their per-node slices
	shardsS   [][]byte // kernel call headers
	done      []bool   // planes decoded
	aloof     []byte   // U of aloof nodes on the repair planes
	spare     []byte   // stand-in shards (unwanted erasures, Verify's parity)
	spareS    [][]byte
	aloofS    [][]byte
	nodes     [][]byte // stripe buffers by internal node
	part      []byte   // kernel partial outputs
	partS     [][]byte
	inHdr     [][]byte // kernel inputs of a direct batch
	outHdr    [][]byte // kernel outputs of a batch
}

// partial returns count buffers of each bytes for a kernel's partial
// outputs.
func (w *work) partial(count, each int) [][]byte {
	w.part = grow(w.part, count*each)
	w.partS = carve(w.partS, w.part, count, each)
	return w.partS
}

// headers returns two slices of slice headers, of n and m entries.
func (w *work) headers(n, m int) (in, out [][]byte) {
	if cap(w.inHdr) < n {
		w.inHdr = make([][]byte, n)
	}
	if cap(w.outHdr) < m {
		w.outHdr = make([][]byte, m)
	}
	return w.inHdr[:n], w.outHdr[:m]
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

func carve(dst [][]byte, b []byte, count, each int) [][]byte {
	dst = dst[:0]
	for i := range count {
		dst = append(dst, b[i*each:(i+1)*each:(i+1)*each])
	}
	return dst
}

// bufs returns count input buffers of each bytes.
func (w *work) bufs(count, each int) [][]byte {
	w.in = grow(w.in, count*each)
	w.inS = carve(w.inS, w.in, count, each)
	return w.inS
}

// bufs2 returns count output buffers of each bytes.
func (w *work) bufs2(count, each int) [][]byte {
	w.out = grow(w.out, count*each)
	w.outS = carve(w.outS, w.out, count, each)
	return w.outS
}

// shards returns a slice of n slice headers for a kernel call.
func (w *work) shards(n int) [][]byte {
	if cap(w.shardsS) < n {
		w.shardsS = make([][]byte, n)
	}
	return w.shardsS[:n]
}

// flags returns n cleared flags.
func (w *work) flags(n int) []bool {
	if cap(w.done) < n {
		w.done = make([]bool, n)
	}
	w.done = w.done[:n]
	clear(w.done)
	return w.done
}

// aloofBufs returns count buffers of each bytes for aloof nodes' U.
func (w *work) aloofBufs(count, each int) [][]byte {
	w.aloof = grow(w.aloof, count*each)
	w.aloofS = carve(w.aloofS, w.aloof, count, each)
	return w.aloofS
}

// spares returns count stand-in shards of each bytes.
func (w *work) spares(count, each int) [][]byte {
	w.spare = grow(w.spare, count*each)
	w.spareS = carve(w.spareS, w.spare, count, each)
	return w.spareS
}
