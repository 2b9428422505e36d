package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"cairn"
	"cairn/director"
	"cairn/placement"
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

// The cluster: rs-6-3 over 4 nodes of 3 disks. Status says it
// survives any single node loss (not "cannot survive a node loss") and
// which pairs it survives, computed over the real table.
func TestTableSurvival(t *testing.T) {
	var nodes []cairn.Node
	var disks []cairn.Disk
	nodeOf := map[cairn.DiskID]cairn.NodeID{}
	for n := 1; n <= 4; n++ {
		id := cairn.NodeID(fmt.Sprintf("node%d", n))
		nodes = append(nodes, cairn.Node{ID: id})
		for d := 1; d <= 3; d++ {
			disk := cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/d%d", id, d)), Node: id, State: cairn.DiskUp, Capacity: 1 << 40}
			disks = append(disks, disk)
			nodeOf[disk.ID] = id
		}
	}
	tab, err := placement.Compute(placement.Input{Nodes: nodes, Disks: disks, Width: 9})
	if err != nil {
		t.Fatal(err)
	}
	ps, warn := tableSurvival(tab, []string{"rs-4-2", "rs-6-3", "lrc-6-2-1"}, nodeOf)
	if len(ps) != 2 || ps[0].Policy != "rs-6-3" || ps[1].Policy != "lrc-6-2-1" || len(warn) != 2 {
		t.Fatalf("policies %+v, warnings %q; want rs-6-3 and lrc-6-2-1 (width 9), each warned", ps, warn)
	}
	want := "rs-6-3 over 4 nodes (up to 3 shards of a stripe on one node): survives any 1 node loss, but no 2 nodes at once without losing some stripes"
	if ps[0].Survival != want || ps[0].AnyNodeLosses != 1 || warn[0] != want {
		t.Errorf("rs-6-3: %+v, warning %q; want %q", ps[0], warn[0], want)
	}
	if strings.Contains(strings.Join(warn, "\n"), "cannot survive") {
		t.Errorf("warnings %q claim a node loss is fatal", warn)
	}
	if ps, warn := tableSurvival(tab, []string{"rs-4-2"}, nodeOf); len(ps) != 0 || len(warn) != 1 || !strings.Contains(warn[0], "width 9") {
		t.Errorf("no policy of the width: %+v, %q", ps, warn)
	}
}

// admin meta add and remove check their arguments before connecting.
func TestMetaMemberArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add"}, "takes 2 argument(s), got 0"},
		{[]string{"add", "m4"}, "takes 2 argument(s), got 1"},
		{[]string{"add", "m4", "10.0.0.4"}, `peer address "10.0.0.4": want HOST:PORT`},
		{[]string{"add", "m4", "10.0.0.4:0"}, "port 0 cannot be known"},
		{[]string{"add", "m4", "ftp://10.0.0.4:2380"}, `scheme "ftp", want http, https or unix`},
		{[]string{"add", "m4", "http://10.0.0.4:2380/x"}, "a peer URL has no path"},
		{[]string{"add", "m=4", "10.0.0.4:2380"}, `member name "m=4"`},
		{[]string{"add", "", "10.0.0.4:2380"}, `member name ""`},
		{[]string{"remove"}, "takes 1 argument(s), got 0"},
		{[]string{"remove", ""}, "empty member name"},
		{[]string{"remove", "m1", "m2"}, "takes 1 argument(s), got 2"},
	} {
		_, _, err := run(t, append([]string{"admin", "meta"}, tc.args...)...)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("admin meta %q: %v, want a usage error saying %q", tc.args, err, tc.want)
		}
	}
	for addr, want := range map[string]string{"10.0.0.4:2380": "http://10.0.0.4:2380", "unix://m4:2380": "unix://m4:2380",
		"https://h:1/": "https://h:1"} {
		if got, err := memberPeerURL("m4", addr, "http"); err != nil || got != want {
			t.Errorf("peer address %q: %q, %v; want %q", addr, got, err, want)
		}
	}
	// A cluster on TLS: HOST:PORT is an https peer.
	if got, err := memberPeerURL("m4", "10.0.0.4:2380", "https"); err != nil || got != "https://10.0.0.4:2380" {
		t.Errorf("peer address on TLS: %q, %v", got, err)
	}
}

// cairn meta --help says how a member joins a running cluster.
func TestMetaHelpSaysHowToJoin(t *testing.T) {
	out, _, err := run(t, "meta", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cairn admin meta add NAME PEER-ADDR", "--initial-cluster-state existing", "docs/meta-members.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("cairn meta --help lacks %q:\n%s", want, out)
		}
	}
}
