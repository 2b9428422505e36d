package raidpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/testcluster"
)

// TestRAIDPRecoveryKilled kills -9 the process running a RAIDP recovery
// (`cairn admin raidp recover`, the director's code) at growing delays,
// again and again, on real processes: each run resumes the plan stored
// in raidp/recovery/warm (the same attempt, never re-planned), until one
// completes. Two disks are lost one after the other this way. Every
// object reads back byte-exact, and with every node stopped
// `cairn admin raidp verify --group` finds every Lstor the XOR of its
// disk, the replicas of the group's layout equal and every free slot zero
// (no stray copy counted in an Lstor).
func TestRAIDPRecoveryKilled(t *testing.T) {
	ctx := context.Background()
	const nodes = 6
	// 4 MiB superchunks: each copy is 4 calls of 1 MiB, each a journaled
	// write, so a recovery lasts long enough to be killed half-way. The
	// director's grace (30 s) keeps it from recovering by itself.
	c, check := warmCluster(t, nodes, 0, []int{3 << 20, 3<<20 + 5, 2 << 20, 1 << 20, 4 << 20, 777}, "--raidp-size", "4MiB")
	check("all nodes up")
	var g groupRecord
	readGroup := func() {
		t.Helper()
		if err := json.Unmarshal([]byte(c.CLI(t, "admin", "raidp", "group", "--json")), &g); err != nil {
			t.Fatal(err)
		}
	}
	readGroup()
	var lost []int
	for step := 1; step <= 2; step++ {
		gen := g.Generation
		// A disk holding superchunk 0, not out yet.
		d := g.Disks[g.Layout.Superchunks[0].Replicas[step-1].Disk].ID
		var n int
		fmt.Sscanf(d, "node%d/", &n)
		c.Nodes[n-1].Kill()
		lost = append(lost, n)
		halfway := 0
		for run := 0; ; run++ {
			if run == 80 {
				t.Fatalf("recovering %s: not done after %d killed runs", d, run)
			}
			// real time: the recovery process runs on real disks and is
			// killed after a growing real delay.
			rctx, cancel := context.WithTimeout(ctx, time.Duration(25+25*run)*time.Millisecond)
			out, err := testcluster.RunCLI(rctx, c.Conf, "admin", "raidp", "recover", d)
			cancel()
			if err == nil {
				t.Logf("recovering %s: done in run %d after %d killed half-way: %s", d, run+1, halfway, strings.TrimSpace(out))
				break
			}
			if rctx.Err() == nil {
				t.Fatalf("cairn admin raidp recover %s: %v\n%s", d, err, out)
			}
			var r recovery
			rout, err := c.TryCLI(ctx, "admin", "raidp", "recovery", "--json")
			if err != nil {
				continue // killed before the plan was stored
			}
			if err := json.Unmarshal([]byte(rout), &r); err != nil {
				t.Fatal(err)
			}
			if r.Generation == gen {
				if r.Attempt != 0 {
					t.Fatalf("the recovery of %s was re-planned (attempt %d) instead of resumed", d, r.Attempt)
				}
				halfway++
				if halfway == 1 && !r.complete() {
					// The repair plan shows what is left of it.
					out := c.CLI(t, "admin", "repair", "plan")
					if !strings.Contains(out, fmt.Sprintf("raidp recovery of group warm (ongoing) from the loss of %s:", d)) {
						t.Errorf("cairn admin repair plan during the recovery of %s:\n%s", d, out)
					}
					t.Logf("cairn admin repair plan during the recovery of %s:\n%s", d, out[strings.Index(out, "raidp"):])
					if st := c.CLI(t, "admin", "repair", "status"); !strings.Contains(st, fmt.Sprintf("raidp recovery of group warm from the loss of %s: ", d)) {
						t.Errorf("cairn admin repair status during the recovery of %s:\n%s", d, st)
					}
				}
			}
		}
		if halfway == 0 {
			t.Errorf("recovering %s: no run was killed after its plan was stored", d)
		}
		readGroup()
		if g.Generation != gen+1 || len(g.Out) != step {
			t.Fatalf("after losing %s: generation %d, out %v", d, g.Generation, g.Out)
		}
		var r recovery
		if err := json.Unmarshal([]byte(c.CLI(t, "admin", "raidp", "recovery", "--json")), &r); err != nil {
			t.Fatal(err)
		}
		for i, s := range r.Steps {
			if !s.Done {
				t.Errorf("step %d of the completed recovery of %s not done", i, d)
			}
		}
		if out := c.CLI(t, "admin", "repair", "plan"); strings.Contains(out, "raidp recovery") {
			t.Errorf("cairn admin repair plan after the recovery of %s:\n%s", d, out)
		}
		check(fmt.Sprintf("%d disks lost and recovered", step))
	}

	// Offline: every node stopped, the group's layout checked.
	groupJSON := c.CLI(t, "admin", "raidp", "group", "--json")
	gf := filepath.Join(t.TempDir(), "group.json")
	if err := os.WriteFile(gf, []byte(groupJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		n.Kill()
	}
	args := []string{"admin", "raidp", "verify", "--size", "4MiB", "--slots", "4", "--group", gf}
	for i, disk := range g.Disks {
		var n int
		fmt.Sscanf(disk.ID, "node%d/", &n)
		if contains(g.Out, i) {
			args = append(args, "-")
			continue
		}
		args = append(args, c.NodeDir(n, 1)+",lstor="+c.LstorDir(n, 1))
	}
	out, err := exec.CommandContext(ctx, testcluster.Binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn admin raidp verify: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "free slots: all zero") || !strings.Contains(string(out), "both replicas agree") ||
		strings.Count(string(out), ": ok (") != nodes-len(lost) {
		t.Errorf("cairn admin raidp verify:\n%s", out)
	}
}

// recovery is the part of `cairn admin raidp recovery --json` the test
// reads.
type recovery struct {
	Generation uint64 `json:"generation"`
	Attempt    int    `json:"attempt"`
	Steps      []struct {
		Done bool `json:"done"`
	} `json:"steps"`
}

func (r recovery) complete() bool {
	for _, s := range r.Steps {
		if !s.Done {
			return false
		}
	}
	return true
}

// groupRecord is the part of `cairn admin raidp group --json` the tests
// read.
type groupRecord struct {
	Generation uint64 `json:"generation"`
	Disks      []struct {
		ID string `json:"id"`
	} `json:"disks"`
	Out    []int `json:"out"`
	Layout struct {
		Superchunks []struct {
			Replicas [2]struct {
				Disk int `json:"disk"`
			} `json:"replicas"`
		} `json:"superchunks"`
	} `json:"layout"`
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
