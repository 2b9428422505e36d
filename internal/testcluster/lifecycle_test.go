package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/director"
	"cairn/internal/testcluster"
	"cairn/meta"
)

// diskStates returns each disk's record as `cairn admin status --json`
// prints it.
func diskStates(t *testing.T, conf string) map[cairn.DiskID]cairn.Disk {
	t.Helper()
	out, err := testcluster.RunCLI(context.Background(), conf, "admin", "status", "--json")
	if err != nil {
		t.Logf("admin status: %v\n%s", err, out)
		return nil
	}
	var st struct {
		Disks  []cairn.Disk `json:"disks"`
		Repair string       `json:"repair"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("admin status --json: %v\n%s", err, out)
	}
	m := map[cairn.DiskID]cairn.Disk{}
	for _, d := range st.Disks {
		m[d.ID] = d
	}
	return m
}

// healthy reports whether every disk is up and nothing is left to repair,
// as the operator reads it in `cairn admin status`.
func healthy(t *testing.T, conf string) bool {
	t.Helper()
	out, err := testcluster.RunCLI(context.Background(), conf, "admin", "status")
	if err != nil || !strings.Contains(out, "repair: nothing to repair") {
		return false
	}
	st := diskStates(t, conf)
	for _, d := range st {
		if d.State != cairn.DiskUp {
			return false
		}
	}
	return len(st) > 0
}

// The README tour on a server with 8 disks: objects written, two disk
// directories removed while it runs; the node reports them, formats them
// again, the director marks them down (replaced), repair rebuilds their
// shards elsewhere, and once nothing is left on them they are up again,
// empty, and take new writes; `cairn admin status` is healthy and every
// object reads back byte-exact. Then a third directory is removed and the
// server restarted at once: the same, through the restart.
func TestReplacedDisksReturnEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the node's 30 s refresh and the repair scan's 30 s census")
	}
	s := testcluster.StartServer(t, "", "--disks", "8", "--grace", "2s", "--repair-scan", "1s")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.TryCLI(context.Background(), "admin", "status")
			t.Logf("status:\n%s", out)
			lines := strings.Split(s.Output(), "\n")
			t.Logf("server (last lines):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	s.CLI(t, "mb", "tour", "--policy", "rs-4-2")
	src := t.TempDir()
	files := map[string]string{}
	for i := range 24 {
		key := fmt.Sprintf("obj-%02d", i)
		path, _ := writeFile(t, src, key, int64(1+i*37_000), uint64(i))
		s.CLI(t, "put", path, "tour/"+key)
		files[key] = path
	}
	readBack := func(when string) {
		t.Helper()
		dst := t.TempDir()
		for key, path := range files {
			out := filepath.Join(dst, key)
			s.CLI(t, "get", "tour/"+key, out)
			if !sameFile(t, path, out) {
				t.Fatalf("%s: %s reads back different bytes", when, key)
			}
		}
	}
	before := diskStates(t, s.Conf)
	if len(before) != 8 {
		t.Fatalf("%d disks registered, want 8", len(before))
	}
	lose := func(disks ...string) {
		for _, d := range disks {
			if err := os.RemoveAll(filepath.Join(s.Data, d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	lose("disk2", "disk5")
	readBack("right after removing two disks")
	gone := []cairn.DiskID{"node1/disk2", "node1/disk5"}
	waitFor(t, 90*time.Second, "both disks down as replaced", func() bool {
		st := diskStates(t, s.Conf)
		for _, id := range gone {
			d := st[id]
			if d.State != cairn.DiskDown || d.Volume == before[id].Volume || !strings.Contains(d.Reason, "replaced") {
				return false
			}
		}
		return true
	})
	readBack("with two disks down")
	waitFor(t, 3*time.Minute, "the replaced disks up again and nothing to repair", func() bool { return healthy(t, s.Conf) })
	st := diskStates(t, s.Conf)
	for _, id := range gone {
		if d := st[id]; d.Trusted != d.Volume || d.Trusted == before[id].Trusted || !strings.Contains(d.Reason, "empty") {
			t.Fatalf("%s after its return: %+v", id, d)
		}
	}
	readBack("after the disks returned")
	// New writes use the returned disks again.
	path, _ := writeFile(t, src, "after", 3<<20, 99)
	s.CLI(t, "put", path, "tour/after")
	files["after"] = path
	if stat := s.CLI(t, "stat", "tour/after"); !strings.Contains(stat, "disk2") && !strings.Contains(stat, "disk5") {
		t.Logf("the new object uses neither returned disk (placement's choice):\n%s", stat)
	}

	// A directory removed and the server restarted before the node
	// noticed: formatted at the start, replaced, back the same way.
	lose("disk7")
	s.Restart(t)
	waitFor(t, 60*time.Second, "disk7 down as replaced after the restart", func() bool {
		d := diskStates(t, s.Conf)["node1/disk7"]
		return d.State == cairn.DiskDown && strings.Contains(d.Reason, "replaced")
	})
	readBack("after the restart with disk7 down")
	waitFor(t, 3*time.Minute, "disk7 up again and nothing to repair", func() bool { return healthy(t, s.Conf) })
	readBack("at the end")
	t.Logf("status at the end:\n%s", s.CLI(t, "admin", "status"))
}

// A node killed for longer than the grace period is restarted: its disks
// go down, repair starts rebuilding (slowly: --repair-rate), and when the
// node is back its disks return to up with their shards — readable, the
// queued tasks dropped, most shards never rebuilt. A reader checks every
// object byte-exact the whole time.
func TestNodeReturnsAfterGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of 7 processes")
	}
	c := testcluster.Start(t, testcluster.Config{Nodes: 6, DisksPerNode: 2, Grace: 2 * time.Second,
		NodeArgs: []string{"--repair-scan", "1s", "--repair-unit", "64KiB", "--repair-rate", "128KiB", "--repair-parallel", "1"}})
	d := openDirect(t, c)
	ctx := t.Context()
	c.CLI(t, "mb", "rep", "--policy", "rs-4-2")
	rng := rand.New(rand.NewPCG(11, 12))
	data := putRandom(t, d, "rep", 40, func() int { return 100_000 + rng.IntN(300_000) }, rng)
	leader, err := d.meta.Leader(ctx, director.Role)
	if err != nil {
		t.Fatal(err)
	}
	// The victim and the two nodes killed at the end: neither the
	// director nor node1.
	var pick []int
	for i := 1; i < len(c.Nodes); i++ {
		if fmt.Sprintf("node%d", i+1) != leader {
			pick = append(pick, i)
		}
	}
	victim, others := pick[0], pick[1:3]
	victimID := cairn.NodeID(fmt.Sprintf("node%d", victim+1))
	t.Logf("victim %s, director %s", victimID, leader)
	onVictim := len(data) - repairedCount(t, d, data, victimID)
	if onVictim == 0 {
		t.Fatal("no object has a shard on the victim")
	}

	// The reader: every object, again and again, byte-exact.
	var reads, failures atomic.Int64
	var firstFailure atomic.Value
	rctx, stopReader := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for rctx.Err() == nil {
			for key, want := range data {
				if rctx.Err() != nil {
					return
				}
				_, rc, err := d.data.Get(rctx, "rep", key, 0, -1)
				var got []byte
				if err == nil {
					got, err = io.ReadAll(rc)
					rc.Close()
				}
				if rctx.Err() != nil {
					return
				}
				reads.Add(1)
				if err != nil || !bytes.Equal(got, want) {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: %v (%d of %d bytes)", key, err, len(got), len(want)))
				}
			}
		}
	})
	t.Cleanup(func() { stopReader(); wg.Wait() })

	c.Nodes[victim].Kill()
	victimDisks := []cairn.DiskID{cairn.DiskID(victimID + "/disk1"), cairn.DiskID(victimID + "/disk2")}
	waitFor(t, 60*time.Second, "the victim's disks down", func() bool {
		st := diskStates(t, c.Conf)
		return st[victimDisks[0]].State == cairn.DiskDown && st[victimDisks[1]].State == cairn.DiskDown
	})
	waitFor(t, 60*time.Second, "repair queued", func() bool {
		ts, err := meta.AllRepairTasks(ctx, d.meta)
		return err == nil && len(ts) > 0
	})
	if err := c.Nodes[victim].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the victim's disks up again", func() bool {
		st := diskStates(t, c.Conf)
		for _, id := range victimDisks {
			if d := st[id]; d.State != cairn.DiskUp || !strings.Contains(d.Reason, "returned intact") {
				return false
			}
		}
		return true
	})
	waitFor(t, 60*time.Second, "the repair queue empty", func() bool {
		ts, err := meta.AllRepairTasks(ctx, d.meta)
		return err == nil && len(ts) == 0
	})
	stillThere := len(data) - repairedCount(t, d, data, victimID)
	t.Logf("%d of %d objects with a shard on %s kept it there (the rest were rebuilt before it returned); %d reads",
		stillThere, onVictim, victimID, reads.Load())
	if stillThere < onVictim/2 {
		t.Fatalf("only %d of %d objects kept their shard on the returned node: repair rebuilt what came back", stillThere, onVictim)
	}
	// Reads of the returned shards: every object, with the shards of two
	// other nodes unreadable, so those on the victim are needed.
	stopReader()
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d reads failed during the node's absence and return; first: %v", n, reads.Load(), firstFailure.Load())
	}
	if reads.Load() < int64(len(data)) {
		t.Fatalf("the reader read only %d objects", reads.Load())
	}
	for _, other := range others {
		c.Nodes[other].Kill()
	}
	checked := 0
	for key, want := range data {
		m, err := d.meta.Manifest(ctx, "rep", key)
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[cairn.NodeID]bool{}
		for _, s := range m.Shards {
			nodes[nodeOf(s.Disk)] = true
		}
		if !nodes[victimID] || len(nodes) != len(m.Shards) {
			continue // rebuilt before the node returned: not the point here
		}
		checked++
		_, rc, err := d.data.Get(ctx, "rep", key, 0, -1)
		if err != nil {
			t.Fatalf("%s (shards %+v): %v", key, m.Shards, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s with two other nodes dead: %v", key, err)
		}
	}
	if checked < stillThere/2 {
		t.Fatalf("read only %d objects from their returned shards", checked)
	}
}

// putRandom writes n objects bucket/obj/NNN of size() random bytes each
// (from rng) and returns their contents by key.
func putRandom(t *testing.T, d *direct, bucket string, n int, size func() int, rng *rand.Rand) map[string][]byte {
	t.Helper()
	data := make(map[string][]byte, n)
	for i := range n {
		b := make([]byte, size())
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("obj/%03d", i)
		if _, err := d.data.Put(t.Context(), bucket, key, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		data[key] = b
	}
	return data
}
