package volume

import (
	"testing"

	"cairn"
)

// The metadata store counts stored bytes with cairn.ShardFileBytes: it
// must be this format's file size (fileSizeFor, which decodeFooter holds
// every shard file to).
func TestShardFileBytesIsTheFileSize(t *testing.T) {
	for _, n := range []int64{0, 1, BlockSize - 1, BlockSize, BlockSize + 1, 3*BlockSize + 17, 1 << 20, 9<<20 + 5} {
		if got, want := cairn.ShardFileBytes(n), fileSizeFor(n); got != want {
			t.Errorf("ShardFileBytes(%d) = %d, the volume's file is %d bytes", n, got, want)
		}
	}
}
