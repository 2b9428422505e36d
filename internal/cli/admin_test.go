package cli

import (
	"fmt"
	"slices"
	"testing"

	"cairn"
	"cairn/director"
)

func TestFileSystems(t *testing.T) {
	d := func(id, node, fs string, capacity, free int64, st cairn.DiskState) cairn.Disk {
		return cairn.Disk{ID: cairn.DiskID(id), Node: cairn.NodeID(node), FS: fs, Capacity: capacity, Free: free, State: st}
	}
	for _, tc := range []struct {
		name  string
		disks []cairn.Disk
		want  string
	}{
		{"one file system, counted once", []cairn.Disk{
			d("n1/d1", "n1", "dev-1", 100, 40, cairn.DiskUp), d("n1/d2", "n1", "dev-1", 100, 40, cairn.DiskUp),
			d("n1/d3", "n1", "dev-1", 100, 40, cairn.DiskSuspect)},
			"[{n1 dev-1 100 40 [n1/d1 n1/d2 n1/d3]}]"},
		{"same ID on two nodes: two file systems", []cairn.Disk{
			d("n1/d1", "n1", "dev-1", 100, 40, cairn.DiskUp), d("n2/d1", "n2", "dev-1", 50, 10, cairn.DiskUp)},
			"[{n1 dev-1 100 40 [n1/d1]} {n2 dev-1 50 10 [n2/d1]}]"},
		{"unknown file systems count alone", []cairn.Disk{
			d("n1/d1", "n1", "", 100, 40, cairn.DiskUp), d("n1/d2", "n1", "", 100, 40, cairn.DiskUp)},
			"[{n1  100 40 [n1/d1]} {n1  100 40 [n1/d2]}]"},
		{"down disks and unread usage", []cairn.Disk{
			d("n1/d1", "n1", "dev-1", 0, 0, cairn.DiskUp), d("n1/d2", "n1", "dev-1", 100, 40, cairn.DiskUp),
			d("n1/d3", "n1", "dev-2", 300, 300, cairn.DiskDown)},
			"[{n1 dev-1 100 40 [n1/d1 n1/d2]}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(fileSystems(tc.disks)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestStatusHealthy(t *testing.T) {
	healthy := Status{
		Nodes: []NodeStatus{{Node: cairn.Node{ID: "n1"}, Alive: true}},
		Disks: []cairn.Disk{{ID: "n1/d1", State: cairn.DiskUp}, {ID: "n1/d2", State: cairn.DiskUp}},
	}
	if !healthy.Healthy() {
		t.Fatalf("healthy cluster judged unhealthy: %v", healthy.unhealthy())
	}
	for _, tc := range []struct {
		name   string
		change func(*Status)
		want   string
	}{
		{"a dead node", func(s *Status) { s.Nodes[0].Alive = false }, "node n1 is not alive"},
		{"a down disk", func(s *Status) { s.Disks[1].State = cairn.DiskDown }, "disk n1/d2 is down"},
		{"a suspect disk", func(s *Status) { s.Disks[0].State = cairn.DiskSuspect }, "disk n1/d1 is suspect"},
		{"a queued stripe", func(s *Status) { s.Queued = 1 }, "1 stripe to repair"},
	} {
		st := healthy
		st.Nodes = slices.Clone(healthy.Nodes)
		st.Disks = slices.Clone(healthy.Disks)
		tc.change(&st)
		if st.Healthy() || !slices.Contains(st.unhealthy(), tc.want) {
			t.Errorf("%s: healthy %v, reasons %v; want %q", tc.name, st.Healthy(), st.unhealthy(), tc.want)
		}
	}
	// A removed node (every disk out, its process stopped) is not missed.
	st := healthy
	st.Nodes = append(slices.Clone(healthy.Nodes), NodeStatus{Node: cairn.Node{ID: "n2"}, State: director.NodeRemoved})
	st.Disks = append(slices.Clone(healthy.Disks), cairn.Disk{ID: "n2/d1", Node: "n2", State: cairn.DiskOut})
	if !st.Healthy() {
		t.Errorf("with a removed node: %v", st.unhealthy())
	}
}
