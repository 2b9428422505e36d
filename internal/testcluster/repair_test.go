package testcluster_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/director"
	"cairn/internal/testcluster"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
)

// direct is a library client of a test cluster (the CLI would start one
// process per object).
type direct struct {
	meta  meta.Store
	data  *client.Client
	nodes *node.Client // the node protocol, for planting shard files
}

func openDirect(t *testing.T, c *testcluster.Cluster) *direct {
	return newDirect(t, c.MetaEndpoints(), c.Secret(), client.Config{BlockSize: 64 << 10})
}

// newDirect is a library client of the cluster whose metadata store
// answers at endpoints and whose nodes share secret.
func newDirect(t *testing.T, endpoints []string, secret string, cfg client.Config) *direct {
	store, err := etcdmeta.Open(t.Context(), endpoints, etcdmeta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	resolve := func(_ context.Context, d cairn.DiskID) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		disks, err := store.Disks(ctx)
		if err != nil {
			return "", err
		}
		nodes, err := store.Nodes(ctx)
		if err != nil {
			return "", err
		}
		for _, dk := range disks {
			if dk.ID == d {
				for _, n := range nodes {
					if n.ID == dk.Node {
						return n.Addr, nil
					}
				}
			}
		}
		return "", fmt.Errorf("disk %s: %w", d, cairn.ErrNotFound)
	}
	nc := node.NewClient(secret, resolve, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}})
	return &direct{meta: store, data: client.New(store, nc, cfg), nodes: nc}
}

// TestRepairRealProcesses: a node holding shards of 500 objects dies; the
// director (in a node process) marks its disks down and repairs every
// stripe onto the survivors with the configured scheme; every object then
// reads back byte-exact with the node still dead and no manifest naming
// its disks. With push-sur (the default) the director's own process is
// killed mid-repair and the new one resumes; with push-rep a corrupt helper
// shard is found and rebuilt too.
func TestRepairRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four clusters of 8 processes")
	}
	for _, scheme := range []string{"push-sur", "push-rep", "pull-sur", "pull-rep"} {
		t.Run(scheme, func(t *testing.T) { testRepair(t, scheme) })
	}
}

func testRepair(t *testing.T, scheme string) {
	c := testcluster.Start(t, testcluster.Config{Nodes: 6, DisksPerNode: 2, Grace: 2 * time.Second,
		NodeArgs: []string{"--repair-scheme", scheme, "--repair-scan", "1s", "--repair-unit", "64KiB"}})
	d := openDirect(t, c)
	ctx := t.Context()
	var victimName string // for the failure report
	var data map[string][]byte
	c.CLI(t, "mb", "rep", "--policy", "rs-4-2")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if out, err := c.TryCLI(context.Background(), "admin", "repair", "status"); err == nil {
			t.Logf("repair status:\n%s", out)
		}
		if out, err := c.TryCLI(context.Background(), "admin", "status"); err == nil {
			t.Logf("status:\n%s", out)
		}
		unrepaired(t, d, data, map[cairn.NodeID]bool{nodeOf(cairn.DiskID(victimName + "/x")): true})
		for _, p := range c.Nodes {
			lines := strings.Split(p.Output(), "\n")
			t.Logf("%s (last lines):\n%s", p.Name(), strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
	})

	rng := rand.New(rand.NewPCG(7, uint64(len(scheme))))
	i := 0
	data = putRandom(t, d, "rep", 500, func() int {
		n := i
		i++
		if n%10 == 0 { // more than one 256 KiB stripe, the last one partial
			return 256<<10 + 1 + rng.IntN(500<<10)
		}
		return 1 + rng.IntN(200<<10)
	}, rng)
	// The victim: the node with the most shards (not the director, whose
	// death is tested separately).
	leader, err := d.meta.Leader(ctx, director.Role)
	if err != nil {
		t.Fatal(err)
	}
	count := map[cairn.NodeID]int{}
	for key := range data {
		m, err := d.meta.Manifest(ctx, "rep", key)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range m.Shards {
			count[nodeOf(s.Disk)]++
		}
	}
	victim := busiest(c, leader, count)
	victimID := cairn.NodeID(fmt.Sprintf("node%d", victim+1))
	victimName = string(victimID)
	t.Logf("%s: killing %s (shards of %d objects); director is %s", scheme, victimID, count[victimID], leader)

	// A corrupt helper: one shard, on a surviving non-director node, of an
	// object that also has a shard on the victim.
	// Corrupt helpers: one shard of each of 25 objects (a chain reads 4 of
	// the 5 shards left, so some of them will be read).
	type spot struct {
		key   string
		shard int
		disk  cairn.DiskID
	}
	var corrupt []spot
	if scheme == "push-rep" { // not with the director's death too: rs-4-2 on 6 nodes survives 2 losses
		done := map[string]bool{}
		for range 25 {
			key, i, disk := corruptHelper(t, c, d, data, victimID, cairn.NodeID(leader), done)
			corrupt = append(corrupt, spot{key, i, disk})
		}
	}
	c.Nodes[victim].Kill()

	if scheme == "push-sur" {
		// Kill the director once repairs are under way; another node
		// takes over and resumes from the queue in etcd.
		waitFor(t, 60*time.Second, "repairs to start", func() bool {
			return repairedCount(t, d, data, victimID) > 0
		})
		for i, p := range c.Nodes {
			if fmt.Sprintf("node%d", i+1) == leader {
				p.Kill()
			}
		}
		t.Logf("killed the director %s after %d objects were repaired", leader, repairedCount(t, d, data, victimID))
	}
	dead := map[cairn.NodeID]bool{victimID: true}
	if scheme == "push-sur" {
		dead[cairn.NodeID(leader)] = true
	}
	waitFor(t, 3*time.Minute, "every stripe repaired", func() bool {
		ts, err := meta.AllRepairTasks(ctx, d.meta)
		return err == nil && len(ts) == 0 && unrepaired(t, d, data, dead) == 0
	})
	if scheme == "push-rep" {
		rebuilt := 0
		for _, sp := range corrupt {
			m, err := d.meta.Manifest(ctx, "rep", sp.key)
			if err != nil {
				t.Fatal(err)
			}
			if m.Shards[sp.shard].Disk != sp.disk {
				rebuilt++
			}
		}
		logs := ""
		for _, p := range c.Nodes {
			logs += p.Output()
		}
		if rebuilt == 0 || !strings.Contains(logs, "helper shard is bad") {
			t.Errorf("no corrupt helper was detected and rebuilt (%d of %d moved)", rebuilt, len(corrupt))
		}
		t.Logf("%d of %d corrupt helpers were read by a repair, detected and rebuilt elsewhere", rebuilt, len(corrupt))
	}
	// Every object reads back byte-exact with the dead nodes still dead;
	// and (full redundancy) also with any two more shards unreadable —
	// checked here by reading with the victim's old disks gone and the
	// rebuilt shards in place.
	for key, want := range data {
		_, rc, err := d.data.Get(ctx, "rep", key, 0, -1)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: read back %d bytes (%v), want %d", key, len(got), err, len(want))
		}
	}
	var out string
	waitFor(t, 60*time.Second, "the director's progress report", func() bool {
		out = c.CLI(t, "admin", "repair", "status")
		return strings.Contains(out, "has rebuilt") && !strings.Contains(out, "has rebuilt 0 shards")
	})
	if !strings.Contains(out, "empty") {
		t.Fatalf("repair status after repair:\n%s", out)
	}
	if st := c.CLI(t, "admin", "status"); !strings.Contains(st, "repair: nothing to repair") {
		t.Fatalf("admin status after repair:\n%s", st)
	}
	t.Logf("%s", out)
}

// busiest returns the index in c.Nodes of the node that count says holds
// the most, other than the director (leader), whose death tests test
// separately.
func busiest(c *testcluster.Cluster, leader string, count map[cairn.NodeID]int) int {
	victim := -1
	for i := range c.Nodes {
		id := cairn.NodeID(fmt.Sprintf("node%d", i+1))
		if string(id) != leader && (victim < 0 || count[id] > count[cairn.NodeID(fmt.Sprintf("node%d", victim+1))]) {
			victim = i
		}
	}
	return victim
}

func nodeOf(d cairn.DiskID) cairn.NodeID {
	s := string(d)
	return cairn.NodeID(s[:strings.IndexByte(s, '/')])
}

// unrepaired counts shards still on dead nodes, or two shards of one
// stripe on one disk.
func unrepaired(t *testing.T, d *direct, data map[string][]byte, dead map[cairn.NodeID]bool) int {
	n := 0
	for key := range data {
		m, err := d.meta.Manifest(context.Background(), "rep", key)
		if err != nil {
			t.Logf("%s: %v", key, err)
			return len(data)
		}
		seen := map[cairn.DiskID]bool{}
		for i, s := range m.Shards {
			if dead[nodeOf(s.Disk)] || seen[s.Disk] {
				n++
				if n <= 3 && t.Failed() {
					t.Logf("unrepaired: %s shard %d on %s: %+v", key, i, s.Disk, m.Shards)
				}
			}
			seen[s.Disk] = true
		}
	}
	return n
}

// repairedCount counts objects that once had a shard on victim and no
// longer do.
func repairedCount(t *testing.T, d *direct, data map[string][]byte, victim cairn.NodeID) int {
	return len(data) - unrepairedObjects(t, d, data, victim)
}

func unrepairedObjects(t *testing.T, d *direct, data map[string][]byte, victim cairn.NodeID) int {
	n := 0
	for key := range data {
		m, err := d.meta.Manifest(t.Context(), "rep", key)
		if err != nil {
			return len(data)
		}
		for _, s := range m.Shards {
			if nodeOf(s.Disk) == victim {
				n++
				break
			}
		}
	}
	return n
}

// corruptHelper flips a byte in a shard file of an object (not in done)
// that has a shard on victim, on a node that is neither the victim nor
// avoid, and returns the object, the shard index and its disk.
func corruptHelper(t *testing.T, c *testcluster.Cluster, d *direct, data map[string][]byte, victim, avoid cairn.NodeID, done map[string]bool) (string, int, cairn.DiskID) {
	t.Helper()
	for key := range data {
		if done[key] {
			continue
		}
		m, err := d.meta.Manifest(t.Context(), "rep", key)
		if err != nil {
			t.Fatal(err)
		}
		onVictim := false
		for _, s := range m.Shards {
			onVictim = onVictim || nodeOf(s.Disk) == victim
		}
		if !onVictim || m.Size < 10 {
			continue
		}
		for i, s := range m.Shards {
			n := nodeOf(s.Disk)
			if n == victim || n == avoid {
				continue
			}
			var idx, dn int
			fmt.Sscanf(string(n), "node%d", &idx)
			fmt.Sscanf(string(s.Disk)[len(n)+1:], "disk%d", &dn)
			path := findFile(t, c.NodeDir(idx, dn), cairn.ShardName(m.Version, i))
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := []byte{0}
			if _, err := f.ReadAt(b, 3); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0x40
			if _, err := f.WriteAt(b, 3); err != nil {
				t.Fatal(err)
			}
			f.Close()
			done[key] = true
			return key, i, s.Disk
		}
	}
	t.Fatal("no object to corrupt")
	return "", 0, ""
}

func findFile(t *testing.T, dir, name string) string {
	t.Helper()
	var found string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == name {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("shard %s not found under %s", name, dir)
	}
	return found
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testcluster.WaitFor(t, d, what, cond)
}
