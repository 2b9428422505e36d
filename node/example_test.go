package node_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/vfs"
	"cairn/node"
	"cairn/node/wire"
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

	c := node.NewClient("cluster-secret", func(context.Context, cairn.DiskID) (string, error) { return s.Addr(), nil }, nil)
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

// ExampleClient_Push rebuilds parity shard 2 of an rs-2-1 stripe through
// a PUSH chain: node1 reads shard 0 and sends its partial to node2, which
// adds shard 1's and stores the result on its spare disk.
func ExampleClient_Push() {
	ctx := context.Background()
	servers := map[string]*node.Server{}
	for _, name := range []string{"node1", "node2"} {
		s, err := node.NewServer(node.Config{Node: cairn.NodeID(name), Secret: "cluster-secret",
			Disks: []node.DiskConfig{
				{ID: cairn.DiskID(name + "/disk1"), Path: "/disk1", FS: vfs.NewMem()},
				{ID: cairn.DiskID(name + "/spare"), Path: "/spare", FS: vfs.NewMem()},
			}})
		if err != nil {
			panic(err)
		}
		if err := s.Start(ctx); err != nil {
			panic(err)
		}
		defer s.Close()
		servers[name] = s
	}
	resolve := func(_ context.Context, d cairn.DiskID) (string, error) {
		return servers[strings.Split(string(d), "/")[0]].Addr(), nil
	}
	c := node.NewClient("cluster-secret", resolve, nil)

	code, _ := all.New("rs-2-1")
	shards := codec.Split(code.Params(), []byte("pipelined reconstruction"))
	_ = code.Encode(shards)
	version := "0123456789abcdef0123456789abcdef"
	for i, disk := range []cairn.DiskID{"node1/disk1", "node2/disk1"} {
		if _, err := c.PutShard(ctx, disk, cairn.ShardName(version, i), bytes.NewReader(shards[i])); err != nil {
			panic(err)
		}
	}

	rp, _ := code.(codec.LinearRepairer).RepairPlan([]int{2}, []int{0, 1})
	spec := wire.RepairSpec{Size: int64(len(shards[0])), Unit: 1 << 20,
		Store: []wire.Target{{Addr: servers["node2"].Addr(), Disk: "node2/spare", Shard: cairn.ShardName(version, 2)}}}
	for i, h := range rp.Helpers {
		disk := cairn.DiskID(fmt.Sprintf("node%d/disk1", h+1))
		addr, _ := resolve(context.Background(), disk)
		spec.Hops = append(spec.Hops, wire.Hop{Addr: addr, Disk: disk, Shard: cairn.ShardName(version, h), Coeffs: []byte{rp.Coeffs[0][i]}})
	}
	stored, err := c.Push(ctx, spec)
	if err != nil {
		panic(err)
	}
	fmt.Println("stored", stored[0].Size, "bytes, CRC ok:", stored[0].CRC == crc32.Checksum(shards[2], crc32.MakeTable(crc32.Castagnoli)))
	// Output:
	// stored 12 bytes, CRC ok: true
}
