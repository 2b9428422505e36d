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

// TestDirectorKillRiskZeroStripes runs issue #24's stuck-repair situation
// on real processes: rs-6-3 over 4 nodes of 3 disks (3, 2, 2 and 2 shards
// of each stripe per node) under a -Rep scheme, and the director's own node
// is killed, so stripes that had 3 shards on it are at risk 0. A new
// director takes over and repairs every stripe; every object reads back
// byte-exact with the node still dead, the queue is empty, and no round
// failed with targets that "do not fit one repair plan". Here the 3
// replacement disks are on 3 nodes; the exact target set of the issue
// (one node, then two disks of another — left over from an earlier
// attempt) is rebuilt deterministically by repair's
// TestTargetsThatDoNotFitOnePlan, which fails on the code before the fix.
func TestDirectorKillRiskZeroStripes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of 5 processes")
	}
	c := testcluster.Start(t, testcluster.Config{Nodes: 4, DisksPerNode: 3, Grace: 2 * time.Second,
		NodeArgs: []string{"--repair-scheme", "push-rep", "--repair-scan", "1s", "--repair-unit", "64KiB"}})
	d := openDirect(t, c)
	ctx := t.Context()
	c.CLI(t, "mb", "rep", "--policy", "rs-6-3")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if out, err := c.TryCLI(context.Background(), "admin", "repair", "status"); err == nil {
			t.Logf("repair status:\n%s", out)
		}
		for _, p := range c.Nodes {
			lines := strings.Split(p.Output(), "\n")
			t.Logf("%s (last lines):\n%s", p.Name(), strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
	})

	rng := rand.New(rand.NewPCG(24, 3))
	data := putRandom(t, d, "rep", 60, func() int { return 1 + rng.IntN(300<<10) }, rng)
	leader, err := d.meta.Leader(ctx, director.Role)
	if err != nil {
		t.Fatal(err)
	}
	victim := cairn.NodeID(leader)
	riskZero := 0
	for key := range data {
		m, err := d.meta.Manifest(ctx, "rep", key)
		if err != nil {
			t.Fatal(err)
		}
		on := 0
		for _, s := range m.Shards {
			if nodeOf(s.Disk) == victim {
				on++
			}
		}
		if on == 3 {
			riskZero++
		}
	}
	if riskZero == 0 {
		t.Fatalf("no object has 3 shards on the director's node %s: the scenario did not arise", victim)
	}
	t.Logf("killing the director's node %s: %d of %d objects lose 3 shards (risk 0)", victim, riskZero, len(data))
	for i, p := range c.Nodes {
		if fmt.Sprintf("node%d", i+1) == leader {
			p.Kill()
		}
	}
	dead := map[cairn.NodeID]bool{victim: true}
	waitFor(t, 3*time.Minute, "every stripe repaired by the new director", func() bool {
		ts, err := meta.AllRepairTasks(ctx, d.meta)
		return err == nil && len(ts) == 0 && unrepaired(t, d, data, dead) == 0
	})
	if now, err := d.meta.Leader(ctx, director.Role); err != nil || now == leader {
		t.Fatalf("director after the kill: %q, %v", now, err)
	}
	for key, want := range data {
		_, rc, err := d.data.Get(ctx, "rep", key, 0, -1)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: read back %d bytes (%v), want %d", key, len(got), err, len(want))
		}
	}
	logs := ""
	for _, p := range c.Nodes {
		logs += p.Output()
	}
	if strings.Contains(logs, "do not fit one repair plan") {
		t.Errorf("a repair round failed with targets that do not fit one plan")
	}
}
