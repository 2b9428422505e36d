package decide

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/internal/golden"
)

// TestCodedScripts runs testdata/lt.txt: the decisions of lt repair.
// Besides cluster and state (TestScripts), its commands are:
//
//	coded policy=P [next=N] [bs=B]
//	                   input: the stripe's blocks, "id@disk" each, in any
//	                   number of lines. Replaces the object's manifest (one
//	                   coded stripe).
//	coded-task [bad=id,…]
//	                   CodedTask: the task Scan queues (bad: block IDs found damaged)
//	coded-round [bad=id,…]
//	                   PlanCoded: what the round keeps, drops, reads, writes where
func TestCodedScripts(t *testing.T) {
	s := &script{}
	golden.Script(t, "lt.txt", func(t *testing.T, c *golden.Cmd) string {
		switch c.Name {
		case "coded":
			return s.coded(t, c)
		case "coded-task", "coded-round":
			return s.codedRound(t, c)
		}
		return s.do(t, c)
	})
}

func (s *script) coded(t *testing.T, c *golden.Cmd) string {
	policy, _ := c.Arg("policy")
	code, err := all.New(policy)
	if err != nil {
		t.Fatalf("%s: %v", c.Pos, err)
	}
	cs := cairn.CodedStripe{Version: version}
	if v, ok := c.Arg("next"); ok {
		cs.Next, _ = strconv.Atoi(v)
	}
	bs := 4096
	if v, ok := c.Arg("bs"); ok {
		bs, _ = strconv.Atoi(v)
	}
	for _, f := range strings.Fields(strings.Join(c.Input, " ")) {
		id, disk, ok := strings.Cut(f, "@")
		n, err := strconv.Atoi(id)
		if !ok || err != nil {
			t.Fatalf("%s: block %q: want id@disk", c.Pos, f)
		}
		cs.Blocks = append(cs.Blocks, cairn.BlockLoc{ID: n, Disk: cairn.DiskID(disk), CRC: uint32(n)})
	}
	s.code = code
	s.m = &cairn.Manifest{Bucket: "bkt", Key: "obj", Version: version, Policy: policy,
		Layout: cairn.Layout{BlockSize: bs, Coded: []cairn.CodedStripe{cs}}}
	if err := s.m.Layout.Validate(); err != nil {
		t.Fatalf("%s: %v", c.Pos, err)
	}
	return fmt.Sprintf("%s: %d blocks of %d B, next %d; per node %s", policy, len(cs.Blocks), bs, cs.FreshID(code.Params().N()), s.perNode(&cs))
}

// perNode counts the stripe's blocks per node and per disk: "n1 12 (d1 6, d2 6), …".
func (s *script) perNode(cs *cairn.CodedStripe) string {
	disks := map[cairn.DiskID]int{}
	for _, b := range cs.Blocks {
		disks[b.Disk]++
	}
	var out []string
	for _, n := range s.nodes {
		var parts []string
		sum := 0
		for _, d := range s.disks {
			if d.Node == n.ID && disks[d.ID] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(string(d.ID), string(n.ID)+"/"), disks[d.ID]))
				sum += disks[d.ID]
			}
		}
		if sum > 0 {
			out = append(out, fmt.Sprintf("%s %d (%s)", n.ID, sum, strings.Join(parts, ", ")))
		}
	}
	return strings.Join(out, ", ")
}

func (s *script) codedRound(t *testing.T, c *golden.Cmd) string {
	cs := &s.m.Coded[0]
	var bad []cairn.ShardFile
	if v, ok := c.Arg("bad"); ok {
		for _, f := range strings.Split(v, ",") {
			id, _ := strconv.Atoi(f)
			i := slices.IndexFunc(cs.Blocks, func(b cairn.BlockLoc) bool { return b.ID == id })
			if i < 0 {
				t.Fatalf("%s: no block %d", c.Pos, id)
			}
			bad = append(bad, cairn.ShardFile{Disk: cs.Blocks[i].Disk, Name: cairn.ShardName(cs.Version, id)})
		}
	}
	k, n := s.code.Params().K, s.code.Params().N()
	if c.Name == "coded-task" {
		task, ok := CodedTask(s.m, 0, &s.m.Layout, s.code, s.view(), time.Unix(1000, 0), bad)
		if !ok {
			return "no task: nothing to replace"
		}
		return fmt.Sprintf("task part %d: stripes %v, %d bytes, risk %d, bad blocks %d", task.Part, task.Lost, task.Bytes, task.Risk, len(task.BadBlocks))
	}
	pl, err := PlanCoded(cs, k, n, s.view(), bad)
	if err != nil {
		return fmt.Sprintf("error: %v", err)
	}
	ids := func(idx []int) []int {
		out := make([]int, len(idx))
		for j, i := range idx {
			out[j] = cs.Blocks[i].ID
		}
		return out
	}
	var b strings.Builder
	fmt.Fprintf(&b, "bounds: %d a disk, %d a node\n", pl.Bounds.PerDisk, pl.Bounds.PerNode)
	fmt.Fprintf(&b, "keep %d, drop %v\n", len(pl.Keep), ids(pl.Drop))
	h := ids(pl.Helpers)
	if len(h) > 12 {
		fmt.Fprintf(&b, "helpers %d: %v …\n", len(h), h[:12])
	} else {
		fmt.Fprintf(&b, "helpers %d: %v\n", len(h), h)
	}
	for _, nb := range pl.New {
		fmt.Fprintf(&b, "new %d → %s\n", nb.ID, nb.Disk)
	}
	if pl.Short > 0 {
		fmt.Fprintf(&b, "short %d\n", pl.Short)
	}
	after := *cs
	after.Blocks = nil
	for _, i := range pl.Keep {
		after.Blocks = append(after.Blocks, cs.Blocks[i])
	}
	after.Blocks = append(after.Blocks, pl.New...)
	fmt.Fprintf(&b, "after: %d blocks, next %d; per node %s", len(after.Blocks), pl.Next(cs, n), s.perNode(&after))
	return b.String()
}
