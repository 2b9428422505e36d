package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// clusterStatus is what the membership test reads of `cairn admin status
// --json`.
type clusterStatus struct {
	Nodes []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"nodes"`
	Disks     []cairn.Disk `json:"disks"`
	Rebalance string       `json:"rebalance"`
}

func statusOf(t *testing.T, conf string) clusterStatus {
	t.Helper()
	out, err := testcluster.RunCLI(context.Background(), conf, "admin", "status", "--json")
	if err != nil {
		t.Fatalf("admin status: %v\n%s", err, out)
	}
	var st clusterStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("admin status --json: %v\n%s", err, out)
	}
	return st
}

func (st clusterStatus) node(id string) string {
	for _, n := range st.Nodes {
		if n.ID == id {
			return n.State
		}
	}
	return "missing"
}

// diskBytes returns the shard bytes `cairn admin du` counts on each up
// disk.
func diskBytes(t *testing.T, conf string, st clusterStatus) map[cairn.DiskID]int64 {
	t.Helper()
	out, err := testcluster.RunCLI(context.Background(), conf, "admin", "du", "--json", "--disks")
	if err != nil {
		t.Fatalf("admin du: %v\n%s", err, out)
	}
	var du struct {
		Disks []struct {
			Disk  cairn.DiskID `json:"disk"`
			Bytes int64        `json:"bytes"`
		} `json:"disks"`
	}
	if err := json.Unmarshal([]byte(out), &du); err != nil {
		t.Fatalf("admin du --json: %v\n%s", err, out)
	}
	up := map[cairn.DiskID]bool{}
	for _, d := range st.Disks {
		up[d.ID] = d.State == cairn.DiskUp
	}
	res := map[cairn.DiskID]int64{}
	for id, ok := range up {
		if ok {
			res[id] = 0
		}
	}
	for _, d := range du.Disks {
		if up[d.Disk] {
			res[d.Disk] = d.Bytes
		}
	}
	return res
}

// Node membership on real processes (issue #24): objects on 4 nodes; node4
// is drained at a set rate while S3 keeps serving reads, becomes removed,
// and `node remove` says so; a new node5 joins empty and the rebalancer
// moves shards onto it until every up disk holds within 10% of the most
// used one's bytes; every object reads back byte-exact; node4 is
// readmitted. The pace itself is checked in virtual time
// (repair.TestDrainIsPaced); here the drains and moves just complete.
func TestNodeDrainRemoveAndRebalance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a drain and a rebalance on real processes")
	}
	ctx := context.Background()
	c := testcluster.Start(t, testcluster.Config{Nodes: 4, DisksPerNode: 2, Grace: 2 * time.Second,
		NodeArgs: []string{"--repair-scan", "1s", "--move-rate", "4MiB", "--rebalance-min-spread", "0"}})
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.TryCLI(ctx, "admin", "status")
			t.Logf("status:\n%s", out)
		}
	})
	s3c := startGateway(t, c)
	c.CLI(t, "mb", "bkt", "--policy", "rs-2-1")
	const objects, size = 64, 32 << 10
	data := map[string][]byte{}
	for i := range objects {
		key := fmt.Sprintf("obj-%02d", i)
		data[key] = patternBytes(size, uint64(i))
		if err := s3Put(ctx, s3c, key, data[key]); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func(what string) {
		t.Helper()
		for key, want := range data {
			got, err := s3Get(ctx, s3c, key)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: GET %s: %d bytes, %v", what, key, len(got), err)
			}
		}
	}

	out := c.CLI(t, "admin", "node", "drain", "node4", "--rate", "1MiB")
	if !strings.Contains(out, "node node4:") || !strings.Contains(out, "moved off at most at 1MiB/s") {
		t.Fatalf("drain said:\n%s", out)
	}
	start := time.Now()
	reads := 0
	for statusOf(t, c.Conf).node("node4") != "removed" {
		if time.Since(start) > 60*time.Second {
			t.Fatal("node4 not drained after 60 s")
		}
		// S3 keeps serving while the shards move.
		key := fmt.Sprintf("obj-%02d", reads%objects)
		if got, err := s3Get(ctx, s3c, key); err != nil || !bytes.Equal(got, data[key]) {
			t.Fatalf("GET %s during the drain: %d bytes, %v", key, len(got), err)
		}
		reads++
		time.Sleep(200 * time.Millisecond) // real time: the drain runs in the node processes
	}
	t.Logf("node4 drained in %v, %d reads during the drain", time.Since(start).Round(time.Millisecond), reads)
	if out := c.CLI(t, "admin", "node", "remove", "node4"); !strings.Contains(out, "node node4 is removed: every disk of it is out") {
		t.Fatalf("remove said:\n%s", out)
	}
	readAll("after the drain")

	// A new node joins empty; the rebalancer moves shards onto it.
	var disks []string
	for d := 1; d <= 2; d++ {
		disks = append(disks, filepath.Join(c.Dir, "node5", fmt.Sprintf("disk%d", d)))
	}
	args := append(proc.NodeArgs("node5", c.MetaEndpoints(), filepath.Join(c.Dir, "secret"), disks), "--grace", "2s",
		"--repair-scan", "1s", "--move-rate", "4MiB", "--rebalance-min-spread", "0")
	testcluster.StartProc(t, "node5", args...)
	start = time.Now()
	for {
		st := statusOf(t, c.Conf)
		use := diskBytes(t, c.Conf, st)
		lo, hi := int64(-1), int64(0)
		for _, b := range use {
			if lo < 0 || b < lo {
				lo = b
			}
			hi = max(hi, b)
		}
		if len(use) == 8 && hi > 0 && float64(lo) >= 0.9*float64(hi) {
			t.Logf("balanced in %v: up disks hold %d to %d bytes; %s", time.Since(start).Round(time.Millisecond), lo, hi, st.Rebalance)
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("not within 10%% after 60 s: %v (%s)", use, st.Rebalance)
		}
		time.Sleep(time.Second) // real time: the rebalancer runs in the director's process
	}
	readAll("after the rebalance")

	if out := c.CLI(t, "admin", "node", "readmit", "node4"); !strings.Contains(out, "node node4 is back in service") {
		t.Fatalf("readmit said:\n%s", out)
	}
	if st := statusOf(t, c.Conf); st.node("node4") != "up" {
		t.Fatalf("node4 after readmit: %s", st.node("node4"))
	}
}

// shardNodes returns the node of each shard of an object, from `cairn stat
// --json`.
func shardNodes(t *testing.T, c *testcluster.Cluster, key string) []string {
	t.Helper()
	var m cairn.Manifest
	if err := json.Unmarshal([]byte(c.CLI(t, "stat", "--json", "bkt/"+key)), &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range m.Shards {
		n, _, _ := strings.Cut(string(s.Disk), "/")
		out = append(out, n)
	}
	return out
}

func distinct(nodes []string) bool {
	seen := map[string]bool{}
	for _, n := range nodes {
		if seen[n] {
			return false
		}
		seen[n] = true
	}
	return true
}

// The issue #14 case on real processes: objects PUT while only node1 has
// registered have every shard on node1; once node2 and node3 register,
// the director recomputes the placement-group table (distinct nodes, epoch
// 1) and the rebalancer moves shards until every stripe spans three
// nodes; a new PUT lands on three nodes; every object reads back.
func TestPutBeforeNodesRegistered(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a rebalance on real processes")
	}
	ctx := context.Background()
	c := testcluster.Start(t, testcluster.Config{Nodes: 1, DisksPerNode: 3, Grace: 2 * time.Second,
		NodeArgs: []string{"--repair-scan", "1s", "--move-rate", "4MiB", "--rebalance-min-spread", "0"}})
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.TryCLI(ctx, "admin", "status")
			t.Logf("status:\n%s", out)
		}
	})
	s3c := startGateway(t, c)
	c.CLI(t, "mb", "bkt", "--policy", "rs-2-1")
	const objects = 12
	data := map[string][]byte{}
	for i := range objects {
		key := fmt.Sprintf("obj-%02d", i)
		data[key] = patternBytes(32<<10, uint64(i))
		if err := s3Put(ctx, s3c, key, data[key]); err != nil {
			t.Fatal(err)
		}
	}
	if n := shardNodes(t, c, "obj-00"); distinct(n) {
		t.Fatalf("with one node registered, obj-00 is on nodes %v", n)
	}
	for i := 2; i <= 3; i++ {
		id := fmt.Sprintf("node%d", i)
		var disks []string
		for d := 1; d <= 3; d++ {
			disks = append(disks, filepath.Join(c.Dir, id, fmt.Sprintf("disk%d", d)))
		}
		args := append(proc.NodeArgs(id, c.MetaEndpoints(), filepath.Join(c.Dir, "secret"), disks), "--grace", "2s",
			"--repair-scan", "1s", "--move-rate", "4MiB", "--rebalance-min-spread", "0")
		testcluster.StartProc(t, id, args...)
	}
	start := time.Now()
	for {
		spread := 0
		for key := range data {
			if distinct(shardNodes(t, c, key)) {
				spread++
			}
		}
		if spread == objects {
			t.Logf("every object on 3 distinct nodes %v after node2 and node3 started", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("after 60 s only %d of %d objects span distinct nodes", spread, objects)
		}
		time.Sleep(time.Second) // real time: the director's duties run in node1's process
	}
	out, err := testcluster.RunCLI(ctx, c.Conf, "admin", "status", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Tables []struct {
			Width    int  `json:"width"`
			Distinct bool `json:"distinct_nodes"`
			Epoch    int  `json:"epoch"`
		} `json:"pg_tables"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Tables) != 1 || !st.Tables[0].Distinct || st.Tables[0].Epoch < 1 {
		t.Fatalf("placement groups after the nodes joined: %+v (%v)", st.Tables, err)
	}
	// A new object follows the recomputed table (clients re-read it within 5 s).
	time.Sleep(6 * time.Second) // real time: the gateway's cached table ages out
	data["new"] = patternBytes(32<<10, 99)
	if err := s3Put(ctx, s3c, "new", data["new"]); err != nil {
		t.Fatal(err)
	}
	if n := shardNodes(t, c, "new"); !distinct(n) {
		t.Fatalf("a PUT after the nodes joined is on nodes %v", n)
	}
	for key, want := range data {
		if got, err := s3Get(ctx, s3c, key); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("GET %s: %d bytes, %v", key, len(got), err)
		}
	}
}
