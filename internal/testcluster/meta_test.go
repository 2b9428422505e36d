package testcluster_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// metaStatus is the metadata part of `cairn admin status --json`.
type metaStatus struct {
	Meta struct {
		Leader  string `json:"leader"`
		Voters  int    `json:"voters"`
		Up      int    `json:"up"`
		Quorum  int    `json:"quorum"`
		Members []struct {
			Name      string `json:"name"`
			Up        bool   `json:"up"`
			Leader    bool   `json:"leader"`
			RaftTerm  uint64 `json:"raft_term"`
			RaftIndex uint64 `json:"raft_index"`
			DBSize    int64  `json:"db_size"`
		} `json:"members"`
	} `json:"meta"`
	Warnings []string `json:"warnings"`
}

func readMetaStatus(t *testing.T, c *testcluster.Cluster) metaStatus {
	t.Helper()
	var st metaStatus
	if err := json.Unmarshal([]byte(c.CLI(t, "admin", "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// admin status shows the metadata members and their leader. The leader
// stopped with SIGTERM exits fast and logs no error; then status names it
// down and warns that one more loss loses the quorum.
func TestMetaMembersInStatus(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{Metas: 3, Nodes: 1})
	st := readMetaStatus(t, c)
	if st.Meta.Voters != 3 || st.Meta.Up != 3 || st.Meta.Quorum != 2 || st.Meta.Leader == "" || len(st.Meta.Members) != 3 {
		t.Fatalf("status of a healthy 3-member cluster: %+v", st.Meta)
	}
	for _, m := range st.Meta.Members {
		if !m.Up || m.RaftTerm == 0 || m.RaftIndex == 0 || m.DBSize == 0 || m.Leader != (m.Name == st.Meta.Leader) {
			t.Fatalf("member %+v of a healthy cluster led by %s", m, st.Meta.Leader)
		}
	}
	for _, w := range st.Warnings {
		if strings.Contains(w, "metadata") {
			t.Fatalf("a healthy 3-member cluster warns: %q", w)
		}
	}
	text := c.CLI(t, "admin", "status")
	var err error
	if !strings.Contains(text, "metadata: 3 members, 3 up, quorum 2, leader "+st.Meta.Leader) {
		t.Fatalf("admin status does not show the members:\n%s", text)
	}

	leader := st.Meta.Leader
	var p *testcluster.Proc
	for _, m := range c.Metas {
		if m.Name() == leader {
			p = m
		}
	}
	if p == nil {
		t.Fatalf("no member process is named %s", leader)
	}
	// Clients hold streams open on the member, as nodes and gateways do:
	// a watch and a lease keep-alive.
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(p.Addr(proc.Meta), ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	wch := cli.Watch(t.Context(), "/stream-probe")
	lease, err := cli.Grant(t.Context(), 30)
	if err != nil {
		t.Fatal(err)
	}
	kch, err := cli.KeepAlive(t.Context(), lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	<-kch // the keep-alive stream is open
	if _, err := cli.Put(t.Context(), "/stream-probe", "x"); err != nil {
		t.Fatal(err)
	}
	<-wch // so is the watch stream
	start := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("member %s still runs 20 s after SIGTERM", leader)
	}
	took := time.Since(start)
	t.Logf("the leader %s exited %v after SIGTERM", leader, took.Round(time.Millisecond))
	if took > 5*time.Second { // generous: the machine is shared
		t.Errorf("the leader took %v to stop after SIGTERM, want under 5 s", took)
	}
	for _, line := range strings.Split(p.Output(), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, `"level":"error"`) {
			t.Errorf("stopping member %s logged an error: %s", leader, line)
		}
	}

	// real time: the remaining members elect a leader on their own clock.
	deadline := time.Now().Add(30 * time.Second)
	for st = readMetaStatus(t, c); (st.Meta.Leader == "" || st.Meta.Leader == leader) && time.Now().Before(deadline); st = readMetaStatus(t, c) {
		time.Sleep(200 * time.Millisecond) // real time: waiting for the election
	}
	if st.Meta.Up != 2 || st.Meta.Leader == "" || st.Meta.Leader == leader {
		t.Fatalf("status with %s stopped: %+v", leader, st.Meta)
	}
	text = c.CLI(t, "admin", "status")
	for _, want := range []string{"metadata member " + leader + " ", "is down", "losing one more loses its quorum"} {
		if !strings.Contains(text, want) {
			t.Errorf("admin status with %s stopped lacks %q:\n%s", leader, want, text)
		}
	}
	// One more member stopped: no store can be opened on the one left, and
	// status fails, but the member left says who is missing.
	var second *testcluster.Proc
	for _, m := range c.Metas {
		if m.Alive() && second == nil {
			second = m
		}
	}
	if err := second.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-second.Done()
	text, err = c.TryCLI(t.Context(), "admin", "status")
	if err == nil {
		t.Fatalf("admin status succeeds with 1 of 3 metadata members:\n%s", text)
	}
	t.Logf("admin status with 1 of 3 members:\n%s", text)
	for _, want := range []string{"the metadata members that answer say", "lost its quorum: 1 of 3 members answer, writes need 2",
		"metadata member " + leader + " ", "metadata member " + second.Name() + " "} {
		if !strings.Contains(text, want) {
			t.Errorf("admin status with %s and %s stopped lacks %q:\n%s", leader, second.Name(), want, text)
		}
	}
}

// A cluster that starts, or restarts node by node, logs no "missed its
// liveness lease": a director that has just started leading gives the
// nodes a lease's time to renew before it judges them. A node that really
// stops renewing still gets the warning.
func TestNoFalseLeaseWarningAtStart(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{Nodes: 3})
	const missed = "missed its liveness lease"
	logs := func() string {
		var b strings.Builder
		for _, n := range c.Nodes {
			b.WriteString(n.Output())
		}
		return b.String()
	}
	settle := func(what string) {
		t.Helper()
		// The director judges every 2 s: give it a few rounds.
		time.Sleep(5 * time.Second) // real time: the director's rounds run on the processes' clocks
		if strings.Contains(logs(), missed) {
			t.Fatalf("%s: the nodes log %q:\n%s", what, missed, logs())
		}
	}
	settle("a freshly started cluster")

	// Stop every node, then start them again one after the other: the
	// first to start leads at once and finds the others' disks up with
	// no lease.
	for _, n := range c.Nodes {
		if err := n.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		<-n.Done()
	}
	time.Sleep(11 * time.Second) // real time: the stopped nodes' leases (10 s) run out, as in any restart that is not instant
	for _, n := range c.Nodes {
		if err := n.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // real time: nodes of a restarting cluster come up apart
	}
	settle("a cluster restarted node by node")

	c.Nodes[2].Kill() // SIGKILL: its lease (10 s) runs out
	deadline := time.Now().Add(45 * time.Second)
	for !strings.Contains(logs(), "node3 "+missed) {
		if time.Now().After(deadline) {
			t.Fatalf("node3 was killed 45 s ago and no director logged %q:\n%s", "node3 "+missed, logs())
		}
		time.Sleep(500 * time.Millisecond) // real time: waiting for the lease to run out
	}
}

// Replacing a member: remove meta3 (its process stops), add meta4 and
// start it with the command admin meta add prints; status then shows
// meta1, meta2 and meta4, all up. The changes' errors name the problem.
func TestMetaRemoveAndAdd(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{Metas: 3, Nodes: 1})
	out := c.CLI(t, "admin", "meta", "remove", "meta3")
	if !strings.Contains(out, "removed metadata member meta3") || !strings.Contains(out, "the cluster has 2 members (meta1, meta2), quorum 2: it survives the loss of 0 members") {
		t.Fatalf("admin meta remove meta3:\n%s", out)
	}
	select {
	case <-c.Metas[2].Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("meta3 runs 30 s after its removal:\n%s", c.Metas[2].Output())
	}
	if out := c.Metas[2].Output(); !strings.Contains(out, "removed from the metadata cluster; stopped") || strings.Contains(out, "panic") ||
		strings.Contains(out, "level=ERROR") {
		t.Errorf("meta3 after its removal:\n%s", out)
	}

	// If meta3 led, the others elect a leader.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.TryCLI(t.Context(), "admin", "status", "--json")
		var st metaStatus
		if err == nil && json.Unmarshal([]byte(out), &st) == nil && st.Meta.Leader != "" && st.Meta.Up == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader 30 s after meta3's removal: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond) // real time: the members' election
	}
	if out, err := c.TryCLI(t.Context(), "admin", "meta", "remove", "meta9"); err == nil || !strings.Contains(out, "no member is named meta9") ||
		!strings.Contains(out, "members: meta1, meta2") {
		t.Errorf("remove of an unknown member: %v\n%s", err, out)
	}
	if out, err := c.TryCLI(t.Context(), "admin", "meta", "add", "meta1", "unix://meta9:2380"); err == nil || !strings.Contains(out, "a member named meta1 exists") {
		t.Errorf("add of a taken name: %v\n%s", err, out)
	}

	out = c.CLI(t, "admin", "meta", "add", "meta4", "unix://meta4:2380")
	m := regexp.MustCompile(`--initial-cluster '([^']+)' --initial-cluster-state existing`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "added metadata member meta4") {
		t.Fatalf("admin meta add prints no start command:\n%s", out)
	}
	if want := "meta4=unix://meta4:2380"; !strings.Contains(m[1], want) || strings.Contains(m[1], "meta3") {
		t.Fatalf("initial cluster %q: want meta1, meta2 and %s", m[1], want)
	}
	if out, err := c.TryCLI(t.Context(), "admin", "meta", "add", "meta5", "unix://meta5:2380"); err == nil || !strings.Contains(out, "has not started") {
		t.Errorf("add while meta4 has not started: %v\n%s", err, out)
	}
	p, err := proc.Start(t.Context(), proc.Config{Name: "meta4", Bin: testcluster.Binary(t), Dir: c.Dir, Args: []string{"meta",
		"--name", "meta4", "--data", filepath.Join(c.Dir, "meta4"), "--client-addr", "127.0.0.1:0", "--peer-addr", "unix://meta4:2380",
		"--initial-cluster", m[1], "--initial-cluster-state", "existing"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)

	// The clients' configuration lists the new member's endpoint.
	eps := append(slices.Clone(c.MetaEndpoints()[:2]), p.Addr(proc.Meta))
	conf := filepath.Join(t.TempDir(), "client.conf")
	b, _ := json.Marshal(map[string]any{"meta": eps, "secret": c.Secret()})
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var st metaStatus
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, err := testcluster.RunCLI(t.Context(), conf, "admin", "status", "--json")
		if err != nil {
			t.Fatalf("status: %v\n%s", err, out)
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		if st.Meta.Up == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond) // real time: meta4 catches up with the others
	}
	var names []string
	for _, mem := range st.Meta.Members {
		names = append(names, mem.Name)
	}
	slices.Sort(names)
	if st.Meta.Voters != 3 || st.Meta.Up != 3 || !slices.Equal(names, []string{"meta1", "meta2", "meta4"}) {
		t.Fatalf("status after the replacement: %+v", st.Meta)
	}
}

// The cluster: rs-6-3 over 4 nodes of 3 disks. Status says that
// it survives any one node loss (not "cannot survive a node loss"), and
// it does: with a node killed, the object reads back.
func TestStatusSaysWhatANodeLossCosts(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{Nodes: 4, DisksPerNode: 3})
	c.CLI(t, "mb", "spread", "--policy", "rs-6-3")
	path, _ := writeFile(t, t.TempDir(), "obj", 3<<20, 7)
	c.CLI(t, "put", path, "spread/obj")
	status := c.CLI(t, "admin", "status")
	want := "rs-6-3 over 4 nodes (up to 3 shards of a stripe on one node): survives any 1 node loss, but no 2 nodes at once without losing some stripes"
	if !strings.Contains(status, want) || strings.Contains(status, "cannot survive") {
		t.Fatalf("admin status lacks %q or claims a node loss is fatal:\n%s", want, status)
	}
	c.Nodes[1].Kill()
	out := filepath.Join(t.TempDir(), "out")
	c.CLI(t, "get", "spread/obj", out)
	if !sameFile(t, path, out) {
		t.Fatal("the object read with node2 killed differs")
	}
}
