package testcluster_test

import (
	"encoding/json"
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
