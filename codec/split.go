package codec

import (
	"fmt"
	"io"
)

// ShardSize returns the shard length a code with parameters p uses for a
// stripe holding size bytes of data: ⌈size/K⌉ rounded up to ShardMultiple,
// and at least ShardMultiple (an empty object still has a one-unit stripe).
func ShardSize(p Params, size int) int {
	m := max(p.ShardMultiple, 1)
	s := (size + p.K - 1) / p.K
	s = (s + m - 1) / m * m
	return max(s, m)
}

// Split copies data into a new stripe for a code with parameters p: K data
// shards (zero-padded at the end) and M allocated parity shards, all in one
// allocation. Run Encode on the result to fill the parity.
func Split(p Params, data []byte) [][]byte {
	size := ShardSize(p, len(data))
	buf := make([]byte, size*p.N())
	copy(buf, data)
	shards := make([][]byte, p.N())
	for i := range shards {
		shards[i] = buf[i*size : (i+1)*size : (i+1)*size]
	}
	return shards
}

// Join writes the first size bytes of the data shards (0..K-1, in order) to
// w. Every data shard must be present.
func Join(w io.Writer, p Params, shards [][]byte, size int) error {
	if len(shards) < p.K {
		return fmt.Errorf("%w: join: got %d shards, need %d data shards", ErrShardCount, len(shards), p.K)
	}
	for i := 0; i < p.K && size > 0; i++ {
		if len(shards[i]) == 0 {
			return fmt.Errorf("%w: join: data shard %d is missing", ErrShardSize, i)
		}
		b := shards[i][:min(len(shards[i]), size)]
		if _, err := w.Write(b); err != nil {
			return err
		}
		size -= len(b)
	}
	if size > 0 {
		return fmt.Errorf("%w: join: data shards hold %d bytes too few", ErrShardSize, size)
	}
	return nil
}
