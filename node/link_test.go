package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/vfs"
	"cairn/node/wire"
	"cairn/repair/plan"
)

// TestServerLinkRate: a node limited to 1 MiB/s takes about 2 s to
// receive a 2 MiB shard; its sends and its own outgoing connections (a
// pull's fetches) are shaped too. Real time: only lower bounds.
func TestServerLinkRate(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 4 s of real time")
	}
	ctx := context.Background()
	start := func(name string, rate int64) *Server {
		s, err := NewServer(Config{Node: cairn.NodeID(name), Secret: testSecret, LinkRate: rate,
			Disks: []DiskConfig{{ID: cairn.DiskID(name + "/d1"), Path: "/d", FS: vfs.NewMem()}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	slow, fast := start("slow", 1<<20), start("fast", 0)
	c := NewClient(testSecret, func(_ context.Context, d cairn.DiskID) (string, error) {
		if d == "slow/d1" {
			return slow.Addr(), nil
		}
		return fast.Addr(), nil
	}, nil)
	timed := func(what string, least time.Duration, f func() error) {
		t.Helper()
		t0 := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		d := time.Since(t0)
		t.Logf("%s: %v", what, d)
		if d < least {
			t.Errorf("%s took %v, less than %v", what, d, least)
		}
	}
	data := randBytes(1, 2<<20)
	name := shardName(1, 0)
	timed("PUT 2 MiB to the slow node", 1500*time.Millisecond, func() error {
		_, err := c.PutShard(ctx, "slow/d1", name, bytes.NewReader(data))
		return err
	})
	timed("GET 1 MiB from the slow node", 700*time.Millisecond, func() error {
		got, err := readAll(t, c, "slow/d1", name, 0, 1<<20)
		if err == nil && !bytes.Equal(got, data[:1<<20]) {
			err = fmt.Errorf("wrong bytes")
		}
		return err
	})
	// The slow node pulls two 512 KiB helpers from the fast one.
	code, err := all.New("rs-2-1")
	if err != nil {
		t.Fatal(err)
	}
	const size = 512 << 10
	shards := codec.Split(code.Params(), data[:2*size])
	if err := code.Encode(shards); err != nil {
		t.Fatal(err)
	}
	version := fmt.Sprintf("%032x", 0x5104)
	for i := range 2 {
		if _, err := c.PutShard(ctx, "fast/d1", cairn.ShardName(version, i), bytes.NewReader(shards[i])); err != nil {
			t.Fatal(err)
		}
	}
	p, err := plan.Build(plan.PullRep, plan.Input{Code: code, Lost: []int{2}, Nodes: []string{"fast", "fast", ""},
		Replacements: []string{"slow"}, ShardSize: size, Unit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	spec := wire.RepairSpec{Size: size, Unit: 64 << 10, Store: []wire.Target{{Addr: slow.Addr(), Disk: "slow/d1", Shard: cairn.ShardName(version, 2)}}}
	for _, h := range p.Tasks[0].Helpers {
		spec.Hops = append(spec.Hops, wire.Hop{Addr: fast.Addr(), Disk: "fast/d1", Shard: cairn.ShardName(version, h.Shard), Coeffs: h.Coeffs})
	}
	timed("the slow node pulls 2 × 512 KiB", 700*time.Millisecond, func() error {
		_, err := c.Pull(ctx, slow.Addr(), spec)
		return err
	})
	got, err := readAll(t, c, "slow/d1", cairn.ShardName(version, 2), 0, -1)
	if err != nil || !bytes.Equal(got, shards[2]) {
		t.Fatalf("pulled shard: %v", err)
	}
}
