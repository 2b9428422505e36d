package testcluster_test

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// Every role binds port 0 and its ready line gives the bound addresses:
// the members' client URLs and unix peer sockets, the node's address as
// registered in the cluster map, and a gateway's S3 API.
func TestReadyLinesGiveBoundAddresses(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{})
	m := c.Metas[0]
	if m.Ready().Role != "meta" || m.Addr(proc.Peer) != "unix://meta1:2380" || len(c.MetaEndpoints()) != 1 ||
		c.MetaEndpoints()[0] != m.Addr(proc.Meta) {
		t.Fatalf("meta ready line %v, endpoints %v", m.Ready(), c.MetaEndpoints())
	}
	nodeAddr := c.Nodes[0].Addr(proc.Node)
	if _, port, err := net.SplitHostPort(nodeAddr); err != nil || port == "0" {
		t.Fatalf("node ready line %v", c.Nodes[0].Ready())
	}
	var st struct {
		Nodes []struct {
			ID   string `json:"id"`
			Addr string `json:"addr"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(c.CLI(t, "admin", "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 1 || st.Nodes[0].Addr != nodeAddr {
		t.Fatalf("cluster map has nodes %+v, the ready line says %s", st.Nodes, nodeAddr)
	}

	gw := testcluster.StartProc(t, "gateway", "gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey)
	resp, err := http.Get(gw.Addr(proc.S3) + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous GET / on the gateway's %s: %s, want 403", gw.Addr(proc.S3), resp.Status)
	}
	// The web console, on a port of its own (the one after S3's, here 0).
	con := gw.Addr(proc.Console)
	if con == "" || con == gw.Addr(proc.S3) {
		t.Fatalf("gateway ready line %v: no console of its own", gw.Ready())
	}
	if resp, err = http.Get(con + "/api/buckets"); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous GET /api/buckets on the gateway's console %s: %s, want 401", con, resp.Status)
	}
}
