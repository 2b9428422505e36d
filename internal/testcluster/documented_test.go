package testcluster_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn"
	"cairn/internal/testcluster"
)

// docS3Client is an SDK client of a documented cluster's gateway with its
// root credentials.
// It trusts the cluster CA cairn init made.
func docS3Client(d *testcluster.Documented, url string) *s3.Client {
	return s3AsCA(d.CA, url, d.AccessKey, d.SecretKey)
}

// The walkthrough of docs/running-a-cluster.md works as written (issue
// #24): a cluster of 3 metadata members, 4 nodes and 2 gateways started
// only by its commands serves an object put through one gateway from the
// other, with the root credentials cairn init made; a user created through
// the first gateway's admin path works through the second (checkSharedUsers).
func TestRunningACluster(t *testing.T) {
	d := testcluster.StartDocumented(t)
	roles := map[string]int{}
	for _, p := range d.Procs {
		roles[p.Ready().Role]++
	}
	if roles["meta"] != 3 || roles["node"] != 4 || roles["gateway"] != 2 || len(d.Gateways) != 2 {
		t.Fatalf("the doc started %v, gateways %v: want 3 meta, 4 node and 2 gateway processes", roles, d.Gateways)
	}
	var st struct {
		Nodes []struct {
			ID   string `json:"id"`
			Addr string `json:"addr"`
		} `json:"nodes"`
		Disks []struct {
			ID   string `json:"id"`
			Node string `json:"node"`
		} `json:"disks"`
	}
	out, err := testcluster.RunCLI(t.Context(), d.Conf, "admin", "status", "--json")
	if err != nil {
		t.Fatalf("admin status: %v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 4 || len(st.Disks) != 12 {
		t.Fatalf("the cluster map has %d nodes and %d disks, want 4 and 12", len(st.Nodes), len(st.Disks))
	}

	data := bytes.Repeat([]byte("cairn on three hosts "), 50000) // 1 MiB: several shards per stripe
	ctx := t.Context()
	if _, err := docS3Client(d, d.Gateways[0]).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"),
		Key: aws.String("cat.jpg"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatalf("put through gateway 1: %v", err)
	}
	got, err := docS3Client(d, d.Gateways[1]).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("cat.jpg")})
	if err != nil {
		t.Fatalf("get through gateway 2: %v", err)
	}
	defer got.Body.Close()
	back, err := io.ReadAll(got.Body)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read back %d bytes (%v), want the %d put", len(back), err, len(data))
	}

	// The hosts are the racks: the stripe's 6 shards are 2 per host, so
	// any one host may be lost, the one running two nodes included.
	out, err = testcluster.RunCLI(ctx, d.Conf, "stat", "--json", "photos/cat.jpg")
	if err != nil {
		t.Fatalf("stat: %v\n%s", err, out)
	}
	var m cairn.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	hostOf := map[string]string{}
	for _, n := range st.Nodes {
		h := addrHost(n.Addr)
		hostOf[n.ID] = h
	}
	perHost := map[string]int{}
	for _, sh := range m.Shards {
		n, _, _ := strings.Cut(string(sh.Disk), "/")
		perHost[hostOf[n]]++
	}
	if len(m.Shards) != 6 || len(perHost) != 3 || perHost[""] != 0 {
		t.Fatalf("shards %v over hosts %v: want 6 shards on the 3 hosts", m.Shards, perHost)
	}
	for h, n := range perHost {
		if n != 2 {
			t.Errorf("host %s holds %d of the stripe's 6 shards, want 2 (shards per host %v)", h, n, perHost)
		}
	}

	checkSharedUsers(t, gatewayAdmin(t, d.CA, d.Gateways[0], d.AccessKey, d.SecretKey), [2]string{d.Gateways[0], d.Gateways[1]},
		d.AccessKey, d.SecretKey, "doc", d.CA)

	// "Adding a node later": node5 joins with client.conf and flags, on a
	// fourth host that is its rack.
	joined := d.Join(t)
	out, err = testcluster.RunCLI(ctx, d.Conf, "admin", "status", "--json")
	if err != nil {
		t.Fatalf("admin status: %v\n%s", err, out)
	}
	var after struct {
		Nodes []cairn.Node `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(after.Nodes, func(n cairn.Node) bool { return n.ID == "node5" })
	if len(joined) != 1 || len(after.Nodes) != 5 || i < 0 {
		t.Fatalf("after the join: nodes %+v", after.Nodes)
	}
	if h := addrHost(after.Nodes[i].Addr); after.Nodes[i].Labels[cairn.LabelRack] != h {
		t.Fatalf("node5 %+v: want its host as its rack", after.Nodes[i])
	}
}

// addrHost is the host of a node's address, HOST:PORT or, with TLS,
// https://HOST:PORT.
func addrHost(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Hostname()
	}
	h, _, _ := net.SplitHostPort(addr)
	return h
}
