package node_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node"
)

func Example() {
	ctx := context.Background()
	s, err := node.NewServer(node.Config{
		Node: "node1", Secret: "cluster-secret",
		Disks: []node.DiskConfig{{ID: "node1/disk1", Path: "/disk1", FS: vfs.NewMem()}},
	})
	if err != nil {
		panic(err)
	}
	if err := s.Start(ctx); err != nil {
		panic(err)
	}
	defer s.Close()

	c := node.NewClient("cluster-secret", func(cairn.DiskID) (string, error) { return s.Addr(), nil }, nil)
	name := cairn.ShardName("0123456789abcdef0123456789abcdef", 0)
	info, err := c.PutShard(ctx, "node1/disk1", name, strings.NewReader("hello, shard"))
	if err != nil {
		panic(err)
	}
	fmt.Println("stored", info.Size, "bytes")

	r, err := c.GetShard(ctx, "node1/disk1", name, 7, -1)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	fmt.Printf("%q %v\n", b, err)
	// Output:
	// stored 12 bytes
	// "shard" <nil>
}
