package client_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta/mem"
	"cairn/node"
)

// BenchmarkRAIDPPut times PUTs of 4 MiB objects on 6 real node servers
// (loopback sockets, disk directories in a temporary directory of the
// machine's file system) with the raidp policy — two replicas, each node
// updating its Lstor (on the same file system here) — against rep-2 and
// rep-3 on the same kind of nodes. Run it with a fixed count, e.g.
//
//	go test -run XXX -bench BenchmarkRAIDPPut -benchtime 20x ./client
//
// (each put takes its own superchunk space: the group holds 6 × 64 MiB).
func BenchmarkRAIDPPut(b *testing.B) {
	const obj = 4 << 20
	data := randomBytes(obj, 1)
	for _, policy := range []string{cairn.RAIDPPolicy, "rep-2", "rep-3"} {
		b.Run(policy, func(b *testing.B) {
			ctx := context.Background()
			meta := mem.New()
			addrs := map[cairn.DiskID]string{}
			dir := b.TempDir()
			for i := 1; i <= 6; i++ {
				id := fmt.Sprintf("node%d", i)
				disk := cairn.DiskID(id + "/disk1")
				dc := node.DiskConfig{ID: disk, Path: filepath.Join(dir, id, "disk1")}
				if policy == cairn.RAIDPPolicy {
					dc.Lstor = filepath.Join(dir, id, "lstor1")
				}
				srv, err := node.NewServer(node.Config{Node: cairn.NodeID(id), Secret: "bench", Disks: []node.DiskConfig{dc},
					RAIDPSize: 64 << 20, RAIDPSlots: 4, NoScrub: true})
				if err != nil {
					b.Fatal(err)
				}
				if err := srv.Start(ctx); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { srv.Close() })
				addrs[disk] = srv.Addr()
				if err := meta.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: srv.Addr()}); err != nil {
					b.Fatal(err)
				}
				d := cairn.Disk{ID: disk, Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp}
				if policy == cairn.RAIDPPolicy {
					d.RAIDPSize, d.RAIDPSlots = 64<<20, 4
				}
				if err := meta.PutDisk(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
			if err := meta.CreateBucket(ctx, cairn.Bucket{Name: "bench", Policy: policy}); err != nil {
				b.Fatal(err)
			}
			nc := node.NewClient("bench", func(_ context.Context, d cairn.DiskID) (string, error) { return addrs[d], nil }, nil)
			c := client.New(meta, nc, client.Config{})
			b.SetBytes(obj)
			i := 0
			for b.Loop() {
				i++
				if _, err := c.Put(ctx, "bench", fmt.Sprint(i), bytes.NewReader(data), client.PutOptions{Size: obj}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRAIDPDelete times deletes of 256 KiB raidp objects on 6 real
// node servers with each delete variant: lazy (the delete queues its
// range; the zeroing is paid later by the director, timed separately as
// zero) and online (the delete zeroes both replicas). E.g.
//
//	go test -run XXX -bench BenchmarkRAIDPDelete -benchtime 200x -count 3 ./client
func BenchmarkRAIDPDelete(b *testing.B) {
	const obj = 256 << 10
	data := randomBytes(obj, 1)
	setup := func(b *testing.B, mode string) *client.Client {
		meta, nodes, _ := raidpCluster(b, 6, 64<<20)
		c := client.New(meta, nodes.Client, client.Config{RAIDPDeletes: mode, RAIDPDeadBacklog: b.N + 1})
		for i := range b.N {
			if _, err := c.Put(context.Background(), "warm", fmt.Sprint(i), bytes.NewReader(data), client.PutOptions{Size: obj}); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(obj)
		b.ResetTimer()
		return c
	}
	for _, mode := range []string{client.RAIDPLazy, client.RAIDPOnline} {
		b.Run(mode, func(b *testing.B) {
			c := setup(b, mode)
			for i := range b.N {
				if err := c.Delete(context.Background(), "warm", fmt.Sprint(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("lazy-zero", func(b *testing.B) {
		c := setup(b, client.RAIDPLazy)
		b.StopTimer()
		for i := range b.N {
			if err := c.Delete(context.Background(), "warm", fmt.Sprint(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		st, err := c.ZeroDeadRAIDP(context.Background(), time.Now().Add(time.Hour), 0, b.N)
		if err != nil || st.Zeroed != b.N {
			b.Fatalf("zeroed %+v, %v", st, err)
		}
	})
}
