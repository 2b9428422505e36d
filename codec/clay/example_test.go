package clay_test

import (
	"bytes"
	"fmt"

	"cairn/codec"
	"cairn/codec/clay"
)

// Encode a stripe, lose a shard, and repair it from the sub-chunks of its
// helpers only.
func Example() {
	c, err := clay.New(10, 4, 13)
	if err != nil {
		panic(err)
	}
	data := bytes.Repeat([]byte("cairn clay "), 100000)
	shards := codec.Split(c.Params(), data)
	if err := c.Encode(shards); err != nil {
		panic(err)
	}
	size := len(shards[0])

	lost := 3
	var available []int
	for i := range shards {
		if i != lost {
			available = append(available, i)
		}
	}
	plan, err := c.SubChunkPlan(lost, available, size)
	if err != nil {
		panic(err)
	}
	reads := make([][]byte, len(plan.Helpers))
	for i, h := range plan.Helpers {
		reads[i] = h.Gather(nil, shards[h.Shard]) // what helper h sends
	}
	out := make([]byte, size)
	if err := plan.Repair(reads, out); err != nil {
		panic(err)
	}
	fmt.Printf("α=%d, %d helpers × %d runs, read %.2f shards, repaired: %v\n",
		c.Params().Alpha, len(plan.Helpers), len(plan.Helpers[0].Runs),
		float64(plan.ReadBytes())/float64(size), bytes.Equal(out, shards[lost]))
	// Output: α=256, 13 helpers × 1 runs, read 3.25 shards, repaired: true
}
