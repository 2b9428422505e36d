package codec

import "fmt"

// SubChunkRepairer is the optional capability of array codes (Alpha > 1)
// that rebuild one lost shard from a fraction of each helper: minimum-storage
// regenerating (MSR) codes such as Clay. A shard of such a code is Alpha
// sub-chunks of ShardSize/Alpha bytes each, sub-chunk z being bytes
// [z·sc, (z+1)·sc). The repair of one shard reads some sub-chunks from each
// of its helpers (Clay: β = Alpha/q sub-chunks from each of d helpers), so
// the bytes moved per byte rebuilt are below the K of a scalar code.
//
// Repair planners find it by type assertion, like LinearRepairer.
type SubChunkRepairer interface {
	// SubChunkPlan returns the plan that rebuilds shard lost of a stripe
	// whose shards are shardSize bytes long, reading from shards in
	// available. available is in order of preference: where the code has a
	// choice of helpers, earlier shards are chosen first. lost must not be
	// in available.
	//
	// When the sub-chunk repair is impossible from the available shards
	// (for Clay: a shard of the lost shard's column is unavailable, or
	// fewer than d shards are), a code may return a degraded plan that
	// reads whole shards from K helpers; ReadBytes says what a plan costs.
	//
	// Errors wrap ErrShardIndex (lost or an available index out of range or
	// repeated, or lost listed as available), ErrShardSize (shardSize not a
	// positive multiple of Params().ShardMultiple), or wrap an
	// *UndecodableError (Op "repair"; errors.As finds it) when the
	// available shards do not determine the lost one at all.
	//
	// Plans are immutable and safe to share between goroutines; the caller
	// must not modify their slices.
	SubChunkPlan(lost int, available []int, shardSize int) (*SubChunkPlan, error)
}

// Run is a contiguous byte range [Offset, Offset+Length) of a shard.
type Run struct {
	Offset int
	Length int
}

// HelperRead is what a sub-chunk repair reads from one helper shard.
type HelperRead struct {
	// Shard is the helper's shard index in the stripe.
	Shard int
	// SubChunks are the indices of the sub-chunks read, ascending.
	SubChunks []int
	// Runs are the same bytes as byte ranges of the shard: ascending,
	// coalesced (no two runs overlap or touch), so a helper serves them as
	// len(Runs) reads.
	Runs []Run
}

// Bytes returns the number of bytes the helper reads: the sum of the run
// lengths.
func (h HelperRead) Bytes() int {
	n := 0
	for _, r := range h.Runs {
		n += r.Length
	}
	return n
}

// Gather appends the helper's runs of shard to dst, in order, and returns
// the extended slice: the buffer a helper sends for SubChunkPlan.Repair.
// shard must be the whole helper shard (ShardSize bytes).
func (h HelperRead) Gather(dst, shard []byte) []byte {
	for _, r := range h.Runs {
		dst = append(dst, shard[r.Offset:r.Offset+r.Length]...)
	}
	return dst
}

// SubChunkPlan says which bytes of which helpers rebuild one lost shard,
// and rebuilds it from exactly those bytes. The repair touches no helper
// byte outside the plan's runs: a helper's data is handed over as the
// concatenation of its runs and nothing else.
type SubChunkPlan struct {
	// Lost is the shard rebuilt.
	Lost int
	// ShardSize is the length of every shard of the stripe, in bytes.
	ShardSize int
	// SubChunkSize is ShardSize/Alpha, the unit of Runs.
	SubChunkSize int
	// Helpers lists the shards read and what is read from each, ordered by
	// shard index.
	Helpers []HelperRead

	// repair rebuilds the lost shard into out from reads (checked by
	// Repair); set by the code that built the plan.
	repair func(reads [][]byte, out []byte) error
}

// NewSubChunkPlan builds a plan. repair is called by Repair after the
// buffer lengths have been checked against helpers and shardSize.
func NewSubChunkPlan(lost, shardSize, subChunkSize int, helpers []HelperRead, repair func(reads [][]byte, out []byte) error) *SubChunkPlan {
	return &SubChunkPlan{Lost: lost, ShardSize: shardSize, SubChunkSize: subChunkSize, Helpers: helpers, repair: repair}
}

// ReadBytes returns the bytes read from all helpers together. Divided by
// ShardSize it is the repair's read (and network) amplification: K for a
// scalar MDS code, d·β/α = d/(d−K+1) for Clay.
func (p *SubChunkPlan) ReadBytes() int {
	n := 0
	for _, h := range p.Helpers {
		n += h.Bytes()
	}
	return n
}

// Repair rebuilds the lost shard into out (len ShardSize, overwritten).
// reads[i] holds the bytes of Helpers[i].Runs concatenated in order
// (HelperRead.Gather builds it), exactly Helpers[i].Bytes() long. reads is
// not modified. It returns ErrShardCount or ErrShardSize for buffers of the
// wrong number or length. It is safe to call concurrently on one plan with
// different buffers.
func (p *SubChunkPlan) Repair(reads [][]byte, out []byte) error {
	if len(reads) != len(p.Helpers) {
		return fmt.Errorf("%w: sub-chunk repair of shard %d: got %d helper buffers, plan has %d helpers",
			ErrShardCount, p.Lost, len(reads), len(p.Helpers))
	}
	for i, h := range p.Helpers {
		if n := h.Bytes(); len(reads[i]) != n {
			return fmt.Errorf("%w: sub-chunk repair of shard %d: helper %d (shard %d) sent %d bytes, plan reads %d",
				ErrShardSize, p.Lost, i, h.Shard, len(reads[i]), n)
		}
	}
	if len(out) != p.ShardSize {
		return fmt.Errorf("%w: sub-chunk repair of shard %d: output has %d bytes, shards have %d",
			ErrShardSize, p.Lost, len(out), p.ShardSize)
	}
	return p.repair(reads, out)
}
