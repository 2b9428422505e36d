package mem_test

import (
	"context"
	"fmt"
	"time"

	"cairn"
	"cairn/meta/mem"
)

// A test expires a liveness entry by moving a fake clock.
func ExampleWithClock() {
	now := time.Unix(0, 0)
	s := mem.New(mem.WithClock(func() time.Time { return now }))
	defer s.Close()
	ctx := context.Background()

	nodeCtx, stopNode := context.WithCancel(ctx)
	_ = s.KeepAlive(nodeCtx, "node1", 10*time.Second)
	stopNode() // the node stops renewing
	alive, _ := s.Alive(ctx)
	fmt.Println(alive)
	now = now.Add(10 * time.Second)
	alive, _ = s.Alive(ctx)
	fmt.Println(alive)
	// Output:
	// [node1]
	// []
}

// An object appears when its manifest is committed, compare-and-swap on
// its version.
func ExampleStore_CommitManifest() {
	s := mem.New()
	defer s.Close()
	ctx := context.Background()
	_ = s.CreateBucket(ctx, cairn.Bucket{Name: "photos", Policy: "rs-4-2"})

	// One copy (rep-1) of 5 bytes: one shard file on one disk.
	layout := cairn.Layout{BlockSize: 5, Shards: []cairn.ShardLoc{{Disk: "node1/disk1", Size: 5}}}
	m := &cairn.Manifest{Bucket: "photos", Key: "cat.jpg", Version: "v1", Size: 5, Policy: "rep-1", Layout: layout}
	fmt.Println(s.CommitManifest(ctx, m, ""))
	m2 := &cairn.Manifest{Bucket: "photos", Key: "cat.jpg", Version: "v2", Size: 5, Policy: "rep-1", Layout: layout}
	fmt.Println(s.CommitManifest(ctx, m2, ""))
	fmt.Println(s.CommitManifest(ctx, m2, "v1"))
	// Output:
	// <nil>
	// commit photos/cat.jpg over version "": conflict: changed concurrently (current version v1)
	// <nil>
}
