package codec

// Rateless is the optional capability of rateless (fountain) codes. A
// stripe has K source blocks; a coded block is named by a block ID in
// 0..MaxBlockID()−1, and any number of coded blocks can be made, each a pure
// function of the source blocks, the code and its ID, so any node can make
// any block. Systematic codes use IDs 0..K−1 for the source blocks
// themselves. A reader decodes from roughly K coded blocks, whichever
// arrive first: the few blocks beyond K it may need are the reception
// overhead.
//
// A Rateless code that is also a Code uses IDs 0..N−1 as its shards.
//
// Implementations are safe for concurrent use; the encoders and decoders
// they return are not.
type Rateless interface {
	// SourceBlocks returns K.
	SourceBlocks() int

	// MaxBlockID returns the number of block IDs: valid IDs are
	// 0 ≤ id < MaxBlockID().
	MaxBlockID() int

	// BlockMultiple returns what every block length must be a multiple of.
	BlockMultiple() int

	// NewEncoder prepares to make coded blocks of the K source blocks
	// (all of one length, a positive multiple of BlockMultiple). It
	// returns ErrShardCount or ErrShardSize for a malformed source. The
	// encoder does not retain source.
	NewEncoder(source [][]byte) (RatelessEncoder, error)

	// NewDecoder returns an empty decoder for blocks of blockSize bytes
	// (a positive multiple of BlockMultiple, else ErrShardSize).
	NewDecoder(blockSize int) (RatelessDecoder, error)

	// Decodable reports whether blocks with these IDs determine the K
	// source blocks. It looks only at the IDs (no payload), so a writer
	// can stop sending once the blocks acknowledged so far are enough.
	// Repeated IDs count once; it reports false for an ID out of range.
	Decodable(ids []int) bool
}

// RatelessEncoder makes coded blocks of one stripe.
type RatelessEncoder interface {
	// EncodeBlocks writes the coded block ids[i] into dst[i] for every i.
	// Each dst[i] must have the source blocks' length; it is overwritten.
	// It returns ErrShardCount (len(ids) != len(dst)), ErrShardIndex (an ID
	// out of range) or ErrShardSize.
	EncodeBlocks(ids []int, dst [][]byte) error
}

// RatelessDecoder collects coded blocks of one stripe, in any order, until
// they determine the source blocks.
type RatelessDecoder interface {
	// Add adds coded block id and reports whether the blocks added so far
	// determine the source blocks. Add retains block: the caller must not
	// modify it until the decoder is no longer used. Blocks added after
	// the decoder is done are ignored. It returns ErrShardIndex for an ID
	// out of range or already added and ErrShardSize for a block of the
	// wrong length; the decoder is unchanged by a failed Add.
	Add(id int, block []byte) (done bool, err error)

	// Done reports whether the blocks added so far determine the source.
	Done() bool

	// Source writes the K source blocks into dst (len(dst) == K). An entry
	// of the wrong length is replaced by a new buffer (or re-sliced from its
	// capacity). It returns an error wrapping ErrUndecodable before Done,
	// and ErrShardCount for a wrong len(dst).
	Source(dst [][]byte) error
}
