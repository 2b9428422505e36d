package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/director"
)

func TestNodeCommands(t *testing.T) {
	ctx := context.Background()
	st, ms := diskCluster(t)
	on := func(node string) (shards int) {
		for _, m := range ms {
			for _, l := range m.Shards {
				if strings.HasPrefix(string(l.Disk), node+"/") {
					shards++
				}
			}
		}
		return shards
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	do := func(op director.NodeOp, id string, rate int64, force bool) (string, error) {
		var out bytes.Buffer
		err := nodeCommand(ctx, st, op, id, rate, force, now, &out)
		return out.String(), err
	}
	states := func(node string) []cairn.DiskState {
		return []cairn.DiskState{diskState(t, st, cairn.DiskID(node+"/d1")).State, diskState(t, st, cairn.DiskID(node+"/d2")).State}
	}

	if _, err := do(director.NodeDrain, "n9", 0, false); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `no node "n9" in the cluster map (nodes: n1, n2, n3, n4)`) {
		t.Fatalf("unknown node: %v", err)
	}
	out, err := do(director.NodeDrain, "n1", 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fmt.Sprintf("node n1: %d shards are moved off at most at 1MiB/s", on("n1"))) {
		t.Fatalf("drain said:\n%s", out)
	}
	for _, id := range []cairn.DiskID{"n1/d1", "n1/d2"} {
		if d := diskState(t, st, id); d.State != cairn.DiskDraining || d.MoveRate != 1<<20 {
			t.Fatalf("%s after the drain: %s at %d B/s", id, d.State, d.MoveRate)
		}
	}
	if _, err := do(director.NodeDrain, "n1", 0, false); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "nothing to drain") {
		t.Fatalf("drain again: %v", err)
	}

	// Shards are left on n1: remove refuses, and says what to do.
	if _, err := do(director.NodeRemove, "n1", 0, false); !errors.Is(err, cairn.ErrInvalid) ||
		!strings.Contains(err.Error(), fmt.Sprintf("node n1 still holds %d shard(s)", on("n1"))) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("remove with shards left: %v", err)
	}
	if s := states("n1"); s[0] != cairn.DiskDraining || s[1] != cairn.DiskDraining {
		t.Fatalf("a refused remove changed n1: %v", s)
	}
	if out, err = do(director.NodeRemove, "n2", 0, true); err != nil || !strings.Contains(out, fmt.Sprintf("node n2 is removed; %d shards that were on it are rebuilt elsewhere", on("n2"))) {
		t.Fatalf("remove --force: %v\n%s", err, out)
	}
	if s := states("n2"); s[0] != cairn.DiskOut || s[1] != cairn.DiskOut {
		t.Fatalf("n2 after remove: %v", s)
	}
	// With n1, n2 and n4 out, n3 holds the last shard or copy of the
	// objects on it (the small ones are 3 copies on 3 of the 4 nodes):
	// even --force refuses to remove it.
	for _, id := range []cairn.DiskID{"n1/d1", "n1/d2", "n4/d1", "n4/d2"} {
		if _, err := st.ChangeDisk(ctx, id, cairn.DiskChange{To: cairn.DiskOut}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := do(director.NodeRemove, "n3", 0, true); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "removing node n3 would lose data") {
		t.Fatalf("remove of a node the data needs: %v", err)
	}
	// Every disk of n1 is out (as after a drain): removed already.
	if out, err = do(director.NodeRemove, "n1", 0, false); err != nil || !strings.Contains(out, "node n1 is removed: every disk of it is out") {
		t.Fatalf("remove of a drained node: %v\n%s", err, out)
	}

	for _, id := range []string{"n1", "n2", "n4"} {
		if out, err = do(director.NodeReadmit, id, 0, false); err != nil || !strings.Contains(out, "node "+id+" is back in service") {
			t.Fatalf("readmit %s: %v\n%s", id, err, out)
		}
		if s := states(id); s[0] != cairn.DiskUp || s[1] != cairn.DiskUp {
			t.Fatalf("%s after readmit: %v", id, s)
		}
	}
	if _, err := do(director.NodeReadmit, "n1", 0, false); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "in service already") {
		t.Fatalf("readmit an up node: %v", err)
	}
}

func TestFmtRebalance(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	at := now.Add(-20 * time.Second)
	tests := []struct {
		b    cairn.RebalanceProgress
		want string
	}{
		{cairn.RebalanceProgress{At: at, Balanced: true, Lo: 95, Hi: 100, Total: 12},
			"balanced: the least used disk holds 95% of the most used's bytes (20s ago; 12 moves so far)"},
		{cairn.RebalanceProgress{At: at, Lo: 0, Hi: 100, Queued: 64, Total: 64},
			"moving: 64 shard moves queued 20s ago (64 so far); the least used disk holds 0% of the most used's bytes"},
		{cairn.RebalanceProgress{At: at, Balanced: true}, "balanced: the least used disk holds 100% of the most used's bytes (20s ago; 0 moves so far)"},
	}
	for _, tc := range tests {
		if got := fmtRebalance(tc.b, now); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.b, got, tc.want)
		}
	}
}

func TestNodeUsage(t *testing.T) {
	for _, args := range [][]string{{"admin", "node"}, {"admin", "node", "drain"}, {"admin", "node", "remove", "a", "b"},
		{"admin", "node", "melt", "a"}, {"admin", "node", "drain", "--rate", "fast", "n1"}, {"admin", "node", "drain", "--rate", "0", "n1"}} {
		if _, _, err := run(t, args...); !errors.Is(err, ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, _, err := run(t, "admin", "node", "drain", "--rate", "fast", "n1"); err == nil || !strings.Contains(err.Error(), `--rate "fast": want a positive size per second`) {
		t.Errorf("a bad rate: %v", err)
	}
	for cmd, usage := range map[string]string{"drain": "NODE [--rate BYTES/s]", "remove": "NODE [--force]", "readmit": "NODE"} {
		out, _, err := run(t, "admin", "node", cmd, "--help")
		if err != nil || !strings.Contains(out, "Usage: cairn admin node "+cmd+" "+usage) {
			t.Errorf("admin node %s --help: %v\n%s", cmd, err, out)
		}
	}
}
