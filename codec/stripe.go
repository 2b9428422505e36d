package codec

import "fmt"

// StripeSize checks a stripe's shape for a code with parameters p and
// returns the common length of its present shards. With all set, every
// shard must be present. It returns an error wrapping ErrShardCount or
// ErrShardSize, or ErrUndecodable when no shard is present.
func StripeSize(p Params, shards [][]byte, all bool) (int, error) {
	if len(shards) != p.N() {
		return 0, fmt.Errorf("%w: got %d, code has %d", ErrShardCount, len(shards), p.N())
	}
	size := 0
	for i, s := range shards {
		switch {
		case len(s) == 0 && all:
			return 0, fmt.Errorf("%w: shard %d is missing", ErrShardSize, i)
		case len(s) == 0:
		case size == 0:
			size = len(s)
		case len(s) != size:
			return 0, fmt.Errorf("%w: shard %d has %d bytes, others %d", ErrShardSize, i, len(s), size)
		}
	}
	if size == 0 {
		return 0, fmt.Errorf("%w: no shard is present", ErrUndecodable)
	}
	if m := max(p.ShardMultiple, 1); size%m != 0 {
		return 0, fmt.Errorf("%w: %d bytes is not a multiple of %d", ErrShardSize, size, m)
	}
	return size, nil
}

// CheckIndices checks that every index is in [0, n) and none repeats.
func CheckIndices(what string, idx []int, n int) error {
	seen := make(map[int]bool, len(idx))
	for _, i := range idx {
		if i < 0 || i >= n {
			return fmt.Errorf("%w: %s shard %d is outside 0..%d", ErrShardIndex, what, i, n-1)
		}
		if seen[i] {
			return fmt.Errorf("%w: %s shard %d is listed twice", ErrShardIndex, what, i)
		}
		seen[i] = true
	}
	return nil
}

// Present returns the indices of present (non-empty) shards, ascending.
func Present(shards [][]byte) []int {
	var idx []int
	for i, s := range shards {
		if len(s) > 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

// Buffer returns s re-sliced to size if its capacity allows, else a new
// buffer; used to fill a missing shard. The contents are unspecified.
func Buffer(s []byte, size int) []byte {
	if cap(s) >= size {
		return s[:size]
	}
	return make([]byte, size)
}

// PrepareEncode checks a stripe handed to Encode: all K data shards present
// and of one valid length; each parity shard of that length or missing, in
// which case it is allocated (or re-sliced from its capacity). It returns the
// shard length.
func PrepareEncode(p Params, shards [][]byte) (int, error) {
	if len(shards) != p.N() {
		return 0, fmt.Errorf("%w: got %d, code has %d", ErrShardCount, len(shards), p.N())
	}
	for i := range p.K {
		if len(shards[i]) == 0 {
			return 0, fmt.Errorf("%w: data shard %d is missing", ErrShardSize, i)
		}
	}
	size, err := StripeSize(p, shards, false)
	if err != nil {
		return 0, err
	}
	for i := p.K; i < p.N(); i++ {
		if len(shards[i]) == 0 {
			shards[i] = Buffer(shards[i], size)
		}
	}
	return size, nil
}
