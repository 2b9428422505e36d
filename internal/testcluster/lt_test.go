package testcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/director"
	"cairn/internal/testcluster"
	"cairn/meta"
)

// TestLTRepairRealProcesses: lt-16-3 objects on six node processes of two
// disks each; the node holding most of their blocks (not the director's)
// is killed. The director marks its disks down and the repair replaces
// every block it held with fresh blocks (new IDs) on the other nodes:
// afterwards no manifest names the dead node, every stripe has its 48
// blocks again, at most 15 on a node ((48 − 16 − 2)/2: any two nodes may
// still be lost), and every object reads back byte-exact.
func TestLTRepairRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of 7 processes")
	}
	c := testcluster.Start(t, testcluster.Config{Nodes: 6, DisksPerNode: 2, Grace: 2 * time.Second,
		NodeArgs: []string{"--repair-scan", "1s"}})
	d := openDirect(t, c)
	ctx := t.Context()
	c.CLI(t, "mb", "ltb", "--policy", "lt-16-3")
	rng := rand.New(rand.NewPCG(14, 3))
	data := putRandom(t, d, "ltb", 30, func() int { return 20<<10 + rng.IntN(1500<<10) }, rng) // 1 or 2 stripes of 1 MiB
	manifests := func() map[string]*cairn.Manifest {
		out := map[string]*cairn.Manifest{}
		for key := range data {
			m, err := d.meta.Manifest(ctx, "ltb", key)
			if err != nil {
				t.Fatal(err)
			}
			out[key] = m
		}
		return out
	}
	leader, err := d.meta.Leader(ctx, director.Role)
	if err != nil {
		t.Fatal(err)
	}
	count := map[cairn.NodeID]int{}
	next := map[string]int{} // by stripe version: the Next the PUT recorded
	for _, m := range manifests() {
		if len(m.Coded) == 0 {
			t.Fatalf("%s is not fountain-coded", m.Key)
		}
		for _, cs := range m.Coded {
			next[cs.Version] = cs.Next
			for _, b := range cs.Blocks {
				count[nodeOf(b.Disk)]++
			}
		}
	}
	victim := busiest(c, leader, count)
	victimID := cairn.NodeID(fmt.Sprintf("node%d", victim+1))
	t.Logf("killing %s (%d blocks); director is %s", victimID, count[victimID], leader)
	c.Nodes[victim].Kill()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ts, err := meta.AllRepairTasks(context.Background(), d.meta)
		t.Logf("%d tasks (%v)", len(ts), err)
		for i, task := range ts {
			if i < 5 {
				t.Logf("task %+v", task)
			}
		}
		for _, p := range c.Nodes {
			var lines []string
			for _, l := range strings.Split(p.Output(), "\n") {
				if strings.Contains(l, "repair") {
					lines = append(lines, l)
				}
			}
			t.Logf("%s (repair lines):\n%s", p.Name(), strings.Join(lines[max(0, len(lines)-10):], "\n"))
		}
	})

	left := func() (onDead, short int) {
		for _, m := range manifests() {
			for _, cs := range m.Coded {
				if len(cs.Blocks) != 48 {
					short++
				}
				for _, b := range cs.Blocks {
					if nodeOf(b.Disk) == victimID {
						onDead++
					}
				}
			}
		}
		return onDead, short
	}
	waitFor(t, 3*time.Minute, "every lt stripe repaired", func() bool {
		ts, err := meta.AllRepairTasks(ctx, d.meta)
		onDead, short := left()
		return err == nil && len(ts) == 0 && onDead == 0 && short == 0
	})
	for key, m := range manifests() {
		for s, cs := range m.Coded {
			per := map[cairn.NodeID]int{}
			for _, b := range cs.Blocks {
				per[nodeOf(b.Disk)]++
				if b.ID >= cs.Next {
					t.Fatalf("%s stripe %d: block %d at or above next %d", key, s, b.ID, cs.Next)
				}
			}
			for n, k := range per {
				if k > 15 {
					t.Fatalf("%s stripe %d: %d blocks on %s, more than 15", key, s, k, n)
				}
			}
			if cs.Next <= next[cs.Version] {
				t.Fatalf("%s stripe %d: next %d, no higher than the PUT's %d: no fresh IDs", key, s, cs.Next, next[cs.Version])
			}
		}
		_, rc, err := d.data.Get(ctx, "ltb", key, 0, -1)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data[key]) {
			t.Fatalf("%s: read back %d bytes (%v), want %d", key, len(got), err, len(data[key]))
		}
	}
}
