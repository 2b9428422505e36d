package client

import (
	"context"
	"io"

	"cairn"
	"cairn/node"
)

// NodeShards adapts a node-protocol client to Shards.
type NodeShards struct{ C *node.Client }

var _ Shards = NodeShards{}

// PutShard implements Shards.
func (n NodeShards) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (int64, uint32, error) {
	info, err := n.C.PutShard(ctx, disk, name, r)
	return info.Size, info.CRC, err
}

// GetShard implements Shards.
func (n NodeShards) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, length int64) (io.ReadCloser, error) {
	if length < 0 {
		length = -1
	}
	return n.C.GetShard(ctx, disk, name, off, length)
}

// DeleteShard implements Shards.
func (n NodeShards) DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error {
	return n.C.DeleteShard(ctx, disk, name)
}
