package director

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"cairn"
)

func nodeDisks(states ...cairn.DiskState) []cairn.Disk {
	var out []cairn.Disk
	for i, s := range states {
		out = append(out, cairn.Disk{ID: cairn.DiskID("n1/d" + string(rune('1'+i))), Node: "n1", State: s,
			Volume: "v", Trusted: "v", Check: cairn.CheckOK})
	}
	return out
}

func TestNodeState(t *testing.T) {
	tests := []struct {
		states []cairn.DiskState
		want   string
	}{
		{nil, NodeEmpty},
		{[]cairn.DiskState{cairn.DiskUp, cairn.DiskUp}, NodeUp},
		{[]cairn.DiskState{cairn.DiskUp, cairn.DiskDraining}, NodeDraining},
		{[]cairn.DiskState{cairn.DiskOut, cairn.DiskDraining}, NodeDraining},
		{[]cairn.DiskState{cairn.DiskOut, cairn.DiskOut}, NodeRemoved},
		{[]cairn.DiskState{cairn.DiskOut, cairn.DiskUp}, NodeDegraded},
		{[]cairn.DiskState{cairn.DiskSuspect, cairn.DiskUp}, NodeDegraded},
	}
	for _, tc := range tests {
		if got := NodeState(nodeDisks(tc.states...)); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.states, got, tc.want)
		}
	}
}

func TestOperateNode(t *testing.T) {
	type change struct {
		disk string
		to   cairn.DiskState
	}
	tests := []struct {
		name    string
		op      NodeOp
		states  []cairn.DiskState
		alive   bool
		rate    int64
		want    []change
		skipped int
		err     string // substring of the error; "" none
	}{
		{"drain every up disk, at a rate", NodeDrain, []cairn.DiskState{cairn.DiskUp, cairn.DiskUp}, true, 1 << 20,
			[]change{{"n1/d1", cairn.DiskDraining}, {"n1/d2", cairn.DiskDraining}}, 0, ""},
		{"drain leaves down and out disks", NodeDrain, []cairn.DiskState{cairn.DiskDown, cairn.DiskUp, cairn.DiskOut}, true, 0,
			[]change{{"n1/d2", cairn.DiskDraining}}, 2, ""},
		{"drain with nothing up", NodeDrain, []cairn.DiskState{cairn.DiskDraining, cairn.DiskOut}, true, 0, nil, 0,
			"node n1: nothing to drain: disk n1/d1 is draining: draining already; disk n1/d2 is out: out: nothing to drain"},
		{"drain at a negative rate", NodeDrain, []cairn.DiskState{cairn.DiskUp}, true, -5, nil, 0, "negative move rate -5 B/s"},
		{"remove takes every disk out", NodeRemove, []cairn.DiskState{cairn.DiskDraining, cairn.DiskOut, cairn.DiskUp}, false, 0,
			[]change{{"n1/d1", cairn.DiskOut}, {"n1/d3", cairn.DiskOut}}, 1, ""},
		{"remove takes no rate", NodeRemove, []cairn.DiskState{cairn.DiskUp}, true, 7, nil, 0, "only drain takes a move rate"},
		{"remove a drained node", NodeRemove, []cairn.DiskState{cairn.DiskOut, cairn.DiskOut}, true, 0, nil, 2, ""},
		{"readmit a drained node", NodeReadmit, []cairn.DiskState{cairn.DiskOut, cairn.DiskDraining, cairn.DiskUp}, true, 0,
			[]change{{"n1/d1", cairn.DiskUp}, {"n1/d2", cairn.DiskUp}}, 1, ""},
		{"readmit a dead node", NodeReadmit, []cairn.DiskState{cairn.DiskOut}, false, 0, nil, 0,
			"nothing to readmit: disk n1/d1 is out: it can come back only once its node n1 is alive"},
		{"readmit an up node", NodeReadmit, []cairn.DiskState{cairn.DiskUp}, true, 0, nil, 0, "disk n1/d1 is up: in service already"},
		{"no disks", NodeDrain, nil, true, 0, nil, 0, "node n1 has no disk in the cluster map"},
		{"unknown command", "melt", []cairn.DiskState{cairn.DiskUp}, true, 0, nil, 0, `unknown node command "melt"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			trs, skipped, err := OperateNode(tc.op, "n1", nodeDisks(tc.states...), tc.alive, tc.rate)
			if tc.err != "" {
				if !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []change
			for _, tr := range trs {
				got = append(got, change{string(tr.Disk), tr.To})
				if tr.MoveRate != tc.rate {
					t.Errorf("%s: rate %d, want %d", tr.Disk, tr.MoveRate, tc.rate)
				}
			}
			if !slices.Equal(got, tc.want) || len(skipped) != tc.skipped {
				t.Fatalf("changes %v, skipped %q; want %v and %d skipped", got, skipped, tc.want, tc.skipped)
			}
		})
	}
	if _, _, err := OperateNode(NodeDrain, "n2", nodeDisks(cairn.DiskUp), true, 0); err == nil || !strings.Contains(err.Error(), "disk n1/d1 is on node n1, not n2") {
		t.Fatalf("a disk of another node: %v", err)
	}
}
